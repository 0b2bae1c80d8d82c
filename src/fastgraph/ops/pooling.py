"""Pooling with PyTorch's semantics over ``(N, C, *spatial)`` values, 1 to 3 spatial axes.

Max pooling is two ops: ``max_pool_indices`` (the flat index of each window's first maximum
within its plane, int64, PyTorch's ``return_indices``) and ``take_pooled(x, idx)`` (the values
at those indices), so the indices are kept for the backward pass, which is
``scatter_pooled(g, idx)`` (each gradient added at its index); ``take_pooled`` and
``scatter_pooled`` are each other's VJPs, so higher derivatives follow.  Average pooling is
``avg_pool``, linear, with ``avg_pool_grad`` its adjoint (and the other way round); the adaptive
pools (``adaptive_avg_pool``, ``adaptive_max_pool_indices``) differ only in their windows.

The windows are per-axis tables computed here (the kernels in ``kernels/pool.pyx`` loop over
planes; they see arrays only).
"""
from __future__ import annotations

from math import prod

import numpy as np

from .._core import apply, defop, defun
from .._core import config as _config
from ..kernels import pool as _k

from .. import ops as F
from .convolution import _batched, _per_dim, _shape_of, _tuple

#: planes per thread below which pooling stays on one thread
PARALLEL_MIN_ELEMENTS = 1 << 15


def _pool_out(n, k, s, p, d, ceil_mode):
    """PyTorch's pooled length: floor (or ceil) of ``(n + 2p - d(k-1) - 1) / s`` + 1, the last
    window starting inside the input or its left padding."""
    eff = d * (k - 1) + 1
    num = n + 2 * p - eff
    if num < 0:
        return 0
    m = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (m - 1) * s >= n + p:
        m -= 1
    return m


def _nthreads(n_elements):
    return _config.get_num_threads() if n_elements >= PARALLEL_MIN_ELEMENTS else 1


def _planes(x, nd):
    """``x`` ``(N, C, *spatial)`` as a C-contiguous ``(P, D, H, W)`` view, and its spatial."""
    x = np.ascontiguousarray(x)
    sp = x.shape[2:]
    return x.reshape((-1,) + (1,) * (3 - nd) + sp), sp


def _float(name, x):
    x = np.asarray(x)
    if x.dtype.kind != "f" or x.dtype.itemsize < 4:
        raise TypeError(f"{name}: needs float32 or float64 values, got {x.dtype}")
    return x


# ---- windows ------------------------------------------------------------------------------------
def _i64(values):
    return np.ascontiguousarray(values, dtype=np.int64)


def _unit_table():
    z = _i64([0])
    return (z, _i64([1]), _i64([1]))


def _max_tables(spatial, kernel, stride, padding, dilation, ceil_mode):
    tabs = []
    for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation):
        m = _pool_out(n, k, s, p, d, ceil_mode)
        start = np.arange(m, dtype=np.int64) * s - p
        tabs.append((_i64(start), _i64(np.full(m, k)), _i64(np.zeros(m))))
    return tuple([_unit_table()] * (3 - len(tabs)) + tabs)


def _adaptive_bounds(n, m):
    o = np.arange(m, dtype=np.int64)
    lo = (o * n) // m
    hi = -((-(o + 1) * n) // m)        # ceil((o + 1) * n / m)
    return lo, hi


def _adaptive_max_tables(spatial, out):
    tabs = []
    for n, m in zip(spatial, out):
        lo, hi = _adaptive_bounds(n, m)
        tabs.append((_i64(lo), _i64(hi - lo), _i64(np.zeros(m))))
    return tuple([_unit_table()] * (3 - len(tabs)) + tabs)


def _avg_tables(spatial, kernel, stride, padding, ceil_mode, count_include_pad):
    tabs = []
    for n, k, s, p in zip(spatial, kernel, stride, padding):
        m = _pool_out(n, k, s, p, 1, ceil_mode)
        start = np.arange(m, dtype=np.int64) * s - p
        end = np.minimum(start + k, n + p)      # the window within the padded input
        count = end - start
        lo, hi = np.maximum(start, 0), np.minimum(end, n)
        tabs.append((_i64(lo), _i64(hi), _i64(count if count_include_pad else hi - lo)))
    return tuple([_unit_table()] * (3 - len(tabs)) + tabs)


def _adaptive_avg_tables(spatial, out):
    tabs = []
    for n, m in zip(spatial, out):
        lo, hi = _adaptive_bounds(n, m)
        tabs.append((_i64(lo), _i64(hi), _i64(hi - lo)))
    return tuple([_unit_table()] * (3 - len(tabs)) + tabs)


def _table_out(tabs, nd):
    return tuple(len(t[0]) for t in tabs[3 - nd:])


# ---- forwards -------------------------------------------------------------------------------------
def _max_indices(x, tabs, dilation, nd):
    x = _float("max_pool", x)
    n, c = x.shape[:2]
    out = _table_out(tabs, nd)
    idx = np.empty((n, c) + out, np.int64)
    if idx.size == 0:
        return idx
    if prod(x.shape[2:]) == 0:
        raise ValueError(f"max_pool: empty input {x.shape}")
    planes, _ = _planes(x, nd)
    _k.max_pool_indices(planes, idx.reshape((planes.shape[0],) + tuple(len(t[0]) for t in tabs)),
                        tabs, (1,) * (3 - nd) + tuple(dilation), _nthreads(x.size))
    return idx


def _max_pool_indices_forward(x, kernel, stride, padding, dilation, ceil_mode):
    x = np.asarray(x)
    if _pairs_of_pairs(x, kernel, stride, padding, dilation, ceil_mode):
        return _max2x2_indices(x)
    tabs = _max_tables(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
    return _max_indices(x, tabs, dilation, len(kernel))


def _pairs_of_pairs(x, kernel, stride, padding, dilation, ceil_mode):
    """Whether a max pool is 2x2 windows at stride 2 inside every plane (the common pool,
    with its own loop): no padding or dilation, and ``ceil_mode`` adds no partial window."""
    if tuple(kernel) != (2, 2) or tuple(stride) != (2, 2) or tuple(padding) != (0, 0) or \
            tuple(dilation) != (1, 1) or x.ndim != 4 or x.size == 0:
        return False
    h, w = x.shape[2:]
    return h >= 2 and w >= 2 and (not ceil_mode or (h % 2 == 0 and w % 2 == 0))


def _max2x2_indices(x):
    x = _float("max_pool", x)
    n, c, h, w = x.shape
    idx = np.empty((n, c, h // 2, w // 2), np.int64)
    planes = np.ascontiguousarray(x).reshape(n * c, h, w)
    _k.max_pool2x2_indices(planes, idx.reshape(n * c, h // 2, w // 2), _nthreads(x.size))
    return idx


def _adaptive_max_pool_indices_forward(x, output_size):
    x = np.asarray(x)
    tabs = _adaptive_max_tables(x.shape[2:], output_size)
    return _max_indices(x, tabs, (1,) * len(output_size), len(output_size))


def _take_pooled_forward(x, idx):
    x, idx = _float("max_pool", x), np.ascontiguousarray(idx, dtype=np.int64)
    n, c = x.shape[:2]
    out = np.empty(idx.shape, x.dtype)
    if out.size == 0:
        return out
    xs = np.ascontiguousarray(x).reshape(n * c, -1)
    _k.take_pooled(xs, idx.reshape(n * c, -1), out.reshape(n * c, -1), _nthreads(out.size))
    return out


def _scatter_pooled_forward(g, idx, spatial):
    g, idx = _float("max_pool", g), np.ascontiguousarray(idx, dtype=np.int64)
    n, c = idx.shape[:2]
    out = np.zeros((n, c) + tuple(spatial), g.dtype)
    if g.size == 0 or out.size == 0:
        return out
    g = np.ascontiguousarray(g)
    _k.scatter_pooled(g.reshape(n * c, -1), idx.reshape(n * c, -1), out.reshape(n * c, -1),
                      _nthreads(out.size))
    return out


def _avg(x, tabs, nd, divisor):
    x = _float("avg_pool", x)
    n, c = x.shape[:2]
    out = np.empty((n, c) + _table_out(tabs, nd), x.dtype)
    if out.size == 0:
        return out
    planes, _ = _planes(x, nd)
    _k.avg_pool(planes, out.reshape((planes.shape[0],) + tuple(len(t[0]) for t in tabs)), tabs,
                float(divisor or 0), _nthreads(x.size))
    return out


def _avg_grad(g, tabs, spatial, nd, divisor):
    g = _float("avg_pool", g)
    n, c = g.shape[:2]
    dx = np.zeros((n, c) + tuple(spatial), g.dtype)
    if dx.size == 0 or g.size == 0:
        return dx
    gp = np.ascontiguousarray(g).reshape((n * c,) + tuple(len(t[0]) for t in tabs))
    _k.avg_pool_backward(gp, dx.reshape((n * c,) + (1,) * (3 - nd) + tuple(spatial)), tabs,
                         float(divisor or 0), _nthreads(dx.size))
    return dx


def _avg_pool_forward(x, kernel, stride, padding, ceil_mode, count_include_pad,
                      divisor_override):
    x = np.asarray(x)
    tabs = _avg_tables(x.shape[2:], kernel, stride, padding, ceil_mode, count_include_pad)
    return _avg(x, tabs, len(kernel), divisor_override)


def _avg_pool_grad_forward(g, spatial, kernel, stride, padding, ceil_mode, count_include_pad,
                           divisor_override):
    tabs = _avg_tables(spatial, kernel, stride, padding, ceil_mode, count_include_pad)
    return _avg_grad(g, tabs, spatial, len(kernel), divisor_override)


def _adaptive_avg_forward(x, output_size):
    x = np.asarray(x)
    return _avg(x, _adaptive_avg_tables(x.shape[2:], output_size), len(output_size), None)


def _adaptive_avg_grad_forward(g, spatial, output_size):
    return _avg_grad(g, _adaptive_avg_tables(spatial, output_size), spatial, len(output_size),
                     None)


# ---- shape rules ------------------------------------------------------------------------------
def _check_rank(name, xs, nd):
    if len(xs) != nd + 2:
        raise ValueError(f"{name}: expected a {nd + 2}-D input (N, C, *spatial), got shape "
                         f"{tuple(xs)}")


def _pooled_shape(name, xs, kernel, stride, padding, dilation, ceil_mode):
    nd = len(kernel)
    _check_rank(name, xs, nd)
    out = []
    for n, k, s, p, d in zip(xs[2:], kernel, stride, padding, dilation):
        if n is None:
            out.append(None)
            continue
        m = _pool_out(n, k, s, p, d, ceil_mode)
        if m < 1:
            raise ValueError(f"{name}: the input {tuple(xs)} is too small for kernel {kernel} "
                             f"(padding {padding}, dilation {dilation}): the output would be "
                             f"empty")
        out.append(m)
    return tuple(xs[:2]) + tuple(out)


def _max_pool_indices_shape(shapes, kernel, stride, padding, dilation, ceil_mode):
    return _pooled_shape("max_pool", shapes[0], kernel, stride, padding, dilation, ceil_mode)


def _avg_pool_shape(shapes, kernel, stride, padding, ceil_mode, count_include_pad,
                    divisor_override):
    return _pooled_shape("avg_pool", shapes[0], kernel, stride, padding, (1,) * len(kernel),
                         ceil_mode)


def _avg_pool_grad_shape(shapes, spatial, **_):
    return tuple(shapes[0][:2]) + tuple(spatial)


def _adaptive_shape(shapes, output_size):
    xs = shapes[0]
    _check_rank("adaptive pool", xs, len(output_size))
    return tuple(xs[:2]) + tuple(output_size)


def _take_pooled_shape(shapes):
    x, idx = shapes
    if len(x) != len(idx):
        raise ValueError(f"take_pooled: the indices {tuple(idx)} do not fit the input "
                         f"{tuple(x)}")
    return tuple(idx)


def _scatter_pooled_shape(shapes, spatial):
    return tuple(shapes[1][:2]) + tuple(spatial)


def _spatial(v, name):
    sp = _shape_of(v)[2:]
    if any(d is None for d in sp):
        raise ValueError(f"{name}: the input must have known spatial dimensions, got "
                         f"{tuple(_shape_of(v))}")
    return tuple(sp)


# ---- the ops ------------------------------------------------------------------------------------
def max_pool_indices(x, kernel, stride, padding, dilation, ceil_mode):
    """The flat index (within its ``(n, c)`` plane) of each window's first maximum, int64."""
    return apply(max_pool_indices.op, (x,), {"kernel": kernel, "stride": stride,
                                             "padding": padding, "dilation": dilation,
                                             "ceil_mode": ceil_mode})


def adaptive_max_pool_indices(x, output_size):
    """The flat index of each adaptive window's first maximum, int64."""
    return apply(adaptive_max_pool_indices.op, (x,), {"output_size": output_size})


def take_pooled(x, idx):
    """``x``'s values at the flat plane indices ``idx`` (the values of a max pool)."""
    return apply(take_pooled.op, (x, idx), None)


def scatter_pooled(g, idx, spatial):
    """Zeros of spatial shape ``spatial`` with ``g`` added at the flat plane indices ``idx``
    (the VJP of :func:`take_pooled`)."""
    return apply(scatter_pooled.op, (g, idx), {"spatial": tuple(spatial)})


def avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """Window means (PyTorch's ``avg_pool`` with canonical attributes)."""
    return apply(avg_pool.op, (x,), {"kernel": kernel, "stride": stride, "padding": padding,
                                     "ceil_mode": ceil_mode,
                                     "count_include_pad": count_include_pad,
                                     "divisor_override": divisor_override})


def avg_pool_grad(g, spatial, kernel, stride, padding, ceil_mode, count_include_pad,
                  divisor_override):
    """The adjoint of :func:`avg_pool` for an input of spatial shape ``spatial``."""
    return apply(avg_pool_grad.op, (g,), {"spatial": tuple(spatial), "kernel": kernel,
                                          "stride": stride, "padding": padding,
                                          "ceil_mode": ceil_mode,
                                          "count_include_pad": count_include_pad,
                                          "divisor_override": divisor_override})


def adaptive_avg_pool(x, output_size):
    """Adaptive window means to spatial shape ``output_size``."""
    return apply(adaptive_avg_pool.op, (x,), {"output_size": output_size})


def adaptive_avg_pool_grad(g, spatial, output_size):
    """The adjoint of :func:`adaptive_avg_pool` for an input of spatial shape ``spatial``."""
    return apply(adaptive_avg_pool_grad.op, (g,), {"spatial": tuple(spatial),
                                                   "output_size": output_size})


max_pool_indices = defop("max_pool_indices", _max_pool_indices_forward, None,
                         function=max_pool_indices, shape=_max_pool_indices_shape,
                         differentiable=False)
adaptive_max_pool_indices = defop("adaptive_max_pool_indices",
                                  _adaptive_max_pool_indices_forward, None,
                                  function=adaptive_max_pool_indices, shape=_adaptive_shape,
                                  differentiable=False)
take_pooled = defop("take_pooled", _take_pooled_forward,
                    lambda g, ans, x, idx: scatter_pooled(g, idx, _spatial(x, "max_pool")),
                    None, function=take_pooled, shape=_take_pooled_shape)
scatter_pooled = defop("scatter_pooled", _scatter_pooled_forward,
                       lambda G, ans, g, idx, spatial: take_pooled(G, idx), None,
                       function=scatter_pooled, shape=_scatter_pooled_shape)
avg_pool = defop("avg_pool", _avg_pool_forward,
                 lambda g, ans, x, **a: avg_pool_grad(g, _spatial(x, "avg_pool"), **a),
                 function=avg_pool, shape=_avg_pool_shape)
avg_pool_grad = defop("avg_pool_grad", _avg_pool_grad_forward,
                      lambda G, ans, g, spatial, **a: avg_pool(G, **a),
                      function=avg_pool_grad, shape=_avg_pool_grad_shape)
adaptive_avg_pool = defop("adaptive_avg_pool", _adaptive_avg_forward,
                          lambda g, ans, x, output_size: adaptive_avg_pool_grad(
                              g, _spatial(x, "adaptive_avg_pool"), output_size),
                          function=adaptive_avg_pool, shape=_adaptive_shape)
adaptive_avg_pool_grad = defop("adaptive_avg_pool_grad", _adaptive_avg_grad_forward,
                               lambda G, ans, g, spatial, output_size: adaptive_avg_pool(
                                   G, output_size),
                               function=adaptive_avg_pool_grad, shape=_avg_pool_grad_shape)


# ---- the public functions ---------------------------------------------------------------------
def _unbatch(y, unbatched):
    return F.squeeze(y, 0) if unbatched else y


def _pool_args(nd, name, kernel_size, stride, padding, dilation=1):
    kernel = _tuple(kernel_size, nd, "kernel_size", name)
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and
                                          not len(stride)) else \
        _tuple(stride, nd, "stride", name)
    padding = _tuple(padding, nd, "padding", name)
    dilation = _tuple(dilation, nd, "dilation", name)
    if min(kernel) < 1 or min(stride) < 1 or min(dilation) < 1:
        raise ValueError(f"{name}: kernel_size, stride and dilation must be positive, got "
                         f"{kernel}, {stride}, {dilation}")
    for p, k, d in zip(padding, kernel, dilation):
        if p < 0 or p > (d * (k - 1) + 1) // 2:
            raise ValueError(f"{name}: padding {padding} must be non-negative and at most half "
                             f"of the effective kernel size {kernel}")
    return kernel, stride, padding, dilation


def _max_poolnd(nd, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    name = f"max_pool{nd}d"
    kernel, stride, padding, dilation = _pool_args(nd, name, kernel_size, stride, padding,
                                                   dilation)
    x, unbatched = _batched(x, nd, name)
    _pooled_shape(name, _shape_of(x), kernel, stride, padding, dilation, bool(ceil_mode))
    idx = max_pool_indices(x, kernel, stride, padding, dilation, bool(ceil_mode))
    y = _unbatch(take_pooled(x, idx), unbatched)
    return (y, _unbatch(idx, unbatched)) if return_indices else y


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """1-d max pooling, PyTorch's ``torch.nn.functional.max_pool1d`` (``stride`` defaults to
    the kernel size; ``return_indices`` also gives the flat indices of the maxima).

        >>> max_pool1d(fg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)  # doctest: +SKIP
    """
    return _max_poolnd(1, input, kernel_size, stride, padding, dilation, ceil_mode,
                       return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """2-d max pooling of ``(N, C, H, W)``, PyTorch's ``torch.nn.functional.max_pool2d``:
    implicit ``-inf`` padding, ``dilation``, ``ceil_mode``, ``return_indices`` (flat indices
    into each ``H * W`` plane).  The gradient goes to each window's first maximum.

        >>> max_pool2d(fg.randn(1, 1, 4, 4), 2).shape  # doctest: +SKIP
        (1, 1, 2, 2)
    """
    return _max_poolnd(2, input, kernel_size, stride, padding, dilation, ceil_mode,
                       return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """3-d max pooling, PyTorch's ``torch.nn.functional.max_pool3d``.

        >>> max_pool3d(fg.randn(1, 1, 4, 4, 4), 2).shape  # doctest: +SKIP
        (1, 1, 2, 2, 2)
    """
    return _max_poolnd(3, input, kernel_size, stride, padding, dilation, ceil_mode,
                       return_indices)


def _avg_poolnd(nd, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
    name = f"avg_pool{nd}d"
    kernel, stride, padding, _ = _pool_args(nd, name, kernel_size, stride, padding)
    if divisor_override is not None:
        if isinstance(divisor_override, (bool, np.bool_)) or \
                not isinstance(divisor_override, (int, np.integer)) or divisor_override == 0:
            raise ValueError(f"{name}: divisor_override must be a nonzero integer, got "
                             f"{divisor_override!r}")
        divisor_override = int(divisor_override)
    x, unbatched = _batched(x, nd, name)
    _pooled_shape(name, _shape_of(x), kernel, stride, padding, (1,) * nd, bool(ceil_mode))
    y = avg_pool(x, kernel, stride, padding, bool(ceil_mode), bool(count_include_pad),
                 divisor_override)
    return _unbatch(y, unbatched)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True):
    """1-d average pooling, PyTorch's ``torch.nn.functional.avg_pool1d``.

        >>> avg_pool1d(fg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)  # doctest: +SKIP
    """
    return _avg_poolnd(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    """2-d average pooling, PyTorch's ``torch.nn.functional.avg_pool2d``: zero padding counted
    in the divisor unless ``count_include_pad=False``; ``divisor_override`` replaces it.

        >>> avg_pool2d(fg.ones((1, 1, 4, 4)), 2, padding=1).shape  # doctest: +SKIP
        (1, 1, 3, 3)
    """
    return _avg_poolnd(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    """3-d average pooling, PyTorch's ``torch.nn.functional.avg_pool3d``.

        >>> avg_pool3d(fg.ones((1, 1, 4, 4, 4)), 2).shape  # doctest: +SKIP
        (1, 1, 2, 2, 2)
    """
    return _avg_poolnd(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


def _output_size(nd, output_size, x, name):
    sp = _shape_of(x)[2:]
    items = _per_dim(output_size, nd, "output_size", name)
    out = []
    for v, n in zip(items, sp):
        if v is None:               # PyTorch: None keeps the input's size
            if n is None:
                raise ValueError(f"{name}: output_size None needs a known input size")
            v = n
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name}: output_size must be positive integers, got "
                             f"{output_size!r}")
        out.append(int(v))
    return tuple(out)


def _adaptive(nd, x, output_size, name, is_max, return_indices=False):
    x, unbatched = _batched(x, nd, name)
    size = _output_size(nd, output_size, x, name)
    for n in _shape_of(x)[2:]:
        if n is not None and n < 1:
            raise ValueError(f"{name}: empty input {tuple(_shape_of(x))}")
    if not is_max:
        return _unbatch(adaptive_avg_pool(x, size), unbatched)
    idx = adaptive_max_pool_indices(x, size)
    y = _unbatch(take_pooled(x, idx), unbatched)
    return (y, _unbatch(idx, unbatched)) if return_indices else y


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    """1-d adaptive average pooling, PyTorch's ``torch.nn.functional.adaptive_avg_pool1d``.

        >>> adaptive_avg_pool1d(fg.ones((1, 1, 5)), 2).shape  # doctest: +SKIP
        (1, 1, 2)
    """
    return _adaptive(1, input, output_size, "adaptive_avg_pool1d", False)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """2-d adaptive average pooling, PyTorch's ``torch.nn.functional.adaptive_avg_pool2d``:
    window ``i`` along an axis of length ``n`` is ``[floor(i n / m), ceil((i + 1) n / m))``.

        >>> adaptive_avg_pool2d(fg.ones((1, 3, 7, 5)), (2, 1)).shape  # doctest: +SKIP
        (1, 3, 2, 1)
    """
    return _adaptive(2, input, output_size, "adaptive_avg_pool2d", False)


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    """3-d adaptive average pooling, PyTorch's ``torch.nn.functional.adaptive_avg_pool3d``.

        >>> adaptive_avg_pool3d(fg.ones((1, 1, 4, 4, 4)), 1).shape  # doctest: +SKIP
        (1, 1, 1, 1, 1)
    """
    return _adaptive(3, input, output_size, "adaptive_avg_pool3d", False)


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    """1-d adaptive max pooling, PyTorch's ``torch.nn.functional.adaptive_max_pool1d``.

        >>> adaptive_max_pool1d(fg.ones((1, 1, 5)), 2).shape  # doctest: +SKIP
        (1, 1, 2)
    """
    return _adaptive(1, input, output_size, "adaptive_max_pool1d", True, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """2-d adaptive max pooling, PyTorch's ``torch.nn.functional.adaptive_max_pool2d``.

        >>> adaptive_max_pool2d(fg.randn(1, 3, 7, 5), 2).shape  # doctest: +SKIP
        (1, 3, 2, 2)
    """
    return _adaptive(2, input, output_size, "adaptive_max_pool2d", True, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    """3-d adaptive max pooling, PyTorch's ``torch.nn.functional.adaptive_max_pool3d``.

        >>> adaptive_max_pool3d(fg.randn(1, 1, 4, 4, 4), 2).shape  # doctest: +SKIP
        (1, 1, 2, 2, 2)
    """
    return _adaptive(3, input, output_size, "adaptive_max_pool3d", True, return_indices)


for _f in (max_pool1d, max_pool2d, max_pool3d, avg_pool1d, avg_pool2d, avg_pool3d,
           adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d,
           adaptive_max_pool2d, adaptive_max_pool3d):
    defun(_f, exports=("nn_ops",))
