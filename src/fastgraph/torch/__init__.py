"""``fastgraph.torch``: PyTorch's names and semantics over fastgraph's operations, so that
``import fastgraph.torch as torch`` runs ordinary PyTorch CPU programs.

    >>> import fastgraph.torch as torch
    >>> x = torch.linspace(-1, 1, 5, dtype=torch.float64, requires_grad=True)
    >>> y = (x ** 3).sum(); y.backward(); x.grad
    tensor([3.  , 0.75, 0.  , 0.75, 3.  ])

Tensors are fastgraph's own ``Tensor`` (NumPy values on the eager tape); dtypes are NumPy's
(``torch.float32 is np.dtype("float32")``); the default float dtype is ``float32``; only the
CPU exists.  The name table and the differences from PyTorch are in docs/pytorch.md.
"""
from __future__ import annotations

import builtins as _builtins

import numpy as _np

from .. import ops as _F
from .._core import REGISTRY as _REGISTRY
from .._core import namespace as _namespace
from ..eager.tensor import Tensor as _FgTensor
from . import _functions
from ._functions import *  # noqa: F401,F403
from ._functions import __all__ as _function_names
from .serialization import load, save

# ---- dtypes (NumPy's dtype objects under PyTorch's names) ----------------------------------
float32 = float = _np.dtype(_np.float32)
float64 = double = _np.dtype(_np.float64)
float16 = half = _np.dtype(_np.float16)
complex64 = cfloat = _np.dtype(_np.complex64)
complex128 = cdouble = _np.dtype(_np.complex128)
int64 = long = _np.dtype(_np.int64)
int32 = int = _np.dtype(_np.int32)
int16 = short = _np.dtype(_np.int16)
int8 = _np.dtype(_np.int8)
uint8 = _np.dtype(_np.uint8)
bool = _np.dtype(_np.bool_)
dtype = _np.dtype

device = _functions.Device


class _TensorType(type):
    """``isinstance(x, torch.Tensor)`` for fastgraph's Tensors; ``torch.Tensor.add`` and the
    other method lookups are ``fg.Tensor``'s."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _FgTensor)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _FgTensor)

    def __getattr__(cls, name):
        return getattr(_FgTensor, name)


class Tensor(metaclass=_TensorType):
    """PyTorch's ``torch.Tensor``: ``isinstance`` checks, and the legacy constructor
    ``torch.Tensor(data)`` (the default float dtype) or ``torch.Tensor(*size)`` (zeros).

        >>> torch.Tensor([-4.0]).double().dtype
        dtype('float64')
    """

    def __new__(cls, *args):
        if len(args) == 1 and not isinstance(args[0], (_builtins.int, _np.integer)):
            return _functions.tensor(args[0], dtype=_functions.get_default_dtype())
        return _functions.zeros(*args)


FloatTensor = DoubleTensor = LongTensor = Tensor


class _Cuda:
    """``torch.cuda``: fastgraph has no GPU."""

    @staticmethod
    def is_available():
        return False

    @staticmethod
    def device_count():
        return 0

    @staticmethod
    def manual_seed(seed):
        pass

    manual_seed_all = manual_seed


cuda = _Cuda()


class _Backends:
    class mps:
        @staticmethod
        def is_available():
            return False


backends = _Backends()

# ---- elementwise operations: fastgraph's, under their NumPy names and PyTorch's ----------------
_ELEMENTWISE = {n: f for n, f in _namespace("fastgraph").items()
                if getattr(_REGISTRY.get(n), "elementwise", False) and n not in _function_names}
globals().update(_ELEMENTWISE)

_TORCH_ALIASES = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "atan2": "arctan2",
                  "acosh": "arccosh", "asinh": "arcsinh", "atanh": "arctanh", "eq": "equal",
                  "ne": "not_equal", "gt": "greater", "ge": "greater_equal", "lt": "less",
                  "le": "less_equal", "round": "round", "rsqrt": "rsqrt"}
for _alias, _target in _TORCH_ALIASES.items():
    if hasattr(_F, _target):
        globals()[_alias] = getattr(_F, _target)
del _alias, _target


def logsumexp(input, dim, keepdim=False):
    """``torch.logsumexp(x, dim, keepdim=False)``."""
    return _F.logsumexp(input, axis=_functions._tm._dims(dim, input.ndim, "logsumexp"),
                        keepdims=keepdim)


def softmax(input, dim, dtype=None):
    """``torch.softmax(x, dim)``."""
    x = input if dtype is None else input.to(dtype)
    return _F.softmax(x, axis=_functions._tm._check_dim(dim, x.ndim, "softmax"))


def log_softmax(input, dim, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return _F.log_softmax(x, axis=_functions._tm._check_dim(dim, x.ndim, "log_softmax"))


def cumsum(input, dim, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return _F.cumsum(x, axis=_functions._tm._check_dim(dim, x.ndim, "cumsum"))


def cumprod(input, dim, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return _F.cumprod(x, axis=_functions._tm._check_dim(dim, x.ndim, "cumprod"))


def abs(input):
    return _F.abs(input)


def einsum(equation, *operands):
    """``torch.einsum(equation, *operands)`` (or a list of operands)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return _F.einsum(equation, *operands)


from . import autograd, optim, utils  # noqa: E402
from . import nn  # noqa: E402,F401
