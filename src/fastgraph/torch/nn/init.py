"""``nn.init``: PyTorch's parameter initialisations (``torch.nn.init``), in place on a Tensor's
array and drawn from fastgraph's seeded generator (``fg.random.seed``), so a seeded model starts
from the same distributions as PyTorch's recipes (not the same random stream as torch).

    >>> w = nn.Parameter(np.empty((3, 4), np.float32))
    >>> nn.init.kaiming_uniform_(w, a=math.sqrt(5)).shape
    (3, 4)
"""
from __future__ import annotations

import math

import numpy as np

from ..._core import random_state
from ...eager.grad_mode import no_grad
from ...eager.tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "trunc_normal_", "orthogonal_", "_calculate_fan_in_and_fan_out"]


def _array(tensor, name: str) -> np.ndarray:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{name}: expected a Tensor, got {type(tensor).__name__}")
    return tensor._ndarray


def _fill(tensor, values: np.ndarray) -> Tensor:
    d = tensor._ndarray
    with no_grad():
        np.copyto(d, values, casting="unsafe")
    tensor._bump_version()
    return tensor


#: the NumPy generator to draw from: the process's (seeded by ``torch.manual_seed`` and
#: ``fg.random.seed``), a ``torch.Generator``'s, or a NumPy ``Generator`` given directly
_rng = random_state.generator_for


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for ``nonlinearity`` (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    shape = tensor.shape
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def _fan(tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with values from U(a, b)."""
    d = _array(tensor, "uniform_")
    return _fill(tensor, _rng(generator).uniform(a, b, d.shape))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with values from N(mean, std^2)."""
    d = _array(tensor, "normal_")
    return _fill(tensor, _rng(generator).normal(mean, std, d.shape))


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2) values redrawn until they lie in [a, b]."""
    d = _array(tensor, "trunc_normal_")
    rng = _rng(generator)
    out = rng.normal(mean, std, d.shape)
    bad = (out < a) | (out > b)
    while bad.any():
        out[bad] = rng.normal(mean, std, int(bad.sum()))
        bad = (out < a) | (out > b)
    return _fill(tensor, out)


def constant_(tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    _array(tensor, "constant_")
    return _fill(tensor, np.asarray(val))


def ones_(tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor) -> Tensor:
    return constant_(tensor, 0.0)


def eye_(tensor) -> Tensor:
    """The identity matrix (a 2-d tensor)."""
    d = _array(tensor, "eye_")
    if d.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*d.shape))


def xavier_uniform_(tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot's U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot's N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He's U(-bound, bound), ``bound = gain * sqrt(3 / fan)``; PyTorch's Linear and Conv
    weights use ``a=sqrt(5)``, which makes it U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He's N(0, std^2), ``std = gain / sqrt(fan)``."""
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian one."""
    d = _array(tensor, "orthogonal_")
    if d.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows, cols = d.shape[0], d.size // d.shape[0]
    flat = _rng(generator).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(d.shape))
