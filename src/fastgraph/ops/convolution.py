"""Convolutions with PyTorch's semantics: NCHW (``(N, C, *spatial)``), weights ``(out, in /
groups, *kernel)``, cross-correlation, 1 to 3 spatial dimensions.

Four ops, closed under differentiation (so every order of derivative is one of them):

* ``conv(x, w)``: the convolution; its VJPs are the two below;
* ``conv_transpose(u, w)``: the adjoint of ``conv`` in ``x`` (its input gradient, and PyTorch's
  ``conv_transpose``); VJPs ``conv(G, w)`` and ``conv_weight_grad(G, u)``;
* ``conv_weight_grad(x, g)``: the adjoint of ``conv`` in ``w`` (the correlation of ``x`` with
  ``g``); VJPs ``conv_transpose(g, G)`` and ``conv(x, G)``;
* ``conv_bias(x, w, b, activation)``: ``activation(conv(x, w) + b)`` in one pass (the bias added
  to each output tile while it is in cache; the values of the separate steps, bit for bit): what
  ``conv2d(x, w, bias)`` records, and what the static ``fuse`` pass makes of ``relu(conv(x, w)
  + b)`` (``conv``'s ``epilogue`` field; ``relu``'s ``activation``).

The compiled kernels (``kernels/conv.pyx``: im2col tiles and one NumPy-BLAS ``gemm`` per tile,
OpenMP over tiles) see arrays only; this module checks the arguments, makes 1-d and 2-d
problems 3-d views, and chooses the tiling: each ``gemm`` small enough for OpenBLAS to compute
on the calling thread when the tiles run on several threads, and the tasks fixed by the shapes
alone, so that results never depend on the thread count.  Without NumPy's own OpenBLAS (NumPy
built on another BLAS) the same values come from NumPy calls (:func:`conv_numpy` and its
adjoints: one ``einsum`` per kernel offset).
"""
from __future__ import annotations

import contextlib
from math import prod

import numpy as np

from .. import _numpy_blas
from .._core import apply, defop, defun
from .._core import config as _config
from ..kernels import conv as _k

from .. import ops as F

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "conv_numpy", "conv_transpose_numpy", "conv_weight_grad_numpy"]

#: OpenBLAS (scipy-openblas 0.3.31) computes a product of up to this many multiply-adds
#: (``m * n * k``) on the calling thread; tiles run on several threads only when each of their
#: products is that small
SINGLE_THREAD_MNK = 1 << 19
#: the weight gradient sums the samples in at most this many partial sums (run side by side) ...
WEIGHT_GRAD_CHUNKS = 16
#: ... holding at most this many elements together
WEIGHT_GRAD_PARTIALS = 1 << 22
#: whole samples are folded side by side into one product while their columns and outputs
#: together hold at most this many bytes (a core's cache) ...
FOLD_BYTES = 1 << 19
#: ... and at most this many samples
FOLD_MAX = 16
#: use the compiled kernels when NumPy's BLAS is there (a switch for tests)
USE_KERNELS = True


# ---- argument checks -----------------------------------------------------------------------------
def _per_dim(value, nd: int, what: str, name: str) -> tuple:
    """One value per spatial dimension: a scalar repeated, a 1-sequence repeated, or ``nd``
    values, as PyTorch's functional ops take ``kernel_size``, ``stride`` and the like."""
    if isinstance(value, (list, tuple)):
        items = tuple(value)
        if len(items) == 1 and nd > 1:
            items = items * nd
    else:
        items = (value,) * nd
    if len(items) != nd:
        raise ValueError(f"{name}: {what} must be an int or {nd} ints, got {value!r}")
    return items


def _tuple(value, nd: int, what: str, name: str) -> tuple:
    """An int or a sequence of ``nd`` ints as a tuple of ``nd`` Python ints."""
    out = []
    for v in _per_dim(value, nd, what, name):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}: {what} must be integers, got {value!r}")
        out.append(int(v))
    return tuple(out)


def _shape_of(v) -> tuple:
    return tuple(v.shape) if hasattr(v, "shape") else np.shape(v)


def _known(dims, name: str, what: str) -> tuple:
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"{name}: the {what} must have known spatial dimensions, got {dims}")
    return tuple(dims)


def _out_size(n, lo, hi, k, s, d):
    """Output length of a convolution along one axis (None for an unknown input length)."""
    if n is None:
        return None
    return (n + lo + hi - d * (k - 1) - 1) // s + 1


def _check_conv_shapes(name, xs, ws, stride, padding, dilation, groups):
    """The output shape of ``conv`` on shapes ``xs`` and ``ws``; ``ValueError`` naming ``name``
    and the shapes where they do not fit."""
    nd = len(stride)
    if xs is None or ws is None:
        return None
    if len(xs) != nd + 2 or len(ws) != nd + 2:
        raise ValueError(f"{name}: expected a {nd + 2}-D input (N, C, *spatial) and weight "
                         f"(out, in / groups, *kernel), got shapes {tuple(xs)} and {tuple(ws)}")
    c, o, cg = xs[1], ws[0], ws[1]
    if o is not None and o % groups:
        raise ValueError(f"{name}: the weight's {o} output channels are not divisible by "
                         f"groups={groups}")
    if c is not None and cg is not None and c != cg * groups:
        raise ValueError(f"{name}: the input has {c} channels but the weight {tuple(ws)} "
                         f"expects {cg * groups} (in / groups = {cg}, groups={groups})")
    out = []
    for i in range(nd):
        k = ws[2 + i]
        if k is None:
            raise ValueError(f"{name}: the kernel shape must be known, got {tuple(ws)}")
        (lo, hi), n = padding[i], xs[2 + i]
        m = _out_size(n, lo, hi, k, stride[i], dilation[i])
        if m is not None and m < 1:
            raise ValueError(f"{name}: the padded input {tuple(xs)} (padding {padding}) is "
                             f"smaller than the dilated kernel {tuple(ws)} (dilation "
                             f"{dilation})")
        out.append(m)
    return (xs[0], o) + tuple(out)


def _float_dtype(name, *arrays):
    dt = np.result_type(*arrays)
    if dt.kind != "f" or dt.itemsize < 4:
        kinds = ", ".join(str(a.dtype) for a in arrays)
        raise TypeError(f"{name}: needs float32 or float64 values, got {kinds}")
    return dt if dt.itemsize <= 8 else np.dtype(np.float64)


# ---- the compiled path -----------------------------------------------------------------------------
def _kernels_ready() -> bool:
    return USE_KERNELS and _numpy_blas.load() and _k.available()


def _as5(a, dt):
    """A C-contiguous ``dt`` array as a 5-D view with unit spatial dimensions in front."""
    a = np.ascontiguousarray(a, dtype=dt)
    return a.reshape(a.shape[:2] + (1,) * (5 - a.ndim) + a.shape[2:])


def _three(t, fill):
    return (fill,) * (3 - len(t)) + tuple(t)


def tiling(og: int, kc: int, rows: int, cols: int) -> tuple[int, bool]:
    """``(tile_rows, threaded)``: the output rows (of ``cols`` positions) per ``gemm`` of ``og``
    by ``kc`` weights, and whether the tiles may run on several threads (each product at most
    :data:`SINGLE_THREAD_MNK`); otherwise one product per sample, on BLAS's own threads.
    Depends on the shapes only.

        >>> tiling(16, 200, 10, 10)
        (10, True)
    """
    per_row = og * kc * cols
    if per_row * rows <= SINGLE_THREAD_MNK:
        return rows, True
    if per_row <= SINGLE_THREAD_MNK:
        fit = SINGLE_THREAD_MNK // per_row
        ntiles = -(-rows // fit)
        return -(-rows // ntiles), True
    return rows, False


def folding(n: int, og: int, kc: int, positions: int, itemsize: int) -> int:
    """Samples whose columns sit side by side in one product (of ``og`` by ``kc`` weights and
    ``positions`` output positions a sample), when a tile is a whole sample of a threaded
    tiling: fewer, larger products than one a sample, their operands within
    :data:`FOLD_BYTES`.  Such products may pass :data:`SINGLE_THREAD_MNK`: the kernels run
    them with NumPy's BLAS on one thread (:func:`fastgraph._numpy_blas.one_thread`), each on
    its task's thread.  Depends on the shapes only.

        >>> folding(64, 16, 200, 100, 4)
        6
    """
    per_sample = (kc + og) * positions * itemsize
    return max(1, min(n, FOLD_MAX, FOLD_BYTES // max(per_sample, 1)))


def _weight_grad_chunks(n: int, wsize: int, threaded: bool, fold: int = 1) -> int:
    """Partial sums of the weight gradient: each a whole number of folds of samples."""
    if not threaded:
        return 1
    chunks = max(1, min(n, WEIGHT_GRAD_CHUNKS, WEIGHT_GRAD_PARTIALS // max(wsize, 1)))
    per = -(-n // chunks)
    per = -(-per // fold) * fold
    return -(-n // per)


def _geometry5(stride, padding, dilation):
    return (_three(stride, 1), _three(tuple(lo for lo, _ in padding), 0), _three(dilation, 1))


def _run_conv(x, w, out_spatial, stride, padding, dilation, groups, bias=None, act=None):
    dt = _float_dtype("conv", *((x, w) if bias is None else (x, w, bias)))
    n, o = x.shape[0], w.shape[0]
    y = np.empty((n, o) + tuple(out_spatial), dt)
    if y.size == 0:
        return y
    if x.shape[1] == 0:
        y[...] = 0 if bias is None else np.asarray(bias, dt).reshape((o,) + (1,) * len(stride))
        if act is not None:
            y = _apply_activation(y, act)
        return y
    if not _kernels_ready():
        y = conv_numpy(x.astype(dt, copy=False), w.astype(dt, copy=False), stride, padding,
                       dilation, groups)
        if bias is not None:
            y += np.asarray(bias, dt).reshape((o,) + (1,) * len(stride))
        return _apply_activation(y, act) if act is not None else y
    s5, p5, d5 = _geometry5(stride, padding, dilation)
    og, kc = o // groups, w.shape[1] * prod(w.shape[2:])
    rows, threaded, fold = _policy(n, og, kc, out_spatial, dt)
    b = None if bias is None else np.ascontiguousarray(np.asarray(bias, dt).reshape(-1))
    with _blas_threads(threaded):
        _k.conv_forward(_as5(x, dt), _as5(w, dt), y.reshape(_five(y.shape)), s5, p5, d5, groups,
                        rows, _config.get_num_threads() if threaded else 1, b,
                        _k.ACT_NONE if act is None else _k.ACTIVATIONS[act], fold)
    return y


def _policy(n, og, kc, out_spatial, dt):
    """``(tile_rows, threaded, fold)`` of a convolution's kernels."""
    rows = prod(out_spatial[:-1])
    tile_rows, threaded = tiling(og, kc, rows, out_spatial[-1])
    fold = folding(n, og, kc, prod(out_spatial), dt.itemsize) \
        if threaded and tile_rows == rows else 1
    return tile_rows, threaded, fold


def _blas_threads(threaded):
    """Threaded tilings compute every product on the task's own thread."""
    return _numpy_blas.one_thread() if threaded else contextlib.nullcontext()


def _five(shape):
    return tuple(shape[:2]) + (1,) * (5 - len(shape)) + tuple(shape[2:])


def _apply_activation(y, act):
    if act == "relu":
        return np.maximum(y, 0, out=y)
    raise ValueError(f"conv: unknown activation {act!r}")


def _run_input_grad(u, w, spatial, stride, padding, dilation, groups):
    dt = _float_dtype("conv_transpose", u, w)
    n, c = u.shape[0], w.shape[1] * groups
    if n * c * prod(spatial) == 0 or u.shape[1] == 0 or u.size == 0:
        return np.zeros((n, c) + tuple(spatial), dt)
    dx = np.empty((n, c) + tuple(spatial), dt)     # the kernels write every position
    if not _kernels_ready():
        return conv_transpose_numpy(u.astype(dt, copy=False), w.astype(dt, copy=False), spatial,
                                    stride, padding, dilation, groups)
    s5, p5, d5 = _geometry5(stride, padding, dilation)
    og, kc = w.shape[0] // groups, w.shape[1] * prod(w.shape[2:])
    rows, threaded, fold = _policy(n, og, kc, u.shape[2:], dt)
    with _blas_threads(threaded):
        _k.conv_input_grad(_as5(u, dt), _as5(w, dt), dx.reshape(_five(dx.shape)), s5, p5, d5,
                           groups, rows, _config.get_num_threads() if threaded else 1, fold)
    return dx


def _run_weight_grad(x, g, kernel, stride, padding, dilation, groups):
    dt = _float_dtype("conv_weight_grad", x, g)
    o, cg = g.shape[1], x.shape[1] // groups
    dw = np.zeros((o, cg) + tuple(kernel), dt)
    if dw.size == 0 or g.size == 0:
        return dw
    if not _kernels_ready():
        return conv_weight_grad_numpy(x.astype(dt, copy=False), g.astype(dt, copy=False),
                                      kernel, stride, padding, dilation, groups)
    s5, p5, d5 = _geometry5(stride, padding, dilation)
    og, kc = o // groups, cg * prod(kernel)
    rows, threaded, fold = _policy(x.shape[0], og, kc, g.shape[2:], dt)
    chunks = _weight_grad_chunks(x.shape[0], dw.size, threaded, fold)
    with _blas_threads(threaded):
        _k.conv_weight_grad(_as5(x, dt), _as5(g, dt), dw.reshape(_five(dw.shape)), s5, p5, d5,
                            groups, rows, chunks, _config.get_num_threads() if threaded else 1,
                            fold)
    return dw


# ---- the same values with NumPy calls ----------------------------------------------------------------
def _window(k, stride, dilation, out):
    """The slices of a padded input that kernel offset ``k`` reads, one per output position."""
    return tuple(slice(ki * di, ki * di + si * (oi - 1) + 1, si)
                 for ki, si, di, oi in zip(k, stride, dilation, out))


def conv_numpy(x, w, stride, padding, dilation, groups):
    """``conv(x, w)`` with NumPy calls: one ``einsum`` per kernel offset (what the compiled
    kernels compute, up to the order of the sums).

        >>> conv_numpy(np.ones((1, 1, 3)), np.ones((1, 1, 2)), (1,), ((0, 0),), (1,), 1)
        array([[[2., 2.]]])
    """
    nd = len(stride)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in padding])
    out = [_out_size(x.shape[2 + i], *padding[i], kernel[i], stride[i], dilation[i])
           for i in range(nd)]
    xg = xp.reshape((n, groups, cg) + xp.shape[2:])
    wg = w.reshape((groups, o // groups, cg) + tuple(kernel))
    y = np.zeros((n, groups, o // groups) + tuple(out), np.result_type(x, w))
    for k in np.ndindex(*kernel):
        win = xg[(Ellipsis,) + _window(k, stride, dilation, out)]
        y += np.einsum("ngc...,goc->ngo...", win, wg[(slice(None),) * 3 + k])
    return y.reshape((n, o) + tuple(out))


def conv_transpose_numpy(u, w, spatial, stride, padding, dilation, groups):
    """The adjoint of :func:`conv_numpy` in ``x`` (``spatial``: ``x``'s spatial shape)."""
    n = u.shape[0]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    out = u.shape[2:]
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, padding))
    dxp = np.zeros((n, groups, cg) + padded, np.result_type(u, w))
    ug = u.reshape((n, groups, o // groups) + tuple(out))
    wg = w.reshape((groups, o // groups, cg) + tuple(kernel))
    for k in np.ndindex(*kernel):
        dxp[(Ellipsis,) + _window(k, stride, dilation, out)] += np.einsum(
            "ngo...,goc->ngc...", ug, wg[(slice(None),) * 3 + k])
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, padding))
    return np.ascontiguousarray(dxp[(Ellipsis,) + crop]).reshape((n, groups * cg) +
                                                                 tuple(spatial))


def conv_weight_grad_numpy(x, g, kernel, stride, padding, dilation, groups):
    """The adjoint of :func:`conv_numpy` in ``w`` (``kernel``: ``w``'s spatial shape)."""
    n, c = x.shape[:2]
    o = g.shape[1]
    cg = c // groups
    out = g.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in padding])
    xg = xp.reshape((n, groups, cg) + xp.shape[2:])
    gg = g.reshape((n, groups, o // groups) + tuple(out))
    dw = np.zeros((groups, o // groups, cg) + tuple(kernel), np.result_type(x, g))
    gl = gg.reshape(gg.shape[:3] + (-1,))
    for k in np.ndindex(*kernel):
        win = xg[(Ellipsis,) + _window(k, stride, dilation, out)]
        dw[(slice(None),) * 3 + k] = np.einsum("ngol,ngcl->goc", gl,
                                               win.reshape(win.shape[:3] + (-1,)))
    return dw.reshape((o, cg) + tuple(kernel))


# ---- the ops ------------------------------------------------------------------------------------
def _conv_forward(x, w, stride, padding, dilation, groups):
    x, w = np.asarray(x), np.asarray(w)
    out = _check_conv_shapes("conv", x.shape, w.shape, stride, padding, dilation, groups)
    return _run_conv(x, w, out[2:], stride, padding, dilation, groups)


def _conv_bias_forward(x, w, b, stride, padding, dilation, groups, activation):
    x, w, b = np.asarray(x), np.asarray(w), np.asarray(b)
    out = _check_conv_shapes("conv", x.shape, w.shape, stride, padding, dilation, groups)
    if b.shape != (w.shape[0],):
        raise ValueError(f"conv: the bias must have shape ({w.shape[0]},), got {b.shape}")
    return _run_conv(x, w, out[2:], stride, padding, dilation, groups, b, activation)


def _conv_transpose_forward(u, w, spatial, stride, padding, dilation, groups):
    u, w = np.asarray(u), np.asarray(w)
    _check_transpose_shapes("conv_transpose", u.shape, w.shape, spatial, stride, padding,
                            dilation, groups)
    return _run_input_grad(u, w, spatial, stride, padding, dilation, groups)


def _conv_weight_grad_forward(x, g, kernel, stride, padding, dilation, groups):
    x, g = np.asarray(x), np.asarray(g)
    _check_weight_grad_shapes("conv_weight_grad", x.shape, g.shape, kernel, stride, padding,
                              dilation, groups)
    return _run_weight_grad(x, g, kernel, stride, padding, dilation, groups)


def _check_ranks(name, a, b, nd, what):
    """Whether both shapes are known; ValueError unless both have ``nd + 2`` dimensions."""
    if a is None or b is None:
        return False
    if len(a) != nd + 2 or len(b) != nd + 2:
        raise ValueError(f"{name}: expected {nd + 2}-D input and {what}, got shapes "
                         f"{tuple(a)} and {tuple(b)}")
    return True


def _check_transpose_shapes(name, us, ws, spatial, stride, padding, dilation, groups):
    if not _check_ranks(name, us, ws, len(stride), "weight"):
        return None
    if ws[1] is None:
        raise ValueError(f"{name}: the weight's channels must be known, got {tuple(ws)}")
    xs = (us[0], ws[1] * groups) + tuple(spatial)
    expect = _check_conv_shapes(name, xs, ws, stride, padding, dilation, groups)
    if us[1] is not None and ws[0] is not None and us[1] != ws[0]:
        raise ValueError(f"{name}: the input has {us[1]} channels but the weight {tuple(ws)} "
                         f"has {ws[0]}")
    for a, b in zip(us[2:], expect[2:]):
        if a is not None and a != b:
            raise ValueError(f"{name}: an input of spatial shape {tuple(us[2:])} does not come "
                             f"from an output of spatial shape {tuple(spatial)} (it gives "
                             f"{tuple(expect[2:])})")
    return xs


def _check_weight_grad_shapes(name, xs, gs, kernel, stride, padding, dilation, groups):
    if not _check_ranks(name, xs, gs, len(stride), "gradient"):
        return None
    if xs[1] is None or gs[1] is None:
        raise ValueError(f"{name}: the channels must be known, got {tuple(xs)} and {tuple(gs)}")
    ws = (gs[1], xs[1] // groups) + tuple(kernel)
    expect = _check_conv_shapes(name, xs, ws, stride, padding, dilation, groups)
    for a, b in zip(gs[2:], expect[2:]):
        if a is not None and b is not None and a != b:
            raise ValueError(f"{name}: a gradient of spatial shape {tuple(gs[2:])} does not "
                             f"fit the input {tuple(xs)} (the output is {tuple(expect[2:])})")
    return ws


def _spatial(v, name, what):
    return _known(_shape_of(v)[2:], name, what)


def _geom(attrs):
    return {k: attrs[k] for k in ("stride", "padding", "dilation", "groups")}


def _conv_vjp_x(g, ans, x, w, **geom):
    return conv_transpose(g, w, _spatial(x, "conv", "input"), **geom)


def _conv_vjp_w(g, ans, x, w, **geom):
    return conv_weight_grad(x, g, _spatial(w, "conv", "weight"), **geom)


def _activation_grad(g, ans, activation):
    """The output gradient before the epilogue's activation (read from its result: ``relu``'s
    positives are its input's)."""
    if activation is None:
        return g
    if activation == "relu":
        return g * F.greater(ans, 0)
    raise ValueError(f"conv: unknown activation {activation!r}")


def _conv_bias_vjp_x(g, ans, x, w, b, activation, **geom):
    return conv_transpose(_activation_grad(g, ans, activation), w,
                          _spatial(x, "conv", "input"), **geom)


def _conv_bias_vjp_w(g, ans, x, w, b, activation, **geom):
    return conv_weight_grad(x, _activation_grad(g, ans, activation),
                            _spatial(w, "conv", "weight"), **geom)


def _conv_bias_vjp_b(g, ans, x, w, b, activation, **geom):
    nd = len(geom["stride"])
    return F.sum(_activation_grad(g, ans, activation), axis=(0,) + tuple(range(2, 2 + nd)))


def _conv_transpose_vjp_u(G, ans, u, w, spatial, **geom):
    return conv(G, w, **geom)


def _conv_transpose_vjp_w(G, ans, u, w, spatial, **geom):
    return conv_weight_grad(G, u, _spatial(w, "conv_transpose", "weight"), **geom)


def _conv_weight_grad_vjp_x(G, ans, x, g, kernel, **geom):
    return conv_transpose(g, G, _spatial(x, "conv_weight_grad", "input"), **geom)


def _conv_weight_grad_vjp_g(G, ans, x, g, kernel, **geom):
    return conv(x, G, **geom)


def _conv_shape(shapes, stride, padding, dilation, groups):
    return _check_conv_shapes("conv", shapes[0], shapes[1], stride, padding, dilation, groups)


def _conv_bias_shape(shapes, stride, padding, dilation, groups, activation):
    out = _check_conv_shapes("conv", shapes[0], shapes[1], stride, padding, dilation, groups)
    bs = shapes[2]
    if len(bs) != 1 or (bs[0] is not None and out[1] is not None and bs[0] != out[1]):
        raise ValueError(f"conv: the bias must have shape ({out[1]},), got {tuple(bs)}")
    return out


def _conv_transpose_shape(shapes, spatial, stride, padding, dilation, groups):
    return _check_transpose_shapes("conv_transpose", shapes[0], shapes[1], spatial, stride,
                                   padding, dilation, groups)


def _conv_weight_grad_shape(shapes, kernel, stride, padding, dilation, groups):
    return _check_weight_grad_shapes("conv_weight_grad", shapes[0], shapes[1], kernel, stride,
                                     padding, dilation, groups)


def conv(x, w, stride, padding, dilation, groups):
    """``conv(x, w)`` with canonical attributes (``stride``/``dilation``: ``nd`` ints,
    ``padding``: ``nd`` pairs ``(before, after)``); the public forms are :func:`conv2d` and its
    siblings."""
    return apply(conv.op, (x, w), {"stride": stride, "padding": padding, "dilation": dilation,
                                   "groups": groups})


def conv_bias(x, w, b, stride, padding, dilation, groups, activation=None):
    """``activation(conv(x, w) + b)`` (bias ``(out,)`` per channel) as one op."""
    return apply(conv_bias.op, (x, w, b), {"stride": stride, "padding": padding,
                                           "dilation": dilation, "groups": groups,
                                           "activation": activation})


def conv_transpose(u, w, spatial, stride, padding, dilation, groups):
    """The adjoint of ``conv`` in its input, for an input of spatial shape ``spatial``."""
    return apply(conv_transpose.op, (u, w), {"spatial": tuple(spatial), "stride": stride,
                                             "padding": padding, "dilation": dilation,
                                             "groups": groups})


def conv_weight_grad(x, g, kernel, stride, padding, dilation, groups):
    """The adjoint of ``conv`` in its weight, for a kernel of spatial shape ``kernel``."""
    return apply(conv_weight_grad.op, (x, g), {"kernel": tuple(kernel), "stride": stride,
                                               "padding": padding, "dilation": dilation,
                                               "groups": groups})


conv_bias = defop("conv_bias", _conv_bias_forward, _conv_bias_vjp_x, _conv_bias_vjp_w,
                  _conv_bias_vjp_b, function=conv_bias, shape=_conv_bias_shape)
conv = defop("conv", _conv_forward, _conv_vjp_x, _conv_vjp_w, function=conv,
             shape=_conv_shape, epilogue=conv_bias.op)
# (``conv_bias`` with an activation is its own epilogue: relu(conv_bias(x, w, b)) fuses too)
conv_transpose = defop("conv_transpose", _conv_transpose_forward, _conv_transpose_vjp_u,
                       _conv_transpose_vjp_w, function=conv_transpose,
                       shape=_conv_transpose_shape)
conv_weight_grad = defop("conv_weight_grad", _conv_weight_grad_forward,
                         _conv_weight_grad_vjp_x, _conv_weight_grad_vjp_g,
                         function=conv_weight_grad, shape=_conv_weight_grad_shape)


# ---- the public functions ----------------------------------------------------------------------
def _padding(padding, nd, kernel, stride, dilation, name) -> tuple:
    """PyTorch's ``padding``: an int, ``nd`` ints, ``'valid'`` or ``'same'`` (unit strides
    only; an odd total puts the extra element after, as PyTorch does), as ``nd`` pairs."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided "
                                 f"convolutions (stride={stride})")
            out = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                out.append((total // 2, total - total // 2))
            return tuple(out)
        raise ValueError(f"{name}: padding must be an int, a tuple of ints, 'valid' or 'same', "
                         f"got {padding!r}")
    p = _tuple(padding, nd, "padding", name)
    if any(v < 0 for v in p):
        raise ValueError(f"{name}: padding must be non-negative, got {padding!r}")
    return tuple((v, v) for v in p)


def _batched(x, nd, name):
    """``(x with a batch axis, whether one was added)``: PyTorch also takes one unbatched
    sample ``(C, *spatial)``."""
    shape = _shape_of(x)
    if len(shape) == nd + 1:
        return F.expand_dims(x, 0), True
    if len(shape) != nd + 2:
        raise ValueError(f"{name}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) "
                         f"input, got shape {tuple(shape)}")
    return x, False


def _check_weight(w, nd, name):
    ws = _shape_of(w)
    if len(ws) != nd + 2:
        raise ValueError(f"{name}: expected a {nd + 2}-D weight, got shape {tuple(ws)}")
    return ws


def _weight_stride_dilation(weight, stride, dilation, nd, name):
    """The weight's shape and the checked strides and dilations of a convolution."""
    ws = _check_weight(weight, nd, name)
    stride = _tuple(stride, nd, "stride", name)
    dilation = _tuple(dilation, nd, "dilation", name)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation):
        raise ValueError(f"{name}: stride and dilation must be positive, got {stride} and "
                         f"{dilation}")
    return ws, stride, dilation


def _groups(groups, name):
    if isinstance(groups, (bool, np.bool_)) or not isinstance(groups, (int, np.integer)) \
            or groups < 1:
        raise ValueError(f"{name}: groups must be a positive integer, got {groups!r}")
    return int(groups)


def _convnd(nd, x, weight, bias, stride, padding, dilation, groups):
    name = f"conv{nd}d"
    ws, stride, dilation = _weight_stride_dilation(weight, stride, dilation, nd, name)
    kernel = _known(ws[2:], name, "weight")
    pads = _padding(padding, nd, kernel, stride, dilation, name)
    groups = _groups(groups, name)
    x, unbatched = _batched(x, nd, name)
    _check_conv_shapes(name, _shape_of(x), ws, stride, pads, dilation, groups)
    if bias is None:
        y = conv(x, weight, stride, pads, dilation, groups)
    else:
        if len(_shape_of(bias)) != 1:
            raise ValueError(f"{name}: the bias must have shape ({ws[0]},), got "
                             f"{tuple(_shape_of(bias))}")
        y = conv_bias(x, weight, bias, stride, pads, dilation, groups)
    return F.squeeze(y, 0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """1-d convolution (cross-correlation) of ``(N, C, L)`` by ``(out, C / groups, k)``,
    PyTorch's ``torch.nn.functional.conv1d``: ``padding`` an int, ``'valid'`` or ``'same'``.

        >>> conv1d(fg.ones((1, 1, 5)), fg.ones((1, 1, 3)), padding="same")  # doctest: +SKIP
    """
    return _convnd(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """2-d convolution (cross-correlation) of ``(N, C, H, W)`` by ``(out, C / groups, kh, kw)``
    (NCHW), PyTorch's ``torch.nn.functional.conv2d``: ``stride``, ``padding`` (an int, a pair,
    ``'valid'`` or ``'same'``), ``dilation``, ``groups``, an optional bias ``(out,)``.
    Differentiable in the input, the weight and the bias, to any order.

        >>> x = fg.randn(2, 3, 8, 8); w = fg.randn(4, 3, 3, 3)
        >>> conv2d(x, w, padding=1).shape  # doctest: +SKIP
        (2, 4, 8, 8)
    """
    return _convnd(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """3-d convolution of ``(N, C, D, H, W)`` by ``(out, C / groups, kd, kh, kw)``, PyTorch's
    ``torch.nn.functional.conv3d``.

        >>> conv3d(fg.ones((1, 1, 3, 3, 3)), fg.ones((1, 1, 2, 2, 2))).shape  # doctest: +SKIP
        (1, 1, 2, 2, 2)
    """
    return _convnd(3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transposend(nd, x, weight, bias, stride, padding, output_padding, groups, dilation):
    name = f"conv_transpose{nd}d"
    ws, stride, dilation = _weight_stride_dilation(weight, stride, dilation, nd, name)
    if isinstance(padding, str):
        raise ValueError(f"{name}: padding must be an int or a tuple of ints, got {padding!r}")
    pad = _tuple(padding, nd, "padding", name)
    opad = _tuple(output_padding, nd, "output_padding", name)
    if any(p < 0 for p in pad) or any(p < 0 for p in opad):
        raise ValueError(f"{name}: padding and output_padding must be non-negative")
    for op_, s, d in zip(opad, stride, dilation):
        if op_ >= s and op_ >= d:
            raise ValueError(f"{name}: output_padding {opad} must be smaller than either the "
                             f"stride {stride} or the dilation {dilation}")
    groups = _groups(groups, name)
    kernel = _known(ws[2:], name, "weight")
    x, unbatched = _batched(x, nd, name)
    xs = _known(_shape_of(x)[2:], name, "input")
    cin = _shape_of(x)[1]
    if cin is not None and ws[0] is not None and cin != ws[0]:
        raise ValueError(f"{name}: the input has {cin} channels but the weight {tuple(ws)} "
                         f"expects {ws[0]}")
    if ws[0] is not None and ws[0] % groups:
        raise ValueError(f"{name}: the weight's {ws[0]} input channels are not divisible by "
                         f"groups={groups}")
    spatial = tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1
                    for n, s, p, d, k, o in zip(xs, stride, pad, dilation, kernel, opad))
    if any(n < 1 for n in spatial):
        raise ValueError(f"{name}: the output would be empty ({spatial}) for input "
                         f"{tuple(_shape_of(x))}, padding {pad}")
    y = conv_transpose(x, weight, spatial, stride, tuple((p, p) for p in pad), dilation, groups)
    if bias is not None:
        bs = _shape_of(bias)
        cout = ws[1] * groups if ws[1] is not None else None
        if len(bs) != 1 or (bs[0] is not None and cout is not None and bs[0] != cout):
            raise ValueError(f"{name}: the bias must have shape ({cout},), got {tuple(bs)}")
        y = y + F.reshape(bias, (-1,) + (1,) * nd)
    return F.squeeze(y, 0) if unbatched else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0,  # noqa: A002
                     output_padding=0, groups=1, dilation=1):
    """1-d transposed convolution, PyTorch's ``torch.nn.functional.conv_transpose1d``: weight
    ``(in, out / groups, k)``; the gradient of ``conv1d`` with respect to its input.

        >>> conv_transpose1d(fg.ones((1, 1, 3)), fg.ones((1, 2, 2))).shape  # doctest: +SKIP
        (1, 2, 4)
    """
    return _conv_transposend(1, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0,  # noqa: A002
                     output_padding=0, groups=1, dilation=1):
    """2-d transposed convolution, PyTorch's ``torch.nn.functional.conv_transpose2d``: weight
    ``(in, out / groups, kh, kw)``, output ``(H - 1) * stride - 2 * padding + dilation * (k -
    1) + output_padding + 1`` per axis.

        >>> conv_transpose2d(fg.ones((1, 2, 3, 3)), fg.ones((2, 1, 2, 2)), stride=2).shape
        ... # doctest: +SKIP
        (1, 1, 6, 6)
    """
    return _conv_transposend(2, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0,  # noqa: A002
                     output_padding=0, groups=1, dilation=1):
    """3-d transposed convolution, PyTorch's ``torch.nn.functional.conv_transpose3d``.

        >>> conv_transpose3d(fg.ones((1, 1, 2, 2, 2)), fg.ones((1, 1, 2, 2, 2))).shape
        ... # doctest: +SKIP
        (1, 1, 3, 3, 3)
    """
    return _conv_transposend(3, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


for _f in (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d):
    defun(_f, exports=("nn_ops",))
