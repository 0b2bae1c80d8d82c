"""Optimizers for eager parameters, with PyTorch's update formulas, parameter groups and state
dicts: ``SGD`` (momentum, dampening, Nesterov, weight decay), ``Adam``, ``AdamW``, ``RMSprop``,
``Adagrad``.

    >>> opt = fg.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> opt.zero_grad(); loss.backward(); opt.step()

Each formula is PyTorch's single-tensor CPU update, operation for operation (``torch.optim``'s
default on the CPU), so float64 runs agree with PyTorch's to the last bits and float32 runs to
rounding.  ``step()`` checks every gradient and hyperparameter before it changes anything, and
computes every new value before it writes one: an error (a bad gradient, a floating-point
exception under ``np.errstate(...="raise")``) leaves parameters and state as they were.
"""
from __future__ import annotations

import collections
import math
from typing import Iterable

import numpy as np

from .._core.config import fp_errors_may_raise as _fp_strict
from ..kernels.update import sub_scaled
from . import grad_mode as _gm
from .tensor import Tensor

_ndarray = np.ndarray

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]


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


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()

#: the options that only choose among PyTorch's implementations (the values are the same):
#: accepted and kept in the groups, as PyTorch's state dicts have them
_IMPLEMENTATION_KEYS = ("foreach", "capturable", "differentiable", "fused")


class Optimizer:
    """PyTorch's ``torch.optim.Optimizer``: parameters in groups (``param_groups``, each a dict
    of the parameters and their hyperparameters), per-parameter ``state``, ``zero_grad``,
    ``state_dict``/``load_state_dict`` and ``add_param_group``.

    A subclass gives ``_HYPER`` (the checked hyperparameters) and ``_update`` (one parameter's
    new value and state, computed without writing anything)."""

    #: hyperparameter -> (name in messages, lower bound, upper bound, upper bound open)
    _HYPER: dict = {"lr": ("learning rate", 0.0, None, False)}

    def __init__(self, params: Iterable[Tensor], defaults):
        if not isinstance(defaults, dict):          # Optimizer(params, lr), fastgraph's first form
            defaults = {"lr": defaults}
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors, but got a Tensor")
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        # (a defaultdict, as PyTorch's: an optimizer written against PyTorch's API reads
        # ``self.state[p]`` before it has written anything there)
        self.state: dict = collections.defaultdict(dict)
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        for group in params:
            self.add_param_group(group)

    # ---- groups -----------------------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (a dict with ``"params"`` and any hyperparameters that
        differ from the optimizer's defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, not {type(param_group).__name__}")
        group = dict(param_group)
        ps = group.get("params")
        if isinstance(ps, Tensor):
            ps = [ps]
        elif isinstance(ps, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs; use "
                            "a list instead")
        ps = list(ps if ps is not None else ())
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        offset = sum(len(g["params"]) for g in self.param_groups)
        for i, p in enumerate(ps, offset):
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
        if not ps and not self.param_groups:
            raise ValueError("optimizer got an empty parameter list")
        group["params"] = ps
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {k}")
            group.setdefault(k, v)
        self._check_group(group)
        self.param_groups.append(group)
        self._init_group_state(group)

    def _init_group_state(self, group: dict) -> None:
        """State a subclass makes when a parameter joins (PyTorch's Adagrad does)."""

    def _check_group(self, group: dict) -> None:
        for k, (label, lo, hi, hi_open) in self._HYPER.items():
            if k in group:
                group[k] = _finite(label, group[k], lo, hi, hi_open)
        if "betas" in group:
            b1, b2 = group["betas"]
            group["betas"] = (_finite("beta parameter at index 0", b1, 0.0, 1.0, True),
                              _finite("beta parameter at index 1", b2, 0.0, 1.0, True))
        if group.get("differentiable"):
            raise ValueError(f"{type(self).__name__}: differentiable=True is not supported "
                             f"(fastgraph's optimizers update parameters outside the tape)")
        if group.get("fused"):
            raise ValueError(f"{type(self).__name__}: fused=True is not supported (fastgraph "
                             f"has one implementation; leave fused unset)")

    # ---- fastgraph's first attributes (the first group's; setting them sets every group's) --
    @property
    def params(self) -> list:
        return [p for g in self.param_groups for p in g["params"]]

    def _group_value(key, index=None):
        def get(self):
            v = self.param_groups[0][key]
            return v if index is None else v[index]

        def set_(self, value):
            for g in self.param_groups:
                if index is None:
                    g[key] = value
                else:
                    b = list(g[key])
                    b[index] = value
                    g[key] = tuple(b)
        return property(get, set_)

    # ---- zero_grad, step ------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients: to None (the default, as in PyTorch) or to zeros."""
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = _like(p, np.zeros_like(p.grad._ndarray))

    def _grads(self) -> list:
        """``(group, p, data, g)`` for every parameter with a gradient -- all of them checked
        first, so that a bad one raises before any parameter or state changes."""
        name = type(self).__name__
        try:
            for group in self.param_groups:
                self._check_group(group)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{name}.step(): {e}") from None
        out = []
        i = -1
        for group in self.param_groups:
            for p in group["params"]:
                i += 1
                gt = p.grad
                if gt is None:
                    continue
                if not isinstance(gt, Tensor):
                    raise TypeError(f"{name}.step(): parameter {i}: .grad must be a Tensor or "
                                    f"None, not {type(gt).__name__}")
                g = gt._data
                if type(g) is not _ndarray:
                    g = np.asarray(g)
                data = p._ndarray
                if g.shape != data.shape:
                    raise ValueError(f"{name}.step(): parameter {i} has shape {data.shape} but "
                                     f"its gradient has shape {g.shape}")
                if g.dtype != data.dtype:
                    if g.dtype.kind not in "biuf":
                        raise TypeError(f"{name}.step(): parameter {i} ({data.dtype}) has a "
                                        f"gradient of dtype {g.dtype}")
                    g = g.astype(data.dtype)
                out.append((group, p, data, g))
        return out

    def step(self, closure=None):
        """One update of every parameter that has a gradient; ``closure`` (a function that
        recomputes the loss and its gradients) is called first and its loss returned."""
        loss = None
        if closure is not None:
            with _gm.enable_grad():
                loss = closure()
        items = self._grads()
        if not _fp_strict():
            # errors do not raise: update the state's arrays and the parameters in place (the
            # same operations in the same order, so the same rounding, without the copies)
            for group, p, data, g in items:
                state = self._update(group, p, data, g, self.state.get(p) or None, True)[0]
                if state is not None:      # (plain SGD keeps none, as PyTorch's)
                    self.state[p] = state
                p._bump_version()  # (as PyTorch's in-place update does)
            return loss
        # floating-point errors raise: every new value is computed before one is written, so an
        # exception leaves parameters, state and step counts as they were
        pending = [(p, *self._update(group, p, data, g, self.state.get(p) or None, False))
                   for group, p, data, g in items]
        for p, state, value in pending:
            if state is not None:
                self.state[p] = state
            np.copyto(p._ndarray, value)
            p._bump_version()
        return loss

    def _update(self, group, p, data, g, state, inplace: bool):
        """``(new state, new value)`` of one parameter; with ``inplace`` the state's arrays and
        the parameter's data are updated where they are (the value returned is then unused)."""
        raise NotImplementedError

    # ---- state dicts ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """PyTorch's layout: ``{"state": {index: {...}}, "param_groups": [{..., "params":
        [indices]}]}``, parameters numbered in group order; the state's tensors are the
        optimizer's own (``torch.save`` it, or copy it)."""
        index = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Take the hyperparameters and state of :meth:`state_dict` (from an optimizer of the
        same kind over parameters of the same shapes); the state's tensors (fastgraph's of either
        face, NumPy arrays or PyTorch's) are copied, in each parameter's dtype and face."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        by_index = {}
        for mine, theirs in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], theirs["params"]):
                by_index[i] = p
        new_state = collections.defaultdict(dict)
        for i, s in state_dict["state"].items():
            p = by_index.get(int(i))
            if p is None:
                continue
            entry = {}
            for k, v in s.items():
                if isinstance(v, Tensor) or isinstance(v, np.ndarray) or _foreign(v):
                    arr = np.array(v._ndarray if isinstance(v, Tensor) else
                                   v.detach().cpu().numpy() if _foreign(v) else v)
                    if k != "step" and arr.dtype.kind == "f" and arr.shape == p.shape:
                        arr = arr.astype(p.dtype)
                    v = _like(p, arr)
                entry[k] = v
            new_state[p] = entry
        for mine, theirs in zip(self.param_groups, groups):
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = tuple(v) if k == "betas" else v
            self._check_group(mine)
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines + [")"])


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


def _lerp(start, end, weight, inplace):
    """PyTorch's ``lerp``: ``start + w*(end-start)`` for ``w < 0.5``, else from the end."""
    if weight < 0.5:
        d = end - start
        d *= weight
        if inplace:
            start += d
            return start
        return start + d
    value = end - (end - start) * (1 - weight)
    if inplace:
        start[...] = value
        return start
    return value


def _scale_add(a, scale, b, inplace):
    """``a*scale + b`` (into ``a`` with ``inplace``)."""
    if inplace:
        a *= scale
        a += b
        return a
    return a * scale + b


def _add_to(data, update, inplace):
    """``data + update``: the new value (written into ``data`` with ``inplace``)."""
    if inplace:
        data += update
        return data
    return data + update


def _array(state, key):
    v = state[key]
    return v._data if isinstance(v, Tensor) else v


def _step_count(state) -> float:
    return float(np.asarray(_array(state, "step")))


def _foreign(v) -> bool:
    """A tensor of another library (PyTorch's: ``detach()``, ``cpu()`` and ``numpy()``)."""
    return hasattr(v, "detach") and hasattr(v, "numpy") and hasattr(v, "cpu")


def _like(p, arr):
    """A state tensor (a gradient, a moment, the step count) holding ``arr``, of parameter
    ``p``'s face: PyTorch's for the parameters of ``fastgraph.torch``, so ``opt.state[p]`` and
    ``state_dict()`` hold ``torch.Tensor``s there."""
    return type.__call__(p._face, arr, False)


class SGD(Optimizer):
    """PyTorch's SGD: ``g += wd*p``; with momentum ``buf = m*buf + (1-dampening)*g`` (the first
    step ``buf = g``) and ``g = buf`` (or ``g + m*buf``, Nesterov); ``p -= lr*g``.

        >>> opt = fg.optim.SGD(model_params, lr=0.1, momentum=0.9, nesterov=True)
    """

    _HYPER = {"lr": ("learning rate", 0.0, None, False),
              "momentum": ("momentum value", 0.0, None, False),
              "dampening": ("dampening value", -math.inf, None, False),
              "weight_decay": ("weight_decay value", 0.0, None, False)}

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False,
                 foreach=None, differentiable: bool = False, fused=None):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    lr = Optimizer._group_value("lr")
    momentum = Optimizer._group_value("momentum")

    def _update(self, group, p, data, g, state, inplace):
        m, damp, wd = group["momentum"], group["dampening"], group["weight_decay"]
        if group["maximize"]:
            g = -g
        if wd:
            g = g + wd * data
        new_state = state
        if m:
            held = None if state is None else state.get("momentum_buffer")
            if held is None:
                buf = g.copy()
            else:
                old = _array(state, "momentum_buffer")
                buf = _scale_add(old, m, (1 - damp) * g, inplace)
                if buf is not old or not isinstance(held, Tensor):
                    held = None
            # (updated in place: the same tensor, as PyTorch's buffer stays one object)
            new_state = {"momentum_buffer": _like(p, buf) if held is None else held}
            g = g + m * buf if group["nesterov"] else buf
        if inplace:
            # p + (-lr)*g, bit for bit, by the compiled in-place loop
            _sub_scaled(data, group["lr"], g)
            return new_state, data
        return new_state, data + (-group["lr"]) * g


class Adam(Optimizer):
    """PyTorch's Adam (``amsgrad``, L2 ``weight_decay``, ``maximize``; defaults ``lr=1e-3,
    betas=(0.9, 0.999), eps=1e-8``), with bias correction.

        >>> opt = fg.optim.Adam(params, lr=1e-3)
    """

    _HYPER = {"lr": ("learning rate", 0.0, None, False),
              "eps": ("epsilon value", 0.0, None, False),
              "weight_decay": ("weight_decay value", 0.0, None, False)}
    _DECOUPLED = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused=None, decoupled_weight_decay: bool = False):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay or self._DECOUPLED)
        super().__init__(params, defaults)

    lr = Optimizer._group_value("lr")
    b1 = Optimizer._group_value("betas", 0)
    b2 = Optimizer._group_value("betas", 1)
    eps = Optimizer._group_value("eps")

    def _update(self, group, p, data, g, state, inplace):
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if group["maximize"]:
            g = -g
        if state is None:
            state = {"step": _like(p, np.array(0.0, np.float32)),
                     "exp_avg": _like(p, np.zeros_like(data)),
                     "exp_avg_sq": _like(p, np.zeros_like(data))}
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = _like(p, np.zeros_like(data))
        step = _step_count(state) + 1
        start = data
        if wd:
            if group["decoupled_weight_decay"]:
                if inplace:
                    data *= 1 - lr * wd
                else:
                    start = data * (1 - lr * wd)
            else:
                g = g + wd * data
        exp_avg = _lerp(_array(state, "exp_avg"), g, 1 - b1, inplace)
        exp_avg_sq = _scale_add(_array(state, "exp_avg_sq"), b2, (1 - b2) * g * g, inplace)
        bias_correction1 = 1 - b1 ** step
        bias_correction2 = 1 - b2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        new = dict(state)
        new["step"] = _like(p, np.array(step, np.float32))
        if not inplace:
            new["exp_avg"], new["exp_avg_sq"] = _like(p, exp_avg), _like(p, exp_avg_sq)
        if group["amsgrad"]:
            mx = _array(state, "max_exp_avg_sq")
            mx = np.maximum(mx, exp_avg_sq, out=mx if inplace else None)
            if not inplace:
                new["max_exp_avg_sq"] = _like(p, mx)
            denom = np.sqrt(mx) / bias_correction2_sqrt + eps
        else:
            denom = np.sqrt(exp_avg_sq) / bias_correction2_sqrt + eps
        return new, _add_to(start, (-step_size) * exp_avg / denom, inplace)


class AdamW(Adam):
    """PyTorch's AdamW: Adam with decoupled weight decay (``p *= 1 - lr*wd`` before the Adam
    step; default ``weight_decay=1e-2``)."""

    _DECOUPLED = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach=None, capturable: bool = False, differentiable: bool = False,
                 fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class RMSprop(Optimizer):
    """PyTorch's RMSprop (``alpha``, ``eps``, ``weight_decay``, ``momentum``, ``centered``;
    defaults ``lr=1e-2, alpha=0.99, eps=1e-8``)."""

    _HYPER = {"lr": ("learning rate", 0.0, None, False),
              "alpha": ("alpha value", 0.0, None, False),
              "eps": ("epsilon value", 0.0, None, False),
              "momentum": ("momentum value", 0.0, None, False),
              "weight_decay": ("weight_decay value", 0.0, None, False)}

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    lr = Optimizer._group_value("lr")

    def _update(self, group, p, data, g, state, inplace):
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        wd, m = group["weight_decay"], group["momentum"]
        if group["maximize"]:
            g = -g
        if state is None:
            state = {"step": _like(p, np.array(0.0, np.float32)),
                     "square_avg": _like(p, np.zeros_like(data))}
            if m > 0:
                state["momentum_buffer"] = _like(p, np.zeros_like(data))
            if group["centered"]:
                state["grad_avg"] = _like(p, np.zeros_like(data))
        if wd:
            g = g + wd * data
        square_avg = _scale_add(_array(state, "square_avg"), alpha, (1 - alpha) * g * g,
                                inplace)
        new = dict(state)
        new["step"] = _like(p, np.array(_step_count(state) + 1, np.float32))
        new["square_avg"] = _like(p, square_avg) if not inplace else state["square_avg"]
        if group["centered"]:
            grad_avg = _lerp(_array(state, "grad_avg"), g, 1 - alpha, inplace)
            if not inplace:
                new["grad_avg"] = _like(p, grad_avg)
            avg = np.sqrt(square_avg + (-1.0) * grad_avg * grad_avg)
        else:
            avg = np.sqrt(square_avg)
        avg = avg + eps
        if m > 0:
            buf = _scale_add(_array(state, "momentum_buffer"), m, g / avg, inplace)
            if not inplace:
                new["momentum_buffer"] = _like(p, buf)
            return new, _add_to(data, (-lr) * buf, inplace)
        return new, _add_to(data, (-lr) * g / avg, inplace)


class Adagrad(Optimizer):
    """PyTorch's Adagrad (``lr_decay``, ``weight_decay``, ``initial_accumulator_value``,
    ``eps``; defaults ``lr=1e-2, eps=1e-10``)."""

    _HYPER = {"lr": ("learning rate", 0.0, None, False),
              "lr_decay": ("lr_decay value", 0.0, None, False),
              "weight_decay": ("weight_decay value", 0.0, None, False),
              "initial_accumulator_value": ("initial_accumulator_value", 0.0, None, False),
              "eps": ("epsilon value", 0.0, None, False)}

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))

    lr = Optimizer._group_value("lr")

    def _init_group_state(self, group):
        # PyTorch makes Adagrad's state when a parameter joins
        for p in group["params"]:
            self.state[p] = {"step": _like(p, np.array(0.0, np.float32)),
                             "sum": _like(p, np.full_like(p._ndarray,
                                                        group["initial_accumulator_value"]))}

    def _update(self, group, p, data, g, state, inplace):
        lr, lr_decay, wd, eps = group["lr"], group["lr_decay"], group["weight_decay"], \
            group["eps"]
        step = _step_count(state) + 1
        if group["maximize"]:
            g = -g
        if wd:
            g = g + wd * data
        clr = lr / (1 + (step - 1) * lr_decay)
        total = _add_to(_array(state, "sum"), 1.0 * g * g, inplace)
        std = np.sqrt(total) + eps
        return ({"step": _like(p, np.array(step, np.float32)),
                 "sum": state["sum"] if inplace else _like(p, total)},
                _add_to(data, (-clr) * g / std, inplace))


del Optimizer._group_value
