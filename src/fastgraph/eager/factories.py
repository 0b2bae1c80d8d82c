"""Tensor factories (``zeros ones full arange eye zeros_like ones_like rand randn``) and
``fg.random.seed``.  Shapes are a tuple or separate ints: ``fg.zeros((2, 3))``, ``fg.randn(2, 3)``.
"""
from __future__ import annotations

import numpy as np

from .._core import random_state
from .._core.shapes import as_int, check_dims
from .tensor import Tensor, tensor

__all__ = ["zeros", "ones", "full", "arange", "eye", "zeros_like", "ones_like", "rand", "randn",
           "seed"]

def seed(value: int) -> None:
    """Seed the generator behind ``fg.rand``/``fg.randn`` and dropout's masks (reproducible
    results)."""
    random_state.seed(value)


def _shape(shape, op: str) -> tuple:
    """Separate ints or one tuple/list of ints; floats are a TypeError naming ``op`` (as in
    NumPy: ``fg.zeros(2.5)`` is not ``fg.zeros(2)``)."""
    if len(shape) == 1 and (isinstance(shape[0], (tuple, list)) or (
            isinstance(shape[0], np.ndarray) and shape[0].ndim == 1)):
        shape = tuple(shape[0])
    try:
        dims = tuple([as_int(d, op, "shape") for d in shape])
    except TypeError:
        raise TypeError(f"{op}: shape must be ints or one tuple of ints, got "
                        f"{shape[0] if len(shape) == 1 else shape!r}") from None
    return check_dims(dims, op)


def _make(arr: np.ndarray, requires_grad: bool) -> Tensor:
    return tensor(arr, requires_grad=requires_grad)


def zeros(*shape, dtype=None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros: ``fg.zeros(2, 3)``."""
    return _make(np.zeros(_shape(shape, "zeros"), dtype=dtype or np.float64), requires_grad)


def ones(*shape, dtype=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones: ``fg.ones((2, 3))``."""
    return _make(np.ones(_shape(shape, "ones"), dtype=dtype or np.float64), requires_grad)


def full(shape, fill_value, dtype=None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value``."""
    return _make(np.full(_shape((shape,), "full"), fill_value, dtype=dtype), requires_grad)


def arange(*args, dtype=None, requires_grad: bool = False) -> Tensor:
    """``np.arange`` as a tensor."""
    return _make(np.arange(*args, dtype=dtype), requires_grad)


def eye(n: int, m: int | None = None, dtype=None, requires_grad: bool = False) -> Tensor:
    """Identity matrix."""
    return _make(np.eye(n, m, dtype=dtype or np.float64), requires_grad)


def zeros_like(x, dtype=None, requires_grad: bool = False) -> Tensor:
    """Zeros of ``x``'s shape and dtype (``x`` a Tensor, array, list or scalar, as
    ``np.zeros_like``): ``fg.zeros_like([1.0, 2.0])``."""
    return _make(np.zeros(np.shape(x), dtype=dtype or _dtype(x)), requires_grad)


def ones_like(x, dtype=None, requires_grad: bool = False) -> Tensor:
    """Ones of ``x``'s shape and dtype (``x`` a Tensor, array, list or scalar)."""
    return _make(np.ones(np.shape(x), dtype=dtype or _dtype(x)), requires_grad)


def _dtype(x):
    # np.result_type reads a list as dtype descriptions, not values: np.asarray it instead
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def rand(*shape, dtype=None, requires_grad: bool = False) -> Tensor:
    """Uniform [0, 1) samples from the seedable generator (``fg.random.seed``)."""
    return _make(random_state.generator().random(_shape(shape, "rand"))
                 .astype(dtype or np.float64, copy=False), requires_grad)


def randn(*shape, dtype=None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples from the seedable generator (``fg.random.seed``)."""
    return _make(random_state.generator().standard_normal(_shape(shape, "randn"))
                 .astype(dtype or np.float64, copy=False), requires_grad)
