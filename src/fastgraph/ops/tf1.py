"""TensorFlow 1's vocabulary over the same ops: thin wrappers with TensorFlow's names, arguments
and meanings (``reduce_sum(x, axis, keepdims, reduction_indices=, keep_dims=)``, ``cast``,
``argmax`` with axis 0 by default), and the few ops TensorFlow has and NumPy lacks
(``stop_gradient``, ``rank``, ``shape``...).

Each wrapper is declared once with :func:`defun`; its exports say where it lives:
``"fastgraph"`` when the name means nothing else to NumPy (``fg.reduce_sum``), ``"compat.v1"``
(``fastgraph.compat.v1``, TensorFlow's namespace, where TensorFlow's meaning wins), ``"nn"``
and ``"losses"`` (``fg.nn``, ``fg.losses``).  Where TensorFlow and NumPy share a name with two
meanings (``argmax``'s default axis, ``split`` with a list, ``shape``), the top level keeps
NumPy's and the TensorFlow form is exported to ``compat.v1`` only.  ``name=`` names the node a
wrapper makes in a graph (:func:`fastgraph._core.naming.named`).
"""
from __future__ import annotations

import numpy as np

from .._core import LOSSES, NN, TF, apply, defop, defun, holds_graph_value, is_tensor
from .._core import shapes as _shapes
from .._core.dtypes import as_dtype
from .._core.naming import named

from .. import ops as F

TOP_ONLY_TF = ("fastgraph", TF)      # a TensorFlow name NumPy does not have


def _nd(x) -> int | None:
    shape = getattr(x, "shape", None)
    if shape is None:
        if hasattr(x, "graph"):       # a graph node of unknown rank
            return None
        shape = np.shape(x)
    return len(shape)


def _static_shape(x):
    shape = getattr(x, "shape", None)
    return np.shape(x) if shape is None and not hasattr(x, "graph") else shape


def _dtype_of(x) -> np.dtype:
    dt = getattr(x, "dtype", None)
    return np.dtype(dt) if dt is not None else np.asarray(x).dtype


def _is_value_of_an_engine(v) -> bool:
    """A Tensor or a graph Node (NumPy values and Python numbers are plain)."""
    return is_tensor(v) or hasattr(v, "graph")


# ---- ops TensorFlow has and NumPy does not ---------------------------------------------------
stop_gradient = defop(
    "stop_gradient", lambda x: x, None, shape=_shapes.same_as_first, differentiable=False,
    distinct=True, exports=TOP_ONLY_TF,
    doc="``x`` as a value no gradient flows through (TensorFlow's ``tf.stop_gradient``; on an "
        "eager Tensor, ``x.detach()``).\n\n    >>> y = fg.stop_gradient(x) * x   # d/dx: x\n")


def _rank_forward(x):
    return np.int32(np.ndim(x))


rank = defop("rank", _rank_forward, None, shape=_shapes.scalar, differentiable=False,
             shape_only=(0,), exports=TOP_ONLY_TF,
             doc="The number of dimensions of ``x``, an int32 scalar (TensorFlow's "
                 "``tf.rank``).\n\n    >>> fg.rank(np.ones((2, 3)))\n    np.int32(2)\n")


def _shape_forward(x, out_type):
    return np.array(np.shape(x), dtype=out_type)


def tf_shape(input, out_type=np.int32, name=None):
    """The shape of ``input`` as a vector (TensorFlow's ``tf.shape``: int32 by default),
    computed when the graph runs, so unknown dimensions are filled in.  NumPy's ``np.shape``
    is ``fastgraph.numpy.shape``.

        >>> fg.compat.v1.shape(x)        # x: a placeholder of shape (None, 3)
    """
    return named(apply(tf_shape.op, (input,), {"out_type": _int_type(out_type, "shape")}), name)


tf_shape = defop("tf_shape", _shape_forward, None, function=tf_shape, differentiable=False,
                 shape_only=(0,), shape=lambda shapes, **_: (len(shapes[0]),),
                 exports=((TF, "shape"),))


def _size_forward(x, out_type):
    return np.array(np.size(x), dtype=out_type)[()]


def tf_size(input, out_type=np.int32, name=None):
    """The number of elements of ``input``, a scalar (TensorFlow's ``tf.size``: int32 by
    default).  NumPy's ``np.size`` is ``fastgraph.numpy.size``.

        >>> fg.compat.v1.size(np.ones((2, 3)))
        np.int32(6)
    """
    return named(apply(tf_size.op, (input,), {"out_type": _int_type(out_type, "size")}), name)


tf_size = defop("tf_size", _size_forward, None, function=tf_size, differentiable=False,
                shape_only=(0,), shape=_shapes.scalar, exports=((TF, "size"),))


def _int_type(dtype, what):
    dt = as_dtype(dtype)
    if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"{what}: out_type must be int32 or int64, got {dt}")
    return dt


def _argext_forward(np_fn):
    def forward(x, axis=None, keepdims=False):
        return np_fn(x, axis=axis, keepdims=keepdims)
    return forward


def _argext(name):
    def fn(a, axis=None, keepdims=False):
        return apply(fn.op, (a,), {"axis": None if axis is None else _shapes.as_int(axis, name),
                                   "keepdims": bool(keepdims)})
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Indices of the {name[3:]}imum values along ``axis`` (NumPy's ``np.{name}``: "
                  f"``axis=None`` looks at the flattened array); integers, no gradient.  "
                  f"TensorFlow's form (axis 0 by default) is ``fastgraph.compat.v1.{name}``.\n\n"
                  f"    >>> fg.{name}(np.array([[1, 5], [7, 2]]), axis=1)\n")
    return fn


argmax = defop("argmax", _argext_forward(np.argmax), None, function=_argext("argmax"),
               differentiable=False, exports=("fastgraph",), numpy=(),
               shape=lambda shapes, axis=None, keepdims=False, **_:
               _shapes.reduce(shapes, axis, keepdims, op="argmax"))
argmin = defop("argmin", _argext_forward(np.argmin), None, function=_argext("argmin"),
               differentiable=False, exports=("fastgraph",), numpy=(),
               shape=lambda shapes, axis=None, keepdims=False, **_:
               _shapes.reduce(shapes, axis, keepdims, op="argmin"))


def _check_labels_forward(labels, logits):
    labels = np.asarray(labels)
    n = np.shape(logits)[-1]
    if labels.dtype.kind not in "iu":
        raise TypeError(f"sparse_softmax_cross_entropy_with_logits: labels must be integers, "
                        f"got dtype {labels.dtype}")
    bad = (labels < 0) | (labels >= n)
    if bad.any():
        raise ValueError(f"sparse_softmax_cross_entropy_with_logits: Received a label value of "
                         f"{labels[bad].reshape(-1)[0]} which is outside the valid range of "
                         f"[0, {n})")
    return labels


def _labels_rule(shapes, **_):
    labels, logits = shapes
    if len(logits) != len(labels) + 1 or any(
            a is not None and b is not None and a != b for a, b in zip(labels, logits)):
        raise ValueError(f"sparse_softmax_cross_entropy_with_logits: labels of shape "
                         f"{tuple(labels)} do not match logits of shape {tuple(logits)} (labels "
                         f"have the logits' shape without its last dimension)")
    return tuple(labels)


# (labels checked against the number of classes, so an out-of-range label is an error, as in
# TensorFlow, rather than NumPy's wrap-around of negative indices)
checked_class_labels = defop("checked_class_labels", _check_labels_forward, None, None,
                             shape=_labels_rule, differentiable=False, shape_only=(1,))


# ---- reductions ------------------------------------------------------------------------------
def _reduce_args(what, axis, keepdims, reduction_indices, keep_dims):
    if reduction_indices is not None:
        if axis is not None:
            raise ValueError(f"{what}: give axis or reduction_indices, not both")
        axis = reduction_indices
    if keep_dims is not None:
        if keepdims is not None:
            raise ValueError(f"{what}: give keepdims or keep_dims, not both")
        keepdims = keep_dims
    if holds_graph_value((axis,)) or hasattr(axis, "graph"):
        raise TypeError(f"{what}: axis must be an integer or a list of integers (an axis "
                        f"computed in the graph is not supported)")
    if isinstance(axis, (list, tuple, np.ndarray)):
        axis = tuple(_shapes.as_int(a, what) for a in np.asarray(axis).reshape(-1).tolist())
    elif axis is not None:
        axis = _shapes.as_int(axis, what)
    return axis, bool(keepdims)


def _tf_reducer(name, reduce, doc):
    def fn(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
           keep_dims=None):
        ax, keep = _reduce_args(fn.__name__, axis, keepdims, reduction_indices, keep_dims)
        return named(reduce(input_tensor, ax, keep), name)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{doc} over ``axis`` (``None``: all; ``reduction_indices`` is its old name), "
                  f"keeping the reduced axes with ``keepdims`` (``keep_dims``): TensorFlow's "
                  f"``tf.{name}``.\n\n    >>> fg.{name}(x, axis=1, keepdims=True)\n")
    return defun(fn, exports=TOP_ONLY_TF)


def _mean(x, axis, keepdims):
    dt = _dtype_of(x)
    if dt.kind in "iu":      # TensorFlow's integer mean keeps the dtype, truncating
        m = F.mean(F.astype(x, np.float64), axis=axis, keepdims=keepdims)
        return F.astype(F.trunc(m), dt)
    return F.mean(x, axis=axis, keepdims=keepdims)


def _count(x, axis, keepdims, of):
    return F.sum(F.astype(of(x), np.int64), axis=axis, keepdims=keepdims)


reduce_sum = _tf_reducer("reduce_sum", lambda x, a, k: F.sum(x, axis=a, keepdims=k), "The sum")
reduce_mean = _tf_reducer("reduce_mean", _mean, "The mean (integers: truncated, in their dtype)")
reduce_max = _tf_reducer("reduce_max", lambda x, a, k: F.max(x, axis=a, keepdims=k),
                         "The maximum")
reduce_min = _tf_reducer("reduce_min", lambda x, a, k: F.min(x, axis=a, keepdims=k),
                         "The minimum")
reduce_prod = _tf_reducer("reduce_prod", lambda x, a, k: F.prod(x, axis=a, keepdims=k),
                          "The product")
reduce_logsumexp = _tf_reducer("reduce_logsumexp",
                               lambda x, a, k: F.logsumexp(x, axis=a, keepdims=k),
                               "``log(sum(exp(x)))``, computed stably,")
reduce_any = _tf_reducer(
    "reduce_any", lambda x, a, k: F.greater(_count(x, a, k, lambda v: F.astype(v, bool)), 0),
    "Whether any element is true")
reduce_all = _tf_reducer(
    "reduce_all",
    lambda x, a, k: F.equal(_count(x, a, k, lambda v: F.logical_not(F.astype(v, bool))), 0),
    "Whether every element is true")


# ---- elementwise and conversions -------------------------------------------------------------
def cast(x, dtype, name=None):
    """``x`` converted to ``dtype`` (TensorFlow's ``tf.cast``: ``"float"`` is float32;
    floats to integers truncate towards zero).  The gradient flows between float types.

        >>> fg.cast(fg.equal(a, b), fg.float32)
    """
    return named(F.astype(x, as_dtype(dtype)), name)


cast = defun(cast, exports=TOP_ONLY_TF)


def squared_difference(x, y, name=None):
    """``(x - y) ** 2`` elementwise, with broadcasting (TensorFlow's
    ``tf.squared_difference``).

        >>> fg.squared_difference(pred, y)
    """
    return named(F.square(F.subtract(x, y)), name)


squared_difference = defun(squared_difference, exports=TOP_ONLY_TF)


def rsqrt(x, name=None):
    """``1 / sqrt(x)`` elementwise (TensorFlow's ``tf.rsqrt``).

        >>> fg.rsqrt(np.array([4.0]))
        array([0.5])
    """
    return named(F.reciprocal(F.sqrt(x)), name)


rsqrt = defun(rsqrt, exports=TOP_ONLY_TF)


def add_n(inputs, name=None):
    """The elementwise sum of a list of values of one shape (TensorFlow's ``tf.add_n``: no
    broadcasting; shapes that differ are a ``ValueError`` naming them).

        >>> fg.add_n([a, b, c])
    """
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n: inputs must be a non-empty list")
    shapes = [_static_shape(v) for v in inputs]
    known = [tuple(s) for s in shapes if s is not None]
    for s in known[1:]:
        if len(s) != len(known[0]) or any(a is not None and b is not None and a != b
                                          for a, b in zip(s, known[0])):
            raise ValueError(f"add_n: inputs must all have one shape, got "
                             f"{', '.join(str(tuple(s)) for s in known)}")
    out = inputs[0]
    for v in inputs[1:]:
        out = F.add(out, v)
    if len(inputs) == 1:
        out = F.identity(out) if hasattr(out, "graph") else out
    return named(out, name)


add_n = defun(add_n, exports=TOP_ONLY_TF)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """``t`` clipped to ``[clip_value_min, clip_value_max]`` (TensorFlow's
    ``tf.clip_by_value``, ``np.clip``'s values).

        >>> capped = [(fg.clip_by_value(g, -1.0, 1.0), v) for g, v in grads_and_vars]
    """
    return named(F.clip(t, clip_value_min, clip_value_max), name)


clip_by_value = defun(clip_by_value, exports=TOP_ONLY_TF)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors of length ``depth`` for integer ``indices`` (TensorFlow's
    ``tf.one_hot``): ``on_value`` (1) where the index is, ``off_value`` (0) elsewhere, a new
    axis at ``axis`` (default last), float32 unless ``dtype`` or the values say otherwise;
    indices outside ``[0, depth)`` give all ``off_value``.

        >>> fg.one_hot(np.array([0, 2]), 3)
        array([[1., 0., 0.], [0., 0., 1.]], dtype=float32)
    """
    depth = _shapes.as_int(depth, "one_hot", "depth")
    if depth < 0:
        raise ValueError(f"one_hot: depth must be non-negative, got {depth}")
    if dtype is not None:
        dt = as_dtype(dtype)
    else:
        given = [_dtype_of(v) for v in (on_value, off_value)
                 if v is not None and not isinstance(v, (int, float, bool))]
        dt = given[0] if given else np.dtype(np.float32)
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    nd = _nd(indices)
    if nd is None:
        raise ValueError("one_hot: the indices must have a known rank")
    ax = nd if axis is None or axis == -1 else _shapes.check_axis(axis, nd + 1, "one_hot")
    classes = np.arange(depth).reshape((depth,) + (1,) * (nd - ax))
    hit = F.equal(F.expand_dims(indices, ax), classes)
    on = F.astype(on, dt) if _is_value_of_an_engine(on) else np.asarray(on, dt)
    off = F.astype(off, dt) if _is_value_of_an_engine(off) else np.asarray(off, dt)
    return named(F.where(hit, on, off), name)


one_hot = defun(one_hot, exports=TOP_ONLY_TF)


def tf_unstack(value, num=None, axis=0, name=None):
    """The pieces of ``value`` along ``axis``, that axis removed: a list (TensorFlow's
    ``tf.unstack``; the axis's length must be known, or given as ``num``).  The top level's
    ``fg.unstack`` is NumPy's (a tuple, ``axis`` keyword-only).

        >>> rows = fg.compat.v1.unstack(x)         # x: (3, 4) -> three (4,) values
    """
    shape = _static_shape(value)
    if shape is None:
        raise ValueError("unstack: value must have a known rank")
    ax = _shapes.check_axis(axis, len(shape), "unstack", shape)
    n = shape[ax] if shape[ax] is not None else num
    if n is None:
        raise ValueError(f"unstack: cannot infer num from shape {tuple(shape)}")
    if num is not None and shape[ax] is not None and num != shape[ax]:
        raise ValueError(f"unstack: num={num} but axis {axis} has length {shape[ax]}")
    lead = (slice(None),) * ax
    return [value[lead + (i,)] for i in range(n)]


tf_unstack = defun(tf_unstack, exports=((TF, "unstack"),))


# ---- TensorFlow's forms of NumPy's names (compat.v1 only) -----------------------------------
def tf_argmax(input, axis=None, name=None, dimension=None, output_type=np.int64):
    """The index of the largest value along ``axis`` (TensorFlow's ``tf.argmax``: axis 0 by
    default, ``dimension`` its old name, int64 unless ``output_type`` says int32).

        >>> tf.argmax(logits, 1)          # import fastgraph.compat.v1 as tf
    """
    return _tf_arg(F.argmax, "argmax", input, axis, dimension, output_type, name)


def tf_argmin(input, axis=None, name=None, dimension=None, output_type=np.int64):
    """The index of the smallest value along ``axis`` (TensorFlow's ``tf.argmin``)."""
    return _tf_arg(F.argmin, "argmin", input, axis, dimension, output_type, name)


def _tf_arg(fn, what, x, axis, dimension, output_type, name):
    if dimension is not None:
        if axis is not None:
            raise ValueError(f"{what}: give axis or dimension, not both")
        axis = dimension
    return named(F.astype(fn(x, 0 if axis is None else axis), _int_type(output_type, what)),
                 name)


def tf_arg_max(input, dimension, name=None, output_type=np.int64):
    """TensorFlow's old ``tf.arg_max(input, dimension)``: :func:`tf_argmax`."""
    return tf_argmax(input, dimension, name, output_type=output_type)


def tf_arg_min(input, dimension, name=None, output_type=np.int64):
    """TensorFlow's old ``tf.arg_min(input, dimension)``: :func:`tf_argmin`."""
    return tf_argmin(input, dimension, name, output_type=output_type)


def tf_matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
              a_is_sparse=False, b_is_sparse=False, name=None):
    """``a @ b`` of matrices (or batches of them), either one transposed first (TensorFlow's
    ``tf.matmul``; for real values the adjoint is the transpose).

        >>> tf.matmul(x, W, transpose_b=True)
    """
    if transpose_a and adjoint_a or transpose_b and adjoint_b:
        raise ValueError("matmul: give transpose or adjoint for an operand, not both")
    a = _last_two_swapped(a, "a", adjoint_a) if transpose_a or adjoint_a else a
    b = _last_two_swapped(b, "b", adjoint_b) if transpose_b or adjoint_b else b
    return named(F.matmul(a, b), name)


def _last_two_swapped(x, which, conj):
    nd = _nd(x)
    if nd is None or nd < 2:
        raise ValueError(f"matmul: transposing {which} needs a known rank of at least 2, got "
                         f"shape {_static_shape(x)}")
    y = F.swapaxes(x, -1, -2)
    if conj and _dtype_of(x).kind == "c":
        raise NotImplementedError("matmul: adjoint of a complex operand")
    return y


def tf_split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Pieces of ``value`` along ``axis`` (TensorFlow's ``tf.split``): an integer ``n`` gives
    ``n`` equal pieces, a list gives pieces of those sizes (one may be -1: the rest).  NumPy's
    ``fg.split`` reads a list as the indices to split at.

        >>> a, b = tf.split(x, [2, 3], axis=1)      # widths 2 and 3
    """
    shape = _static_shape(value)
    if shape is None:
        raise ValueError("split: value must have a known rank")
    ax = _shapes.check_axis(axis, len(shape), "split", shape)
    n = shape[ax]
    if np.ndim(num_or_size_splits) == 0:
        k = _shapes.as_int(num_or_size_splits, "split", "num_or_size_splits")
        if n is not None and (k <= 0 or n % k):
            raise ValueError(f"split: cannot split axis {axis} of length {n} into {k} equal "
                             f"pieces")
        return F.split(value, k, axis=ax)
    sizes = [_shapes.as_int(s, "split", "size") for s in num_or_size_splits]
    if n is None:
        raise ValueError("split: the split axis must have a known length")
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise ValueError(f"split: sizes {sizes} may hold one -1 and no other negative size")
    if -1 in sizes:
        sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise ValueError(f"split: sizes {list(num_or_size_splits)} do not add up to the length "
                         f"{n} of axis {axis}")
    return F.split(value, np.cumsum(sizes)[:-1].tolist(), axis=ax)


def tf_transpose(a, perm=None, name="transpose", conjugate=False):
    """``a`` with its axes permuted by ``perm`` (reversed by default): TensorFlow's
    ``tf.transpose``."""
    if conjugate and _dtype_of(a).kind == "c":
        raise NotImplementedError("transpose: conjugate=True of a complex operand")
    out = F.transpose(a, None if perm is None else tuple(perm))
    return named(out, None if name == "transpose" else name)


def tf_expand_dims(input, axis=None, name=None, dim=None):
    """``input`` with a length-1 axis inserted at ``axis`` (``dim``: its old name)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("expand_dims: give axis or dim, not both")
        axis = dim
    if axis is None:
        raise ValueError("expand_dims: axis is required")
    return named(F.expand_dims(input, axis), name)


def tf_squeeze(input, axis=None, name=None, squeeze_dims=None):
    """``input`` without its length-1 axes (those in ``axis``; ``squeeze_dims``: its old
    name)."""
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("squeeze: give axis or squeeze_dims, not both")
        axis = squeeze_dims
    if isinstance(axis, list):
        axis = tuple(axis)
    return named(F.squeeze(input, axis), name)


def tf_where(condition, x=None, y=None, name=None):
    """``x`` where ``condition`` holds, else ``y`` (TensorFlow's ``tf.where``).  With the
    condition alone: the coordinates of its true elements, an int64 matrix with one row per
    element (``np.argwhere``)."""
    if (x is None) != (y is None):
        raise ValueError("where: give both x and y, or neither")
    if x is None:
        return named(F.argwhere(condition), name)
    return named(F.where(condition, x, y), name)


def tf_cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sums along ``axis`` (TensorFlow's ``tf.cumsum``: axis 0 by default;
    ``exclusive`` leaves each element out of its own sum, ``reverse`` sums from the end)."""
    if reverse:
        x = F.flip(x, axis)
    out = F.cumsum(x, axis=axis)
    if exclusive:
        out = out - x
    if reverse:
        out = F.flip(out, axis)
    return named(out, name)


def _argwhere_forward(x):
    return np.argwhere(x)


argwhere = defop("argwhere", _argwhere_forward, None, differentiable=False,
                 shape=lambda shapes, **_: (None, len(shapes[0])), exports=TOP_ONLY_TF[:1],
                 numpy=(), doc="The coordinates of the non-zero elements of ``x``, one row each "
                 "(NumPy's ``np.argwhere``); integers, no gradient.")

defun(tf_arg_max, exports=(("fastgraph", "arg_max"), (TF, "arg_max")))
defun(tf_arg_min, exports=(("fastgraph", "arg_min"), (TF, "arg_min")))
for _fn, _tf_name in ((tf_argmax, "argmax"), (tf_argmin, "argmin"),
                      (tf_matmul, "matmul"), (tf_split, "split"),
                      (tf_transpose, "transpose"), (tf_expand_dims, "expand_dims"),
                      (tf_squeeze, "squeeze"), (tf_where, "where"), (tf_cumsum, "cumsum")):
    defun(_fn, exports=((TF, _tf_name),))


# ---- tf.nn ---------------------------------------------------------------------------------
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _negative_part_expm1(x):
    # expm1 of min(x, 0): the unused branch of a where never overflows, so its gradient is 0,
    # not inf * 0
    return F.expm1(F.minimum(x, 0))


def relu6(features, name=None):
    """``min(max(x, 0), 6)`` (TensorFlow's ``tf.nn.relu6``)."""
    return named(F.minimum(F.relu(features), 6), name)


def elu(features, name=None):
    """``x`` where positive, ``exp(x) - 1`` elsewhere (TensorFlow's ``tf.nn.elu``)."""
    return named(F.where(F.greater(features, 0), features, _negative_part_expm1(features)),
                 name)


def selu(features, name=None):
    """The scaled ELU of Klambauer et al. (TensorFlow's ``tf.nn.selu``)."""
    neg = _negative_part_expm1(features) * _SELU_ALPHA
    return named(F.where(F.greater(features, 0), features, neg) * _SELU_SCALE, name)


def softsign(features, name=None):
    """``x / (1 + |x|)`` (TensorFlow's ``tf.nn.softsign``)."""
    return named(features / (F.abs(features) + 1), name)


def nn_softmax(logits, axis=None, name=None, dim=None):
    """Softmax along ``axis`` (default last; ``dim`` its old name): ``tf.nn.softmax``."""
    return named(F.softmax(logits, _axis_or_dim(axis, dim, "softmax")), name)


def nn_log_softmax(logits, axis=None, name=None, dim=None):
    """Log-softmax along ``axis`` (default last): ``tf.nn.log_softmax``."""
    return named(F.log_softmax(logits, _axis_or_dim(axis, dim, "log_softmax")), name)


def _axis_or_dim(axis, dim, what):
    if dim is not None:
        if axis is not None:
            raise ValueError(f"{what}: give axis or dim, not both")
        axis = dim
    return -1 if axis is None else axis


def l2_loss(t, name=None):
    """``sum(t ** 2) / 2`` (TensorFlow's ``tf.nn.l2_loss``: weight decay's term)."""
    return named(F.sum(F.square(t)) * 0.5, name)


def bias_add(value, bias, data_format=None, name=None):
    """``value + bias`` with a 1-D ``bias`` along the channel axis: the last one, or axis 1
    for ``data_format="NCHW"``-style layouts (TensorFlow's ``tf.nn.bias_add``)."""
    bshape = _static_shape(bias)
    vshape = _static_shape(value)
    if bshape is not None and len(bshape) != 1:
        raise ValueError(f"bias_add: bias must be 1-D, got shape {tuple(bshape)}")
    channels_first = data_format is not None and data_format.startswith("NC")
    if vshape is not None:
        if len(vshape) < 2:
            raise ValueError(f"bias_add: value must have at least 2 dimensions, got shape "
                             f"{tuple(vshape)}")
        c = vshape[1] if channels_first else vshape[-1]
        if bshape is not None and None not in (c, bshape[0]) and c != bshape[0]:
            raise ValueError(f"bias_add: bias of shape {tuple(bshape)} does not match the "
                             f"{c} channels of value of shape {tuple(vshape)}")
    if channels_first:
        if vshape is None:
            raise ValueError("bias_add: channels-first value must have a known rank")
        bias = F.reshape(bias, (-1,) + (1,) * (len(vshape) - 2))
    return named(value + bias, name)


def xw_plus_b(x, weights, biases, name=None):
    """``x @ weights + biases`` (TensorFlow's ``tf.nn.xw_plus_b``)."""
    return named(F.matmul(x, weights) + biases, name)


def _named_only(what, sentinel, labels, logits):
    if sentinel is not None:
        raise ValueError(f"Only call `{what}` with named arguments (labels=..., logits=..., "
                         f"...)")
    if labels is None or logits is None:
        raise ValueError(f"{what}: both labels and logits must be provided")


def _softmax_xent(labels, logits, axis, what):
    lshape, gshape = _static_shape(labels), _static_shape(logits)
    if lshape is not None and gshape is not None and (
            len(lshape) != len(gshape) or any(a is not None and b is not None and a != b
                                              for a, b in zip(lshape, gshape))):
        raise ValueError(f"{what}: labels of shape {tuple(lshape)} and logits of shape "
                         f"{tuple(gshape)} must have one shape")
    return -F.sum(labels * F.log_softmax(logits, axis), axis=axis)


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    """Per-example ``-sum(labels * log_softmax(logits))`` along ``axis`` (default last), for
    labels that are probability vectors (TensorFlow 1's ``tf.nn.softmax_cross_entropy_with_
    logits``: no gradient flows into the labels).  Named arguments only, as in TensorFlow.

        >>> loss = fg.reduce_mean(fg.nn.softmax_cross_entropy_with_logits(labels=y,
        ...                                                               logits=z))
    """
    what = "softmax_cross_entropy_with_logits"
    _named_only(what, _sentinel, labels, logits)
    return named(_softmax_xent(F.stop_gradient(labels), logits,
                               _axis_or_dim(axis, None if dim == -1 else dim, what), what), name)


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, axis=None,
                                         name=None, dim=None):
    """As :func:`softmax_cross_entropy_with_logits`, with gradients flowing into the labels
    too (TensorFlow's ``_v2``)."""
    what = "softmax_cross_entropy_with_logits_v2"
    _named_only(what, _sentinel, labels, logits)
    return named(_softmax_xent(labels, logits, _axis_or_dim(axis, dim, what), what), name)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """Per-example ``-log_softmax(logits)[label]`` for integer class labels (shape: the
    logits' without the last axis); a label outside ``[0, classes)`` raises, as in TensorFlow.
    Named arguments only.

        >>> loss = fg.reduce_mean(fg.nn.sparse_softmax_cross_entropy_with_logits(
        ...     labels=y, logits=z))
    """
    what = "sparse_softmax_cross_entropy_with_logits"
    _named_only(what, _sentinel, labels, logits)
    labels = F.checked_class_labels(labels, logits)
    gshape = _static_shape(logits)
    if gshape is None:
        raise ValueError(f"{what}: logits must have a known rank")
    logp = F.log_softmax(logits, -1)
    if len(gshape) == 2:
        return named(-F.pick(logp, labels), name)
    if gshape[-1] is None:
        raise ValueError(f"{what}: the number of classes (the logits' last dimension) must be "
                         f"known")
    lead = tuple(gshape[:-1])
    if lead.count(None) > 1:
        raise ValueError(f"{what}: logits of shape {lead + (gshape[-1],)}: at most one unknown "
                         f"dimension besides the classes")
    flat = -F.pick(F.reshape(logp, (-1, gshape[-1])), F.reshape(labels, (-1,)))
    return named(F.reshape(flat, tuple(-1 if d is None else d for d in lead)), name)


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """Elementwise ``-z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x))``, computed stably as
    ``max(x, 0) - x z + log(1 + exp(-|x|))`` (TensorFlow's
    ``tf.nn.sigmoid_cross_entropy_with_logits``).  Named arguments only."""
    what = "sigmoid_cross_entropy_with_logits"
    _named_only(what, _sentinel, labels, logits)
    lshape, gshape = _static_shape(labels), _static_shape(logits)
    if lshape is not None and gshape is not None and tuple(lshape) != tuple(gshape) and \
            None not in lshape and None not in gshape:
        raise ValueError(f"{what}: logits and labels must have the same shape "
                         f"({tuple(gshape)} vs {tuple(lshape)})")
    return named(F.relu(logits) - logits * labels + F.softplus(-F.abs(logits)), name)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))`` (TensorFlow's ``tf.nn.l2_normalize``;
    ``axis=None``: over all elements)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("l2_normalize: give axis or dim, not both")
        axis = dim
    axis = tuple(axis) if isinstance(axis, list) else axis
    sq = F.sum(F.square(x), axis=axis, keepdims=True)
    return named(x * F.reciprocal(F.sqrt(F.maximum(sq, epsilon))), name)


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """``(mean, variance)`` of ``x`` over ``axes`` (TensorFlow's ``tf.nn.moments``; the
    variance is the biased one, about a mean held constant for the gradient, as TensorFlow
    computes it).

        >>> mean, var = fg.nn.moments(x, axes=[0])
    """
    axis, keep = _reduce_args("moments", axes, keepdims, None, keep_dims)
    mean = F.mean(x, axis=axis, keepdims=True)
    variance = F.mean(F.square(x - F.stop_gradient(mean)), axis=axis, keepdims=True)
    if not keep:
        mean = F.squeeze(mean, axis) if axis is not None else F.reshape(mean, ())
        variance = F.squeeze(variance, axis) if axis is not None else F.reshape(variance, ())
    return mean, variance


for _fn, _nn_name in ((relu6, "relu6"), (elu, "elu"), (selu, "selu"), (softsign, "softsign"),
                      (nn_softmax, "softmax"), (nn_log_softmax, "log_softmax"),
                      (l2_loss, "l2_loss"), (bias_add, "bias_add"), (xw_plus_b, "xw_plus_b"),
                      (softmax_cross_entropy_with_logits, "softmax_cross_entropy_with_logits"),
                      (softmax_cross_entropy_with_logits_v2,
                       "softmax_cross_entropy_with_logits_v2"),
                      (sparse_softmax_cross_entropy_with_logits,
                       "sparse_softmax_cross_entropy_with_logits"),
                      (sigmoid_cross_entropy_with_logits, "sigmoid_cross_entropy_with_logits"),
                      (l2_normalize, "l2_normalize"), (moments, "moments")):
    defun(_fn, name=f"nn.{_nn_name}", exports=((NN, _nn_name),))


# ---- tf.losses -------------------------------------------------------------------------------
class Reduction:
    """How a ``fg.losses`` function reduces its weighted per-element losses (TensorFlow 1's
    ``tf.losses.Reduction``); the default is ``SUM_BY_NONZERO_WEIGHTS``."""
    NONE = "none"
    SUM = "weighted_sum"
    MEAN = "weighted_mean"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    SUM_OVER_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_BY_NONZERO_WEIGHTS = SUM_OVER_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS)


def _safe_div(num, den):
    """``num / den``, 0 where ``den`` is 0 (TensorFlow's ``div_no_nan``)."""
    zero = F.equal(den, 0)
    return F.where(zero, 0.0 * num, num / F.where(zero, 1, den))


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=None,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``losses * weights`` reduced as ``reduction`` says (TensorFlow 1's
    ``tf.losses.compute_weighted_loss``): by default the sum over the elements whose weight is
    not zero, divided by how many there are.

        >>> fg.losses.compute_weighted_loss(per_example, weights=mask)
    """
    if reduction not in Reduction.all():
        raise ValueError(f"compute_weighted_loss: unknown reduction {reduction!r} (one of "
                         f"{Reduction.all()})")
    dt = _dtype_of(losses)
    if dt.kind != "f":
        losses = F.astype(losses, np.float32)
        dt = np.dtype(np.float32)
    if isinstance(weights, (int, float)):
        weights = dt.type(weights)
    else:
        weights = F.astype(weights, dt)
    weighted = F.multiply(losses, weights)
    if reduction == Reduction.NONE:
        return weighted
    total = F.sum(weighted)
    if reduction == Reduction.SUM:
        return total
    every = F.broadcast_like(weights, losses)      # the weight of each element
    if reduction == Reduction.MEAN:
        return _safe_div(total, F.sum(every))
    if reduction == Reduction.SUM_OVER_BATCH_SIZE:
        return _safe_div(total, F.astype(F.tf_size(losses), dt))
    present = F.sum(F.astype(F.not_equal(every, 0), dt))
    return _safe_div(total, present)


def _check_same_shape(what, labels, predictions):
    a, b = _static_shape(labels), _static_shape(predictions)
    if a is not None and b is not None and (len(a) != len(b) or any(
            x is not None and y is not None and x != y for x, y in zip(a, b))):
        raise ValueError(f"{what}: labels of shape {tuple(a)} and predictions of shape "
                         f"{tuple(b)} must have one shape")


def _float(x, like=None):
    if _dtype_of(x).kind == "f":
        return x
    return F.astype(x, np.float32 if like is None else _dtype_of(like))


def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=None,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The weighted mean of ``(predictions - labels) ** 2`` (TensorFlow 1's
    ``tf.losses.mean_squared_error``).

        >>> loss = fg.losses.mean_squared_error(y, pred)
    """
    _check_same_shape("mean_squared_error", labels, predictions)
    predictions = _float(predictions)
    losses = F.square(predictions - _float(labels, predictions))
    return compute_weighted_loss(losses, weights, reduction=reduction)


def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection=None,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The weighted mean of ``|predictions - labels|`` (``tf.losses.absolute_difference``)."""
    _check_same_shape("absolute_difference", labels, predictions)
    predictions = _float(predictions)
    losses = F.abs(predictions - _float(labels, predictions))
    return compute_weighted_loss(losses, weights, reduction=reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None, loss_collection=None,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The weighted mean of the Huber loss: quadratic for errors up to ``delta``, linear beyond
    (``tf.losses.huber_loss``)."""
    _check_same_shape("huber_loss", labels, predictions)
    predictions = _float(predictions)
    error = F.abs(predictions - _float(labels, predictions))
    quadratic = F.minimum(error, delta)
    linear = error - quadratic
    losses = quadratic * quadratic * 0.5 + linear * delta
    return compute_weighted_loss(losses, weights, reduction=reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None, loss_collection=None,
             reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The weighted mean of ``-y log(p + eps) - (1 - y) log(1 - p + eps)``
    (``tf.losses.log_loss``)."""
    _check_same_shape("log_loss", labels, predictions)
    predictions = _float(predictions)
    labels = _float(labels, predictions)
    losses = -labels * F.log(predictions + epsilon) - (1 - labels) * F.log(
        1 - predictions + epsilon)
    return compute_weighted_loss(losses, weights, reduction=reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=None,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The weighted mean of the elementwise sigmoid cross-entropy, labels smoothed towards 1/2
    by ``label_smoothing`` (``tf.losses.sigmoid_cross_entropy``)."""
    logits = _float(logits)
    labels = _float(multi_class_labels, logits)
    if label_smoothing:
        labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
    losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    return compute_weighted_loss(losses, weights, reduction=reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=None, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The weighted mean of the per-example softmax cross-entropy, labels smoothed towards
    uniform by ``label_smoothing`` (``tf.losses.softmax_cross_entropy``)."""
    logits = _float(logits)
    labels = _float(onehot_labels, logits)
    if label_smoothing:
        shape = _static_shape(logits)
        if shape is None or shape[-1] is None:
            raise ValueError("softmax_cross_entropy: label smoothing needs a known number of "
                             "classes")
        labels = labels * (1 - label_smoothing) + label_smoothing / shape[-1]
    losses = softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    return compute_weighted_loss(losses, weights, reduction=reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None, loss_collection=None,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The weighted mean of the per-example softmax cross-entropy with integer labels
    (``tf.losses.sparse_softmax_cross_entropy``).

        >>> loss = fg.losses.sparse_softmax_cross_entropy(labels=y, logits=z)
    """
    losses = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=_float(logits))
    return compute_weighted_loss(losses, weights, reduction=reduction)


for _fn in (compute_weighted_loss, mean_squared_error, absolute_difference, huber_loss,
            log_loss, sigmoid_cross_entropy, softmax_cross_entropy,
            sparse_softmax_cross_entropy):
    defun(_fn, name=f"losses.{_fn.__name__}", exports=((LOSSES, _fn.__name__),))


# ---- factories whose shape may be computed in the graph ----------------------------------------
def _dims_arg(dims, what):
    """``(dims as an op input, its static value or None)``: a plain sequence of integers is
    known now; a graph vector (``tf.shape(x)``) only when the graph runs."""
    if _is_value_of_an_engine(dims):
        return dims, None
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    static = _shapes.check_dims(tuple(dims), what)
    return np.array(static, dtype=np.int64), static


def _vector_shape(what):
    def rule(shapes, static_shape=None, **_):
        if static_shape is not None:
            return static_shape
        vec = shapes[0]
        if len(vec) != 1:
            raise ValueError(f"{what}: dims must be a vector, got one of shape {tuple(vec)}")
        return None if vec[0] is None else (None,) * vec[0]
    return rule


def _fill_forward(dims, value, static_shape=None):
    return np.full(tuple(int(d) for d in np.asarray(dims).reshape(-1)), value)


def fill(dims, value, name=None):
    """An array of shape ``dims`` holding ``value`` everywhere (TensorFlow's ``tf.fill``; its
    dtype is ``value``'s).  ``dims`` may be a graph vector (``tf.shape(x)``); the gradient with
    respect to ``value`` is the sum of the incoming one.

        >>> fg.fill([2, 3], 9.0)
        array([[9., 9., 9.], [9., 9., 9.]])
    """
    arg, static = _dims_arg(dims, "fill")
    return named(apply(fill.op, (arg, value), {"static_shape": static}), name)


fill = defop("fill", _fill_forward, None, lambda g, ans, dims, value, **_: F.sum(g),
             function=fill, shape=_vector_shape("fill"), exports=TOP_ONLY_TF)


def _range_forward(start, limit, delta, dtype, static_shape=None):
    return np.arange(start, limit, delta, dtype=dtype)


def tf_range(start, limit=None, delta=1, dtype=None, name="range"):
    """``start, start + delta, ...`` up to ``limit`` (excluded), as ``np.arange``
    (TensorFlow's ``tf.range``; ``range(n)`` counts from 0).  The bounds may be graph scalars
    (``tf.range(tf.shape(x)[0])``).  The dtype is ``dtype``, else the bounds': at the top level
    NumPy's promotion (int64, float64), in ``fastgraph.compat.v1`` TensorFlow's (int32,
    float32).

        >>> fg.range(3)
        array([0, 1, 2])
    """
    if limit is None:
        start, limit = 0, start
    bounds = (start, limit, delta)
    if dtype is None:
        dt = np.result_type(*[_dtype_of(b) if _is_value_of_an_engine(b) else
                              np.asarray(b).dtype for b in bounds])
    else:
        dt = as_dtype(dtype)
    if dt.kind not in "iuf":
        raise TypeError(f"range: dtype must be an integer or float type, got {dt}")
    static = None
    if not any(_is_value_of_an_engine(b) for b in bounds):
        if delta == 0:
            raise ValueError("range: delta must not be 0")
        static = (len(np.arange(start, limit, delta, dtype=dt)),)
    out = apply(tf_range.op, bounds, {"dtype": dt, "static_shape": static})
    return named(out, None if name == "range" else name)


tf_range = defop("tf_range", _range_forward, None, None, None, function=tf_range,
                 differentiable=False,
                 shape=lambda shapes, static_shape=None, **_: static_shape or (None,),
                 exports=(("fastgraph", "range"), (TF, "range")))
