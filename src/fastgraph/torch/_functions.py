"""The functions of ``fastgraph.torch`` (kept apart from ``__init__``, where the dtype names
``float``, ``int`` and ``bool`` shadow Python's)."""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from .. import ops as F
from .._core import random_state
from ..eager.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ..eager.tensor import Tensor as _FgTensor
from ..eager.tensor import tensor as _fg_tensor
from ..ops import torch_methods as _tm
from ..ops.torch_methods import Device, Size, return_types
from ._tensor import Tensor as _TorchTensor
from ._tensor import leaf as _torch_leaf
from ._tensor import with_torch_face

_DEFAULT = [np.dtype(np.float32)]


def get_default_dtype():
    """The dtype of float tensors made from Python numbers (``float32``, as in PyTorch).

        >>> torch.get_default_dtype()
        dtype('float32')
    """
    return _DEFAULT[0]


def set_default_dtype(dtype) -> None:
    """Set the dtype of float tensors made from Python numbers (``float32`` or ``float64``)."""
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64, np.float16):
        raise TypeError(f"set_default_dtype(): only floating-point types are supported as the "
                        f"default type, got {dt}")
    _DEFAULT[0] = dt


def _device(device) -> None:
    if device is not None:
        Device(device)


def _dtype(dtype):
    return None if dtype is None else np.dtype(dtype)


def _infer(data):
    """PyTorch's dtype for data given as Python values: bool, int64, the default float, or the
    default complex; NumPy arrays and Tensors keep theirs."""
    if isinstance(data, _FgTensor):
        return data.dtype
    if isinstance(data, (np.ndarray, np.generic)):
        return data.dtype
    arr = np.asarray(data)
    if arr.dtype.kind == "f":
        return _DEFAULT[0]
    if arr.dtype.kind == "c":
        return np.dtype(np.complex64 if _DEFAULT[0] == np.float32 else np.complex128)
    if arr.dtype.kind in "iu":
        return np.dtype(np.int64)
    if arr.dtype.kind == "b":
        return np.dtype(np.bool_)
    raise TypeError(f"tensor(): could not infer a dtype from {type(data).__name__} data of "
                    f"NumPy dtype {arr.dtype}")


def _leaf(arr, requires_grad):
    # (fg.tensor's checks of the dtype, then PyTorch's face)
    return with_torch_face(_fg_tensor(arr, requires_grad=builtins.bool(requires_grad)))


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """PyTorch's ``torch.tensor``: a new leaf Tensor (the data copied); Python floats become
    ``float32`` (the default dtype), ints ``int64``.

        >>> torch.tensor([1.0, 2.0]).dtype, torch.tensor([1, 2]).dtype
        (dtype('float32'), dtype('int64'))
    """
    _device(device)
    if isinstance(data, _FgTensor):
        data = data.detach()._ndarray
    elif isinstance(data, (list, tuple)):
        data = _plain(data)
    dt = _dtype(dtype) or _infer(data)
    return _leaf(np.array(data, dtype=dt), requires_grad)


def _plain(data):
    if isinstance(data, (list, tuple)):
        return [_plain(d) for d in data]
    if isinstance(data, _FgTensor):
        return data.detach()._ndarray
    return data


def as_tensor(data, dtype=None, device=None):
    """``data`` as a Tensor, sharing a NumPy array's memory where the dtype allows."""
    _device(device)
    if isinstance(data, _FgTensor):
        return data if dtype is None or np.dtype(dtype) == data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        return _torch_leaf(data if dtype is None else data.astype(np.dtype(dtype), copy=False))
    return tensor(data, dtype=dtype)


def from_numpy(array):
    """A Tensor sharing ``array``'s memory (PyTorch's ``torch.from_numpy``)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    return _torch_leaf(array)


def _size(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return _tm._shape_args(size, op)


def _factory(op, fill, random=False):
    def make(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False, generator=None):
        _device(device)
        if out is not None:
            raise TypeError(f"{op}(): out= is not supported")
        if generator is not None and not random:
            raise TypeError(f"{op}() got an unexpected keyword argument 'generator'")
        shape, dt = _size(size, op), _dtype(dtype) or _DEFAULT[0]
        arr = fill(shape, dt, (generator or default_generator)._rng()) if random \
            else fill(shape, dt)
        return _leaf(arr, requires_grad)
    make.__name__ = make.__qualname__ = op
    make.__doc__ = (f"PyTorch's ``torch.{op}(*size, dtype=None, device=None, "
                    f"requires_grad=False)`` (the default dtype ``float32``).\n\n"
                    f"        >>> torch.{op}(2, 3).shape\n        (2, 3)\n")
    return make


zeros = _factory("zeros", np.zeros)
ones = _factory("ones", np.ones)
empty = _factory("empty", np.zeros)     # (zeros: no uninitialised memory is ever handed out)
rand = _factory("rand", lambda s, dt, rng: rng.random(s).astype(dt), random=True)
randn = _factory("randn", lambda s, dt, rng: rng.standard_normal(s).astype(dt), random=True)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """``torch.full(size, value)``: the dtype from the value (a float: the default dtype)."""
    _device(device)
    dt = _dtype(dtype) or _infer(fill_value)
    return _leaf(np.full(_size((size,), "full"), fill_value, dtype=dt), requires_grad)


def _like(op, fill):
    def make(input, dtype=None, device=None, requires_grad=False, memory_format=None):
        _device(device)
        dt = _dtype(dtype) or input.dtype
        return _leaf(fill(tuple(input.shape), dt), requires_grad)
    make.__name__ = make.__qualname__ = op
    make.__doc__ = f"PyTorch's ``torch.{op}(input)``: ``input``'s shape and dtype."
    return make


zeros_like = _like("zeros_like", np.zeros)
ones_like = _like("ones_like", np.ones)
empty_like = _like("empty_like", np.zeros)
rand_like = _like("rand_like", lambda s, dt: random_state.generator().random(s).astype(dt))
randn_like = _like("randn_like",
                   lambda s, dt: random_state.generator().standard_normal(s).astype(dt))


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):
    _device(device)
    return _leaf(np.full(tuple(input.shape), fill_value, dtype=_dtype(dtype) or input.dtype),
                 requires_grad)


def randint(low, high=None, size=None, dtype=None, device=None, requires_grad=False,
            generator=None):
    """``torch.randint(high, size)`` or ``torch.randint(low, high, size)`` (int64)."""
    _device(device)
    if size is None:
        if not isinstance(high, (tuple, list)):
            raise TypeError("randint(): missing the size argument")
        low, high, size = 0, low, high
    rng = (generator or default_generator)._rng()
    return _leaf(rng.integers(low, high, size=_size((size,), "randint"))
                 .astype(_dtype(dtype) or np.int64), requires_grad)


def randperm(n, dtype=None, device=None, requires_grad=False, generator=None):
    _device(device)
    rng = (generator or default_generator)._rng()
    return _leaf(rng.permutation(int(n)).astype(_dtype(dtype) or np.int64), requires_grad)


def normal(mean, std, size=None, generator=None, dtype=None):
    """``torch.normal(mean, std, size)`` with float mean and std."""
    rng = (generator or default_generator)._rng()
    arr = rng.normal(mean, std, size=None if size is None else _size((size,), "normal"))
    return _leaf(np.asarray(arr, dtype=_dtype(dtype) or _DEFAULT[0]), False)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """``torch.arange``: int64 for whole-number arguments, else the default float dtype."""
    _device(device)
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, _FgTensor) else v for v in (start, end, step)]
    whole = builtins.all(isinstance(v, (numbers.Integral, np.integer)) for v in vals)
    dt = _dtype(dtype) or (np.dtype(np.int64) if whole else _DEFAULT[0])
    return _leaf(np.arange(*vals).astype(dt), requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """``torch.linspace(start, end, steps)`` (the default float dtype)."""
    _device(device)
    dt = _dtype(dtype) or _DEFAULT[0]
    # PyTorch's kernel, in the result's dtype: the two halves from either end
    # (``start + step*i`` and ``end - step*(steps-1-i)``)
    n = int(steps)
    if n < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {n}")
    ct = dt if dt.kind in "fc" else np.dtype(np.float64)
    a, b = ct.type(start), ct.type(end)
    step = (b - a) / ct.type(builtins.max(n - 1, 1))
    # (one rounding per element: PyTorch's vectorised loop fuses the multiply and the add; in
    # float32 the float64 product of a float32 step and a small integer is exact)
    wide = np.float64 if ct == np.float32 else np.longdouble if ct == np.float64 else ct
    i = np.arange(n).astype(wide)
    s_, a_, b_ = wide(step), wide(a), wide(b)
    vals = np.where(np.arange(n) < n // 2, a_ + s_ * i, b_ - s_ * (wide(n - 1) - i)).astype(ct)
    if n == 1:
        vals = np.array([a], dtype=ct)
    return _leaf(vals.astype(dt), requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    dt = _dtype(dtype) or _DEFAULT[0]
    return _leaf(np.logspace(start, end, int(steps), base=base).astype(dt), requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    _device(device)
    return _leaf(np.eye(int(n), None if m is None else int(m), dtype=_dtype(dtype) or _DEFAULT[0]),
                 requires_grad)


# ---- random state ------------------------------------------------------------------------------
class Generator:
    """PyTorch's ``torch.Generator``: a seeded source of random numbers for ``DataLoader`` and
    the random factories (NumPy's PCG64; its numbers are not PyTorch's).

        >>> g = torch.Generator().manual_seed(0)
    """

    def __init__(self, device="cpu"):
        _device(device)
        self._gen = None
        self._seed = None

    def manual_seed(self, seed):
        self._seed = int(seed)
        self._gen = np.random.default_rng(self._seed)
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def _rng(self):
        if self._gen is None:
            self.seed()
        return self._gen

    def get_state(self):
        return self._rng().bit_generator.state

    def set_state(self, state):
        self._rng().bit_generator.state = state


class _DefaultGenerator(Generator):
    """The process's generator: the one behind ``fg.randn`` and dropout too."""

    def manual_seed(self, seed):
        self._seed = int(seed)
        random_state.seed(self._seed)
        return self

    def _rng(self):
        return random_state.generator()


default_generator = _DefaultGenerator()


def manual_seed(seed):
    """Seed the random numbers of ``torch.randn``, ``fg.randn``, dropout and shuffling
    ``DataLoader``s without a generator.

        >>> _ = torch.manual_seed(0)
    """
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


# ---- torch-semantic functions ------------------------------------------------------------------
def _check(input, op):
    if not hasattr(input, "shape"):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")


def sum(input, dim=None, keepdim=False, dtype=None):
    """``torch.sum(x, dim=None, keepdim=False, dtype=None)``."""
    _check(input, "sum")
    return _tm._reduction(input, "sum", (), {"dim": dim, "keepdim": keepdim, "dtype": dtype})


def mean(input, dim=None, keepdim=False, dtype=None):
    _check(input, "mean")
    if dtype is None and np.dtype(input.dtype).kind not in "fc":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {input.dtype}")
    return _tm._reduction(input, "mean", (), {"dim": dim, "keepdim": keepdim, "dtype": dtype})


def prod(input, dim=None, keepdim=False, dtype=None):
    _check(input, "prod")
    return _tm._reduction(input, "prod", (), {"dim": dim, "keepdim": keepdim, "dtype": dtype})


def _minmax(name):
    def f(input, dim=None, keepdim=False, *, other=None):
        """``torch.max(x)`` (a 0-d Tensor), ``torch.max(x, dim, keepdim=False)`` (values,
        indices) or ``torch.max(x, other)`` (elementwise)."""
        _check(input, name)
        if other is None and hasattr(dim, "shape"):
            other, dim = dim, None
        if other is not None:
            return (F.maximum if name == "max" else F.minimum)(input, other)
        if dim is None:
            return getattr(F, name)(input)
        return (_tm.torch_max if name == "max" else _tm.torch_min)(input, dim, keepdim)
    f.__name__ = f.__qualname__ = name
    return f


max = _minmax("max")
min = _minmax("min")


def argmax(input, dim=None, keepdim=False):
    return _tm.TorchMethods.argmax(input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    return _tm.TorchMethods.argmin(input, dim, keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``torch.std``: unbiased (``correction=1``) unless told."""
    _check(input, "std")
    return _tm.torch_var(input, dim, unbiased, keepdim, correction, std=True)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``torch.var``: unbiased (``correction=1``) unless told."""
    _check(input, "var")
    return _tm.torch_var(input, dim, unbiased, keepdim, correction)


def sort(input, dim=-1, descending=False, stable=False):
    """``torch.sort``: ``(values, indices)``."""
    return _tm.torch_sort(input, dim, descending, stable)


def argsort(input, dim=-1, descending=False, stable=False):
    return _tm.torch_sort(input, dim, descending, stable).indices


def topk(input, k, dim=-1, largest=True, sorted=True):
    """``torch.topk``: the ``k`` largest (or smallest) along ``dim``, ``(values, indices)``."""
    return _tm.torch_topk(input, k, dim, largest, sorted)


def transpose(input, dim0, dim1):
    """``torch.transpose(x, dim0, dim1)``: swap two dimensions."""
    return _tm.torch_transpose(input, dim0, dim1)


swapaxes = swapdims = transpose


def t(input):
    return _tm.TorchMethods.t(input)


def cat(tensors, dim=0):
    """``torch.cat(tensors, dim=0)``."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    return F.concatenate(tensors, axis=_tm._check_dim(dim, tensors[0].ndim, "cat"))


concat = concatenate = cat


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack(): expected a non-empty list of Tensors")
    return F.stack(tensors, axis=_tm._check_dim(dim, tensors[0].ndim + 1, "stack"))


def split(tensor, split_size_or_sections, dim=0):
    """``torch.split``: pieces of ``split_size`` along ``dim`` (the last may be smaller), or
    of the listed sizes."""
    return _tm.torch_split(tensor, split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    return _tm.torch_chunk(input, chunks, dim)


def tile(input, dims):
    """``torch.tile(x, dims)``: ``x`` repeated ``dims[i]`` times along dimension ``i``."""
    return F.tile(input, _tm._shape_args((dims,), "tile"))


def inference_mode(mode=True):
    """``torch.inference_mode()``: ``no_grad`` (fastgraph has no separate inference mode)."""
    return no_grad() if mode else enable_grad()


def reshape(input, shape):
    return F.reshape(input, _tm._shape_args((shape,), "reshape"))


def flatten(input, start_dim=0, end_dim=-1):
    return _tm.torch_flatten(input, start_dim, end_dim)


def squeeze(input, dim=None):
    return _tm.torch_squeeze(input, dim)


def unsqueeze(input, dim):
    return _tm.torch_unsqueeze(input, dim)


def permute(input, dims):
    return _tm.TorchMethods.permute(input, dims)


def clamp(input, min=None, max=None):
    """``torch.clamp(x, min=None, max=None)``."""
    return _tm.torch_clamp(input, min, max)


clip = clamp


def mm(input, mat2):
    return _tm.TorchMethods.mm(input, mat2)


def bmm(input, mat2):
    return _tm.TorchMethods.bmm(input, mat2)


def matmul(input, other):
    return F.matmul(input, other)


def numel(input):
    return _tm.TorchMethods.numel(input)


def is_tensor(obj):
    return isinstance(obj, _FgTensor)


def is_floating_point(input):
    return np.dtype(input.dtype).kind == "f"


def pow(input, exponent):
    return F.power(input, exponent)


def add(input, other, alpha=1):
    return _tm.TorchMethods.add(input, other, alpha)


def sub(input, other, alpha=1):
    return _tm.TorchMethods.sub(input, other, alpha)


subtract = sub


def mul(input, other):
    return input * other


multiply = mul


def div(input, other, rounding_mode=None):
    return _tm.TorchMethods.div(input, other, rounding_mode)


divide = div


def neg(input):
    return -input


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return builtins.bool(np.allclose(np.asarray(input._ndarray), np.asarray(other._ndarray),
                                     rtol, atol, equal_nan))


def equal(input, other):
    a, b = np.asarray(input._ndarray), np.asarray(other._ndarray)
    return a.shape == b.shape and builtins.bool((a == b).all())


def where(condition, input=None, other=None):
    if input is None and other is None:
        return tuple(_torch_leaf(i.astype(np.int64))
                     for i in np.nonzero(np.asarray(condition._ndarray)))
    return F.where(condition, input, other)


__all__ = ["get_default_dtype", "set_default_dtype", "tensor", "as_tensor", "from_numpy", "zeros",
           "ones", "empty", "rand", "randn", "full", "zeros_like", "ones_like", "empty_like",
           "rand_like", "randn_like", "full_like", "randint", "randperm", "normal", "arange",
           "linspace", "logspace", "eye", "Generator", "default_generator", "manual_seed",
           "seed", "initial_seed", "sum", "mean", "prod", "max", "min", "argmax", "argmin",
           "std", "var", "sort", "argsort", "topk", "transpose", "swapaxes", "swapdims", "t",
           "cat", "concat", "concatenate", "stack", "split", "chunk", "tile", "inference_mode",
           "reshape", "flatten",
           "squeeze", "unsqueeze", "permute", "clamp", "clip", "mm", "bmm", "matmul", "numel",
           "is_tensor", "is_floating_point", "pow", "add", "sub", "subtract", "mul", "multiply",
           "div", "divide", "neg", "allclose", "equal", "where", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "Size", "return_types", "Device"]
