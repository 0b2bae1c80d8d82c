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

__all__ = ["TorchMethods", "Size", "SizeValue", "return_types"]

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
    return type(like)(idx)


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
    # bounds themselves
    return F.clip(x, min, max)


def _reduce_kwargs(op, args, kwargs):
    """Whether a reduction's call uses PyTorch's keywords; then ``(axis, keepdims)``."""
    if not any(k in kwargs for k in _TORCH_REDUCE_KEYS):
        return None
    if "axis" in kwargs or "keepdims" in kwargs:
        raise TypeError(f"{op}(): give PyTorch's dim=/keepdim= or NumPy's axis=/keepdims=, "
                        f"not both")
    return kwargs


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
    def sum(self, *args, **kwargs):
        if not kwargs:                       # (NumPy's call: no detour)
            return _NUMPY["sum"](self, *args)
        return _reduction(self, "sum", args, kwargs)

    def mean(self, *args, **kwargs):
        if not kwargs:                       # (NumPy's call: no detour)
            return _NUMPY["mean"](self, *args)
        return _reduction(self, "mean", args, kwargs)

    def prod(self, *args, **kwargs):
        if not kwargs:                       # (NumPy's call: no detour)
            return _NUMPY["prod"](self, *args)
        return _reduction(self, "prod", args, kwargs)

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
    return type(x)(np.asarray(data).view(np.dtype(dtype)))


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
