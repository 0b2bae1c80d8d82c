"""Shape operations and indexing, plus the ``*_like`` helpers the engines and VJPs use.

The ``*_like`` ops take their target shape from a second operand at run time, so one VJP rule
works on arrays, Tensors and graph Nodes whose dimensions are only known when the graph runs.
"""
from __future__ import annotations

import types

import numpy as np

from .._core import TF, TOP, TOP_TF, apply, defop, defun, holds_graph_value
from .._core import shapes as _shapes
from ..kernels.elementwise import sum_to_shape_of

from .. import ops as F


sum_to_like = defop("sum_to_like", sum_to_shape_of, lambda g, ans, gin, x: F.broadcast_like(g, gin),
                    None, shape=lambda shapes, **_: tuple(shapes[1]), unbroadcast=True,
                    shape_only=(1,), noop_same_shape=True,
                    doc="Sum ``g`` down to ``x``'s shape (undoes broadcasting); used by the "
                        "engines.", complex_vjps=True)
def _broadcast_like_forward(g, x):
    shape = x.shape if type(x) is np.ndarray else np.shape(x)
    if (g.ndim if type(g) is np.ndarray or isinstance(g, np.generic) else np.ndim(g)) == 0 \
            and shape:
        # a scalar spread over x (every sum's and mean's VJP): the stride-0 read-only view
        # np.broadcast_to makes, without its Python-level iterator setup (~7x faster)
        g = np.asarray(g)
        view = np.ndarray(shape, g.dtype, g, 0, (0,) * len(shape))
        view.setflags(write=False)   # (half the cost of view.flags.writeable = False)
        return view
    return np.broadcast_to(g, np.broadcast_shapes(np.shape(g), shape))


broadcast_like = defop("broadcast_like", _broadcast_like_forward,
                       lambda g, ans, gin, x: F.sum_to_like(g, gin), None,
                       shape=lambda shapes, **_: _shapes.broadcast("broadcast_like", *shapes),
                       broadcasting=True, shape_only=(1,), noop_same_shape=True,
                       doc="Broadcast ``g`` against ``x``'s shape (a read-only view for arrays).",
                       complex_vjps=True)
reshape_like = defop("reshape_like", lambda g, x: np.reshape(g, np.shape(x)),
                     lambda g, ans, gin, x: F.reshape_like(g, gin), None,
                     shape=lambda shapes, **_: tuple(shapes[1]), shape_only=(1,),
                     noop_same_shape=True, doc="Reshape ``g`` to ``x``'s shape.",
                     complex_vjps=True)


def _size_ratio(a, b):
    if type(b) is np.ndarray and (type(a) is np.ndarray or isinstance(a, np.generic)):
        # (a mean's VJP on arrays: the attributes NumPy's functions would read, without them)
        dtype = b.dtype if b.dtype.kind == "f" else np.dtype(np.float64)
        return dtype.type(a.size / b.size) if b.size else dtype.type(0)
    dtype = np.result_type(b) if np.result_type(b).kind == "f" else np.dtype(np.float64)
    return dtype.type(np.size(a) / np.size(b)) if np.size(b) else dtype.type(0)


size_ratio = defop("size_ratio", _size_ratio, None, None, shape=_shapes.scalar,
                   differentiable=False, shape_only=(0, 1),
                   doc="``a.size / b.size`` as a scalar of ``b``'s float dtype (for mean and var "
                       "VJPs).")


def _astype_forward(x, dtype):
    x = np.asarray(x)
    if x.dtype.kind == "c" and dtype.kind != "c":
        # the real part, NumPy's value, without its ComplexWarning: the engines cast a complex
        # gradient reaching a real input this way (autograd's convention takes its real part)
        x = x.real
    return x.astype(dtype, copy=False)


def astype(x, dtype):
    """Cast to ``dtype`` (gradient cast back to the input's dtype)."""
    return apply(astype.op, (x,), {"dtype": np.dtype(dtype)})


astype = defop("astype", _astype_forward,
               lambda g, ans, x, dtype: F.astype(g, x.dtype),
               shape=_shapes.same_as_first,
               function=astype, noop_same_shape=True, exports=TOP, methods=True, complex_vjps=True)


# every identity is a node of its own (never merged): it is how the transforms mark "the
# variable being differentiated", which must stay apart from other uses of the same value
# (``grad(lambda y: x * y)(x)`` differentiates the ``y`` path only)
identity = defop("identity", lambda x: x, lambda g, ans, x: g, shape=_shapes.same_as_first,
                 distinct=True, noop_same_shape=True, exports=((TF, "identity"),),
                 doc="Return ``x`` unchanged, as a new node of the graph (used by the "
                     "transforms).", complex_vjps=True)
copy = defop("copy", lambda x: np.array(x, copy=True), lambda g, ans, x: g,
             shape=_shapes.same_as_first, cheap=True, exports=("numpy",),
             methods=("copy", "clone"),      # (clone: PyTorch's name)
             doc="A copy of ``x`` (NumPy's ``np.copy``; the gradient passes through): later "
                 "in-place changes to either do not reach the other.", complex_vjps=True)


# ---- reshaping --------------------------------------------------------------------------------
def _reshape_shape(shapes, shape):
    (src,) = shapes
    known = None not in src
    total = int(np.prod(src)) if known else None
    out = list(shape)
    if -1 in out:
        i = out.index(-1)
        rest = int(np.prod([d for j, d in enumerate(out) if j != i]))
        if rest == 0:   # (-1 beside a 0: any length would do, NumPy refuses)
            raise ValueError(f"reshape: cannot reshape array of shape {tuple(src)} into shape "
                             f"{shape}: -1 is ambiguous beside a dimension of length 0")
        out[i] = total // rest if known else None
        if known and total % rest:
            raise ValueError(f"reshape: cannot reshape array of shape {tuple(src)} into shape {shape}")
    elif known and int(np.prod(out)) != total:
        raise ValueError(f"reshape: cannot reshape array of shape {tuple(src)} into shape {shape}")
    return tuple(out)


def _int_tuple(shape, op: str) -> tuple:
    """A shape given as one int, or a sequence of ints, as a tuple of Python ints; floats are
    a ``TypeError`` naming the op (NumPy's rule), not truncated."""
    if isinstance(shape, (tuple, list)):
        return tuple([_shapes.as_int(d, op, "shape") for d in shape])
    try:
        return (_shapes.as_int(shape, op, "shape"),)
    except TypeError:
        pass
    try:
        dims = tuple(shape)  # an array of ints, a range...
    except TypeError:
        raise TypeError(f"{op}: shape must be an integer or a sequence of integers, "
                        f"got {type(shape).__name__} {shape!r}") from None
    return tuple([_shapes.as_int(d, op, "shape") for d in dims])


def reshape(x, *shape):
    """Reshape (one ``-1`` allowed); ``fg.reshape(x, (2, 3))`` or ``x.reshape(2, 3)``.

    Other negative lengths, and a second ``-1``, are a ``ValueError`` in every mode (NumPy
    would read ``-2`` as ``-1``; TensorFlow and PyTorch refuse it).
    """
    target = _shapes.check_dims(_int_tuple(shape[0] if len(shape) == 1 else shape, "reshape"),
                                "reshape", unknown=(-1,))
    if target.count(-1) > 1:
        raise ValueError(f"reshape: shape {target} has more than one unknown dimension (-1)")
    return apply(reshape.op, (x,), {"shape": target})


reshape = defop("reshape", lambda x, shape: np.reshape(x, shape),
                lambda g, ans, x, shape: F.reshape_like(g, x), shape=_reshape_shape,
                function=reshape, noop_same_shape=True, exports=TOP_TF, methods=True,
                complex_vjps=True)


def _transposed_axes(ndim, axes=None):
    """The permutation ``transpose`` makes (for the passes' ``permutation`` field)."""
    return tuple(range(ndim))[::-1] if axes is None else tuple(axes)


def _swapped_axes(ndim, axis1, axis2):
    perm = list(range(ndim))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return tuple(perm)


def _transpose_method(self, *axes):
    """``x.transpose()``, ``x.transpose(1, 0)`` or ``x.transpose((1, 0))``, as NumPy's."""
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return transpose(self, axes or None)


def _transpose_vjp(g, ans, x, axes):
    return F.transpose(g, None if axes is None else tuple(int(i) for i in np.argsort(axes)))


def transpose(x, axes=None):
    """Permute axes (reverse them when ``axes`` is None).

        >>> fg.transpose(fg.ones((2, 3, 4)), (0, 2, 1)).shape  # doctest: +SKIP
        (2, 4, 3)
    """
    if axes is not None:
        # checked here, not only by NumPy: the axes are made non-negative (one canonical
        # attribute for the static graph, and the VJP inverts the permutation with argsort)
        ndim = x.ndim if hasattr(x, "ndim") else np.ndim(x)
        axes = tuple([_shapes.check_axis(a, ndim, "transpose", _shape_of(x)) for a in axes])
        if len(axes) != ndim or len(set(axes)) != ndim:
            raise ValueError(f"transpose: axes {axes} are not a permutation of the "
                             f"{ndim} axes of an array of shape {tuple(_shape_of(x))}")
    return apply(transpose.op, (x,), {"axes": axes})


transpose = defop("transpose", lambda x, axes: np.transpose(x, axes), _transpose_vjp,
                  shape=lambda shapes, axes=None, **_: tuple(
                      reversed(shapes[0])) if axes is None else tuple(shapes[0][a] for a in axes),
                  function=transpose, permutation=_transposed_axes, exports=TOP,
                  methods={"transpose": _transpose_method, "T": property(transpose)},
                  complex_vjps=True)


def _swap_shape(shapes, axis1, axis2, **_):
    s = list(shapes[0])
    s[axis1], s[axis2] = s[axis2], s[axis1]
    return tuple(s)


def swapaxes(x, axis1: int, axis2: int):
    """Interchange two axes."""
    shape = _shape_of(x)
    a1 = _shapes.check_axis(axis1, len(shape), "swapaxes", shape)
    a2 = _shapes.check_axis(axis2, len(shape), "swapaxes", shape)
    return apply(swapaxes.op, (x,), {"axis1": a1, "axis2": a2})


swapaxes = defop("swapaxes", lambda x, axis1, axis2: np.swapaxes(x, axis1, axis2),
                 lambda g, ans, x, axis1, axis2: F.swapaxes(g, axis1, axis2),
                 shape=_swap_shape,
                 function=swapaxes, permutation=_swapped_axes, exports=TOP, methods=True,
                 complex_vjps=True)


def _expand_shape(shapes, axis, **_):
    s = list(shapes[0])
    for a in _shapes.normalize_axis(axis, len(s) + len(axis), "expand_dims", shapes[0]):
        s.insert(a, 1)
    return tuple(s)


def _int_axes(axis, op: str):
    """``axis`` (an int, or a tuple or list of them) as Python ints: a tuple, or one int.  The
    range is checked by NumPy (eager) or by the op's shape rule (static)."""
    if isinstance(axis, (tuple, list)):
        return tuple([_shapes.as_int(a, op) for a in axis])
    return _shapes.as_int(axis, op)


def _reshape_back(g, ans, x, axis):
    """The VJP of an op that only adds or removes length-1 axes: ``g`` in ``x``'s shape."""
    return F.reshape_like(g, x)


def expand_dims(x, axis):
    """Insert length-1 axes at ``axis`` (int or tuple)."""
    axis = _int_axes(axis, "expand_dims")
    return apply(expand_dims.op, (x,), {"axis": axis if type(axis) is tuple else (axis,)})


expand_dims = defop("expand_dims", lambda x, axis: np.expand_dims(x, axis), _reshape_back,
                    shape=_expand_shape, function=expand_dims, noop_same_shape=True,
                    exports=TOP, methods=True, complex_vjps=True)


def _squeeze_shape(shapes, axis, **_):
    s = shapes[0]
    if axis is None:    # (an unknown dimension may be 1: then the rank is unknown)
        return None if None in s else tuple(d for d in s if d != 1)
    axes = _shapes.normalize_axis(axis, len(s), "squeeze", s)
    for a in axes:
        if s[a] not in (1, None):
            raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size "
                             f"not equal to one (axis {a} of shape {tuple(s)})")
    return tuple(d for i, d in enumerate(s) if i not in axes)


def squeeze(x, axis=None):
    """Remove length-1 axes (all, or those in ``axis``)."""
    if axis is not None:
        axis = _int_axes(axis, "squeeze")
    return apply(squeeze.op, (x,), {"axis": axis})


squeeze = defop("squeeze", lambda x, axis: np.squeeze(x, axis), _reshape_back,
                shape=_squeeze_shape, function=squeeze, noop_same_shape=True, exports=TOP,
                methods=True, complex_vjps=True)


def _broadcast_to_shape(shapes, shape, **_):
    """``shape`` itself, when ``x`` broadcasts to it: each of ``x``'s dimensions (aligned on
    the right) is 1, unknown, or the target's length (NumPy's rule: the target never grows to
    meet ``x``)."""
    src = tuple(shapes[0])
    if len(src) > len(shape) or any(
            d not in (1, None) and d != t for d, t in zip(src[::-1], shape[::-1])):
        raise ValueError(f"broadcast_to: cannot broadcast an operand of shape {src} to shape "
                         f"{shape}")
    return shape


def broadcast_to(x, shape):
    """Broadcast to ``shape`` (NumPy rules).

        >>> fg.broadcast_to(fg.ones(3), (2, 3)).shape
        (2, 3)
    """
    return apply(broadcast_to.op, (x,), {"shape": _shapes.check_dims(
        _int_tuple(shape, "broadcast_to"), "broadcast_to")})


broadcast_to = defop("broadcast_to", lambda x, shape: np.broadcast_to(x, shape),
                     lambda g, ans, x, shape: g,  # the engine sums back to x's shape
                     shape=_broadcast_to_shape,
                     function=broadcast_to, broadcasting=True, noop_same_shape=True,
                     exports=TOP_TF, complex_vjps=True)


def ravel(x):
    """Flatten to one dimension."""
    return reshape(x, (-1,))


def _flatten(self):
    return copy(ravel(self))   # NumPy's flatten copies; ravel may view


ravel = defun(ravel, exports=TOP, methods={"ravel": ravel, "flatten": _flatten})


# ---- joining and splitting --------------------------------------------------------------------
def _join_shape(shapes, axis, stack=False, **_):
    first = tuple(shapes[0])
    name = "stack" if stack else "concatenate"
    for s in shapes[1:]:
        if len(s) != len(first):
            raise ValueError(f"{name}: all input arrays must have the same number of dimensions, "
                             f"got shapes {' '.join(str(tuple(t)) for t in shapes)}")
    if stack:
        ax = _shapes.check_axis(axis, len(first) + 1, name, first)
        for s in shapes:
            _shapes.broadcast(name, s, first)
            if any(a is not None and b is not None and a != b for a, b in zip(s, first)):
                raise ValueError(f"{name}: all input arrays must have the same shape, got "
                                 f"{' '.join(str(tuple(t)) for t in shapes)}")
        return first[:ax] + (len(shapes),) + first[ax:]
    if not first:
        raise ValueError(f"concatenate: zero-dimensional arrays cannot be concatenated "
                         f"(shapes {' '.join(str(tuple(t)) for t in shapes)})")
    ax = _shapes.check_axis(axis, len(first), name, first)
    out = list(first)
    sizes = [s[ax] for s in shapes]
    out[ax] = None if None in sizes else int(np.sum(sizes))
    for s in shapes:
        for i, (a, b) in enumerate(zip(s, first)):
            if i != ax and a is not None and b is not None and a != b:
                raise ValueError(f"{name}: the input shapes must match except along axis {ax}, "
                                 f"got {' '.join(str(tuple(t)) for t in shapes)}")
    return tuple(out)


def _shape_of(x):
    """An input's shape: Tensors, Nodes and arrays have one; a plain list is read by NumPy."""
    shape = getattr(x, "shape", None)
    return np.shape(x) if shape is None else shape


def _concat_vjp_for(i):
    def vjp(g, ans, *xs, axis):
        sizes = [_shape_of(x)[axis] for x in xs[:i + 1]]
        if None in sizes:   # a static graph's unknown length: the slice is found at run time
            return apply(concat_piece.op, (g,) + xs, {"i": i, "axis": axis})
        start = sum(sizes[:-1])
        ax = axis % g.ndim
        return F.getitem(g, (slice(None),) * ax + (slice(start, start + sizes[-1]),))
    return vjp


def _concat_piece(g, *xs, i, axis):
    """``g``'s part that ``concatenate(xs, axis)`` took from ``xs[i]``, located from the
    inputs' run-time lengths (the gradient of a concatenation whose lengths a static graph
    does not know)."""
    start = sum(np.shape(x)[axis] for x in xs[:i])
    ax = axis % np.ndim(g)
    return g[(slice(None),) * ax + (slice(start, start + np.shape(xs[i])[axis]),)]


def _concat_piece_shape(shapes, i, axis, **_):
    out = list(shapes[0])
    out[axis % len(out)] = tuple(shapes[1 + i])[axis]
    return tuple(out)


def _concat_piece_vjp_for(j):
    if j:
        return None          # the inputs give only their lengths
    def vjp(gg, ans, g, *xs, i, axis):
        # the piece back in its place, zeros elsewhere: the adjoint of taking it
        zero = np.zeros((), getattr(gg, "dtype", np.float64))
        return F.concatenate([gg if k == i else F.broadcast_like(zero, x)
                              for k, x in enumerate(xs)], axis=axis)
    return vjp


def _stack_vjp_for(i):
    def vjp(g, ans, *xs, axis):
        ax = axis % g.ndim
        return F.getitem(g, (slice(None),) * ax + (i,))
    return vjp


concat_piece = defop("concat_piece", _concat_piece, vjp_for=_concat_piece_vjp_for,
                     shape=_concat_piece_shape, variadic=True, complex_vjps=True)


def _joined(arrays, name: str) -> tuple:
    """The arrays to join, as a tuple: at least one, and no Tensors or Nodes joined with strings
    or other objects (that would make a string or object array and drop their gradients
    without a word; PyTorch refuses such a list too)."""
    arrays = tuple(arrays)
    if not arrays:
        raise ValueError(f"{name}: need at least one array to {name}")
    if not holds_graph_value(arrays):
        return arrays
    for a in arrays:
        dt = getattr(a, "dtype", None)
        if not isinstance(dt, np.dtype):
            if holds_graph_value((a,)):
                continue        # a nested list: checked when it is packed in its turn
            dt = np.asarray(a).dtype
        if dt.kind not in "biufc":
            r = repr(a)
            what = {"U": "a string", "S": "a bytes", "O": "an object"}.get(dt.kind,
                                                                          f"a {dt.name}")
            raise TypeError(f"{name}: cannot join {r if len(r) <= 40 else r[:37] + '...'} "
                            f"(dtype {dt}) with Tensors or graph Nodes: the result would be "
                            f"{what} array without their gradients")
    return arrays


def concatenate(arrays, axis: int = 0):
    """Join a sequence of arrays along an existing axis."""
    arrays = _joined(arrays, "concatenate")
    return apply(concatenate.op, arrays, {"axis": _shapes.as_int(axis, "concatenate")})


concatenate = defop("concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis),
                    vjp_for=_concat_vjp_for, function=concatenate,
                    shape=lambda shapes, axis, **_: _join_shape(shapes, axis), variadic=True,
                    exports=TOP + ((TF, "concat"),), complex_vjps=True)


def stack(arrays, axis: int = 0):
    """Join a sequence of same-shaped arrays along a new axis."""
    arrays = _joined(arrays, "stack")
    return apply(stack.op, arrays, {"axis": _shapes.as_int(axis, "stack")})


stack = defop("stack", lambda *xs, axis: np.stack(xs, axis=axis), vjp_for=_stack_vjp_for,
              function=stack, shape=lambda shapes, axis, **_: _join_shape(shapes, axis, stack=True),
              variadic=True, exports=TOP_TF, complex_vjps=True)


def split(x, indices_or_sections, axis: int = 0):
    """Split into a list of pieces along ``axis`` (NumPy semantics), each differentiable.

        >>> [p.shape for p in fg.split(fg.ones((4, 3)), [1], axis=0)]  # doctest: +SKIP
        [(1, 3), (3, 3)]
    """
    shape = tuple(_shape_of(x))
    ax = _shapes.check_axis(axis, len(shape), "split", shape)
    n = shape[ax]
    if n is None:
        raise ValueError("split: the split axis must have a known length")
    if not (np.isscalar(indices_or_sections) or np.ndim(indices_or_sections) == 0):
        bounds = [0] + [_shapes.as_int(i, "split", "split index")
                        for i in indices_or_sections] + [n]
    else:
        k = _shapes.as_int(indices_or_sections, "split", "indices_or_sections")
        if k <= 0 or n % k:
            raise ValueError(f"split: array split does not result in an equal division "
                             f"({n} into {k})")
        bounds = [i * (n // k) for i in range(k + 1)]
    return [getitem(x, (slice(None),) * ax + (slice(a, b),)) for a, b in zip(bounds, bounds[1:])]


split = defun(split, exports=TOP)


# ---- indexing ---------------------------------------------------------------------------------
def _scatter_add_forward(g, x, index):
    out = np.zeros(np.shape(x), dtype=np.result_type(g))
    if _is_basic(index):
        out[index] = g
    else:
        np.add.at(out, index, g)
    return out


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    has_array = False
    for it in items:
        if isinstance(it, np.ndarray):
            if it.dtype == bool and not has_array:
                has_array = True  # a single mask selects each element at most once
                continue
            return False
    return True


def _getitem_forward(x, index):
    return x[index]


def _canon_index(index):
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for it in items:
        if hasattr(it, "_fg_index_value"):
            it = it._fg_index_value()
        if isinstance(it, (list, np.ndarray)):
            # a private, read-only copy: the index is kept (tape, graph node, VJP) and keyed by
            # its bytes when the graph is built, so the caller mutating their array afterwards
            # must not change the result nor merge this node with an unrelated one
            was_list = isinstance(it, list)
            it = np.array(it)
            if was_list and it.size == 0:
                it = it.astype(np.intp)  # x[[]]: NumPy reads an empty list as integers
            it.flags.writeable = False
            if it.dtype != bool and not np.issubdtype(it.dtype, np.integer):
                raise IndexError(f"getitem: arrays used as indices must be of integer or boolean "
                                 f"type, got {it.dtype}")
        elif isinstance(it, (bool, np.bool_)):
            it = np.array(it)   # x[True] adds a dimension, as a 0-d mask does
            it.flags.writeable = False
        elif isinstance(it, (np.integer,)):
            it = int(it)
        elif not (it is None or it is Ellipsis or isinstance(it, (int, slice, np.ndarray))):
            raise IndexError(f"getitem: only integers, slices, Ellipsis, None, and integer or "
                             f"boolean arrays are valid indices (got {type(it).__name__})")
        out.append(it)
    return tuple(out)


def getitem(x, index):
    """``x[index]``: basic slicing, integer arrays (repeats accumulate in the gradient), masks."""
    return apply(getitem.op, (x,), {"index": _canon_index(index)})


getitem = defop("getitem", _getitem_forward,
                lambda g, ans, x, index: F.scatter_add(g, x, index),
                shape=lambda shapes, index: _shapes.indexed(shapes[0], index),
                function=getitem, operators=("__getitem__",), complex_vjps=True)


def scatter_add(g, x, index):
    """Zeros shaped like ``x`` with ``g`` added at ``x[index]`` (the VJP of indexing)."""
    return apply(scatter_add.op, (g, x), {"index": index})


scatter_add = defop("scatter_add", _scatter_add_forward,
                    lambda g, ans, gin, x, index: F.getitem(g, index), None,
                    shape=lambda shapes, **_: tuple(shapes[1]), function=scatter_add,
                    complex_vjps=True)


# ---- reordering: flip, roll, moveaxis -----------------------------------------------------------
def _known_ndim(x, op: str) -> int:
    if not hasattr(x, "shape"):
        return np.ndim(x)
    if x.shape is None:  # a graph Node of unknown rank
        raise ValueError(f"{op}: the operand's rank must be known")
    return len(x.shape)


def _axes_attr(x, axis, op: str):
    """``axis`` (None, an int or a sequence) as None or a tuple of non-negative ints."""
    if axis is None:
        return None
    nd = _known_ndim(x, op)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple([_shapes.check_axis(a, nd, op, _shape_of(x)) for a in axes])
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: repeated axis in {axis}")
    return out


def flip(x, axis=None):
    """Reverse the order of elements along ``axis`` (None: every axis), NumPy's ``np.flip``."""
    return apply(flip.op, (x,), {"axis": _axes_attr(x, axis, "flip")})


flip = defop("flip", lambda x, axis: np.flip(x, axis),
             lambda g, ans, x, axis: flip(g, axis), shape=_shapes.same_as_first,
             function=flip, exports=TOP, complex_vjps=True)


def _neg_shift(shift):
    return tuple(-s for s in shift) if isinstance(shift, tuple) else -shift


def roll(x, shift, axis=None):
    """Roll elements along ``axis`` (None: the flattened array, shape kept), NumPy's
    ``np.roll``; the gradient rolls back."""
    shift = (tuple([_shapes.as_int(s, "roll", "shift") for s in shift])
             if isinstance(shift, (tuple, list)) else _shapes.as_int(shift, "roll", "shift"))
    if axis is None:
        axes = None
    else:  # (an axis may repeat: its shifts add up, as in NumPy)
        nd, shape = _known_ndim(x, "roll"), _shape_of(x)
        axes = (tuple([_shapes.check_axis(a, nd, "roll", shape) for a in axis])
                if isinstance(axis, (tuple, list)) else _shapes.check_axis(axis, nd, "roll", shape))
        if isinstance(axes, tuple) and isinstance(shift, tuple) and len(axes) != len(shift) \
                and 1 not in (len(axes), len(shift)):
            raise ValueError(f"roll: shift {shift} and axis {axis} must have the same length")
    return apply(roll.op, (x,), {"shift": shift, "axis": axes})


roll = defop("roll", lambda x, shift, axis: np.roll(x, shift, axis),
             lambda g, ans, x, shift, axis: roll(g, _neg_shift(shift), axis),
             shape=_shapes.same_as_first, function=roll, exports=TOP, complex_vjps=True)


def moveaxis(x, source, destination):
    """Move axes to new positions (others keep their order): a ``transpose``, as in NumPy."""
    nd = _known_ndim(x, "moveaxis")
    src = _axes_attr(x, source, "moveaxis")
    dst = _axes_attr(x, destination, "moveaxis")
    if len(src) != len(dst):
        raise ValueError("moveaxis: `source` and `destination` arguments must have the same "
                         "number of elements")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, tuple(order))


moveaxis = defun(moveaxis, exports=TOP)


# ---- repeat and tile, each with its adjoint (a sum over the copies) -----------------------------
def _repeats_attr(repeats):
    if np.ndim(repeats) == 0:
        return _shapes.as_int(repeats, "repeat", "repeats")
    r = tuple([_shapes.as_int(k, "repeat", "repeats") for k in np.ravel(repeats)])
    return r[0] if len(r) == 1 else r  # one count applies to every element, as in NumPy


def _repeat_shape(shapes, repeats, axis):
    s = tuple(shapes[0])
    if axis is None:
        s = (None if None in s else int(np.prod(s, dtype=np.int64)),)
        axis = 0
    n = s[axis]
    if isinstance(repeats, tuple):
        if n is not None and len(repeats) != n:
            raise ValueError(f"repeat: operands could not be broadcast together with shape "
                             f"({n},) ({len(repeats)},)")
        if any(k < 0 for k in repeats):
            raise ValueError("repeat: repeats may not contain negative values")
        m = int(np.sum(repeats))
    else:
        if repeats < 0:
            raise ValueError("repeat: repeats may not contain negative values")
        m = None if n is None else n * repeats
    return s[:axis] + (m,) + s[axis + 1:]


def _unrepeat_forward(g, x, repeats, axis):
    g = np.asarray(g)
    shape = np.shape(x)
    base = (int(np.prod(shape, dtype=np.int64)),) if axis is None else shape
    ax = 0 if axis is None else axis
    n = base[ax]
    if not isinstance(repeats, tuple):
        out = g.reshape(base[:ax] + (n, repeats) + base[ax + 1:]).sum(axis=ax + 1)
    else:
        counts = np.asarray(repeats, dtype=np.intp)
        out = np.zeros(base, dtype=g.dtype)
        used = counts > 0
        if used.any():
            starts = (np.cumsum(counts) - counts)[used]
            index = (slice(None),) * ax + (used,)
            out[index] = np.add.reduceat(g, starts, axis=ax)
    return out.reshape(shape)


def _unrepeat(g, x, repeats, axis):
    """The adjoint of ``repeat``: each element of ``x`` gets the sum of its copies in ``g``."""
    return apply(_unrepeat.op, (g, x), {"repeats": repeats, "axis": axis})


_unrepeat = defop("unrepeat", _unrepeat_forward,
                  lambda G, ans, g, x, repeats, axis: repeat(G, repeats, axis), None,
                  shape=lambda shapes, **_: tuple(shapes[1]), function=_unrepeat,
                  complex_vjps=True)


def repeat(x, repeats, axis=None):
    """Repeat each element ``repeats`` times (an int, or one count per element) along ``axis``
    (None: the flattened array), NumPy's ``np.repeat``; the gradient sums the copies."""
    x = _as_operand(x)
    nd = _known_ndim(x, "repeat")
    if axis is not None:
        axis = _shapes.check_axis(axis, max(nd, 1), "repeat", _shape_of(x))
        if nd == 0:
            axis = None  # NumPy reads a 0-d array as 1-d here: the same (k,) result
    return apply(repeat.op, (x,), {"repeats": _repeats_attr(repeats), "axis": axis})


repeat = defop("repeat", lambda x, repeats, axis: np.repeat(x, repeats, axis),
               lambda g, ans, x, repeats, axis: _unrepeat(g, x, repeats, axis),
               shape=_repeat_shape, function=repeat, exports=TOP, methods=True, complex_vjps=True)


def _tile_dims(shape, reps):
    d = max(len(reps), len(shape))
    return (1,) * (d - len(shape)) + tuple(shape), (1,) * (d - len(reps)) + tuple(reps)


def _tile_shape(shapes, reps):
    s, r = _tile_dims(shapes[0], reps)
    return tuple(None if a is None else a * b for a, b in zip(s, r))


def _untile_forward(g, x, reps):
    shape = np.shape(x)
    s, r = _tile_dims(shape, reps)
    inter = tuple(v for pair in zip(r, s) for v in pair)  # the copies of axis i: axis 2i
    return np.asarray(g).reshape(inter).sum(axis=tuple(range(0, 2 * len(s), 2))).reshape(shape)


def _untile(g, x, reps):
    """The adjoint of ``tile``: the sum of the tiles of ``g``, shaped like ``x``."""
    return apply(_untile.op, (g, x), {"reps": reps})


_untile = defop("untile", _untile_forward,
                lambda G, ans, g, x, reps: tile(G, reps), None,
                shape=lambda shapes, **_: tuple(shapes[1]), function=_untile, complex_vjps=True)


def tile(x, reps):
    """Repeat the whole array ``reps`` times along each axis, NumPy's ``np.tile``; the gradient
    sums the tiles."""
    reps = (tuple([_shapes.as_int(k, "tile", "reps") for k in reps])
            if np.ndim(reps) else (_shapes.as_int(reps, "tile", "reps"),))
    if any(k < 0 for k in reps):
        raise ValueError(f"tile: negative dimensions are not allowed (reps {reps})")
    return apply(tile.op, (_as_operand(x),), {"reps": reps})


tile = defop("tile", lambda x, reps: np.tile(x, reps),
             lambda g, ans, x, reps: _untile(g, x, reps), shape=_tile_shape,
             function=tile, exports=TOP_TF, complex_vjps=True)


# ---- at least N dimensions, and the stacks built on them ------------------------------------------
def _as_operand(x):
    """A Tensor, Node or array as it is; a list or tuple (which may hold Tensors) stacked into
    one; any other value (a Python number) as NumPy's array."""
    if isinstance(x, (list, tuple)):
        return stack(x) if len(x) else np.asarray(x)
    if not hasattr(x, "ndim"):
        return np.asarray(x)
    return x


def _atleast(x, n):
    x = _as_operand(x)
    nd = _known_ndim(x, f"atleast_{n}d")
    if nd >= n:
        return x
    if nd == 0:
        return reshape(x, (1,) * n)
    if n == 2:
        return expand_dims(x, 0)        # (k,) -> (1, k)
    return expand_dims(x, (0, 2) if nd == 1 else 2)  # (k,) -> (1, k, 1); (j, k) -> (j, k, 1)


def _atleast_all(n, arys):
    res = [_atleast(a, n) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


def atleast_1d(*arys):
    """Each input with at least one dimension (views), NumPy's ``np.atleast_1d``: one input
    gives one result, several a tuple."""
    return _atleast_all(1, arys)


atleast_1d = defun(atleast_1d, exports=TOP)


def atleast_2d(*arys):
    """Each input with at least two dimensions (``(k,)`` becomes ``(1, k)``), as NumPy."""
    return _atleast_all(2, arys)


atleast_2d = defun(atleast_2d, exports=TOP)


def atleast_3d(*arys):
    """Each input with at least three dimensions (``(k,)`` becomes ``(1, k, 1)``, ``(j, k)``
    becomes ``(j, k, 1)``), as NumPy."""
    return _atleast_all(3, arys)


atleast_3d = defun(atleast_3d, exports=TOP)


def _sequence(tup, op):
    """The arrays to join: a list or tuple, a generator (as autograd takes), or one array (as
    NumPy takes anything indexable: its rows)."""
    if isinstance(tup, types.GeneratorType) or (
            not isinstance(tup, (list, tuple)) and hasattr(tup, "__getitem__")):
        tup = tuple(tup)
    if not isinstance(tup, (list, tuple)):
        raise TypeError(f"{op}: arrays to stack must be passed as a sequence (list or tuple), "
                        f"got {type(tup).__name__}")
    if not tup:
        raise ValueError(f"{op}: need at least one array to concatenate")
    return list(tup)


def hstack(tup):
    """Join along the second axis (the first for 1-D inputs), NumPy's ``np.hstack``."""
    arrs = [_atleast(a, 1) for a in _sequence(tup, "hstack")]
    return concatenate(arrs, axis=0 if _known_ndim(arrs[0], "hstack") == 1 else 1)


hstack = defun(hstack, exports=TOP)


def vstack(tup):
    """Join along the first axis after making inputs at least 2-D, NumPy's ``np.vstack``."""
    return concatenate([_atleast(a, 2) for a in _sequence(tup, "vstack")], axis=0)


vstack = defun(vstack, exports=TOP)


def dstack(tup):
    """Join along the third axis after making inputs at least 3-D, NumPy's ``np.dstack``."""
    return concatenate([_atleast(a, 3) for a in _sequence(tup, "dstack")], axis=2)


dstack = defun(dstack, exports=TOP)


def column_stack(tup):
    """1-D inputs as columns, 2-D ones as they are, joined along the second axis, NumPy's
    ``np.column_stack``."""
    arrs = []
    for a in _sequence(tup, "column_stack"):
        a = _as_operand(a)
        nd = _known_ndim(a, "column_stack")
        arrs.append(reshape(a, (1, 1)) if nd == 0 else expand_dims(a, 1) if nd == 1 else a)
    return concatenate(arrs, axis=1)


column_stack = defun(column_stack, exports=TOP)


# ---- diagonals and triangles ------------------------------------------------------------------
def _diag_len(n1, n2, offset):
    if n1 is None or n2 is None:
        return None
    return max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))


def _diagonal_shape(shapes, offset, axis1, axis2):
    s = tuple(shapes[0])
    rest = tuple(d for i, d in enumerate(s) if i not in (axis1, axis2))
    return rest + (_diag_len(s[axis1], s[axis2], offset),)


def _undiagonal_forward(g, x, offset, axis1, axis2):
    g = np.asarray(g)
    out = np.zeros(np.shape(x), dtype=g.dtype)
    n = g.shape[-1]
    rows = np.arange(n) + max(-offset, 0)
    cols = np.arange(n) + max(offset, 0)
    np.moveaxis(out, (axis1, axis2), (-2, -1))[..., rows, cols] = g  # a view of out
    return out


def _undiagonal(g, x, offset, axis1, axis2):
    """The adjoint of ``diagonal``: zeros shaped like ``x`` with ``g`` on the diagonal."""
    return apply(_undiagonal.op, (g, x), {"offset": offset, "axis1": axis1, "axis2": axis2})


_undiagonal = defop("undiagonal", _undiagonal_forward,
                    lambda G, ans, g, x, offset, axis1, axis2: diagonal(G, offset, axis1,
                                                                        axis2), None,
                    shape=lambda shapes, **_: tuple(shapes[1]), function=_undiagonal,
                    complex_vjps=True)


def diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal ``offset`` of the 2-D planes over ``axis1``/``axis2`` (as the last axis of
    the result), NumPy's ``np.diagonal`` (a read-only view for arrays)."""
    x = _as_operand(x)
    nd = _known_ndim(x, "diagonal")
    if nd < 2:
        raise ValueError(f"diagonal: diag requires an array of at least two dimensions "
                         f"(got shape {tuple(_shape_of(x))})")
    a1 = _shapes.check_axis(axis1, nd, "diagonal", _shape_of(x))
    a2 = _shapes.check_axis(axis2, nd, "diagonal", _shape_of(x))
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    return apply(diagonal.op, (x,), {"offset": _shapes.as_int(offset, "diagonal", "offset"),
                                      "axis1": a1, "axis2": a2})


diagonal = defop("diagonal", lambda x, offset, axis1, axis2: np.diagonal(x, offset, axis1,
                                                                          axis2),
                 lambda g, ans, x, offset, axis1, axis2: _undiagonal(g, x, offset, axis1,
                                                                     axis2),
                 shape=_diagonal_shape, function=diagonal, exports=TOP, methods=True,
                 complex_vjps=True)


def _diag_shape(shapes, k):
    (n,) = shapes[0]
    m = None if n is None else n + abs(k)
    return (m, m)


def diag(v, k=0):
    """NumPy's ``np.diag``: a 1-D ``v`` becomes a square matrix with ``v`` on diagonal ``k``; a
    2-D one gives its diagonal ``k``."""
    v = _as_operand(v)
    nd = _known_ndim(v, "diag")
    k = _shapes.as_int(k, "diag", "k")
    if nd == 2:
        return diagonal(v, k)
    if nd != 1:
        raise ValueError(f"diag: input must be 1- or 2-d (got shape {tuple(_shape_of(v))})")
    return apply(diag.op, (v,), {"k": k})


diag = defop("diag", lambda v, k: np.diag(v, k),
             lambda g, ans, v, k: diagonal(g, k), shape=_diag_shape, function=diag, exports=TOP,
             complex_vjps=True)


def _tri_shape(name):
    def rule(shapes, **_):
        s = tuple(shapes[0])
        if not s:
            raise ValueError(f"{name}: input must be at least 1-d")
        return s if len(s) >= 2 else (s[0], s[0])
    return rule


def _triangle(name: str, side: str):
    def fn(x, k=0):
        x = _as_operand(x)
        if _known_ndim(x, name) == 0:
            raise ValueError(f"{name}: input must be at least 1-d")
        return apply(fn.op, (x,), {"k": _shapes.as_int(k, name, "k")})
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The {side} triangle (on and {'above' if side == 'upper' else 'below'} "
                  f"diagonal ``k``) of the last two axes, NumPy's ``np.{name}``; the rest zero.")
    return fn


# the triangle of g: the mask is its own adjoint (a 1-D input is broadcast to (n, n) first, as
# NumPy does; the engines sum the gradient back over the rows)
triu = defop("triu", lambda x, k: np.triu(x, k), lambda g, ans, x, k: triu(g, k),
             function=_triangle("triu", "upper"), shape=_tri_shape("triu"), exports=TOP,
             complex_vjps=True)
tril = defop("tril", lambda x, k: np.tril(x, k), lambda g, ans, x, k: tril(g, k),
             function=_triangle("tril", "lower"), shape=_tri_shape("tril"), exports=TOP,
             complex_vjps=True)
