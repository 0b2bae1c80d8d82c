"""Optimizers for eager parameters (PyTorch's update formulas).

    >>> opt = fg.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> opt.zero_grad(); loss.backward(); opt.step()
"""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from .._core.config import fp_errors_may_raise as _fp_strict
from ..kernels.update import sub_scaled
from .tensor import Tensor

_ndarray = np.ndarray

__all__ = ["Optimizer", "SGD", "Adam"]


def _finite(name: str, value, lo: float = 0.0, hi: float | None = None,
            hi_open: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"invalid {name}: {value!r} (expected a number)") from None
    if not math.isfinite(v) or v < lo or (hi is not None and (v >= hi if hi_open else v > hi)):
        bound = "" if hi is None else (f" and < {hi}" if hi_open else f" and <= {hi}")
        raise ValueError(f"invalid {name}: {value!r} (expected a finite number >= {lo}{bound})")
    return v


class Optimizer:
    """Holds the parameters; ``zero_grad()`` resets their ``.grad`` to ``None``.

    ``step()`` checks every gradient and hyperparameter before it changes anything: a bad
    gradient raises with the optimizer and parameter named, and leaves the parameters and the
    optimizer's state as they were."""

    def __init__(self, params: Iterable[Tensor], lr: float):
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors, but got a Tensor")
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        seen = set()
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor):
                what = f"a {type(p).__name__}"
            elif not p.requires_grad:
                what = "a Tensor that does not require grad"
            elif not p.is_leaf:
                what = "a non-leaf Tensor"
            else:
                what = None
            if what is not None:
                raise ValueError(f"optimizer parameters must be leaf Tensors that require grad "
                                 f"(parameter {i} is {what})")
            if id(p) in seen:
                raise ValueError(f"some parameters appear more than once in the parameter list "
                                 f"(parameter {i})")
            seen.add(id(p))
        self.lr = _finite("learning rate", lr)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = Tensor(np.zeros_like(p.grad.data))

    def _check_hyperparameters(self) -> None:
        self.lr = _finite("learning rate", self.lr)

    def _grads(self) -> list:
        """``(p, data, g)`` for every parameter with a gradient -- all of them checked first, so
        that a bad one raises before any parameter or state changes."""
        name = type(self).__name__
        try:
            self._check_hyperparameters()
        except (TypeError, ValueError) as e:
            raise type(e)(f"{name}.step(): {e}") from None
        out = []
        for i, p in enumerate(self.params):
            gt = p.grad
            if gt is None:
                continue
            if not isinstance(gt, Tensor):
                raise TypeError(f"{name}.step(): parameter {i}: .grad must be a Tensor or None, "
                                f"not {type(gt).__name__}")
            g = gt._data
            if type(g) is not _ndarray:
                g = np.asarray(g)
            data = p.data
            if g.shape != data.shape:
                raise ValueError(f"{name}.step(): parameter {i} has shape {data.shape} but its "
                                 f"gradient has shape {g.shape}")
            if g.dtype != data.dtype:
                if g.dtype.kind not in "biuf":
                    raise TypeError(f"{name}.step(): parameter {i} ({data.dtype}) has a gradient "
                                    f"of dtype {g.dtype}")
                g = g.astype(data.dtype)
            out.append((p, data, g))
        return out


def _sub_scaled(data: np.ndarray, lr: float, g: np.ndarray) -> None:
    """``data -= lr * g``, with NumPy's rounding, in one pass and without a temporary the size
    of the parameter (a compiled loop, ``fastgraph.kernels.update``); whatever it leaves (other
    layouts, a floating-point exception) NumPy does, warnings included.  Only called when
    floating-point exceptions do not raise (see ``_fp_strict``): the compiled loop stops at one
    after having written the blocks before it."""
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
        self.momentum = _finite("momentum value", momentum)
        self._buf: dict[int, np.ndarray] = {}

    def _check_hyperparameters(self) -> None:
        super()._check_hyperparameters()
        self.momentum = _finite("momentum value", self.momentum)

    def step(self) -> None:
        items = self._grads()
        lr, m = self.lr, self.momentum
        strict = _fp_strict()
        pending = []    # strict: (p, state to keep, new value), written once all are computed
        for p, data, g in items:
            buf = None
            if m:
                buf = self._buf.get(id(p))
                if buf is None:
                    buf = g.copy()
                else:
                    if strict:
                        buf = buf.copy()
                    buf *= m
                    buf += g
                g = buf
            if strict:
                pending.append((p, buf, data - lr * g))
                continue
            if buf is not None:
                self._buf[id(p)] = buf
            _sub_scaled(data, lr, g)
            p._bump_version()  # (as PyTorch's in-place update does)
        for p, buf, value in pending:
            if buf is not None:
                self._buf[id(p)] = buf
            _write(p, value)


class Adam(Optimizer):
    """Adam with bias correction (defaults ``betas=(0.9, 0.999), eps=1e-8``)."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, lr)
        b1, b2 = betas
        self.b1 = _finite("beta parameter at index 0", b1, 0.0, 1.0, hi_open=True)
        self.b2 = _finite("beta parameter at index 1", b2, 0.0, 1.0, hi_open=True)
        self.eps = _finite("epsilon value", eps)
        self._state: dict[int, list] = {}

    def _check_hyperparameters(self) -> None:
        super()._check_hyperparameters()
        self.b1 = _finite("beta parameter at index 0", self.b1, 0.0, 1.0, hi_open=True)
        self.b2 = _finite("beta parameter at index 1", self.b2, 0.0, 1.0, hi_open=True)
        self.eps = _finite("epsilon value", self.eps)

    def step(self) -> None:
        items = self._grads()
        b1, b2, lr, eps = self.b1, self.b2, self.lr, self.eps
        # while floating-point errors raise, the moments are updated in copies and every new
        # value is computed before anything is written: an exception leaves parameters, moments
        # and step counts as they were (the same arithmetic, and rounding, either way)
        strict = _fp_strict()
        pending = []
        for p, data, g in items:
            st = self._state.get(id(p))
            if st is None:
                t, m, v = 0, np.zeros_like(data), np.zeros_like(data)
            else:
                t, m, v = st
                if strict:
                    m, v = m.copy(), v.copy()
            t += 1
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            m_hat = m / (1 - b1 ** t)
            v_hat = v / (1 - b2 ** t)
            update = lr * m_hat / (np.sqrt(v_hat) + eps)
            if strict:
                pending.append((p, [t, m, v], data - update))
                continue
            self._state[id(p)] = [t, m, v]
            data -= update
            p._bump_version()
        for p, st, value in pending:
            self._state[id(p)] = st
            _write(p, value)


def _write(p: Tensor, value: np.ndarray) -> None:
    """Install a parameter's new value (computed out of place) in its own array."""
    np.copyto(p.data, value)
    p._bump_version()
