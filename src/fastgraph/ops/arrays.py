"""NumPy's array-manipulation functions beyond ``shape.py``: gathering and sorting, padding,
rotations, the split family, selection, joining helpers and the array factories whose values
can carry a gradient (``full``, ``linspace``, ``logspace``, ``geomspace``, ``meshgrid``).

Most are compositions of ops (``defun``): they compute what NumPy computes with the same
operations, so values are NumPy's and gradients of any order come from the ops they use.  The
ops declared here are those NumPy computes in one step that no composition reproduces
(``sort``, ``partition``, ``pad``, ``take_along_axis``, ``linspace``), each with an adjoint op so
that higher derivatives and unknown static dimensions work.
"""
from __future__ import annotations

import numpy as np

from .._core import TOP, apply, defop, defun, holds_graph_value, is_tensor
from .._core import shapes as _shapes
from . import shape as _shape_ops
from .shape import _as_operand, _known_ndim, _shape_of

from .. import ops as F


def _axis_of(x, axis, op):
    return _shapes.check_axis(axis, _known_ndim(x, op), op, _shape_of(x))


def _graph_value(*values) -> bool:
    return holds_graph_value(tuple(values))


# ---- gathering along an axis ----------------------------------------------------------------------
def _index_grid(shape, indices, axis):
    """The full fancy index that ``np.take_along_axis(arr, indices, axis)`` reads: ``indices``
    on ``axis``, every other axis's positions (length 1 where ``arr`` has length 1)."""
    nd = len(shape)
    grid = []
    for k in range(nd):
        if k == axis:
            grid.append(indices)
        else:
            grid.append(np.arange(shape[k]).reshape((1,) * k + (-1,) + (1,) * (nd - k - 1)))
    return tuple(grid)


def _untake_forward(g, x, indices, axis):
    g = np.asarray(g)
    shape = np.shape(x)
    if axis is None:
        out = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype=g.dtype)
        np.add.at(out, np.asarray(indices).reshape(-1), g.reshape(-1))
        return out.reshape(shape)
    out = np.zeros(shape, dtype=g.dtype)
    idx = np.asarray(indices)
    idx = np.where(idx < 0, idx + shape[axis], idx)
    grid = _index_grid(shape, idx, axis)
    np.add.at(out, grid, np.broadcast_to(g, np.broadcast_shapes(*[np.shape(i) for i in grid])))
    return out


def _untake(g, x, indices, axis):
    """The adjoint of ``take_along_axis``: zeros shaped like ``x`` with ``g`` added where each
    element was taken from (repeated indices accumulate)."""
    return apply(_untake.op, (g, x, indices), {"axis": axis})


_untake = defop("untake_along_axis", _untake_forward,
                lambda G, ans, g, x, indices, axis: F.take_along_axis(G, indices, axis),
                None, None, shape=lambda shapes, **_: tuple(shapes[1]), function=_untake,
                complex_vjps=True)


def _take_along_shape(shapes, axis):
    a, i = (tuple(s) for s in shapes)
    if axis is None:
        if len(i) != 1:
            raise ValueError(f"take_along_axis: with axis=None the indices must be 1-D, got "
                             f"shape {i}")
        return i
    if len(a) != len(i):
        raise ValueError(f"take_along_axis: `indices` and `arr` must have the same number of "
                         f"dimensions (shapes {a} and {i})")
    out = []
    for k, (d, e) in enumerate(zip(a, i)):
        if k == axis:
            out.append(e)
        else:
            out.append(_shapes.broadcast("take_along_axis", (d,), (e,))[0])
    return tuple(out)


def take_along_axis(arr, indices, axis=-1):
    """NumPy's ``np.take_along_axis`` (``axis=None``: from the flattened array), differentiable
    in ``arr``: the gradient adds back where each element came from.  ``indices`` may be an
    array, a Tensor or a graph Node of integers.

        >>> x = fg.tensor([[3.0, 1.0, 2.0]], requires_grad=True)
        >>> fg.take_along_axis(x, np.array([[1, 1]]), axis=1)  # doctest: +SKIP
    """
    arr = _as_operand(arr)
    if not _graph_value(indices):
        indices = np.asarray(indices)
        if not np.issubdtype(indices.dtype, np.integer):
            raise IndexError(f"take_along_axis: `indices` must be an integer array, got dtype "
                             f"{indices.dtype}")
    if axis is not None:
        axis = _axis_of(arr, axis, "take_along_axis")
    return apply(take_along_axis.op, (arr, indices), {"axis": axis})


take_along_axis = defop("take_along_axis",
                        lambda a, i, axis: np.take_along_axis(a, i, axis=axis),
                        lambda g, ans, a, i, axis: _untake(g, a, i, axis), None,
                        shape=_take_along_shape, function=take_along_axis, exports=TOP,
                        complex_vjps=True)


def take(a, indices, axis=None):
    """NumPy's ``np.take`` (``mode='raise'``): elements of ``a`` (flattened when ``axis`` is
    None) at ``indices``, differentiable in ``a`` (repeated indices accumulate)."""
    a = _as_operand(a)
    if _graph_value(indices):   # indices known only at run time: gather along the axis
        if axis is None:
            return take_along_axis(F.reshape(a, (-1,)), F.reshape(indices, (-1,)), None
                                   ).reshape(indices.shape)
        raise TypeError("take: indices that are Tensors or graph Nodes are supported with "
                        "axis=None; use take_along_axis")
    idx = np.asarray(indices)
    if axis is None:
        return F.getitem(F.reshape(a, (-1,)), idx)
    ax = _axis_of(a, axis, "take")
    return F.getitem(a, (slice(None),) * ax + (idx,))


take = defun(take, exports=TOP, methods=True)


# ---- sorting ---------------------------------------------------------------------------------------
def _order(v, axis):
    # a stable order, so that equal values are matched in a fixed way on both sides
    return np.argsort(v, axis=axis, kind="stable")


def _moved(v, like, source, target, axis):
    """``v``'s entries at the places ``source`` along ``axis`` put at the places ``target``,
    in a new array of ``like``'s shape (broadcast with ``v``'s)."""
    v = np.asarray(v)
    out = np.empty(np.broadcast_shapes(np.shape(like), v.shape), dtype=v.dtype)
    np.put_along_axis(out, target, np.take_along_axis(v, source, axis), axis)
    return out


def _unpermute_forward(g, x, ans, axis):
    """``ans`` is ``x`` rearranged along ``axis``: each gradient entry of ``g`` (shaped like
    ``ans``) goes back to the element of ``x`` it came from (equal values matched in order)."""
    return _moved(g, x, _order(ans, axis), _order(x, axis), axis)


def _permute_forward(v, x, ans, axis):
    """``v`` (shaped like ``x``) rearranged as ``ans`` rearranges ``x``: the adjoint of
    :func:`_unpermute_forward`."""
    return _moved(v, ans, _order(x, axis), _order(ans, axis), axis)


def _unpermute(g, x, ans, axis):
    return apply(_unpermute.op, (g, x, ans), {"axis": axis})


def _permute(v, x, ans, axis):
    return apply(_permute.op, (v, x, ans), {"axis": axis})


_unpermute = defop("unpermute", _unpermute_forward,
                   lambda G, r, g, x, ans, axis: _permute(G, x, ans, axis), None, None,
                   shape=lambda shapes, **_: tuple(shapes[1]), function=_unpermute,
                   complex_vjps=True)
_permute = defop("permute_like", _permute_forward,
                 lambda G, r, v, x, ans, axis: _unpermute(G, x, ans, axis), None, None,
                 shape=lambda shapes, **_: tuple(shapes[2]), function=_permute, complex_vjps=True)


def _sort_axis(a, axis, op):
    a = _as_operand(a)
    if axis is None:
        return F.reshape(a, (-1,)), 0
    if _known_ndim(a, op) == 0:
        raise np.exceptions.AxisError(f"{op}: axis {axis} is out of bounds for array of "
                                      f"dimension 0")
    return a, _axis_of(a, axis, op)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """NumPy's ``np.sort`` (``axis=None``: the flattened array), differentiable: each element's
    gradient goes back to where it came from (equal values share theirs in a fixed order).

        >>> fg.sort(fg.tensor([3.0, 1.0, 2.0]))  # doctest: +SKIP
    """
    if order is not None:
        raise TypeError("sort: order= (structured arrays) is not supported for Tensors or Nodes")
    a, ax = _sort_axis(a, axis, "sort")
    return apply(sort.op, (a,), {"axis": ax, "kind": kind, "stable": stable})


sort = defop("sort", lambda a, axis, kind, stable: np.sort(a, axis=axis, kind=kind,
                                                            stable=stable),
             lambda g, ans, a, axis, kind, stable: _unpermute(g, a, ans, axis),
             shape=lambda shapes, **_: tuple(shapes[0]), function=sort, exports=TOP,
             methods=True)


def msort(a):
    """``sort(a, axis=0)``: NumPy 1's ``np.msort`` (removed in NumPy 2), kept for autograd's
    scripts."""
    return sort(a, axis=0)


msort = defun(msort, exports=("numpy",))


def _kth_attr(kth):
    if np.ndim(kth) == 0:
        return _shapes.as_int(kth, "partition", "kth")
    return tuple([_shapes.as_int(k, "partition", "kth") for k in np.ravel(kth)])


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's ``np.partition`` (its own result), differentiable: each element's gradient goes
    back to where it came from."""
    if order is not None:
        raise TypeError("partition: order= (structured arrays) is not supported for Tensors or "
                        "Nodes")
    a, ax = _sort_axis(a, axis, "partition")
    return apply(partition.op, (a,), {"kth": _kth_attr(kth), "axis": ax, "kind": kind})


partition = defop("partition",
                  lambda a, kth, axis, kind: np.partition(a, kth, axis=axis, kind=kind),
                  lambda g, ans, a, kth, axis, kind: _unpermute(g, a, ans, axis),
                  shape=lambda shapes, **_: tuple(shapes[0]), function=partition,
                  exports=TOP, methods=True)


# ---- pad ---------------------------------------------------------------------------------------------
#: modes whose padded values are copies of the input's elements (and ``constant``): the gradient
#: adds each copy's back
_GATHER_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pad_width(pad_width, ndim):
    """NumPy's forms (``n``, ``(n,)``, ``(before, after)``, one pair per axis) as a tuple of
    ``ndim`` pairs of non-negative ints."""
    arr = np.asarray(pad_width)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "b" or arr.size and arr.dtype.kind not in "iu":
            raise TypeError("pad: `pad_width` must be of integral type.")
    try:
        pairs = np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {arr.shape} and requested shape ({ndim}, 2)"
                         ) from None
    if np.any(pairs < 0):
        raise ValueError("pad: index can't contain negative values")
    return tuple((int(b), int(e)) for b, e in pairs)


def _pad_sources(shape, pad_width, mode, kwargs):
    """For each element of the padded array, the flat index of the input element it copies
    (``-1``: a constant): NumPy's own pad applied to the positions."""
    positions = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    if mode == "constant":
        return np.pad(positions, pad_width, mode="constant", constant_values=-1)
    return np.pad(positions, pad_width, mode=mode, **dict(kwargs))


def _unpad_forward(g, x, pad_width, mode, kwargs):
    g = np.asarray(g)
    shape = np.shape(x)
    src = _pad_sources(shape, pad_width, mode, kwargs).reshape(-1)
    keep = src >= 0
    size = int(np.prod(shape, dtype=np.int64))
    flat = g.reshape(-1)
    if mode == "constant":
        inner = tuple(slice(b, b + n) for (b, _), n in zip(pad_width, shape))
        return np.array(g[inner], copy=True)
    total = np.bincount(src[keep], weights=flat[keep], minlength=size) if size else \
        np.zeros(0)
    return total.astype(g.dtype, copy=False).reshape(shape)


def _unpad(g, x, pad_width, mode, kwargs):
    """The adjoint of ``pad``: each input element gets the gradient of every copy of it."""
    return apply(_unpad.op, (g, x), {"pad_width": pad_width, "mode": mode, "kwargs": kwargs})


def _pad_again(G, ans, g, x, pad_width, mode, kwargs):
    # the adjoint of the adjoint: pad G the same way (constants padded with zeros)
    if mode == "constant":
        return F.pad(G, pad_width, mode="constant")
    return F.pad(G, pad_width, mode=mode, **dict(kwargs))


_unpad = defop("unpad", _unpad_forward, _pad_again, None,
               shape=lambda shapes, **_: tuple(shapes[1]), function=_unpad, complex_vjps=True)


def _pad_shape(shapes, pad_width, mode, kwargs, constant_values=0):
    return tuple(None if d is None else d + b + e for d, (b, e) in zip(shapes[0], pad_width))


def _pad_forward(x, pad_width, mode, kwargs, constant_values=0):
    if mode == "constant":
        return np.pad(x, pad_width, mode="constant", constant_values=constant_values)
    return np.pad(x, pad_width, mode=mode, **dict(kwargs))


def pad(array, pad_width, mode="constant", **kwargs):
    """NumPy's ``np.pad``, differentiable for the modes that copy elements or constants
    (``constant edge reflect symmetric wrap``; ``reflect_type='even'``): each input element gets
    the gradient of every copy of it.  (The statistic and ramp modes, and ``reflect_type='odd'``,
    are NumPy's on plain values only.)

        >>> fg.pad(fg.tensor([1.0, 2.0]), 1, mode="edge")  # doctest: +SKIP
    """
    x = _as_operand(array)
    if callable(mode):
        raise TypeError("pad: a function as mode is not supported for Tensors or Nodes")
    if mode not in _GATHER_MODES or kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError(
            f"pad: mode={mode!r}{' with reflect_type=odd' if mode in _GATHER_MODES else ''} "
            f"is not differentiable in fastgraph (modes {', '.join(_GATHER_MODES)} are); call "
            f"it on .detach() values for NumPy's result")
    nd = _known_ndim(x, "pad")
    width = _pad_width(pad_width, nd)
    constant_values = kwargs.pop("constant_values", 0)
    allowed = {"constant": (), "edge": (), "wrap": (), "reflect": ("reflect_type",),
               "symmetric": ("reflect_type",)}[mode]
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise ValueError(f"pad: unsupported keyword arguments for mode '{mode}': {set(unknown)}")
    if mode == "constant":
        if _graph_value(constant_values):
            raise TypeError("pad: constant_values must be plain numbers (they are not "
                            "differentiated)")
        cv = np.asarray(constant_values)
        if cv.ndim:
            cv = tuple(tuple(float(c) for c in pair)
                       for pair in np.broadcast_to(cv, (nd, 2)).tolist())
        else:
            cv = cv.item()
        return apply(pad.op, (x,), {"pad_width": width, "mode": mode, "kwargs": (),
                                    "constant_values": cv})
    return apply(pad.op, (x,), {"pad_width": width, "mode": mode,
                                "kwargs": tuple(sorted(kwargs.items()))})


pad = defop("pad", _pad_forward,
            lambda g, ans, x, pad_width, mode, kwargs, constant_values=0:
            _unpad(g, x, pad_width, mode, kwargs),
            shape=_pad_shape, function=pad, exports=TOP, complex_vjps=True)


# ---- rotations and flips ---------------------------------------------------------------------------
def _flip_fixed(m, axis: int, name: str):
    """``m`` reversed along ``axis``, which it must have (NumPy's message otherwise)."""
    m = _as_operand(m)
    if _known_ndim(m, name) <= axis:
        raise ValueError(f"{name}: Input must be >= {axis + 1}-d.")
    return F.flip(m, axis)


def fliplr(m):
    """Reverse the columns (axis 1), NumPy's ``np.fliplr`` (at least 2-D)."""
    return _flip_fixed(m, 1, "fliplr")


fliplr = defun(fliplr, exports=TOP)


def flipud(m):
    """Reverse the rows (axis 0), NumPy's ``np.flipud`` (at least 1-D)."""
    return _flip_fixed(m, 0, "flipud")


flipud = defun(flipud, exports=TOP)


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``, NumPy's ``np.rot90`` (the same
    flips and transposes)."""
    m = _as_operand(m)
    nd = _known_ndim(m, "rot90")
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("rot90: len(axes) must be 2.")
    a0, a1 = (_shapes.check_axis(a, nd, "rot90", _shape_of(m)) for a in axes)
    if a0 == a1:
        raise ValueError("rot90: Axes must be different.")
    k = _shapes.as_int(k, "rot90", "k") % 4
    if k == 0:
        return m
    if k == 2:
        return F.flip(F.flip(m, a0), a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return F.transpose(F.flip(m, a1), tuple(perm))
    return F.flip(F.transpose(m, tuple(perm)), a1)


rot90 = defun(rot90, exports=TOP)


def rollaxis(a, axis, start=0):
    """Roll ``axis`` backwards until it lies before position ``start``, NumPy's
    ``np.rollaxis`` (a transpose)."""
    a = _as_operand(a)
    n = _known_ndim(a, "rollaxis")
    axis = _shapes.check_axis(axis, n, "rollaxis", _shape_of(a))
    start = _shapes.as_int(start, "rollaxis", "start")
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"rollaxis: start {start} is out of bounds for an array "
                                      f"of dimension {n}")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return F.transpose(a, tuple(axes))


rollaxis = defun(rollaxis, exports=TOP)


def matrix_transpose(x):
    """Swap the last two axes, NumPy's ``np.matrix_transpose`` (at least 2-D)."""
    x = _as_operand(x)
    if _known_ndim(x, "matrix_transpose") < 2:
        raise ValueError("matrix_transpose: Input array must be at least 2-dimensional")
    return F.swapaxes(x, -1, -2)


matrix_transpose = defun(matrix_transpose, exports=TOP)


# NumPy 2's name for ``transpose`` (the same function)
permute_dims = defun(_shape_ops.transpose, name="permute_dims", exports=TOP, numpy=("permute_dims",))


# ---- the split family ------------------------------------------------------------------------------
def _pieces(x, bounds, ax):
    return [F.getitem(x, (slice(None),) * ax + (slice(a, b),))
            for a, b in zip(bounds, bounds[1:])]


def array_split(ary, indices_or_sections, axis=0):
    """NumPy's ``np.array_split``: like ``split``, but ``N`` sections need not divide the axis
    (the first ``len % N`` pieces get one element more)."""
    x = _as_operand(ary)
    shape = tuple(_shape_of(x))
    ax = _shapes.check_axis(axis, len(shape), "array_split", shape)
    n = shape[ax]
    if n is None:
        raise ValueError("array_split: the split axis must have a known length")
    if np.ndim(indices_or_sections) == 0:
        k = _shapes.as_int(indices_or_sections, "array_split", "sections")
        if k <= 0:
            raise ValueError("array_split: number sections must be larger than 0.")
        each, extra = divmod(n, k)
        sizes = [0] + extra * [each + 1] + (k - extra) * [each]
        bounds = list(np.cumsum(sizes))
    else:
        bounds = [0] + [_shapes.as_int(i, "array_split", "split index")
                        for i in indices_or_sections] + [n]
    return _pieces(x, [int(b) for b in bounds], ax)


array_split = defun(array_split, exports=TOP)


def _split_along(name, axis_for):
    def fn(ary, indices_or_sections):
        x = _as_operand(ary)
        nd = _known_ndim(x, name)
        ax = axis_for(nd)
        if _shape_of(x)[ax] is None:
            raise ValueError(f"{name}: the split axis must have a known length")
        if np.ndim(indices_or_sections) == 0 and \
                _shape_of(x)[ax] % _shapes.as_int(indices_or_sections, name, "sections"):
            raise ValueError(f"{name}: array split does not result in an equal division")
        return array_split(x, indices_or_sections, ax)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _hsplit_axis(nd):
    if nd == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return 1 if nd > 1 else 0


def _vsplit_axis(nd):
    if nd < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return 0


def _dsplit_axis(nd):
    if nd < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return 2


hsplit = defun(_split_along("hsplit", _hsplit_axis), exports=TOP)
hsplit.__doc__ = "Split along the second axis (the first for 1-D), NumPy's ``np.hsplit``."
vsplit = defun(_split_along("vsplit", _vsplit_axis), exports=TOP)
vsplit.__doc__ = "Split along the first axis (at least 2-D), NumPy's ``np.vsplit``."
dsplit = defun(_split_along("dsplit", _dsplit_axis), exports=TOP)
dsplit.__doc__ = "Split along the third axis (at least 3-D), NumPy's ``np.dsplit``."


def unstack(x, /, *, axis=0):
    """NumPy 2.1's ``np.unstack``: the slices along ``axis``, as a tuple."""
    x = _as_operand(x)
    nd = _known_ndim(x, "unstack")
    if nd == 0:
        raise ValueError("Input array must be at least 1-d.")
    ax = _shapes.check_axis(axis, nd, "unstack", _shape_of(x))
    n = _shape_of(x)[ax]
    if n is None:
        raise ValueError("unstack: the axis must have a known length")
    return tuple(F.getitem(x, (slice(None),) * ax + (i,)) for i in range(n))


unstack = defun(unstack, exports=TOP)


# ---- selection --------------------------------------------------------------------------------------
def select(condlist, choicelist, default=0):
    """NumPy's ``np.select``: from ``choicelist[k]`` where ``condlist[k]`` is the first true
    condition, else ``default``; differentiable in the choices and ``default`` (the same
    ``where`` steps NumPy takes, last choice first)."""
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    for i, c in enumerate(condlist):
        dt = getattr(c, "dtype", None)
        dt = np.asarray(c).dtype if not isinstance(dt, np.dtype) else dt
        if dt != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    # (Python numbers stay weak in the result's dtype, as NumPy's select keeps them)
    choices = [c if type(c) in (int, float, complex) else _as_operand(c)
               for c in choicelist + [default]]
    dtype = np.result_type(*[c if type(c) in (int, float, complex) else np.dtype(c.dtype)
                             for c in choices])
    result = F.astype(choices[-1], dtype)
    for cond, choice in zip(condlist[::-1], choices[-2::-1]):
        result = F.where(cond, choice, result)
    return result


select = defun(select, exports=TOP)


def choose(a, choices, out=None, mode="raise"):
    """NumPy's ``np.choose``: ``choices[a[i]][i]``, differentiable in the choices (``a`` holds
    integers, read as NumPy reads them for ``mode`` ``raise``, ``wrap`` or ``clip``)."""
    if out is not None:
        raise TypeError("choose: out= is not supported for Tensors or Nodes")
    if _graph_value(a):
        raise TypeError("choose: the index array must be plain integers (not a Tensor or "
                        "Node)")
    idx = np.asarray(a)
    choices = list(choices)
    n = len(choices)
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    elif np.any((idx < 0) | (idx >= n)):
        raise ValueError("invalid entry in choice array")
    return select([idx == k for k in range(n)], choices)


choose = defun(choose, exports=TOP)


def compress(condition, a, axis=None):
    """NumPy's ``np.compress``: the slices along ``axis`` (the flattened array when None) where
    ``condition`` (plain booleans) is true, differentiable in ``a``."""
    if _graph_value(condition):
        raise TypeError("compress: the condition must be plain booleans (not a Tensor or Node)")
    keep = np.nonzero(np.ravel(condition))[0]
    a = _as_operand(a)
    if axis is None:
        return F.getitem(F.reshape(a, (-1,)), keep)
    ax = _axis_of(a, axis, "compress")
    n = _shape_of(a)[ax]
    if n is not None and keep.size and keep[-1] >= n:
        raise IndexError(f"compress: index {keep[-1]} is out of bounds for axis {ax} with "
                         f"size {n}")
    return F.getitem(a, (slice(None),) * ax + (keep,))


compress = defun(compress, exports=TOP)


def extract(condition, arr):
    """NumPy's ``np.extract``: the elements of ``arr`` where ``condition`` (plain values) is
    non-zero, flattened, differentiable in ``arr``."""
    if _graph_value(condition):
        raise TypeError("extract: the condition must be plain values (not a Tensor or Node)")
    return F.getitem(F.reshape(_as_operand(arr), (-1,)), np.nonzero(np.ravel(condition))[0])


extract = defun(extract, exports=TOP)


def delete(arr, obj, axis=None):
    """NumPy's ``np.delete`` (``obj`` an int, a slice or plain integers or booleans),
    differentiable in ``arr``."""
    a = _as_operand(arr)
    if axis is None:
        a = F.reshape(a, (-1,))
        ax = 0
    else:
        ax = _axis_of(a, axis, "delete")
    n = _shape_of(a)[ax]
    if n is None:
        raise ValueError("delete: the axis must have a known length")
    if _graph_value(obj):
        raise TypeError("delete: obj must be plain integers, a slice or booleans")
    keep = np.delete(np.arange(n), obj)
    return F.getitem(a, (slice(None),) * ax + (keep,))


delete = defun(delete, exports=TOP)


def append(arr, values, axis=None):
    """NumPy's ``np.append``: ``values`` joined after ``arr`` (both flattened when ``axis`` is
    None), differentiable in both."""
    arr, values = _as_operand(arr), _as_operand(values)
    if axis is None:
        if _known_ndim(arr, "append") != 1:
            arr = F.reshape(arr, (-1,))
        values = F.reshape(values, (-1,))
        axis = 0
    return F.concatenate((arr, values), axis=axis)


append = defun(append, exports=TOP)


def resize(a, new_shape):
    """NumPy's ``np.resize``: ``a``'s elements repeated in order to fill ``new_shape``,
    differentiable (repeats accumulate)."""
    a = _as_operand(a)
    shape = (new_shape,) if np.ndim(new_shape) == 0 else tuple(new_shape)
    shape = tuple(_shapes.as_int(d, "resize", "new_shape") for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    flat = F.reshape(a, (-1,))
    n, total = _shape_of(flat)[0], int(np.prod(shape, dtype=np.int64))
    if n is None:
        raise ValueError("resize: the array's size must be known")
    if total == 0 or n == 0:   # (NumPy fills from an empty array with zeros)
        empty = F.sum(flat) * 0 if n == 0 else F.getitem(flat, slice(0, 0))
        return F.broadcast_to(empty, shape) if n == 0 else F.reshape(empty, shape)
    reps = -(-total // n)
    flat = F.concatenate([flat] * reps) if reps > 1 else flat
    return F.reshape(F.getitem(flat, slice(0, total)), shape)


resize = defun(resize, exports=TOP)


def trim_zeros(filt, trim="fb", axis=None):
    """NumPy's ``np.trim_zeros`` on a Tensor or an array, differentiable in the kept elements
    (the bounds are read from the values, which a graph Node does not have yet)."""
    x = _as_operand(filt)
    if _graph_value(x) and not is_tensor(x):
        raise TypeError("trim_zeros: the result's length depends on the values, which a graph "
                        "Node does not have yet")
    values = np.asarray(x._ndarray if is_tensor(x) else x)
    trim = trim.lower()
    if values.ndim == 0:
        raise ValueError("trim_zeros: the input must be at least 1-D")
    axes = range(values.ndim) if axis is None else [
        _shapes.check_axis(a, values.ndim, "trim_zeros") for a in np.atleast_1d(axis)]
    slices = [slice(None)] * values.ndim
    for ax in axes:
        other = tuple(a for a in range(values.ndim) if a != ax)
        nz = np.nonzero(np.any(values != 0, axis=other) if other else values != 0)[0]
        if not nz.size:
            slices[ax] = slice(0, 0)
            continue
        lo = int(nz[0]) if "f" in trim else 0
        hi = int(nz[-1]) + 1 if "b" in trim else values.shape[ax]
        slices[ax] = slice(lo, hi)
    return F.getitem(x, tuple(slices))


trim_zeros = defun(trim_zeros, exports=TOP)


# NumPy 2's name for ``concatenate`` (the same function), and the deprecated ``row_stack``
# (NumPy 2.5 removed it: ``np.row_stack`` routes here only where NumPy still has it)
concat = defun(_shape_ops.concatenate, name="concat", exports=TOP, numpy=("concat",))
row_stack = defun(_shape_ops.vstack, name="row_stack", exports=(("numpy", "row_stack"),),
                  numpy=("row_stack",) if hasattr(np, "row_stack") else ())


# ---- joining helpers ----------------------------------------------------------------------------------
def _block_depth(arrays, depth=0):
    if isinstance(arrays, list):
        if not arrays:
            raise ValueError("block: Lists cannot be empty")
        depths = {_block_depth(a, depth + 1) for a in arrays}
        if len(depths) != 1:
            raise ValueError("block: List depths are mismatched")
        return depths.pop()
    if isinstance(arrays, tuple):
        raise TypeError("block: arrays is a tuple. Only lists can be used to arrange blocks, "
                        "and np.block does not allow implicit conversion from tuple to ndarray.")
    return depth


def _block_max_ndim(arrays):
    if isinstance(arrays, list):
        return max(_block_max_ndim(a) for a in arrays)
    return _known_ndim(_as_operand(arrays), "block")


def _block(arrays, depth, list_ndim, result_ndim):
    if isinstance(arrays, list):
        parts = [_block(a, depth + 1, list_ndim, result_ndim) for a in arrays]
        return F.concatenate(parts, axis=-(list_ndim - depth))
    a = _as_operand(arrays)
    nd = _known_ndim(a, "block")
    return F.reshape(a, (1,) * (result_ndim - nd) + tuple(_shape_of(a))) if nd < result_ndim \
        else a


def block(arrays):
    """NumPy's ``np.block``: nested lists of arrays assembled into one (the innermost lists
    joined along the last axis, the next along the one before...), differentiable."""
    list_ndim = _block_depth(arrays)
    if list_ndim == 0:
        return F.copy(_as_operand(arrays))
    result_ndim = max(list_ndim, _block_max_ndim(arrays))
    return _block(arrays, 0, list_ndim, result_ndim)


block = defun(block, exports=TOP)


def broadcast_arrays(*args, subok=False):
    """NumPy's ``np.broadcast_arrays``: the inputs broadcast against each other (a tuple), each
    differentiable."""
    ops_ = [_as_operand(a) for a in args]
    shape = _shapes.broadcast("broadcast_arrays", *[tuple(_shape_of(a)) for a in ops_])
    if None not in shape:
        return tuple(a if tuple(_shape_of(a)) == shape else F.broadcast_to(a, shape)
                     for a in ops_)
    out = []    # unknown lengths: broadcast against each of the others when the graph runs
    for a in ops_:
        for b in ops_:
            if b is not a:
                a = F.broadcast_like(a, b)
        out.append(a)
    return tuple(out)


broadcast_arrays = defun(broadcast_arrays, exports=TOP)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """NumPy's ``np.meshgrid`` (``xy`` or ``ij`` indexing, dense or sparse), differentiable in
    each coordinate vector."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    nd = len(xi)
    shapes = [(1,) * nd for _ in xi]
    out = []
    for i, x in enumerate(xi):
        x = _as_operand(x)
        s = [1] * nd
        s[i] = -1
        out.append(F.reshape(x, tuple(s)))
    if indexing == "xy" and nd > 1:
        out[0] = F.reshape(out[0], (1, -1) + (1,) * (nd - 2))
        out[1] = F.reshape(out[1], (-1, 1) + (1,) * (nd - 2))
    del shapes
    if not sparse:
        out = list(broadcast_arrays(*out))
        if copy:
            out = [F.copy(o) for o in out]
    return tuple(out)


meshgrid = defun(meshgrid, exports=TOP)


# ---- factories whose values carry a gradient -------------------------------------------------------
def full(shape, fill_value, dtype=None, order="C"):
    """NumPy's ``np.full``, differentiable in ``fill_value`` (the gradient sums over the
    copies)."""
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    fill = _as_operand(fill_value)
    if dtype is not None:
        fill = F.astype(fill, dtype)
    return F.copy(F.broadcast_to(fill, shape))


full = defun(full, exports=(("numpy", "full"),))


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    """NumPy's ``np.full_like``, differentiable in ``fill_value``; ``a`` is read for its shape
    and dtype only (NumPy's own result when neither is a graph Node and ``fill_value`` is a
    plain value)."""
    node_like = _graph_value(a) and not is_tensor(a)
    if not _graph_value(fill_value) and not node_like:
        return np.full_like(a._ndarray if is_tensor(a) else a, fill_value, dtype=dtype,
                            order=order, subok=subok, shape=shape)
    a = _as_operand(a)
    fill = F.astype(_as_operand(fill_value), np.dtype(dtype) if dtype is not None else a.dtype)
    if shape is None:   # a's shape, read when the graph runs (unknown dimensions too)
        return F.copy(F.broadcast_like(fill, a))
    return F.copy(F.broadcast_to(fill, (shape,) if np.ndim(shape) == 0 else tuple(shape)))


full_like = defun(full_like, exports=TOP)


def _linspace_weights(num, endpoint, dtype):
    """The weight of ``stop`` in each sample (``start`` has one minus it)."""
    div = (num - 1) if endpoint else num
    t = np.arange(num, dtype=np.float64) / div if div > 0 else np.zeros(num)
    if endpoint and num > 1:
        t[-1] = 1.0
    return t.astype(dtype if np.dtype(dtype).kind == "f" else np.float64)


def _linspace_vjp(which):
    def vjp(g, ans, start, stop, num, endpoint, dtype, axis):
        t = _linspace_weights(num, endpoint, getattr(g, "dtype", np.float64))
        w = t if which == "stop" else 1.0 - t
        nd = _known_ndim(g, "linspace")
        w = w.reshape((1,) * axis + (num,) + (1,) * (nd - axis - 1))
        return F.sum(g * w, axis=axis)
    return vjp


def _linspace_shape(shapes, num, endpoint, dtype, axis):
    base = _shapes.broadcast("linspace", *shapes)
    return tuple(base[:axis]) + (num,) + tuple(base[axis:])


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """NumPy's ``np.linspace`` (its own values), differentiable in ``start`` and ``stop``
    (scalars or arrays: the samples then run along ``axis``); ``retstep=True`` also returns the
    spacing, differentiable too.

        >>> s = fg.tensor(0.0, requires_grad=True)
        >>> fg.linspace(s, 1.0, 5).sum().backward(); s.grad  # doctest: +SKIP
    """
    num = _shapes.as_int(num, "linspace", "num")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = _as_operand(start), _as_operand(stop)
    nd = len(_shapes.broadcast("linspace", tuple(_shape_of(start)), tuple(_shape_of(stop))))
    ax = _shapes.check_axis(axis, nd + 1, "linspace")
    samples = apply(linspace.op, (start, stop), {"num": num, "endpoint": bool(endpoint),
                                                 "dtype": None if dtype is None else
                                                 np.dtype(dtype), "axis": ax})
    if not retstep:
        return samples
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else (stop - start) * np.nan
    return samples, step


linspace = defop("linspace",
                 lambda start, stop, num, endpoint, dtype, axis: np.linspace(
                     start, stop, num, endpoint=endpoint, dtype=dtype, axis=axis),
                 _linspace_vjp("start"), _linspace_vjp("stop"), shape=_linspace_shape,
                 function=linspace, exports=TOP)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """NumPy's ``np.logspace``: ``base ** linspace(start, stop)``, differentiable in ``start``,
    ``stop`` and ``base``."""
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    if np.ndim(base) and not _graph_value(base):
        base = np.expand_dims(np.asarray(base), axis)
    out = F.power(base, y)
    return out if dtype is None else F.astype(out, dtype)


logspace = defun(logspace, exports=TOP)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy's ``np.geomspace`` (real values: the samples are geometric, the endpoints exactly
    ``start`` and ``stop``), differentiable in both."""
    start, stop = _as_operand(start), _as_operand(stop)
    start = start * 1.0
    stop = stop * 1.0
    sign = F.sign(start)
    log_start, log_stop = F.log10(start / sign), F.log10(stop / sign)
    num = _shapes.as_int(num, "geomspace", "num")
    result = logspace(log_start, log_stop, num=num, endpoint=endpoint, base=10.0, axis=0)
    if num > 0:
        pieces = [F.expand_dims(start / sign, 0)]
        if num > 2 or (num == 2 and not endpoint):
            pieces.append(F.getitem(result, slice(1, num - 1 if endpoint else num)))
        if num > 1 and endpoint:
            pieces.append(F.expand_dims(stop / sign, 0))
        result = F.concatenate(pieces, axis=0) if len(pieces) > 1 else pieces[0]
    result = sign * result
    if axis != 0:
        result = F.moveaxis(result, 0, axis)
    return result if dtype is None else F.astype(result, dtype)


geomspace = defun(geomspace, exports=TOP)


# ---- diagonals ---------------------------------------------------------------------------------------
def _make_diagonal_shape(shapes, offset, axis1, axis2):
    s = tuple(shapes[0])
    n = s[-1]
    m = None if n is None else n + abs(offset)
    out = list(s[:-1])
    nd = len(out) + 2
    a1, a2 = axis1 % nd, axis2 % nd
    for a in sorted((a1, a2)):
        out.insert(a, m)
    return tuple(out)


def _make_diagonal_forward(d, offset, axis1, axis2):
    d = np.asarray(d)
    shape = _make_diagonal_shape([d.shape], offset, axis1, axis2)
    out = np.zeros(shape, dtype=d.dtype)
    view = np.diagonal(out, offset, axis1, axis2)
    view.flags.writeable = True      # np.diagonal returns a view of ``out``
    view[...] = d
    return out


def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """The array whose ``diagonal(., offset, axis1, axis2)`` is ``D`` (its last axis), zeros
    elsewhere: autograd's ``make_diagonal`` (the adjoint of ``diagonal``), differentiable.

        >>> fg.make_diagonal(fg.tensor([1.0, 2.0]))  # doctest: +SKIP
    """
    D = _as_operand(D)
    nd = _known_ndim(D, "make_diagonal")
    if nd == 0:
        raise ValueError("make_diagonal: D must be at least 1-D")
    a1 = _shapes.check_axis(axis1, nd + 1, "make_diagonal")
    a2 = _shapes.check_axis(axis2, nd + 1, "make_diagonal")
    if a1 == a2:
        raise ValueError("make_diagonal: axis1 and axis2 cannot be the same")
    return apply(make_diagonal.op, (D,), {"offset": _shapes.as_int(offset, "make_diagonal",
                                                                   "offset"),
                                          "axis1": a1, "axis2": a2})


make_diagonal = defop("make_diagonal", _make_diagonal_forward,
                      lambda g, ans, D, offset, axis1, axis2: F.diagonal(g, offset, axis1,
                                                                         axis2),
                      shape=_make_diagonal_shape, function=make_diagonal, exports=TOP,
                      complex_vjps=True)


def diagflat(v, k=0):
    """NumPy's ``np.diagflat``: the flattened input on diagonal ``k`` of a square matrix."""
    return F.diag(F.reshape(_as_operand(v), (-1,)), k)


diagflat = defun(diagflat, exports=TOP)
