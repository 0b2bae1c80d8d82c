"""PyTorch's method names on ``Tensor`` and ``Node`` (``x.view(2, 3)``, ``x.unsqueeze(0)``,
``x.max(dim=1)``...), composed of fastgraph operations, so a PyTorch program's method calls run
on fastgraph's values and differentiate like every other operation.

Where PyTorch and NumPy give one name two meanings, the NumPy meaning stays and PyTorch's is
chosen by PyTorch's own keywords (``dim=``, ``keepdim=``, ``unbiased=``, ``correction=``,
``descending=``): ``x.max(axis=1)`` and ``x.max(1)`` are NumPy's (the values),
``x.max(dim=1)`` is PyTorch's (values and indices).  ``x.size`` is the element count and
``x.size()`` PyTorch's shape.  The one call whose meaning changes is ``x.transpose(i, j)`` with
two axes, which swaps them (PyTorch); NumPy reads it as a permutation, and the two readings
differ only for the identity permutation of a 2-D array.  The choices are recorded in
docs/decisions.md ("PyTorch's methods on fastgraph's Tensor").

    >>> x = fg.tensor([[1.0, 5.0], [4.0, 2.0]])
    >>> x.max(dim=1).indices
    tensor([1, 0])
"""
from __future__ import annotations

import collections
import numbers

import numpy as np

from .. import ops as F

__all__ = ["TorchMethods", "TorchFace", "Size", "SizeValue", "return_types", "new_leaf_like"]

_TORCH_REDUCE_KEYS = ("dim", "keepdim")


class Size(tuple):
    """PyTorch's ``torch.Size``: the shape, a tuple with ``numel()``.

        >>> fg.zeros((2, 3)).size()
        torch.Size([2, 3])
    """

    __slots__ = ()

    def numel(self) -> int:
        return int(np.prod(self, dtype=np.int64))

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"


class SizeValue(int):
    """``x.size``: the element count, as NumPy's ``ndarray.size`` (an ``int``), that can also
    be called as PyTorch's ``x.size()`` (the shape, a :class:`Size`) or ``x.size(d)`` (one
    dimension).

        >>> x = fg.zeros((2, 3))
        >>> x.size, x.size(), x.size(-1)
        (6, torch.Size([2, 3]), 3)
    """

    def __new__(cls, count, shape):
        self = super().__new__(cls, count)
        self._shape = shape
        return self

    def __call__(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[_check_dim(dim, len(self._shape), "size")]

    def __reduce__(self):        # pickles, copies and JSON see a plain int
        return (int, (int(self),))


def _make_return_type(name):
    t = collections.namedtuple(name, ["values", "indices"])
    t.__module__ = "torch.return_types"
    return t


class return_types:
    """PyTorch's ``torch.return_types``: the ``(values, indices)`` named tuples."""
    max = _make_return_type("max")
    min = _make_return_type("min")
    sort = _make_return_type("sort")
    topk = _make_return_type("topk")
    kthvalue = _make_return_type("kthvalue")
    median = _make_return_type("median")


def _check_dim(dim, ndim, op):
    if isinstance(dim, bool) or not isinstance(dim, (numbers.Integral, np.integer)):
        raise TypeError(f"{op}(): argument 'dim' must be an int, not {type(dim).__name__}")
    d = int(dim)
    n = max(ndim, 1)
    if not -n <= d < n:
        # (NumPy's AxisError is an IndexError, PyTorch's type, and a ValueError)
        raise np.exceptions.AxisError(f"{op}(): dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {d})")
    return d % n


def _dims(dim, ndim, op):
    """``dim`` as NumPy's ``axis``: None, an int or a tuple of ints, checked."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(_check_dim(d, ndim, op) for d in dim)
    return _check_dim(dim, ndim, op)


def _shape_args(shape, op):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, (numbers.Integral, np.integer)):
            raise TypeError(f"{op}(): size must be ints or one tuple of ints, got "
                            f"{type(s).__name__} {s!r}")
        out.append(int(s))
    return tuple(out)


def _values_indices(x, dim, keepdim, op, arg, reduce):
    d = _check_dim(dim, x.ndim, op)
    if x.ndim == 0:
        return getattr(return_types, op)(F.reshape(x, ()), _zero_index(x))
    idx = arg(x, axis=d, keepdims=True)
    values = F.take_along_axis(x, idx, axis=d)
    if not keepdim:
        values = F.squeeze(values, axis=d)
        idx = F.squeeze(idx, axis=d)
    return getattr(return_types, op)(values, F.astype(idx, np.int64))


def _zero_index(x):
    """The index of a 0-d tensor's only element: ``0``, int64, not differentiable."""
    return F.astype(F.astype(x, np.bool_) & False, np.int64)


def _eager_data(x, op):
    d = getattr(x, "_data", None)
    if d is None:
        raise TypeError(f"{op}() with indices needs an eager Tensor (its order is read from the "
                        f"values); in a graph use fg.sort for the values")
    return np.asarray(d)


def torch_max(x, dim, keepdim=False):
    return _values_indices(x, dim, keepdim, "max", F.argmax, F.max)


def torch_min(x, dim, keepdim=False):
    return _values_indices(x, dim, keepdim, "min", F.argmin, F.min)


def torch_sort(x, dim=-1, descending=False, stable=False):
    d = _check_dim(dim, x.ndim, "sort")
    if x.ndim == 0:
        return return_types.sort(F.reshape(x, ()), _zero_index(x))
    data = _eager_data(x, "sort")
    # a stable sort of the negated values keeps equal elements in their order when descending,
    # as PyTorch's stable sort does
    key = -data if descending and data.dtype.kind != "b" else (~data if descending else data)
    idx = np.argsort(key, axis=d, kind="stable").astype(np.int64)
    return return_types.sort(F.take_along_axis(x, idx, axis=d), _index_tensor(x, idx))


def _index_tensor(like, idx):
    return new_leaf_like(like, idx)


def torch_topk(x, k, dim=-1, largest=True, sorted=True):
    d = _check_dim(dim, x.ndim, "topk")
    n = 1 if x.ndim == 0 else x.shape[d]
    if isinstance(k, bool) or not isinstance(k, (numbers.Integral, np.integer)):
        raise TypeError(f"topk(): argument 'k' must be an int, not {type(k).__name__}")
    if not 0 <= int(k) <= n:
        raise RuntimeError(f"topk(): selected index k={k} out of range for a dimension of "
                           f"size {n}")
    if x.ndim == 0:
        return return_types.topk(F.reshape(x, ()), _zero_index(x))
    data = _eager_data(x, "topk")
    key = -data if largest else data
    idx = np.argsort(key, axis=d, kind="stable")
    idx = np.take(idx, np.arange(int(k)), axis=d).astype(np.int64)
    return return_types.topk(F.take_along_axis(x, idx, axis=d), _index_tensor(x, idx))


def torch_var(x, dim=None, unbiased=None, keepdim=False, correction=None, std=False):
    name = "std" if std else "var"
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}(): give unbiased= or correction=, not both")
    ddof = 1 if unbiased is None and correction is None else (
        int(bool(unbiased)) if unbiased is not None else correction)
    if np.dtype(x.dtype).kind not in "fc":
        raise RuntimeError(f"{name}(): only floating-point and complex dtypes are supported, "
                           f"got {np.dtype(x.dtype)}")
    axes = _dims(dim, x.ndim, name)
    f = F.std if std else F.var
    return f(x, axis=axes, keepdims=bool(keepdim), ddof=ddof)


def torch_flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return F.reshape(x, (1,))
    s = _check_dim(start_dim, x.ndim, "flatten")
    e = _check_dim(end_dim, x.ndim, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = tuple(x.shape)
    merged = shape[s:e + 1]
    # a graph's unknown dimension (None: a placeholder's batch) is reshape's inferred one (-1)
    target = tuple(-1 if d is None else d for d in shape[:s] + (
        None if None in merged else int(np.prod(merged, dtype=np.int64)),) + shape[e + 1:])
    if target.count(-1) > 1:
        raise ValueError(f"flatten(): node {getattr(x, 'name', '')!r} has more than one "
                         f"unknown dimension after flattening (static shape {shape})")
    return F.reshape(x, target)


def torch_expand(x, *sizes):
    sizes = _shape_args(sizes, "expand")
    shape = tuple(x.shape)
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand(): the number of sizes provided ({len(sizes)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({len(shape)})")
    lead = len(sizes) - len(shape)
    target = []
    for i, s in enumerate(sizes):
        if s == -1:
            if i < lead:
                raise RuntimeError(f"expand(): -1 is not allowed in a leading, non-existing "
                                   f"dimension {i}")
            s = shape[i - lead]
        target.append(s)
    return F.broadcast_to(x, tuple(target))


def torch_repeat(x, *sizes):
    sizes = _shape_args(sizes, "repeat")
    if len(sizes) < x.ndim:
        raise RuntimeError(f"repeat(): number of dimensions of repeat dims ({len(sizes)}) can "
                           f"not be smaller than number of dimensions of tensor ({x.ndim})")
    return F.tile(x, sizes)


def torch_transpose(x, dim0, dim1):
    n = x.ndim
    if n == 0:
        _check_dim(dim0, 0, "transpose"), _check_dim(dim1, 0, "transpose")
        return x
    return F.swapaxes(x, _check_dim(dim0, n, "transpose"), _check_dim(dim1, n, "transpose"))


def torch_squeeze(x, dim=None):
    if dim is None:
        return F.squeeze(x)
    axes = _dims(dim, x.ndim, "squeeze")
    axes = axes if isinstance(axes, tuple) else (axes,)
    keep = tuple(a for a in axes if x.ndim and x.shape[a] == 1)   # PyTorch: others are kept
    return F.squeeze(x, axis=keep) if keep else x


def torch_unsqueeze(x, dim):
    return F.expand_dims(x, _check_dim(dim, x.ndim + 1, "unsqueeze"))


def torch_split(x, split_size_or_sections, dim=0):
    """PyTorch's ``split``: pieces of ``split_size`` (the last may be smaller), or of the
    sizes listed."""
    d = _check_dim(dim, x.ndim, "split")
    n = x.shape[d]
    s = split_size_or_sections
    if isinstance(s, (list, tuple)):
        sizes = _shape_args((tuple(s),), "split")
        if sum(sizes) != n or any(v < 0 for v in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={list(sizes)}")
    else:
        (size,) = _shape_args((s,), "split")
        if size <= 0 and n:
            raise RuntimeError(f"split(): split_size must be positive, got {size}")
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if n else [0]
    bounds = list(np.cumsum(sizes)[:-1])
    return tuple(F.split(x, [int(b) for b in bounds], axis=d))


def torch_chunk(x, chunks, dim=0):
    (chunks,) = _shape_args((chunks,), "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = x.shape[_check_dim(dim, x.ndim, "chunk")]
    return torch_split(x, max(-(-n // chunks), 1), dim)


def torch_norm(x, p="fro", dim=None, keepdim=False):
    axes = _dims(dim, x.ndim, "norm")
    if p == "fro" or p == 2 or p is None:
        if axes is None or isinstance(axes, int):
            flat = x if axes is not None or x.ndim <= 1 else F.reshape(x, (-1,))
            out = F.norm(flat, None, axes, bool(keepdim))
            if axes is None and keepdim:
                out = F.reshape(out, (1,) * x.ndim)
            return out
        return F.sqrt(F.sum(x * x, axis=axes, keepdims=bool(keepdim)))
    a = F.abs(x)
    if p == float("inf"):
        return F.max(a, axis=axes, keepdims=bool(keepdim))
    if p == float("-inf"):
        return F.min(a, axis=axes, keepdims=bool(keepdim))
    if p == 1:
        return F.sum(a, axis=axes, keepdims=bool(keepdim))
    if p == 0:
        return F.sum(F.astype(x != 0, x.dtype), axis=axes, keepdims=bool(keepdim))
    return F.sum(a ** p, axis=axes, keepdims=bool(keepdim)) ** (1.0 / p)


def torch_clamp(x, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("clamp(): at least one of 'min' or 'max' must not be None")
    # fg.clip is PyTorch's clamp: max wins where min > max, and the gradient passes at the
    # bounds themselves; with one bound and integers, maximum/minimum keep the dtype (fg.clip
    # fills the missing bound with an infinity, a float)
    if np.dtype(x.dtype).kind in "iub" and (min is None or max is None):
        bound = max if min is None else min
        if not (isinstance(bound, (float, np.floating)) or np.dtype(getattr(
                bound, "dtype", np.int64)).kind in "fc"):
            return (F.minimum if min is None else F.maximum)(x, bound)
    return F.clip(x, min, max)


def _reduce_kwargs(op, args, kwargs):
    """Whether a reduction's call uses PyTorch's keywords; then ``(axis, keepdims)``."""
    if not any(k in kwargs for k in _TORCH_REDUCE_KEYS):
        return None
    if "axis" in kwargs or "keepdims" in kwargs:
        raise TypeError(f"{op}(): give PyTorch's dim=/keepdim= or NumPy's axis=/keepdims=, "
                        f"not both")
    return kwargs


def _numpy_or_torch_keywords(name):
    """A reduction method of NumPy's face: NumPy's call, or PyTorch's with ``dim=``/``keepdim=``."""
    def method(self, *args, **kwargs):
        if not kwargs:                       # (NumPy's call: no detour)
            return _NUMPY[name](self, *args)
        return _reduction(self, name, args, kwargs)
    method.__name__ = method.__qualname__ = name
    return method


class TorchMethods:
    """Mixin: PyTorch's method forms (see the module's docstring for the clashes' rules)."""

    __slots__ = ()

    # ---- metadata -----------------------------------------------------------------------
    def dim(self) -> int:
        return self.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    nelement = numel

    def element_size(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def device(self):
        return _CPU

    @property
    def mT(self):
        return F.swapaxes(self, -1, -2)

    # ---- dtype conversion -----------------------------------------------------------------
    def double(self):
        return F.astype(self, np.float64)

    def float(self):
        return F.astype(self, np.float32)

    def half(self):
        return F.astype(self, np.float16)

    def long(self):
        return F.astype(self, np.int64)

    def int(self):
        return F.astype(self, np.int32)

    def short(self):
        return F.astype(self, np.int16)

    def bool(self):
        return F.astype(self, np.bool_)

    def type_as(self, other):
        return F.astype(self, other.dtype)

    def to(self, *args, **kwargs):
        """``x.to(dtype)``, ``x.to("cpu")``, ``x.to(other)``, ``x.to(device, dtype)``."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("copy", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument {next(iter(kwargs))!r}")
        for a in args:
            if hasattr(a, "dtype") and hasattr(a, "shape"):
                dtype = a.dtype
            elif isinstance(a, (str, Device)):
                device = a
            else:
                dtype = a
        if device is not None:
            Device(device)
        if dtype is None:
            return self
        dt = np.dtype(dtype)
        return self if dt == self.dtype else F.astype(self, dt)

    def cpu(self):
        return self

    def contiguous(self):
        return self

    # ---- shapes ---------------------------------------------------------------------------
    def view(self, *shape):
        """PyTorch's ``view(*shape)`` (a reshape); ``view(dtype)`` reinterprets as NumPy's."""
        if len(shape) == 1 and not isinstance(shape[0], (tuple, list, numbers.Integral,
                                                         np.integer)):
            return _view_dtype(self, shape[0])
        return F.reshape(self, _shape_args(shape, "view"))

    def view_as(self, other):
        return F.reshape(self, tuple(other.shape))

    def reshape_as(self, other):
        return F.reshape(self, tuple(other.shape))

    def unsqueeze(self, dim):
        return torch_unsqueeze(self, dim)

    def permute(self, *dims):
        dims = _shape_args(dims, "permute")
        if len(dims) != self.ndim:
            raise RuntimeError(f"permute(): number of dims don't match in permute (the tensor "
                               f"has {self.ndim}, {len(dims)} given)")
        return F.transpose(self, tuple(_check_dim(d, self.ndim, "permute") for d in dims))

    def expand(self, *sizes):
        return torch_expand(self, *sizes)

    def expand_as(self, other):
        return F.broadcast_to(self, tuple(other.shape))

    def t(self):
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.ndim}D")
        return F.transpose(self) if self.ndim == 2 else self

    def tile(self, *reps):
        return F.tile(self, _shape_args(reps, "tile"))

    def flatten(self, *args, **kwargs):
        """PyTorch's ``flatten(start_dim=0, end_dim=-1)``; with no argument or NumPy's
        ``order`` NumPy's (a flat copy)."""
        if (args and not isinstance(args[0], str)) or "start_dim" in kwargs or \
                "end_dim" in kwargs:
            return torch_flatten(self, *args, **kwargs)
        return _NUMPY["flatten"](self, *args, **kwargs)

    def transpose(self, *axes, **kwargs):
        """``x.transpose(d0, d1)`` swaps two axes (PyTorch); ``x.transpose()``,
        ``x.transpose(axes)`` and ``x.transpose(*axes)`` with more axes are NumPy's."""
        if "dim0" in kwargs or "dim1" in kwargs:
            return torch_transpose(self, *axes, **kwargs)
        if kwargs:
            raise TypeError(f"transpose() got an unexpected keyword argument "
                            f"{next(iter(kwargs))!r}")
        if len(axes) == 2 and all(isinstance(a, (numbers.Integral, np.integer)) for a in axes):
            return torch_transpose(self, *axes)
        return _NUMPY["transpose"](self, *axes)

    def squeeze(self, *args, **kwargs):
        """``x.squeeze(d)`` drops dimension ``d`` if its size is 1 and leaves it otherwise
        (PyTorch; NumPy would raise there, so no NumPy call changes meaning)."""
        if "dim" in kwargs:
            return torch_squeeze(self, kwargs.pop("dim"), **kwargs)
        if len(args) == 1 and not kwargs and args[0] is not None:
            return torch_squeeze(self, args[0])
        return _NUMPY["squeeze"](self, *args, **kwargs)

    def split(self, split_size_or_sections, dim=0):
        return torch_split(self, split_size_or_sections, dim)

    def chunk(self, chunks, dim=0):
        return torch_chunk(self, chunks, dim)

    # ---- arithmetic -------------------------------------------------------------------------
    def add(self, other, alpha=1):
        return self + (other if alpha == 1 else other * alpha)

    def sub(self, other, alpha=1):
        return self - (other if alpha == 1 else other * alpha)

    def mul(self, other):
        return self * other

    def div(self, other, rounding_mode=None):
        if rounding_mode is None:
            return self / other
        if rounding_mode == "floor":
            return F.floor_divide(self, other)
        if rounding_mode == "trunc":
            return F.trunc(self / other) if np.dtype(self.dtype).kind in "fc" else \
                F.astype(F.trunc(self / other), self.dtype)
        raise ValueError(f"div(): rounding_mode must be None, 'trunc' or 'floor', not "
                         f"{rounding_mode!r}")

    def neg(self):
        return -self

    def pow(self, exponent):
        return self ** exponent

    def matmul(self, other):
        return F.matmul(self, other)

    def mm(self, other):
        if self.ndim != 2 or getattr(other, "ndim", 0) != 2:
            raise RuntimeError(f"mm(): both arguments must be 2-D matrices (got "
                               f"{self.ndim}-D and {getattr(other, 'ndim', 0)}-D)")
        return F.matmul(self, other)

    def bmm(self, other):
        if self.ndim != 3 or getattr(other, "ndim", 0) != 3:
            raise RuntimeError(f"bmm(): both arguments must be 3-D batches of matrices (got "
                               f"{self.ndim}-D and {getattr(other, 'ndim', 0)}-D)")
        return F.matmul(self, other)

    def clamp(self, min=None, max=None):
        return torch_clamp(self, min, max)

    def rsqrt(self):
        return F.rsqrt(self)

    def norm(self, p="fro", dim=None, keepdim=False):
        """PyTorch's ``x.norm(p=2, dim=None, keepdim=False)`` (``"fro"``: the 2-norm of all
        elements; ``inf``; any other ``p`` of the elements along ``dim``)."""
        return torch_norm(self, p, dim, keepdim)

    def masked_fill(self, mask, value):
        return F.astype(F.where(mask, value, self), self.dtype)

    def eq(self, other):
        return self == other

    def ne(self, other):
        return self != other

    def gt(self, other):
        return self > other

    def ge(self, other):
        return self >= other

    def lt(self, other):
        return self < other

    def le(self, other):
        return self <= other

    # ---- reductions -------------------------------------------------------------------------
    sum = _numpy_or_torch_keywords("sum")
    mean = _numpy_or_torch_keywords("mean")
    prod = _numpy_or_torch_keywords("prod")

    def max(self, *args, **kwargs):
        """NumPy's ``x.max(axis)`` (the values); with ``dim=`` PyTorch's (values, indices);
        with a Tensor PyTorch's elementwise maximum."""
        if not kwargs and (not args or not hasattr(args[0], "shape")):
            return _NUMPY["max"](self, *args)
        return _minmax(self, "max", args, kwargs)

    def min(self, *args, **kwargs):
        if not kwargs and (not args or not hasattr(args[0], "shape")):
            return _NUMPY["min"](self, *args)
        return _minmax(self, "min", args, kwargs)

    def argmax(self, dim=None, keepdim=False, axis=None, keepdims=None):
        return _argminmax(self, F.argmax, dim, keepdim, axis, keepdims, "argmax")

    def argmin(self, dim=None, keepdim=False, axis=None, keepdims=None):
        return _argminmax(self, F.argmin, dim, keepdim, axis, keepdims, "argmin")

    def std(self, *args, **kwargs):
        """NumPy's ``x.std(axis, ...)`` (``ddof=0``); with PyTorch's ``dim=``, ``unbiased=``,
        ``correction=`` or ``keepdim=`` PyTorch's (unbiased unless told)."""
        if any(k in kwargs for k in ("dim", "unbiased", "correction", "keepdim")):
            return torch_var(self, *args, std=True, **kwargs)
        return _NUMPY["std"](self, *args, **kwargs)

    def var(self, *args, **kwargs):
        if any(k in kwargs for k in ("dim", "unbiased", "correction", "keepdim")):
            return torch_var(self, *args, **kwargs)
        return _NUMPY["var"](self, *args, **kwargs)

    def sort(self, *args, **kwargs):
        """``fg.sort`` (the values); with ``dim=``, ``descending=`` or ``stable=True``
        PyTorch's (values, indices)."""
        if "dim" in kwargs or "descending" in kwargs or kwargs.get("stable") is True:
            return torch_sort(self, *args, **kwargs)
        return _NUMPY["sort"](self, *args, **kwargs)

    def topk(self, k, dim=-1, largest=True, sorted=True):
        return torch_topk(self, k, dim, largest, sorted)

    def argsort(self, dim=-1, descending=False, stable=False, axis=None):
        return torch_sort(self, dim if axis is None else axis, descending).indices



def _reduction(x, name, args, kwargs):
    tk = _reduce_kwargs(name, args, kwargs)
    if tk is None:
        if "dtype" in kwargs and not args:
            dtype = kwargs.pop("dtype")
            return _NUMPY[name](F.astype(x, dtype) if dtype is not None else x, **kwargs)
        return _NUMPY[name](x, *args, **kwargs)
    dim = tk.pop("dim", args[0] if args else None)
    keepdim = tk.pop("keepdim", False)
    dtype = tk.pop("dtype", None)
    if tk:
        raise TypeError(f"{name}() got an unexpected keyword argument {next(iter(tk))!r}")
    if dtype is not None:
        x = F.astype(x, dtype)
    return getattr(F, name)(x, axis=_dims(dim, x.ndim, name), keepdims=bool(keepdim))


def _minmax(x, name, args, kwargs):
    if args and hasattr(args[0], "shape") and not isinstance(args[0], np.integer):
        if len(args) > 1 or kwargs:
            raise TypeError(f"{name}(other) takes no further arguments")
        return (F.maximum if name == "max" else F.minimum)(x, args[0])
    if "dim" in kwargs:
        if "axis" in kwargs or "keepdims" in kwargs:
            raise TypeError(f"{name}(): give PyTorch's dim=/keepdim= or NumPy's "
                            f"axis=/keepdims=, not both")
        dim = kwargs.pop("dim")
        keepdim = kwargs.pop("keepdim", args[0] if args else False)
        if kwargs:
            raise TypeError(f"{name}() got an unexpected keyword argument "
                            f"{next(iter(kwargs))!r}")
        return (torch_max if name == "max" else torch_min)(x, dim, keepdim)
    if "keepdim" in kwargs:
        if not args:
            raise TypeError(f"{name}(): keepdim= needs dim=")
        return (torch_max if name == "max" else torch_min)(x, args[0], kwargs.pop("keepdim"))
    return _NUMPY[name](x, *args, **kwargs)


def _argminmax(x, f, dim, keepdim, axis, keepdims, name):
    if axis is not None:
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    if dim is None:
        if keepdim:
            return F.reshape(f(x), (1,) * x.ndim)
        return f(x)
    return f(x, axis=_check_dim(dim, x.ndim, name), keepdims=bool(keepdim))


def _view_dtype(x, dtype):
    data = getattr(x, "_data", None)
    if data is None:
        raise TypeError("view(dtype) needs an eager Tensor")
    if getattr(x, "requires_grad", False):
        raise RuntimeError("view(dtype) of a tensor that requires grad is not differentiable")
    return new_leaf_like(x, np.asarray(data).view(np.dtype(dtype)))


class Device:
    """PyTorch's ``torch.device``: only ``"cpu"`` (and ``"cpu:0"``) exist in fastgraph.

        >>> fg.zeros(2).to("cpu").shape
        (2,)
    """

    __slots__ = ("type", "index")

    def __init__(self, kind="cpu", index=None):
        if isinstance(kind, Device):
            kind, index = kind.type, kind.index
        if not isinstance(kind, str):
            raise TypeError(f"device(): expected a string like 'cpu', got "
                            f"{type(kind).__name__}")
        name, _, idx = kind.partition(":")
        if name != "cpu" or (idx not in ("", "0")) or index not in (None, 0):
            raise RuntimeError(f"device {kind!r}{'' if index is None else f' index {index}'} "
                               f"is not available: fastgraph runs on the CPU only "
                               f"(use device='cpu')")
        self.type = "cpu"
        self.index = None

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = Device(other)
            except RuntimeError:
                return False
        return isinstance(other, Device)

    def __hash__(self):
        return hash("cpu")

    def __repr__(self):
        return "device(type='cpu')"

    def __str__(self):
        return "cpu"


_CPU = Device("cpu")

# the NumPy-named method forms these methods fall back to (generated from the declarations)
from .methods import OpMethods as _OpMethods  # noqa: E402

_NUMPY = {n: getattr(_OpMethods, n) for n in ("flatten", "transpose", "squeeze", "sum", "mean",
                                               "prod", "max", "min", "std", "var", "sort")}


# ---- PyTorch's face ------------------------------------------------------------------------------
_ALIASES = {"axis": "dim", "keepdims": "keepdim"}     # (PyTorch accepts NumPy's names too)


def _bind(op, positional, defaults, args, kwargs):
    """PyTorch's argument binding for a method: ``positional`` names the arguments that may be
    given by position, ``defaults`` every argument (keyword-only ones too) with its default;
    returns the values in ``defaults``' order."""
    if len(args) > len(positional):
        raise TypeError(f"{op}() takes at most {len(positional)} positional argument(s) "
                        f"({len(args)} given)")
    bound = dict(zip(positional, args))
    for k, v in kwargs.items():
        name = _ALIASES.get(k, k)
        if name not in defaults:
            raise TypeError(f"{op}() got an unexpected keyword argument {k!r}")
        if name in bound:
            raise TypeError(f"{op}() got multiple values for argument {name!r}")
        bound[name] = v
    return [bound.get(n, d) for n, d in defaults.items()]


def _is_tensor_like(v):
    return hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, np.generic)


def _float_only(x, op):
    if np.dtype(x.dtype).kind not in "fc":
        raise RuntimeError(f"{op}(): input dtype should be either floating point or complex "
                           f"dtypes. Got {np.dtype(x.dtype)} instead.")


def _torch_reduce(x, name, dim, keepdim, dtype):
    if dtype is not None:
        x = F.astype(x, np.dtype(dtype))
    return getattr(F, name)(x, axis=_dims(dim, x.ndim, name), keepdims=bool(keepdim))


def _truth(x, dim, keepdim, op, want_all):
    """``all``/``any`` along ``dim`` (booleans; empty reductions give True and False)."""
    miss = (x == 0) if want_all else (x != 0)
    count = F.sum(F.astype(miss, np.int64), axis=_dims(dim, x.ndim, op), keepdims=bool(keepdim))
    return (count == 0) if want_all else (count > 0)


def _order_statistic(x, dim, keepdim, op, position):
    """``(values, indices)`` of the element at sorted ``position(n)`` along ``dim`` (all elements
    flattened when ``dim`` is None, a 0-d result); NaN wins, as in PyTorch."""
    data = _eager_data(x, op)
    if dim is None:
        flat = data.reshape(-1)
        if flat.size == 0:
            raise IndexError(f"{op}(): expected a non-empty tensor")
        nan = np.flatnonzero(np.isnan(flat)) if flat.dtype.kind in "fc" else ()
        i = int(nan[0]) if len(nan) else int(np.argsort(flat, kind="stable")[position(flat.size)])
        return F.reshape(x, (-1,))[i], i
    d = _check_dim(dim, x.ndim, op)
    if x.ndim == 0:
        return F.reshape(x, ()), _zero_index(x)
    n = data.shape[d]
    if n == 0:
        raise IndexError(f"{op}(): expected a non-empty dimension {d}")
    idx = np.take(np.argsort(data, axis=d, kind="stable"), [position(n)], axis=d)
    if data.dtype.kind in "fc":
        isnan = np.isnan(data)
        idx = np.where(isnan.any(axis=d, keepdims=True),
                       np.argmax(isnan, axis=d, keepdims=True), idx)
    idx = idx.astype(np.int64)
    values = F.take_along_axis(x, idx, axis=d)
    if not keepdim:
        values, idx = F.squeeze(values, axis=d), np.squeeze(idx, axis=d)
    return values, _index_tensor(x, idx)


_TYPE_NAMES = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
               "float16": "torch.HalfTensor", "int64": "torch.LongTensor",
               "int32": "torch.IntTensor", "int16": "torch.ShortTensor",
               "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
               "bool": "torch.BoolTensor", "complex64": "torch.ComplexFloatTensor",
               "complex128": "torch.ComplexDoubleTensor"}


class TorchFace:
    """Mixin of ``fastgraph.torch.Tensor``: every method whose NumPy meaning differs from
    PyTorch's, with PyTorch's meaning only (positional arguments included).  Tensors made by
    ``fastgraph.torch`` have it, and so do the results of operations on them.

        >>> import fastgraph.torch as torch
        >>> x = torch.tensor([[1.0, 5.0], [4.0, 2.0]])
        >>> x.max(1).indices, x.std().item() > 1.8      # (values, indices); unbiased
        (tensor([1, 0]), True)
    """

    __slots__ = ()

    # ---- reductions -------------------------------------------------------------------------
    def sum(self, *args, **kwargs):
        dim, keepdim, dtype = _bind("sum", ("dim", "keepdim"),
                                    {"dim": None, "keepdim": False, "dtype": None}, args, kwargs)
        return _torch_reduce(self, "sum", dim, keepdim, dtype)

    def mean(self, *args, **kwargs):
        dim, keepdim, dtype = _bind("mean", ("dim", "keepdim"),
                                    {"dim": None, "keepdim": False, "dtype": None}, args, kwargs)
        if dtype is None and np.dtype(self.dtype).kind not in "fc":
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: "
                               f"{np.dtype(self.dtype)}")
        return _torch_reduce(self, "mean", dim, keepdim, dtype)

    def prod(self, *args, **kwargs):
        dim, keepdim, dtype = _bind("prod", ("dim", "keepdim"),
                                    {"dim": None, "keepdim": False, "dtype": None}, args, kwargs)
        return _torch_reduce(self, "prod", dim, keepdim, dtype)

    def _minmax(self, name, args, kwargs):
        other = kwargs.pop("other", None)
        if other is None and args and _is_tensor_like(args[0]):
            other, args = args[0], args[1:]
        if other is not None:
            if args or kwargs:
                raise TypeError(f"{name}(other) takes no further arguments")
            return (F.maximum if name == "max" else F.minimum)(self, other)
        dim, keepdim = _bind(name, ("dim", "keepdim"), {"dim": None, "keepdim": False},
                             args, kwargs)
        if dim is None:
            if keepdim:
                raise TypeError(f"{name}(): keepdim=True needs dim")
            return getattr(F, name)(self)
        return (torch_max if name == "max" else torch_min)(self, dim, bool(keepdim))

    def max(self, *args, **kwargs):
        """PyTorch's ``x.max()`` (a 0-d tensor), ``x.max(dim, keepdim=False)`` (values,
        indices) and ``x.max(other)`` (elementwise)."""
        return TorchFace._minmax(self, "max", args, kwargs)

    def min(self, *args, **kwargs):
        return TorchFace._minmax(self, "min", args, kwargs)

    def amax(self, dim=(), keepdim=False):
        return F.max(self, axis=_dims(dim, self.ndim, "amax") or None, keepdims=bool(keepdim))

    def amin(self, dim=(), keepdim=False):
        return F.min(self, axis=_dims(dim, self.ndim, "amin") or None, keepdims=bool(keepdim))

    def _var(self, name, args, kwargs):
        if args and isinstance(args[0], (bool, np.bool_)):     # x.std(unbiased)
            unbiased, = _bind(name, ("unbiased",), {"unbiased": None}, args, {})
            dim, keepdim, correction = _bind(name, (), {"dim": None, "keepdim": False,
                                                        "correction": None}, (), kwargs)
        else:
            dim, unbiased, keepdim, correction = _bind(
                name, ("dim", "unbiased", "keepdim"),
                {"dim": None, "unbiased": None, "keepdim": False, "correction": None},
                args, kwargs)
        return torch_var(self, dim, unbiased, keepdim, correction, std=name == "std")

    def std(self, *args, **kwargs):
        """PyTorch's ``x.std(dim=None, unbiased=True, keepdim=False, *, correction=1)``."""
        return TorchFace._var(self, "std", args, kwargs)

    def var(self, *args, **kwargs):
        return TorchFace._var(self, "var", args, kwargs)

    def all(self, dim=None, keepdim=False):
        return _truth(self, dim, keepdim, "all", True)

    def any(self, dim=None, keepdim=False):
        return _truth(self, dim, keepdim, "any", False)

    def median(self, dim=None, keepdim=False):
        """PyTorch's median: the lower of the two middle values (not their mean); with
        ``dim``, ``(values, indices)``."""
        values, idx = _order_statistic(self, dim, keepdim, "median", lambda n: (n - 1) // 2)
        return values if dim is None else return_types.median(values, idx)

    def kthvalue(self, k, dim=-1, keepdim=False):
        (k,) = _shape_args((k,), "kthvalue")
        n = 1 if self.ndim == 0 else self.shape[_check_dim(dim, self.ndim, "kthvalue")]
        if not 1 <= k <= n:
            raise IndexError(f"kthvalue(): selected number k={k} out of range for a dimension "
                             f"of size {n}")
        return return_types.kthvalue(*_order_statistic(self, dim, keepdim, "kthvalue",
                                                       lambda n: k - 1))

    def sort(self, *args, **kwargs):
        """PyTorch's ``x.sort(dim=-1, descending=False, *, stable=False)``: (values, indices)."""
        dim, descending, stable = _bind("sort", ("dim", "descending"),
                                        {"dim": -1, "descending": False, "stable": False},
                                        args, kwargs)
        return torch_sort(self, dim, bool(descending), bool(stable))

    def argsort(self, *args, **kwargs):
        dim, descending, stable = _bind("argsort", ("dim", "descending"),
                                        {"dim": -1, "descending": False, "stable": False},
                                        args, kwargs)
        return torch_sort(self, dim, bool(descending), bool(stable)).indices

    def cumsum(self, dim, dtype=None):
        x = self if dtype is None else F.astype(self, np.dtype(dtype))
        return F.cumsum(x, axis=_check_dim(dim, x.ndim, "cumsum"))

    def cumprod(self, dim, dtype=None):
        x = self if dtype is None else F.astype(self, np.dtype(dtype))
        return F.cumprod(x, axis=_check_dim(dim, x.ndim, "cumprod"))

    def softmax(self, dim, dtype=None):
        x = self if dtype is None else F.astype(self, np.dtype(dtype))
        _float_only(x, "softmax")
        return F.softmax(x, axis=_check_dim(dim, x.ndim, "softmax"))

    def log_softmax(self, dim, dtype=None):
        x = self if dtype is None else F.astype(self, np.dtype(dtype))
        _float_only(x, "log_softmax")
        return F.log_softmax(x, axis=_check_dim(dim, x.ndim, "log_softmax"))

    def logsumexp(self, dim, keepdim=False):
        return F.logsumexp(self, axis=_dims(dim, self.ndim, "logsumexp"),
                           keepdims=bool(keepdim))

    # ---- shapes -------------------------------------------------------------------------------
    def repeat(self, *sizes):
        """PyTorch's ``x.repeat(*sizes)``: the tensor tiled (NumPy's ``tile``)."""
        return torch_repeat(self, *sizes)

    def flatten(self, start_dim=0, end_dim=-1):
        return torch_flatten(self, start_dim, end_dim)

    def transpose(self, dim0, dim1):
        return torch_transpose(self, dim0, dim1)

    def squeeze(self, dim=None):
        return torch_squeeze(self, dim)

    def nonzero(self, *, as_tuple=False):
        """PyTorch's ``nonzero()``: the indices of the nonzero elements, one row each (an
        ``(n, ndim)`` int64 tensor); ``as_tuple=True``: one index tensor per dimension."""
        data = _eager_data(self, "nonzero")
        if as_tuple:
            return tuple(_index_tensor(self, i.astype(np.int64))
                         for i in np.nonzero(np.atleast_1d(data)))
        return _index_tensor(self, np.argwhere(data).astype(np.int64))

    # ---- values -------------------------------------------------------------------------------
    def clamp(self, min=None, max=None):
        return torch_clamp(self, min, max)

    clip = clamp

    def round(self, *, decimals=0):
        return F.round(self, decimals)

    def type(self, dtype=None, non_blocking=False):
        """PyTorch's ``x.type()`` (the type's name, ``"torch.FloatTensor"``) or
        ``x.type(dtype)`` (a conversion)."""
        if dtype is None:
            return _TYPE_NAMES.get(np.dtype(self.dtype).name, f"torch.{self.dtype}")
        if isinstance(dtype, str):
            names = {v: k for k, v in _TYPE_NAMES.items()}
            if dtype not in names:
                raise ValueError(f"type(): invalid type {dtype!r}")
            dtype = names[dtype]
        dt = np.dtype(dtype)
        return self if dt == self.dtype else F.astype(self, dt)

    # ---- new tensors like this one -----------------------------------------------------------
    def _new(self, arr, requires_grad):
        return new_leaf_like(self, arr, requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        Device(device or "cpu")
        return self._new(np.zeros(_shape_args(size, "new_zeros"), dtype or self.dtype),
                         requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        Device(device or "cpu")
        return self._new(np.ones(_shape_args(size, "new_ones"), dtype or self.dtype),
                         requires_grad)

    new_empty = new_zeros

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        Device(device or "cpu")
        return self._new(np.full(_shape_args((size,), "new_full"), fill_value,
                                 dtype or self.dtype), requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        Device(device or "cpu")
        if hasattr(data, "_data"):
            data = np.asarray(data._data)
        return self._new(np.array(data, dtype=dtype or self.dtype), requires_grad)


def new_leaf_like(like, arr, requires_grad=False):
    """A new leaf of ``like``'s face holding ``arr`` (``type.__call__`` skips the legacy
    constructor ``torch.Tensor(*sizes)`` of PyTorch's face)."""
    face = getattr(type(like), "_face", type(like))
    return type.__call__(face, arr, bool(requires_grad))
