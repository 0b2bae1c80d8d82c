"""Optimizers for eager parameters (PyTorch's update formulas).

    >>> opt = fg.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> opt.zero_grad(); loss.backward(); opt.step()
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .._update import sub_scaled
from .tensor import Tensor

__all__ = ["Optimizer", "SGD", "Adam"]


class Optimizer:
    """Holds the parameters; ``zero_grad()`` resets their ``.grad`` to ``None``."""

    def __init__(self, params: Iterable[Tensor], lr: float):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        for p in self.params:
            if not isinstance(p, Tensor) or not p.is_leaf or not p.requires_grad:
                raise ValueError("optimizer parameters must be leaf Tensors that require grad")
        if lr < 0:
            raise ValueError(f"invalid learning rate: {lr}")
        self.lr = float(lr)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = Tensor(np.zeros_like(p.grad.data))

    def _grads(self):
        for p in self.params:
            if p.grad is not None:
                yield p, p.data, np.asarray(p.grad.data, dtype=p.dtype)


def _sub_scaled(data: np.ndarray, lr: float, g: np.ndarray) -> None:
    """``data -= lr * g``, with NumPy's rounding, in one pass and without a temporary the size
    of the parameter (a compiled loop, ``fastgraph._update``); whatever it leaves (other
    layouts, a floating-point exception) NumPy does, warnings included."""
    done = sub_scaled(data, g, lr)
    if done == data.size:
        return
    if done == 0:
        data -= lr * g
    else:  # (both C-contiguous here: flat views are views)
        rest = data.reshape(-1)[done:]
        rest -= lr * g.reshape(-1)[done:]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum: ``buf = m*buf + g; p -= lr*buf``."""

    def __init__(self, params, lr: float, momentum: float = 0.0):
        super().__init__(params, lr)
        self.momentum = float(momentum)
        self._buf: dict[int, np.ndarray] = {}

    def step(self) -> None:
        for p, data, g in self._grads():
            if self.momentum:
                buf = self._buf.get(id(p))
                if buf is None:
                    buf = self._buf[id(p)] = g.copy()
                else:
                    buf *= self.momentum
                    buf += g
                g = buf
            _sub_scaled(data, self.lr, g)


class Adam(Optimizer):
    """Adam with bias correction (defaults ``betas=(0.9, 0.999), eps=1e-8``)."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, lr)
        self.b1, self.b2 = (float(b) for b in betas)
        self.eps = float(eps)
        self._state: dict[int, list] = {}

    def step(self) -> None:
        for p, data, g in self._grads():
            st = self._state.get(id(p))
            if st is None:
                st = self._state[id(p)] = [0, np.zeros_like(data), np.zeros_like(data)]
            st[0] += 1
            t, m, v = st
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * g * g
            m_hat = m / (1 - self.b1 ** t)
            v_hat = v / (1 - self.b2 ** t)
            data -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
