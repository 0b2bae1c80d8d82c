"""NumPy's statistics, cumulative, NaN-ignoring, signal and polynomial functions:
``cumprod cumulative_sum cumulative_prod nansum nanprod nanmean nanvar nanstd nanmax nanmin
nancumsum nancumprod quantile percentile median (and their nan* forms) average ptp cov corrcoef
trapezoid ediff1d gradient interp convolve correlate unwrap polyval polyadd polysub polymul
polyder polyint vander``.

The NaN-ignoring reductions, ``average``, ``cov``, ``corrcoef``, ``trapezoid``, ``gradient`` and
the polynomial functions are compositions following NumPy's own steps (so NumPy's values); the
order statistics (``quantile`` and its family), ``cumprod``, ``interp``, ``convolve``,
``correlate`` and ``unwrap`` are ops with NumPy's function as their forward.
"""
from __future__ import annotations

import numpy as np

from .._core import TOP, ZERO, apply, defop, defun, holds_graph_value
from .._core import shapes as _shapes
from .reductions import _canon_axis, _canon_keepdims
from .shape import _as_operand, _known_ndim, _shape_of

from .. import ops as F


def _flip_cumsum(v, axis):
    """The sum of each element and those after it along ``axis``."""
    return F.flip(F.cumsum(F.flip(v, axis), axis), axis)


# ---- cumulative products -------------------------------------------------------------------------
def _shift_back(v, d, axis, nd):
    """``v`` moved ``d`` places towards the front along ``axis``, zeros filling the end."""
    n = _shape_of(v)[axis]
    if d >= n:
        return v * 0
    width = tuple((0, d) if k == axis else (0, 0) for k in range(nd))
    return F.pad(F.getitem(v, (slice(None),) * axis + (slice(d, None),)), width)


def _cumprod_vjp(g, ans, x, axis):
    # d/dx_k of sum_j g_j prod_{i<=j} x_i is E_k * S_k: E_k = prod_{i<k} x_i (an exclusive
    # cumulative product) and S_k = sum_{j>=k} g_j prod_{k<i<=j} x_i, the reverse recurrence
    # S_k = g_k + x_{k+1} S_{k+1}, solved by doubling in log2(n) steps of products and sums.
    # No division, so it is exact where elements are 0, and made of ops, so every higher
    # derivative is too.
    nd = _known_ndim(x, "cumprod")
    n = _shape_of(x)[axis]
    if n is None:
        raise ValueError("cumprod: the gradient needs the axis length to be known")
    ones = F.broadcast_like(np.ones((), dtype=np.dtype(getattr(ans, "dtype", np.float64))),
                            F.getitem(x, (slice(None),) * axis + (slice(0, 1),)))
    before = F.getitem(x, (slice(None),) * axis + (slice(None, -1),))
    exclusive = cumprod(F.concatenate([ones, before], axis=axis), axis)
    a, b = _shift_back(x, 1, axis, nd), g
    d = 1
    while d < n:
        b = b + a * _shift_back(b, d, axis, nd)
        a = a * _shift_back(a, d, axis, nd)
        d *= 2
    return exclusive * b


def cumprod(a, axis=None, dtype=None):
    """Cumulative product along ``axis`` (None: over the flattened array), NumPy's
    ``np.cumprod``, differentiable (exactly also where elements are 0)."""
    a = _as_operand(a)
    if dtype is not None:
        a = F.astype(a, dtype)
    if axis is None or _known_ndim(a, "cumprod") == 0:
        if axis is not None:
            _shapes.check_axis(axis, 1, "cumprod")
        a, axis = F.reshape(a, (-1,)), 0
    else:
        axis = _shapes.check_axis(axis, _known_ndim(a, "cumprod"), "cumprod", _shape_of(a))
    return apply(cumprod.op, (a,), {"axis": axis})


cumprod = defop("cumprod", lambda x, axis: np.cumprod(x, axis=axis), _cumprod_vjp,
                shape=lambda shapes, **_: tuple(shapes[0]), function=cumprod, exports=TOP,
                methods=True, complex_vjps=True)


def _cumulative(name, scan, initial):
    def fn(x, /, *, axis=None, dtype=None, include_initial=False):
        x = _as_operand(x)
        nd = _known_ndim(x, name)
        if axis is None:
            if nd > 1:
                raise ValueError(f"{name}: axis must be specified for an array of more than "
                                 f"one dimension")
            axis = 0
        if nd == 0:
            raise ValueError(f"{name}: the input must be at least 1-D")
        ax = _shapes.check_axis(axis, nd, name, _shape_of(x))
        out = scan(x if dtype is None else F.astype(x, dtype), axis=ax)
        if include_initial:
            first = F.getitem(out, (slice(None),) * ax + (slice(0, 1),))
            start = F.broadcast_like(np.asarray(initial, dtype=out.dtype), first)
            out = F.concatenate([start, out], axis=ax)
        return out
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"NumPy 2.1's ``np.{name}`` (``include_initial`` puts the {initial} in "
                  f"front), differentiable.")
    return fn


cumulative_sum = defun(_cumulative("cumulative_sum", lambda x, axis: F.cumsum(x, axis), 0),
                       exports=TOP)
cumulative_prod = defun(_cumulative("cumulative_prod", lambda x, axis: cumprod(x, axis), 1),
                        exports=TOP)


# ---- NaN-ignoring reductions, as NumPy computes them ---------------------------------------------------
def _isnan(x):
    return F.not_equal(x, x)


def _replaced(a, value):
    a = _as_operand(a)
    if np.dtype(a.dtype).kind not in "fc":
        return a, None
    mask = _isnan(a)
    return F.where(mask, value, a), mask


def nansum(a, axis=None, keepdims=False):
    """``sum`` with NaN counted as 0, NumPy's ``np.nansum``; the gradient of a NaN is 0."""
    arr, _ = _replaced(a, 0)
    return F.sum(arr, axis=_canon_axis(axis, "nansum"), keepdims=_canon_keepdims(keepdims,
                                                                                 "nansum"))


nansum = defun(nansum, exports=TOP)


def nanprod(a, axis=None, keepdims=False):
    """``prod`` with NaN counted as 1, NumPy's ``np.nanprod``."""
    arr, _ = _replaced(a, 1)
    return F.prod(arr, axis=_canon_axis(axis, "nanprod"), keepdims=_canon_keepdims(keepdims,
                                                                                   "nanprod"))


nanprod = defun(nanprod, exports=TOP)


def nancumsum(a, axis=None):
    """``cumsum`` with NaN counted as 0, NumPy's ``np.nancumsum``."""
    arr, _ = _replaced(a, 0)
    return F.cumsum(arr, axis)


nancumsum = defun(nancumsum, exports=TOP)


def nancumprod(a, axis=None):
    """``cumprod`` with NaN counted as 1, NumPy's ``np.nancumprod``."""
    arr, _ = _replaced(a, 1)
    return cumprod(arr, axis)


nancumprod = defun(nancumprod, exports=TOP)


def nanmean(a, axis=None, keepdims=False):
    """The mean of the non-NaN values, NumPy's ``np.nanmean`` (NaN where there are none)."""
    arr, mask = _replaced(a, 0)
    axis, keepdims = _canon_axis(axis, "nanmean"), _canon_keepdims(keepdims, "nanmean")
    if mask is None:
        return F.mean(arr, axis=axis, keepdims=keepdims)
    cnt = F.sum(F.logical_not(mask), axis=axis, keepdims=keepdims)
    tot = F.sum(arr, axis=axis, keepdims=keepdims)
    return _divide_by_count(tot, cnt)


def _divide_by_count(a, cnt):
    """``a / cnt`` in ``a``'s dtype, as NumPy's nan-functions divide (into ``a``'s buffer)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return F.astype(a / cnt, np.dtype(a.dtype))


nanmean = defun(nanmean, exports=TOP)


def _nanvar(a, axis, ddof, keepdims, op):
    arr, mask = _replaced(a, 0)
    axis, keepdims = _canon_axis(axis, op), _canon_keepdims(keepdims, op)
    if mask is None:
        return F.var(arr, axis=axis, keepdims=keepdims, ddof=ddof)
    keep = F.logical_not(mask)
    cnt = F.sum(keep, axis=axis, keepdims=True)
    avg = _divide_by_count(F.sum(arr, axis=axis, keepdims=True), cnt)
    dev = F.where(mask, 0, arr - avg)
    sqr = F.sum(dev * dev, axis=axis, keepdims=keepdims)
    dof = F.sum(keep, axis=axis, keepdims=keepdims) - ddof
    return _divide_by_count(sqr, F.where(F.less_equal(dof, 0), np.nan, dof))


def nanvar(a, axis=None, ddof=0, keepdims=False):
    """The variance of the non-NaN values, NumPy's ``np.nanvar``."""
    return _nanvar(a, axis, ddof, keepdims, "nanvar")


nanvar = defun(nanvar, exports=TOP)


def nanstd(a, axis=None, ddof=0, keepdims=False):
    """The standard deviation of the non-NaN values, NumPy's ``np.nanstd``."""
    return F.sqrt(_nanvar(a, axis, ddof, keepdims, "nanstd"))


nanstd = defun(nanstd, exports=TOP)


def _nanextreme(name, reduce, fill):
    def fn(a, axis=None, keepdims=False):
        arr, mask = _replaced(a, fill)
        axis_, keep = _canon_axis(axis, name), _canon_keepdims(keepdims, name)
        out = reduce(arr, axis=axis_, keepdims=keep)
        if mask is None:
            return out
        all_nan = F.logical_not(F.sum(F.logical_not(mask), axis=axis_, keepdims=keep))
        return F.where(all_nan, np.nan, out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The {'largest' if fill < 0 else 'smallest'} non-NaN value, NumPy's "
                  f"``np.{name}`` (NaN where there is none); ties share the gradient.")
    return fn


nanmax = defun(_nanextreme("nanmax", lambda x, **k: F.max(x, **k), -np.inf), exports=TOP)
nanmin = defun(_nanextreme("nanmin", lambda x, **k: F.min(x, **k), np.inf), exports=TOP)


# ---- order statistics: quantile and its family -------------------------------------------------------
_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _rows(x, axis):
    """``x`` as rows (every axis kept, then the reduced ones flattened last), and how to put a
    row-shaped result back."""
    x = np.asarray(x)
    nd = x.ndim
    red = tuple(range(nd)) if axis is None else axis
    kept = tuple(a for a in range(nd) if a not in red)
    moved = np.transpose(x, kept + red)
    kept_shape = tuple(x.shape[a] for a in kept)
    return moved.reshape(kept_shape + (-1,)), kept, red, kept_shape


def _quantile_plan(x, q, axis, method, nan):
    """For each quantile and row: the two order statistics (indices into the row) and their
    weights, as NumPy's ``method`` combines them (NaN rows of a non-nan quantile, and empty rows
    of a nan one, get no weight)."""
    rows, kept, red, kept_shape = _rows(x, axis)
    n = rows.shape[-1]
    order = np.argsort(rows, axis=-1, kind="stable")   # NaN last
    if nan:
        m = np.sum(~np.isnan(rows), axis=-1)
    else:
        m = np.full(kept_shape, n)
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
    plan = []
    for qk in qs:
        v = qk * (m - 1)
        lo = np.floor(v).astype(np.int64)
        hi = np.minimum(lo + 1, m - 1)
        frac = v - lo
        if method == "linear":
            w_lo, w_hi = 1 - frac, frac
        elif method == "lower":
            w_lo, w_hi = np.ones_like(frac), np.zeros_like(frac)
        elif method == "higher":
            hi = np.ceil(v).astype(np.int64)
            w_lo, w_hi = np.zeros_like(frac), np.ones_like(frac)
        elif method == "nearest":
            idx = np.around(v).astype(np.int64)
            lo = hi = idx
            w_lo, w_hi = np.ones_like(frac), np.zeros_like(frac)
        else:  # midpoint
            hi = np.ceil(v).astype(np.int64)
            w_lo = w_hi = np.full_like(frac, 0.5)
        valid = m > 0
        if not nan:
            valid = valid & ~np.any(np.isnan(rows), axis=-1)
        lo, hi = np.clip(lo, 0, max(n - 1, 0)), np.clip(hi, 0, max(n - 1, 0))
        w_lo, w_hi = np.where(valid, w_lo, 0), np.where(valid, w_hi, 0)
        src_lo = np.take_along_axis(order, lo[..., None], -1)[..., 0]
        src_hi = np.take_along_axis(order, hi[..., None], -1)[..., 0]
        plan.append((src_lo, w_lo, src_hi, w_hi))
    return plan, kept, red, kept_shape, n


def _quantile_scatter_forward(g, x, q, axis, method, keepdims, nan):
    g = np.asarray(g)
    x = np.asarray(x)
    plan, kept, red, kept_shape, n = _quantile_plan(x, q, axis, method, nan)
    nq = len(plan)
    # g: q's shape, then the kept axes (the reduced ones as 1s with keepdims)
    gq = g.reshape((nq,) + kept_shape)
    rows = np.zeros(kept_shape + (n,), dtype=g.dtype)
    flat = rows.reshape(-1, n)
    for k, (src_lo, w_lo, src_hi, w_hi) in enumerate(plan):
        r = np.arange(flat.shape[0])
        np.add.at(flat, (r, src_lo.reshape(-1)), (gq[k] * w_lo).reshape(-1))
        np.add.at(flat, (r, src_hi.reshape(-1)), (gq[k] * w_hi).reshape(-1))
    moved_shape = kept_shape + tuple(x.shape[a] for a in red)
    out = rows.reshape(moved_shape)
    return np.transpose(out, np.argsort(kept + red))


def _quantile_gather_forward(v, x, q, axis, method, keepdims, nan):
    v = np.asarray(v)
    plan, kept, red, kept_shape, n = _quantile_plan(x, q, axis, method, nan)
    rows = _rows(v, axis)[0]
    outs = []
    for src_lo, w_lo, src_hi, w_hi in plan:
        a = np.take_along_axis(rows, src_lo[..., None], -1)[..., 0]
        b = np.take_along_axis(rows, src_hi[..., None], -1)[..., 0]
        outs.append(w_lo * a + w_hi * b)
    out = np.stack(outs).astype(v.dtype, copy=False)
    shape = _quantile_shape([np.shape(x)], q, axis, method, keepdims, nan)
    return out.reshape(shape)


def _quantile_shape(shapes, q, axis, method, keepdims, nan):
    s = tuple(shapes[0])
    red = tuple(range(len(s))) if axis is None else axis
    rest = tuple(1 if i in red else d for i, d in enumerate(s)) if keepdims else \
        tuple(d for i, d in enumerate(s) if i not in red)
    return tuple(np.shape(q)) + rest


def _quantile_scatter(g, x, q, axis, method, keepdims, nan):
    return apply(_quantile_scatter.op, (g, x), {"q": q, "axis": axis, "method": method,
                                               "keepdims": keepdims, "nan": nan})


def _quantile_gather(v, x, q, axis, method, keepdims, nan):
    return apply(_quantile_gather.op, (v, x), {"q": q, "axis": axis, "method": method,
                                              "keepdims": keepdims, "nan": nan})


_quantile_scatter = defop(
    "quantile_scatter", _quantile_scatter_forward,
    lambda G, ans, g, x, **a: _quantile_gather(G, x, **a), ZERO,
    shape=lambda shapes, **_: tuple(shapes[1]), function=_quantile_scatter,
    doc="The VJP of a quantile: each output's gradient on the order statistics it combines.")
_quantile_gather = defop(
    "quantile_gather", _quantile_gather_forward,
    lambda G, ans, v, x, **a: _quantile_scatter(G, x, **a), ZERO,
    shape=lambda shapes, q, axis, method, keepdims, nan: _quantile_shape(
        shapes[1:], q, axis, method, keepdims, nan),
    function=_quantile_gather,
    doc="``v``'s values at ``x``'s order statistics, weighted as the quantile weights them.")


def _quantile_forward(x, q, axis, method, keepdims, nan):
    f = np.nanquantile if nan else np.quantile
    qv = np.asarray(q) if isinstance(q, tuple) else q
    return f(x, qv, axis=axis, method=method, keepdims=keepdims)


_quantile = defop("quantile_values", _quantile_forward,
                  lambda g, ans, x, **a: _quantile_scatter(g, x, **a),
                  shape=_quantile_shape,
                  doc="NumPy's ``np.quantile`` / ``np.nanquantile`` (``nan``) of ``x``.")


def _q_attr(q, scale, op):
    if holds_graph_value((q,)):
        raise TypeError(f"{op}: q must be plain numbers (the quantile is not differentiated "
                        f"with respect to q)")
    qa = np.asarray(q, dtype=np.float64) / scale
    if qa.ndim > 1 or not np.all((qa >= 0) & (qa <= 1)):
        raise ValueError(f"{op}: Quantiles must be in the range [0, 1]" if scale == 1 else
                         f"{op}: Percentiles must be in the range [0, 100]")
    return float(qa) if qa.ndim == 0 else tuple(float(v) for v in qa)


def _quantile_call(op, a, q, axis, method, keepdims, nan, interpolation=None, weights=None):
    if weights is not None:
        raise TypeError(f"{op}: weights= is not supported for Tensors or Nodes")
    if interpolation is not None:
        method = interpolation
    if method not in _METHODS:
        raise NotImplementedError(f"{op}: method={method!r} is not differentiable in fastgraph "
                                  f"(methods {', '.join(_METHODS)} are)")
    a = _as_operand(a)
    nd = _known_ndim(a, op)
    if axis is not None:
        axes = axis if isinstance(axis, (tuple, list)) else (axis,)
        axis = tuple(sorted(_shapes.check_axis(ax, nd, op, _shape_of(a)) for ax in axes))
        if len(set(axis)) != len(axis):
            raise ValueError(f"{op}: repeated axis")
    return apply(_quantile.op, (a,), {"q": q, "axis": axis, "method": method,
                                      "keepdims": _canon_keepdims(keepdims, op), "nan": nan})


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """NumPy's ``np.quantile`` (its own values), differentiable in ``a``: the gradient goes to
    the one or two order statistics each quantile combines, with their weights (methods
    ``linear lower higher nearest midpoint``).

        >>> fg.quantile(fg.tensor([1.0, 4.0, 2.0, 3.0]), 0.5)  # doctest: +SKIP
    """
    _no_out(out, "quantile")
    return _quantile_call("quantile", a, _q_attr(q, 1, "quantile"), axis, method, keepdims,
                          False, interpolation, weights)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """NumPy's ``np.percentile`` (``q`` in [0, 100]), differentiable as ``quantile``."""
    _no_out(out, "percentile")
    return _quantile_call("percentile", a, _q_attr(q, 100, "percentile"), axis, method,
                          keepdims, False, interpolation, weights)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    """NumPy's ``np.nanquantile``: ``quantile`` of the non-NaN values, differentiable."""
    _no_out(out, "nanquantile")
    return _quantile_call("nanquantile", a, _q_attr(q, 1, "nanquantile"), axis, method,
                          keepdims, True, interpolation, weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    """NumPy's ``np.nanpercentile``, differentiable."""
    _no_out(out, "nanpercentile")
    return _quantile_call("nanpercentile", a, _q_attr(q, 100, "nanpercentile"), axis, method,
                          keepdims, True, interpolation, weights)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's ``np.median`` (the middle value, or the mean of the two middle ones),
    differentiable: the gradient goes to those values."""
    _no_out(out, "median")
    return _quantile_call("median", a, 0.5, axis, "linear", keepdims, False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's ``np.nanmedian``, differentiable."""
    _no_out(out, "nanmedian")
    return _quantile_call("nanmedian", a, 0.5, axis, "linear", keepdims, True)


def _no_out(out, op):
    if out is not None:
        raise TypeError(f"{op}: out= is not supported for Tensors or Nodes")


for _fn in (quantile, percentile, nanquantile, nanpercentile, median, nanmedian):
    defun(_fn, exports=TOP)
del _fn


# ---- averages and spreads -----------------------------------------------------------------------------
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """NumPy's ``np.average`` (the same steps: ``sum(a * w) / sum(w)``), differentiable in
    ``a`` and ``weights``; ``returned=True`` also gives the sum of the weights."""
    a = _as_operand(a)
    nd = _known_ndim(a, "average")
    keepdims = _canon_keepdims(keepdims, "average")
    axes = None if axis is None else tuple(
        _shapes.check_axis(ax, nd, "average", _shape_of(a))
        for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if weights is None:
        avg = F.mean(a, axis=axes, keepdims=keepdims)
        if not returned:
            return avg
        shape = tuple(_shape_of(a))
        count = np.prod([shape[i] for i in (range(nd) if axes is None else axes)],
                        dtype=np.int64)
        dt = np.dtype(avg.dtype) if isinstance(getattr(avg, "dtype", None), np.dtype) else \
            np.asarray(avg).dtype
        return avg, F.copy(F.broadcast_like(np.asarray(count, dt), avg))
    w = _as_operand(weights)
    a_dt, w_dt = np.dtype(a.dtype), np.dtype(w.dtype)
    dt = np.result_type(a_dt, w_dt, "f8") if a_dt.kind in "iub" else np.result_type(a_dt,
                                                                                    w_dt)
    if tuple(_shape_of(w)) != tuple(_shape_of(a)):
        if None in tuple(_shape_of(w)) + tuple(_shape_of(a)):
            raise ValueError("average: with weights the shapes must be known")
        if axes is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if tuple(_shape_of(w)) != tuple(_shape_of(a)[ax] for ax in axes):
            raise ValueError("Shape of weights must be consistent with shape of a along "
                             "specified axis.")
        w = F.transpose(w, tuple(int(i) for i in np.argsort(axes)))
        w = F.reshape(w, tuple(s if ax in axes else 1 for ax, s in enumerate(_shape_of(a))))
    w = F.astype(w, dt)
    scl = F.sum(w, axis=axes, keepdims=keepdims)
    if not holds_graph_value((scl,)) and np.any(np.asarray(scl) == 0.0):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = F.sum(F.multiply(F.astype(a, dt), w), axis=axes, keepdims=keepdims) / scl
    if not returned:
        return avg
    if tuple(_shape_of(scl)) != tuple(_shape_of(avg)):
        scl = F.copy(F.broadcast_like(scl, avg))
    return avg, scl


average = defun(average, exports=TOP)


def ptp(a, axis=None, keepdims=False):
    """The range ``max - min`` along ``axis``, NumPy's ``np.ptp``, differentiable."""
    axis, keepdims = _canon_axis(axis, "ptp"), _canon_keepdims(keepdims, "ptp")
    return F.max(a, axis=axis, keepdims=keepdims) - F.min(a, axis=axis, keepdims=keepdims)


ptp = defun(ptp, exports=TOP)


def _ndmin2(x, dtype):
    x = F.astype(_as_operand(x), dtype)
    nd = _known_ndim(x, "cov")
    if nd > 2:
        raise ValueError("m has more than 2 dimensions")
    return F.expand_dims(x, tuple(range(2 - nd))) if nd < 2 else x, nd


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """NumPy's ``np.cov`` (the same steps), differentiable in ``m`` and ``y`` (``fweights``
    and ``aweights`` are plain arrays)."""
    return _cov(m, y, rowvar, bias, ddof, fweights, aweights, dtype, "cov")


def _cov(m, y, rowvar, bias, ddof, fweights, aweights, dtype, op):
    if holds_graph_value((fweights, aweights)):
        raise TypeError("cov: fweights and aweights must be plain arrays")
    dts = [np.dtype(_as_operand(m).dtype)] + ([np.dtype(_as_operand(y).dtype)]
                                              if y is not None else [])
    dt = np.result_type(*dts, np.float64) if dtype is None else np.dtype(dtype)
    X, nd = _ndmin2(m, dt)
    if not rowvar and nd != 1:
        X = F.transpose(X)
    if y is not None:
        Y, _ = _ndmin2(y, dt)
        if not rowvar and _shape_of(Y)[0] != 1:
            Y = F.transpose(Y)
        X = F.concatenate((X, Y), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = _shape_of(X)[1]
    if n is None:
        raise ValueError(f"{op}: the number of observations must be known")
    w = None
    if fweights is not None:
        w = np.asarray(fweights, dtype=float)
    if aweights is not None:
        aw = np.asarray(aweights, dtype=float)
        w = aw if w is None else w * aw
    if w is None:
        avg = F.mean(X, axis=1)
        fact = n - ddof
    else:
        avg = F.sum(X * w, axis=1) / w.sum()
        w_sum = w.sum()
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * np.sum(w * np.asarray(aweights, float)) / w_sum
    if fact <= 0:
        fact = 0.0
    X = X - F.expand_dims(avg, 1)
    X_T = F.transpose(X) if w is None else F.transpose(X * w)
    c = F.matmul(X, X_T)
    with np.errstate(divide="ignore"):
        c = c * np.true_divide(1, fact)
    return F.squeeze(c)


cov = defun(cov, exports=TOP)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """NumPy's ``np.corrcoef`` (``cov`` over the outer product of the standard deviations,
    clipped to [-1, 1]), differentiable."""
    c = _cov(x, y, rowvar, False, None, None, None, dtype, "corrcoef")
    if _known_ndim(c, "corrcoef") == 0:
        return c / c
    d = F.diagonal(c)
    stddev = F.sqrt(d)
    c = c / F.expand_dims(stddev, 1)
    c = c / F.expand_dims(stddev, 0)
    return F.clip(c, -1, 1)


corrcoef = defun(corrcoef, exports=TOP)


# ---- integration and differences -------------------------------------------------------------------
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """NumPy's ``np.trapezoid`` (the trapezoidal rule, the same steps), differentiable in ``y``,
    ``x`` and ``dx``."""
    y = _as_operand(y)
    nd = _known_ndim(y, "trapezoid")
    ax = _shapes.check_axis(axis, nd, "trapezoid", _shape_of(y))
    if x is None:
        d = dx
    else:
        x = _as_operand(x)
        if _known_ndim(x, "trapezoid") == 1:
            d = F.diff(x)
            shape = [1] * nd
            shape[ax] = -1
            d = F.reshape(d, tuple(shape))
        else:
            d = F.diff(x, axis=ax)
    upper = (slice(None),) * ax + (slice(1, None),)
    lower = (slice(None),) * ax + (slice(None, -1),)
    return F.sum(d * (F.getitem(y, upper) + F.getitem(y, lower)) / 2.0, axis=ax)


trapezoid = defun(trapezoid, exports=TOP)


def ediff1d(ary, to_end=None, to_begin=None):
    """NumPy's ``np.ediff1d``: the differences of the flattened array, with ``to_begin`` and
    ``to_end`` (flattened) around them, differentiable in all three."""
    flat = F.reshape(_as_operand(ary), (-1,))
    parts = []
    if to_begin is not None:
        parts.append(F.reshape(_as_operand(to_begin), (-1,)))
    parts.append(F.getitem(flat, slice(1, None)) - F.getitem(flat, slice(None, -1)))
    if to_end is not None:
        parts.append(F.reshape(_as_operand(to_end), (-1,)))
    return F.concatenate(parts) if len(parts) > 1 else parts[0]


ediff1d = defun(ediff1d, exports=TOP)


def _axis_slice(nd, ax, item):
    return (slice(None),) * ax + (item,)


def _gradient_along(f, ax, nd, dx, edge_order):
    """NumPy's ``np.gradient`` along one axis: second-order central differences inside,
    one-sided ones of order ``edge_order`` at the ends (``dx`` a number or the coordinates'
    differences)."""
    uniform = np.ndim(dx) == 0
    at = lambda item: F.getitem(f, _axis_slice(nd, ax, item))  # noqa: E731
    if uniform:
        inside = (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * dx)
    else:
        dx1, dx2 = dx[:-1], dx[1:]
        shape = [1] * nd
        shape[ax] = -1
        a = (-(dx2) / (dx1 * (dx1 + dx2))).reshape(shape)
        b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
        c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
        inside = a * at(slice(None, -2)) + b * at(slice(1, -1)) + c * at(slice(2, None))
    one = lambda item: F.expand_dims(at(item), ax)  # noqa: E731
    if edge_order == 1:
        d0 = dx if uniform else dx[0]
        dn = dx if uniform else dx[-1]
        first = (one(1) - one(0)) / d0
        last = (one(-1) - one(-2)) / dn
    else:
        if uniform:
            a, b, c = -1.5 / dx, 2.0 / dx, -0.5 / dx
        else:
            dx1, dx2 = dx[0], dx[1]
            a = -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2))
            b = (dx1 + dx2) / (dx1 * dx2)
            c = -dx1 / (dx2 * (dx1 + dx2))
        first = a * one(0) + b * one(1) + c * one(2)
        if uniform:
            a, b, c = 0.5 / dx, -2.0 / dx, 1.5 / dx
        else:
            dx1, dx2 = dx[-2], dx[-1]
            a = dx2 / (dx1 * (dx1 + dx2))
            b = -(dx2 + dx1) / (dx1 * dx2)
            c = (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))
        last = a * one(-3) + b * one(-2) + c * one(-1)
    return F.concatenate([first, inside, last], axis=ax)


def gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's ``np.gradient`` (the same differences), differentiable in ``f``; spacings are
    plain numbers or coordinate arrays, as in NumPy.  One axis gives an array, several a
    tuple."""
    f = _as_operand(f)
    nd = _known_ndim(f, "gradient")
    axes = tuple(range(nd)) if axis is None else tuple(
        _shapes.check_axis(a, nd, "gradient", _shape_of(f))
        for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if holds_graph_value(varargs):
        raise TypeError("gradient: the spacings must be plain numbers or arrays")
    n = len(varargs)
    if n == 0:
        dxs = [1.0] * len(axes)
    elif n == 1 and np.ndim(varargs[0]) == 0:
        dxs = [varargs[0]] * len(axes)
    elif n == len(axes):
        dxs = []
        for dist, ax in zip(varargs, axes):
            dist = np.asanyarray(dist)
            if dist.ndim == 0:
                dxs.append(dist[()])
                continue
            if dist.ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if _shape_of(f)[ax] is None:
                raise ValueError("gradient: with coordinates the axis length must be known")
            if len(dist) != _shape_of(f)[ax]:
                raise ValueError("when 1d, distances must match the length of the "
                                 "corresponding dimension")
            if np.issubdtype(dist.dtype, np.integer):
                dist = dist.astype(np.float64)
            diffx = np.diff(dist)
            dxs.append(diffx[0] if (diffx == diffx[0]).all() else diffx)
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    if np.dtype(f.dtype).kind in "iub":
        f = F.astype(f, np.float64)
    outs = []
    for ax, dx in zip(axes, dxs):
        if _shape_of(f)[ax] is not None and _shape_of(f)[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        # (NumPy writes each axis's differences into an array of f's dtype)
        outs.append(F.astype(_gradient_along(f, ax, nd, dx, edge_order), np.dtype(f.dtype)))
    return outs[0] if len(outs) == 1 else tuple(outs)


gradient = defun(gradient, exports=TOP)


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """NumPy's ``np.unwrap`` (its own values); the corrections it adds are piecewise
    constant, so the gradient passes through unchanged."""
    p = _as_operand(p)
    ax = _shapes.check_axis(axis, _known_ndim(p, "unwrap"), "unwrap", _shape_of(p))
    return apply(unwrap.op, (p,), {"discont": discont, "axis": ax, "period": period})


unwrap = defop("unwrap", lambda p, discont, axis, period: np.unwrap(p, discont, axis,
                                                                     period=period),
               lambda g, ans, p, discont, axis, period: g,
               shape=lambda shapes, **_: tuple(shapes[0]), function=unwrap, exports=TOP)


# ---- interpolation ----------------------------------------------------------------------------------
searchsorted = defop("searchsorted",
                     lambda a, v, side, sorter: np.searchsorted(a, v, side=side, sorter=sorter),
                     None, None, differentiable=False,
                     shape=lambda shapes, **_: tuple(shapes[1]),
                     function=lambda a, v, side="left", sorter=None: apply(
                         searchsorted.op, (a, v), {"side": side, "sorter": sorter}),
                     doc="NumPy's ``np.searchsorted`` (integer positions: no gradient).")


def _interp_cells(x, xp):
    n = _shape_of(xp)[0]
    j = F.clip(searchsorted(xp, x, "right") - 1, 0, n - 2)
    flat = F.reshape(j, (-1,))

    def at(v, idx):
        return F.reshape_like(F.take_along_axis(v, idx, None), x)
    return j, flat, at


def _interp_vjp_x(g, ans, x, xp, fp, left, right, period):
    if _shape_of(xp)[0] == 1:
        return g * 0
    j, flat, at = _interp_cells(x, xp)
    x0, x1 = at(xp, flat), at(xp, flat + 1)
    f0, f1 = at(fp, flat), at(fp, flat + 1)
    inside = F.logical_and(F.greater_equal(x, F.getitem(xp, 0)),
                           F.less_equal(x, F.getitem(xp, -1)))
    return F.where(inside, g * (f1 - f0) / (x1 - x0), 0)


def _interp_vjp_fp(g, ans, x, xp, fp, left, right, period):
    n = _shape_of(xp)[0]
    gmask = g
    if left is not None:
        gmask = F.where(F.less(x, F.getitem(xp, 0)), 0, gmask)
    if right is not None:
        gmask = F.where(F.greater(x, F.getitem(xp, -1)), 0, gmask)
    if n == 1:
        return F.reshape(F.sum(gmask), (1,))
    j, flat, at = _interp_cells(x, xp)
    x0, x1 = at(xp, flat), at(xp, flat + 1)
    t = F.clip((x - x0) / (x1 - x0), 0, 1)
    lo = F.reshape(gmask * (1 - t), (-1,))
    hi = F.reshape(gmask * t, (-1,))
    return F.arrays._untake(lo, fp, flat, None) + F.arrays._untake(hi, fp, flat + 1, None)


def _interp_vjp_xp(g, ans, x, xp, fp, left, right, period):
    raise NotImplementedError("interp: the gradient with respect to xp (the sample points) is "
                              "not supported; pass them as plain values")


def interp(x, xp, fp, left=None, right=None, period=None):
    """NumPy's ``np.interp`` (its own values), differentiable in ``x`` (the slope; 0 outside
    ``xp``'s range) and ``fp`` (each sample's share).

        >>> fg.interp(fg.tensor([0.5]), [0.0, 1.0], [0.0, 2.0])  # doctest: +SKIP
    """
    if period is not None and holds_graph_value((x, xp, fp)):
        raise NotImplementedError("interp: period= is not supported for Tensors or Nodes")
    xp, fp = _as_operand(xp), _as_operand(fp)
    if _known_ndim(xp, "interp") != 1 or _known_ndim(fp, "interp") != 1:
        raise ValueError("interp: xp and fp must be 1-D sequences")
    n, m = _shape_of(xp)[0], _shape_of(fp)[0]
    if n is None:
        raise ValueError("interp: the number of sample points xp must be known")
    if m is not None and n != m:
        raise ValueError("interp: fp and xp are not of the same length.")
    if n == 0:
        raise ValueError("interp: array of sample points is empty")
    return apply(interp.op, (_as_operand(x), xp, fp), {"left": left, "right": right,
                                                       "period": period})


interp = defop("interp", lambda x, xp, fp, left, right, period: np.interp(x, xp, fp, left,
                                                                           right, period),
               _interp_vjp_x, _interp_vjp_xp, _interp_vjp_fp,
               shape=lambda shapes, **_: tuple(shapes[0]), function=interp, exports=TOP)


# ---- convolution and correlation (1-D) ------------------------------------------------------------------
def _conv_start(n, m, mode, kind):
    """Where ``mode``'s result starts inside the full result (NumPy's placement)."""
    if mode == "full":
        return 0
    if mode == "valid":
        return min(n, m) - 1
    if kind == "convolve":
        return (min(n, m) - 1) // 2
    return (m - 1) // 2 if m <= n else n // 2


def _full_gradient(g, n, m, mode, kind):
    start = _conv_start(n, m, mode, kind)
    length = n + m - 1
    size = _shape_of(g)[0]
    if start == 0 and size == length:
        return g
    return F.pad(g, ((start, length - size - start),))


def _conv_len(a):
    n = _shape_of(a)[0]
    if n is None:
        raise ValueError("convolve: the operands' lengths must be known")
    return n


def _convolve_vjp_a(g, ans, a, v, mode):
    n, m = _conv_len(a), _conv_len(v)
    return F.convolve(_full_gradient(g, n, m, mode, "convolve"), F.flip(v), "valid")


def _convolve_vjp_v(g, ans, a, v, mode):
    n, m = _conv_len(a), _conv_len(v)
    return F.convolve(_full_gradient(g, n, m, mode, "convolve"), F.flip(a), "valid")


def _conv_shape(kind):
    def rule(shapes, mode):
        a, v = (tuple(s) for s in shapes)
        if len(a) != 1 or len(v) != 1:
            raise ValueError(f"{kind}: object too deep for desired array (1-D inputs only)")
        n, m = a[0], v[0]
        if n is None or m is None:
            return (None,)
        if n == 0 or m == 0:
            raise ValueError(f"{kind}: inputs cannot be empty")
        return ({"full": n + m - 1, "same": max(n, m), "valid": max(n, m) - min(n, m) + 1}
                [mode],)
    return rule


def _mode(mode, op):
    modes = {0: "valid", 1: "same", 2: "full"}
    mode = modes.get(mode, mode) if isinstance(mode, int) else mode
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{op}: mode must be one of 'valid', 'same', or 'full' (got "
                         f"{mode!r})")
    return mode


def convolve(a, v, mode="full"):
    """NumPy's ``np.convolve`` of two 1-D sequences (its own values), differentiable in both
    (their gradients are convolutions too, so every order works)."""
    return apply(convolve.op, (_as_operand(a), _as_operand(v)), {"mode": _mode(mode,
                                                                                "convolve")})


convolve = defop("convolve", lambda a, v, mode: np.convolve(a, v, mode),
                 _convolve_vjp_a, _convolve_vjp_v, shape=_conv_shape("convolve"),
                 function=convolve, exports=TOP)


def _correlate_vjp_a(g, ans, a, v, mode):
    # correlate(a, v) is convolve(a, flip(v)) placed as np.correlate places it
    n, m = _conv_len(a), _conv_len(v)
    return F.convolve(_full_gradient(g, n, m, mode, "correlate"), v, "valid")


def _correlate_vjp_v(g, ans, a, v, mode):
    n, m = _conv_len(a), _conv_len(v)
    return F.flip(F.convolve(_full_gradient(g, n, m, mode, "correlate"), F.flip(a), "valid"))


def correlate(a, v, mode="valid"):
    """NumPy's ``np.correlate`` of two 1-D sequences (its own values; real values),
    differentiable in both."""
    return apply(correlate.op, (_as_operand(a), _as_operand(v)),
                 {"mode": _mode(mode, "correlate")})


correlate = defop("correlate", lambda a, v, mode: np.correlate(a, v, mode),
                  _correlate_vjp_a, _correlate_vjp_v, shape=_conv_shape("correlate"),
                  function=correlate, exports=TOP)


# ---- polynomials -------------------------------------------------------------------------------------
def _coefficients(p, op):
    p = _as_operand(p)
    if _known_ndim(p, op) == 0:
        p = F.reshape(p, (1,))
    if _shape_of(p)[0] is None:
        raise ValueError(f"{op}: the number of coefficients must be known")
    return p


def polyval(p, x):
    """NumPy's ``np.polyval`` (Horner's scheme, as NumPy runs it), differentiable in the
    coefficients ``p`` and in ``x``."""
    p = _as_operand(p)
    x = _as_operand(x)
    y = F.broadcast_like(np.zeros((), dtype=np.dtype(x.dtype)), x)
    if _known_ndim(p, "polyval") != 1 or _shape_of(p)[0] is None:
        raise ValueError("polyval: the coefficients must be a 1-D sequence of known length")
    for k in range(_shape_of(p)[0]):
        y = y * x + F.getitem(p, k)
    return y


polyval = defun(polyval, exports=TOP)


def _polyjoin(a1, a2, op, combine):
    a1, a2 = _coefficients(a1, op), _coefficients(a2, op)
    diff = _shape_of(a2)[0] - _shape_of(a1)[0]
    if diff > 0:
        a1 = F.concatenate((np.zeros(diff, np.dtype(a1.dtype)), a1))
    elif diff < 0:
        a2 = F.concatenate((np.zeros(-diff, np.dtype(a2.dtype)), a2))
    return combine(a1, a2)


def polyadd(a1, a2):
    """NumPy's ``np.polyadd``, differentiable."""
    return _polyjoin(a1, a2, "polyadd", F.add)


def polysub(a1, a2):
    """NumPy's ``np.polysub``, differentiable."""
    return _polyjoin(a1, a2, "polysub", F.subtract)


def polymul(a1, a2):
    """NumPy's ``np.polymul`` (a convolution), differentiable."""
    return convolve(_coefficients(a1, "polymul"), _coefficients(a2, "polymul"))


def polyder(p, m=1):
    """NumPy's ``np.polyder``: the ``m``-th derivative's coefficients, differentiable."""
    m = _shapes.as_int(m, "polyder", "m")
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    p = _coefficients(p, "polyder")
    for _ in range(m):
        n = _shape_of(p)[0] - 1
        p = F.getitem(p, slice(None, -1)) * np.arange(n, 0, -1)
    return p


def polyint(p, m=1, k=None):
    """NumPy's ``np.polyint``: the ``m``-th antiderivative's coefficients (integration
    constants ``k``), differentiable in ``p`` and ``k``."""
    m = _shapes.as_int(m, "polyint", "m")
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = np.zeros(m) if k is None else k
    k = _as_operand(k)
    if _known_ndim(k, "polyint") == 0:
        k = F.broadcast_to(k, (m,))
    if m and _shape_of(k)[0] is None:
        raise ValueError("polyint: the integration constants' number must be known")
    if m and _shape_of(k)[0] != m:
        raise ValueError("polyint: k must be a scalar or a rank-1 array of length 1 or >m.")
    p = _coefficients(p, "polyint")
    for i in range(m):
        n = _shape_of(p)[0]
        p = F.concatenate((p / np.arange(n, 0, -1), F.reshape(F.getitem(k, i), (1,))))
    return p


for _fn in (polyadd, polysub, polymul, polyder, polyint):
    defun(_fn, exports=TOP)
del _fn


def vander(x, N=None, increasing=False):
    """NumPy's ``np.vander`` (powers by repeated multiplication, as NumPy makes them),
    differentiable in ``x``."""
    x = _as_operand(x)
    if _known_ndim(x, "vander") != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = _shape_of(x)[0]
    if n is None:
        raise ValueError("vander: the length of x must be known")
    N = n if N is None else _shapes.as_int(N, "vander", "N")
    dt = np.promote_types(np.dtype(x.dtype), int)
    x = F.astype(x, dt)
    cols = [F.broadcast_like(np.ones((1,), dt), F.expand_dims(x, 1))] if N > 0 else []
    if N > 1:
        cols.append(cumprod(F.broadcast_to(F.expand_dims(x, 1), (n, N - 1)), axis=1))
    if not cols:
        return F.reshape(F.getitem(x, slice(0, 0)), (n, 0)) if n == 0 else \
            F.broadcast_to(F.sum(x) * 0, (n, 0))
    v = F.concatenate(cols, axis=1) if len(cols) > 1 else cols[0]
    return v if increasing else F.flip(v, 1)


vander = defun(vander, exports=TOP)
