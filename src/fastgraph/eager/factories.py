"""Tensor factories (``zeros ones full arange eye zeros_like ones_like rand randn``) and
``fg.random.seed``.  Shapes are a tuple or separate ints: ``fg.zeros((2, 3))``, ``fg.randn(2, 3)``.
"""
from __future__ import annotations

import numpy as np

from .tensor import Tensor, tensor

__all__ = ["zeros", "ones", "full", "arange", "eye", "zeros_like", "ones_like", "rand", "randn",
           "seed"]

_rng = np.random.default_rng()


def seed(value: int) -> None:
    """Seed the generator behind ``fg.rand``/``fg.randn`` (reproducible results)."""
    global _rng
    _rng = np.random.default_rng(value)


def _shape(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    try:
        return tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"shape must be ints or one tuple of ints, got {shape!r}") from None


def _make(arr: np.ndarray, requires_grad: bool) -> Tensor:
    return tensor(arr, requires_grad=requires_grad)


def zeros(*shape, dtype=None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros: ``fg.zeros(2, 3)``."""
    return _make(np.zeros(_shape(shape), dtype=dtype or np.float64), requires_grad)


def ones(*shape, dtype=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones: ``fg.ones((2, 3))``."""
    return _make(np.ones(_shape(shape), dtype=dtype or np.float64), requires_grad)


def full(shape, fill_value, dtype=None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value``."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return _make(np.full(shape, fill_value, dtype=dtype), requires_grad)


def arange(*args, dtype=None, requires_grad: bool = False) -> Tensor:
    """``np.arange`` as a tensor."""
    return _make(np.arange(*args, dtype=dtype), requires_grad)


def eye(n: int, m: int | None = None, dtype=None, requires_grad: bool = False) -> Tensor:
    """Identity matrix."""
    return _make(np.eye(n, m, dtype=dtype or np.float64), requires_grad)


def zeros_like(x, dtype=None, requires_grad: bool = False) -> Tensor:
    return _make(np.zeros(np.shape(x), dtype=dtype or _dtype(x)), requires_grad)


def ones_like(x, dtype=None, requires_grad: bool = False) -> Tensor:
    return _make(np.ones(np.shape(x), dtype=dtype or _dtype(x)), requires_grad)


def _dtype(x):
    return x.dtype if hasattr(x, "dtype") else np.result_type(x)


def rand(*shape, dtype=None, requires_grad: bool = False) -> Tensor:
    """Uniform [0, 1) samples from the seedable generator (``fg.random.seed``)."""
    return _make(_rng.random(_shape(shape)).astype(dtype or np.float64, copy=False), requires_grad)


def randn(*shape, dtype=None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples from the seedable generator (``fg.random.seed``)."""
    return _make(_rng.standard_normal(_shape(shape)).astype(dtype or np.float64, copy=False),
                 requires_grad)
