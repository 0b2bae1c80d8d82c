"""Reductions over ``axis=None|int|tuple`` with ``keepdims``.

Each VJP first restores the reduced axes of ``g`` (:func:`_keep`) and then relies on
``broadcast_like`` to spread it over the input, which works for arrays, Tensors and Nodes with
unknown dimensions alike.
"""
from __future__ import annotations

import numpy as np

from .._core import TOP, apply, defop, defun
from .._core import shapes as _shapes

from .. import ops as F
from .shape import _broadcast_like_forward, _size_ratio


def _axes_of(x, axis):
    return None if axis is None else _shapes.normalize_axis(axis, x.ndim)


def _keep(g, x, axis, keepdims):
    """``g`` with the reduced axes of ``x`` put back as length-1 axes."""
    if keepdims or axis is None:
        return g
    return F.expand_dims(g, _shapes.normalize_axis(axis, x.ndim))


def _reduce_rule(name):
    return lambda shapes, axis=None, keepdims=False, **_: _shapes.reduce(shapes, axis, keepdims,
                                                                         op=name)


def _reducer(name):
    """The public function of a reduction over ``axis`` with ``keepdims``."""
    def fn(x, axis=None, keepdims: bool = False):
        # (the canonical forms checked inline first: the common calls make no further call)
        return apply(fn.op, (x,), {
            "axis": axis if axis is None or type(axis) is int else _canon_axis(axis, name),
            "keepdims": (keepdims if keepdims is True or keepdims is False
                         else _canon_keepdims(keepdims, name))})

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``{name}`` over ``axis`` (None = all, int or tuple), NumPy semantics, "
                  f"differentiable.\n\n    >>> fg.{name}(fg.ones((2, 3)), axis=0)  # doctest: +SKIP\n")
    return fn


def _canon_axis(axis, op):
    """Attributes must be hashable and canonical, so the static graph can merge equal nodes.
    Axes must be integers (``axis=1.7`` is a ``TypeError``, as in NumPy, not axis 1); their range
    is checked by NumPy (eager) and by the shape rule (static)."""
    if axis is None or type(axis) is int:
        return axis
    if isinstance(axis, (list, tuple)):
        return tuple([_shapes.as_int(a, op) for a in axis])
    return _shapes.as_int(axis, op)


def _canon_keepdims(keepdims, op) -> bool:
    """``keepdims`` is a bool (or 0/1): anything else -- NumPy's positional ``dtype`` in
    ``np.sum(t, 0, np.float32)`` lands here -- is a ``TypeError`` rather than "true"."""
    if keepdims is True or keepdims is False:
        return keepdims
    if isinstance(keepdims, (bool, np.bool_)) or (
            isinstance(keepdims, (int, np.integer)) and keepdims in (0, 1)):
        return bool(keepdims)
    raise TypeError(f"{op}: keepdims must be a bool, got {keepdims!r} (NumPy's dtype and out "
                    f"arguments are not taken by the differentiable {op}; pass keepdims= by "
                    f"keyword)")


def _canon_ddof(ddof, op):
    # NumPy accepts a float ddof (np.var(x, ddof=0.5)): keep it rather than truncate it
    if type(ddof) is int:
        return ddof
    try:
        return _shapes.as_int(ddof, op, "ddof")
    except TypeError:
        return float(ddof)


def _sum_vjp(g, ans, x, axis, keepdims):
    return F.broadcast_like(_keep(g, x, axis, keepdims), x)


def _mean_vjp(g, ans, x, axis, keepdims):
    if axis is None and type(x) is np.ndarray and isinstance(g, np.generic):
        # the mean of a whole array on plain values (an objective's last step): what the ops
        # below compute there, without their dispatch
        return _broadcast_like_forward(g * _size_ratio(ans, x), x)
    # scaled before it is spread: one multiply on the reduced values, not a pass over x's
    return F.broadcast_like(_keep(g, x, axis, keepdims) * F.size_ratio(ans, x), x)


def _prod_vjp(g, ans, x, axis, keepdims):
    # d prod / d x_i = product of the others: ans / x_i where no factor is zero; with exactly one
    # zero, only that entry has a gradient (the product of the non-zero others); with two, none.
    nonzero = F.not_equal(x, 0)
    safe_x = F.where(nonzero, x, 1)
    prod_nonzero = F.prod(safe_x, axis=axis, keepdims=True)
    n_zero = F.sum(F.logical_not(nonzero), axis=axis, keepdims=True)
    others = F.where(F.equal(n_zero, 0), prod_nonzero / safe_x,
                     F.where(F.logical_and(F.equal(n_zero, 1), F.logical_not(nonzero)),
                             prod_nonzero, 0))
    return _keep(g, x, axis, keepdims) * others


def _extreme_vjp(g, ans, x, axis, keepdims):
    # ties share the gradient evenly (as PyTorch's amax/amin do)
    hit = F.equal(x, _keep(ans, x, axis, keepdims))
    count = F.sum(hit, axis=axis, keepdims=True)
    return F.where(hit, _keep(g, x, axis, keepdims) / count, 0)


def _var_forward(x, axis=None, keepdims=False, ddof=0):
    return np.var(x, axis=axis, keepdims=keepdims, ddof=ddof)


def _var_vjp(g, ans, x, axis, keepdims, ddof=0):
    centred = x - F.mean(x, axis=axis, keepdims=True)
    if np.dtype(x.dtype).kind == "c":   # mean |x - m|^2: 2 conj(x - m) / n (autograd's convention)
        centred = F.conj(centred)
    r = F.size_ratio(ans, x)  # 1 / n, computed at run time so unknown dimensions work
    return _keep(g, x, axis, keepdims) * centred * (2 * r / (1 - ddof * r))


def _std_forward(x, axis=None, keepdims=False, ddof=0):
    return np.std(x, axis=axis, keepdims=keepdims, ddof=ddof)


def _std_vjp(g, ans, x, axis, keepdims, ddof=0):
    # d std = d var / (2 std); where std == 0 (all values equal) that is 0 * inf: take 0, as
    # PyTorch does, and divide by 1 there so no warning is raised
    zero = F.equal(ans, 0)
    return _var_vjp(F.where(zero, 0, g * 0.5 / F.where(zero, 1, ans)), ans, x, axis, keepdims,
                    ddof)


def _logsumexp_forward(x, axis=None, keepdims=False):
    x = np.asarray(x)
    if x.dtype.kind == "c":     # SciPy's (shifted by the largest real part)
        import scipy.special
        return scipy.special.logsumexp(x, axis=axis, keepdims=keepdims)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True) if x.size else np.zeros((1,) * x.ndim, x.dtype)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        out = np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
    return out[()] if out.ndim == 0 else out   # a NumPy scalar, as NumPy's reductions give


def _logsumexp_vjp(g, ans, x, axis, keepdims):
    return _keep(g, x, axis, keepdims) * F.exp(x - _keep(ans, x, axis, keepdims))


_add_reduce = np.add.reduce
_DOUBLE = (np.dtype(np.float64), np.dtype(np.complex128))


def _sum_forward(x, axis=None, keepdims=False):
    # np.sum of an ndarray is np.add.reduce (its dtype rules included), less ~1.5 us of wrapper
    if type(x) is np.ndarray:
        return _add_reduce(x, axis=axis, keepdims=keepdims)
    return np.sum(x, axis=axis, keepdims=keepdims)


def _mean_forward(x, axis=None, keepdims=False):
    # np.mean of a float64 / complex128 array: its sum divided by the count, as NumPy computes
    # it (the same bits), less ~2.5 us of wrapper; other dtypes (float16's float32 sum, ints'
    # float64 result) and empty arrays (NumPy's warning) go to np.mean
    if type(x) is np.ndarray and x.dtype in _DOUBLE and x.size:
        if axis is None:
            n = x.size
        else:
            n = 1
            for a in ((axis,) if type(axis) is int else axis):
                n *= x.shape[a]
        return _add_reduce(x, axis=axis, keepdims=keepdims) / n
    return np.mean(x, axis=axis, keepdims=keepdims)


sum = defop("sum", _sum_forward, _sum_vjp, function=_reducer("sum"),  # noqa: A001
            shape=_reduce_rule("sum"), reduction="sum", exports=TOP, methods=True,
            complex_vjps=True)
mean = defop("mean", _mean_forward, _mean_vjp, function=_reducer("mean"),
             shape=_reduce_rule("mean"), reduction="mean", exports=TOP, methods=True,
             complex_vjps=True)
prod = defop("prod", np.prod, _prod_vjp, function=_reducer("prod"),
             shape=_reduce_rule("prod"), exports=TOP, methods=True, complex_vjps=True)
max = defop("max", np.max, _extreme_vjp, function=_reducer("max"),  # noqa: A001
            shape=_reduce_rule("max"), reduction="max",
            exports=TOP + (("numpy", "amax"),), methods=True)
min = defop("min", np.min, _extreme_vjp, function=_reducer("min"),  # noqa: A001
            shape=_reduce_rule("min"), reduction="min",
            exports=TOP + (("numpy", "amin"),), methods=True)
logsumexp = defop("logsumexp", _logsumexp_forward, _logsumexp_vjp,
                  function=_reducer("logsumexp"), shape=_reduce_rule("logsumexp"),
                  exports=TOP, methods=True,
                  complex_vjps=True)   # (scipy.special's, with b=: ops/special.py)


def var(x, axis=None, keepdims: bool = False, ddof: int = 0):
    """Variance over ``axis`` (``ddof`` as in NumPy), differentiable.

        >>> fg.var(fg.tensor([1.0, 2.0, 3.0]))  # doctest: +SKIP
    """
    return apply(var.op, (x,), {"axis": _canon_axis(axis, "var"),
                                "keepdims": _canon_keepdims(keepdims, "var"),
                                "ddof": _canon_ddof(ddof, "var")})


def std(x, axis=None, keepdims: bool = False, ddof: int = 0):
    """Standard deviation over ``axis`` (``ddof`` as in NumPy), differentiable."""
    return apply(std.op, (x,), {"axis": _canon_axis(axis, "std"),
                                "keepdims": _canon_keepdims(keepdims, "std"),
                                "ddof": _canon_ddof(ddof, "std")})


var = defop("var", _var_forward, _var_vjp, function=var, shape=_reduce_rule("var"),
            exports=TOP, methods=True, complex_vjps=True)
std = defop("std", _std_forward, _std_vjp, function=std, shape=_reduce_rule("std"),
            exports=TOP, methods=True, complex_vjps=True)


# ---- cumulative sums and differences ------------------------------------------------------------
def _cumsum_shape(shapes, axis):
    s = tuple(shapes[0])
    if axis is None:
        return (None if None in s else int(np.prod(s, dtype=np.int64)),)
    _shapes.check_axis(axis, len(s), "cumsum", s)
    return s


def _cumsum_vjp(g, ans, x, axis):
    # each input adds to every later output: the gradient is the reversed cumulative sum
    if axis is None:
        return F.reshape_like(F.flip(cumsum(F.flip(g), 0)), x)
    return F.flip(cumsum(F.flip(g, axis), axis), axis)


def cumsum(x, axis=None):
    """Cumulative sum along ``axis`` (None: over the flattened array), NumPy's ``np.cumsum``;
    integer and boolean input gives NumPy's integer result."""
    if axis is not None:
        shape = x.shape if hasattr(x, "shape") else np.shape(x)
        if shape is not None:
            axis = _shapes.check_axis(axis, len(shape) or 1, "cumsum", shape)
            if not shape:
                axis = None  # NumPy reads a 0-d array as 1-d here: the same (1,) result
        else:
            axis = _shapes.as_int(axis, "cumsum")
    return apply(cumsum.op, (x,), {"axis": axis})


cumsum = defop("cumsum", lambda x, axis: np.cumsum(x, axis=axis), _cumsum_vjp,
               shape=_cumsum_shape, function=cumsum, exports=TOP, methods=True, complex_vjps=True)


def diff(x, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis``, NumPy's ``np.diff`` (``x[1:] - x[:-1]``
    ``n`` times, booleans with ``!=``); ``prepend``/``append`` (None: nothing) are joined first,
    a scalar broadcast to one slice, as NumPy does."""
    from .shape import _as_operand, _known_ndim
    n = _shapes.as_int(n, "diff", "n")
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    x = _as_operand(x)
    if n == 0:
        return x
    nd = _known_ndim(x, "diff")
    if nd == 0:
        raise ValueError("diff: diff requires input that is at least one dimensional")
    shape = tuple(x.shape if hasattr(x, "shape") else np.shape(x))
    axis = _shapes.check_axis(axis, nd, "diff", shape)
    if prepend is not None or append is not None:
        parts = []
        for extra, at_end in ((prepend, False), (append, True)):
            if extra is None:
                continue
            extra = _as_operand(extra)
            if _known_ndim(extra, "diff") == 0:
                if None in shape:
                    raise ValueError("diff: a scalar prepend/append needs the operand's shape "
                                     "to be known")
                extra = F.broadcast_to(extra, shape[:axis] + (1,) + shape[axis + 1:])
            parts.append((at_end, extra))
        x = F.concatenate([e for end, e in parts if not end] + [x]
                          + [e for end, e in parts if end], axis=axis)
    upper = (slice(None),) * axis + (slice(1, None),)
    lower = (slice(None),) * axis + (slice(None, -1),)
    for _ in range(n):
        a, b = F.getitem(x, upper), F.getitem(x, lower)
        x = F.not_equal(a, b) if np.dtype(x.dtype) == np.bool_ else F.subtract(a, b)
    return x


diff = defun(diff, exports=TOP)
