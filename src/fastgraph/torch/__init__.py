"""``fastgraph.torch``: PyTorch's names and semantics over fastgraph's operations, so that
``import fastgraph.torch as torch`` runs ordinary PyTorch CPU programs.

    >>> import fastgraph.torch as torch
    >>> x = torch.linspace(-1, 1, 5, dtype=torch.float64, requires_grad=True)
    >>> y = (x ** 3).sum(); y.backward(); x.grad
    tensor([3.  , 0.75, 0.  , 0.75, 3.  ])

Tensors are fastgraph's own (NumPy values on the eager tape) with PyTorch's face: the
factories here make :class:`Tensor`, a subclass of ``fastgraph.Tensor`` whose methods mean what
PyTorch's mean (``x.max(1)`` is ``(values, indices)``, ``x.std()`` unbiased), and every result of
an operation on one has it too; the top-level ``fastgraph`` keeps NumPy's meanings.  Dtypes are
NumPy's (``torch.float32 is np.dtype("float32")``); the default float dtype is ``float32``; only
the CPU exists.  The name table and the differences from PyTorch are in docs/pytorch.md.
"""
from __future__ import annotations


import numpy as _np

from .. import ops as _F
from .._core import REGISTRY as _REGISTRY
from .._core import namespace as _namespace
from . import _functions
from ._tensor import Tensor
from ._functions import *  # noqa: F401,F403
from ._functions import __all__ as _function_names
from .serialization import load, save
from ._compile import compile  # noqa: A004  (PyTorch's name)

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


def _along_dim(name):
    method = getattr(_functions._tm.TorchFace, name)

    def f(input, dim, dtype=None):
        return method(input, dim, dtype)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``torch.{name}(x, dim, dtype=None)``."
    return f


softmax = _along_dim("softmax")
log_softmax = _along_dim("log_softmax")
cumsum = _along_dim("cumsum")
cumprod = _along_dim("cumprod")


def abs(input):
    return _F.abs(input)


def einsum(equation, *operands):
    """``torch.einsum(equation, *operands)`` (or a list of operands)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return _F.einsum(equation, *operands)


from . import autograd, optim, utils  # noqa: E402
from . import nn  # noqa: E402,F401
