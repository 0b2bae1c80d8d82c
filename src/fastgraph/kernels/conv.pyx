"""Convolution over NumPy's own BLAS: im2col tiles and one ``gemm`` per tile, OpenMP over tiles.

Every array is 5-D, C-contiguous and of one float dtype (float32 or float64): the input
``(N, C, D, H, W)``, the weight ``(O, C / groups, KD, KH, KW)`` and the output
``(N, O, OD, OH, OW)``; 1-d and 2-d convolutions are 3-d ones with unit dimensions (the policy in
``fastgraph.ops.conv`` makes those views, checks the arguments and chooses the tiling).

The work is cut into *tasks* fixed by the shapes and the policy's ``tile_rows`` (output rows per
``gemm``) and ``nchunks`` (weight-gradient partial sums), never by the thread count, and each
task makes its own ``gemm`` calls in a fixed order, so results do not depend on how many threads
run the tasks:

* :func:`conv_forward` -- ``y[n, o] = sum_c w[o, c] * x[n, c]`` (cross-correlation, PyTorch's
  ``conv``): per (sample, group, tile of output rows), the tile's columns of the input (im2col,
  zeros where the window leaves the padded input) and ``y_tile = w_group @ col``; optionally the
  epilogue ``act(y + bias[o])`` on the tile while it is in cache (the values the separate
  ``add`` and ``relu`` steps compute, bit for bit);
* :func:`conv_input_grad` -- the transposed convolution: per (sample, group), for each tile
  ``col = w_group.T @ u_tile`` and col2im adds the columns back into the input's positions
  (each task owns its sample's group of channels, and adds in a fixed order);
* :func:`conv_weight_grad` -- the correlation of the input with the output gradient: per
  (chunk of samples, group), ``dw_chunk += g_tile @ col.T`` tile after tile, sample after
  sample; the chunks' partial sums are then added in chunk order.

A 1x1 convolution with unit strides and no padding reads the input (or writes the input
gradient) directly, without columns.  While ``gemm`` runs on the calling thread (the policy keeps
each call's ``m * n * k`` at most OpenBLAS's single-thread bound when it uses several threads),
several tasks run at once; otherwise (``nthreads == 1``) one after another and BLAS may use its
own threads for each call, as NumPy's products do.
"""
cimport cython
cimport numpy as cnp
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset, memcpy

from fastgraph.kernels.blas cimport gemm_available, sgemm_rm, dgemm_rm

cnp.import_array()

ctypedef fused real:
    float
    double

cdef enum:
    _ACT_NONE = 0
    _ACT_RELU = 1

#: activation codes of the forward epilogue
ACT_NONE, ACT_RELU = _ACT_NONE, _ACT_RELU
#: the activations the epilogue applies, by code
ACTIVATIONS = {"relu": ACT_RELU}


cdef struct Geom:
    int64_t N, C, D, H, W           # input
    int64_t O, OD, OH, OW           # output
    int64_t KD, KH, KW
    int64_t sd, sh, sw, pd, ph, pw, dd, dh, dw
    int64_t G, Cg, Og, Kc, L, R     # groups, channels per group, in/out; rows of a column
                                    # matrix; output positions; output rows (OD * OH)
    int64_t S                       # input positions per channel (D * H * W)
    int64_t tile_rows, ntiles, tile_cols
    bint direct                     # 1x1, unit strides, no padding: the input is the columns


def available() -> bool:
    """Whether the kernels can run (NumPy's BLAS was found and configured)."""
    return gemm_available()


cdef int _geom(Geom* g, cnp.ndarray x, cnp.ndarray w, cnp.ndarray y, tuple stride, tuple pad,
               tuple dilation, int64_t groups, int64_t tile_rows) except -1:
    """Fill ``g`` from the arrays and parameters; ValueError where they do not fit together."""
    cdef int t = cnp.PyArray_TYPE(x)
    cdef cnp.ndarray a
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError("conv kernels take float32 or float64 arrays")
    for a in (x, w, y):
        if cnp.PyArray_NDIM(a) != 5 or cnp.PyArray_TYPE(a) != t or not cnp.PyArray_IS_C_CONTIGUOUS(a) \
                or not cnp.PyArray_ISALIGNED(a):
            raise ValueError("conv kernels take aligned C-contiguous 5-D arrays of one dtype")
    if len(stride) != 3 or len(pad) != 3 or len(dilation) != 3:
        raise ValueError("conv kernels take 3 strides, paddings and dilations")
    g.N, g.C, g.D, g.H, g.W = x.shape[0], x.shape[1], x.shape[2], x.shape[3], x.shape[4]
    g.O, g.OD, g.OH, g.OW = w.shape[0], y.shape[2], y.shape[3], y.shape[4]
    g.KD, g.KH, g.KW = w.shape[2], w.shape[3], w.shape[4]
    g.sd, g.sh, g.sw = stride
    g.pd, g.ph, g.pw = pad
    g.dd, g.dh, g.dw = dilation
    g.G = groups
    if groups < 1 or g.C % groups or g.O % groups:
        raise ValueError("conv: groups must divide the input and output channels")
    g.Cg, g.Og = g.C // groups, g.O // groups
    if w.shape[1] != g.Cg or y.shape[0] != g.N or y.shape[1] != g.O:
        raise ValueError("conv: the weight or output shape does not fit the input")
    if min(g.sd, g.sh, g.sw, g.dd, g.dh, g.dw) < 1 or min(g.pd, g.ph, g.pw) < 0:
        raise ValueError("conv: strides and dilations must be >= 1, paddings >= 0")
    if min(g.KD, g.KH, g.KW, g.OD, g.OH, g.OW) < 1:
        raise ValueError("conv: empty kernel or output")
    g.Kc = g.Cg * g.KD * g.KH * g.KW
    g.R = g.OD * g.OH
    g.L = g.R * g.OW
    g.S = g.D * g.H * g.W
    if tile_rows < 1 or tile_rows > g.R:
        tile_rows = g.R
    g.tile_rows = tile_rows
    g.ntiles = (g.R + tile_rows - 1) // tile_rows
    g.tile_cols = tile_rows * g.OW
    g.direct = (g.KD == 1 and g.KH == 1 and g.KW == 1 and g.sd == 1 and g.sh == 1 and g.sw == 1
                and g.pd == 0 and g.ph == 0 and g.pw == 0 and g.OD == g.D and g.OH == g.H
                and g.OW == g.W)
    return 0


cdef inline void _gemm(bint ta, bint tb, int64_t m, int64_t n, int64_t k, const real *a,
                       int64_t lda, const real *b, int64_t ldb, real beta, real *c,
                       int64_t ldc) noexcept nogil:
    if real is float:
        sgemm_rm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc)
    else:
        dgemm_rm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc)


cdef inline void _ow_range(const Geom* g, int64_t kw, int64_t* lo, int64_t* hi) noexcept nogil:
    """The output columns ``ow`` whose input column ``ow * sw - pw + kw * dw`` is in range."""
    cdef int64_t off = kw * g.dw - g.pw          # input column of ow = 0
    cdef int64_t a = 0, b
    if off < 0:
        a = (-off + g.sw - 1) // g.sw
    # last ow with ow * sw + off <= W - 1
    if g.W - 1 - off < 0:
        b = 0
    else:
        b = (g.W - 1 - off) // g.sw + 1
    if b > g.OW:
        b = g.OW
    if a > b:
        a = b
    lo[0] = a
    hi[0] = b


cdef void _im2col(const Geom* g, const real* xg, real* col, int64_t r0, int64_t r1) noexcept nogil:
    """Columns of output rows ``[r0, r1)`` for one sample's group of channels ``xg``
    (``Cg`` channels of ``S`` positions): ``col[(c, kd, kh, kw), (r - r0) * OW + ow]``."""
    cdef int64_t c, kd, kh, kw, r, od, oh, idd, ih, ow, lo, hi, row
    cdef int64_t nc = (r1 - r0) * g.OW
    cdef real* dst
    cdef real* d
    cdef const real* src
    cdef int64_t off
    row = 0
    for c in range(g.Cg):
        for kd in range(g.KD):
            for kh in range(g.KH):
                for kw in range(g.KW):
                    dst = col + row * nc
                    row += 1
                    _ow_range(g, kw, &lo, &hi)
                    off = kw * g.dw - g.pw
                    for r in range(r0, r1):
                        od = r // g.OH
                        oh = r - od * g.OH
                        idd = od * g.sd - g.pd + kd * g.dd
                        ih = oh * g.sh - g.ph + kh * g.dh
                        d = dst + (r - r0) * g.OW
                        if idd < 0 or idd >= g.D or ih < 0 or ih >= g.H or lo >= hi:
                            memset(d, 0, g.OW * sizeof(real))
                            continue
                        src = xg + (c * g.D + idd) * g.H * g.W + ih * g.W + off
                        if lo > 0:
                            memset(d, 0, lo * sizeof(real))
                        if g.sw == 1:
                            memcpy(d + lo, src + lo, (hi - lo) * sizeof(real))
                        else:
                            for ow in range(lo, hi):
                                d[ow] = src[ow * g.sw]
                        if hi < g.OW:
                            memset(d + hi, 0, (g.OW - hi) * sizeof(real))


cdef void _col2im(const Geom* g, const real* col, real* xg, int64_t r0, int64_t r1) noexcept nogil:
    """Add the columns of output rows ``[r0, r1)`` back into one sample's group of channels
    ``xg``: the adjoint of :func:`_im2col`, in its order."""
    cdef int64_t c, kd, kh, kw, r, od, oh, idd, ih, ow, lo, hi, row
    cdef int64_t nc = (r1 - r0) * g.OW
    cdef const real* srcrow
    cdef const real* s
    cdef real* d
    cdef int64_t off
    row = 0
    for c in range(g.Cg):
        for kd in range(g.KD):
            for kh in range(g.KH):
                for kw in range(g.KW):
                    srcrow = col + row * nc
                    row += 1
                    _ow_range(g, kw, &lo, &hi)
                    if lo >= hi:
                        continue
                    off = kw * g.dw - g.pw
                    for r in range(r0, r1):
                        od = r // g.OH
                        oh = r - od * g.OH
                        idd = od * g.sd - g.pd + kd * g.dd
                        ih = oh * g.sh - g.ph + kh * g.dh
                        if idd < 0 or idd >= g.D or ih < 0 or ih >= g.H:
                            continue
                        s = srcrow + (r - r0) * g.OW
                        d = xg + (c * g.D + idd) * g.H * g.W + ih * g.W + off
                        if g.sw == 1:
                            for ow in range(lo, hi):
                                d[ow] += s[ow]
                        else:
                            for ow in range(lo, hi):
                                d[ow * g.sw] += s[ow]


cdef inline real _relu(real v) noexcept nogil:
    # NumPy's maximum(v, 0): NaN stays NaN, -0.0 becomes +0.0
    if v > 0 or v != v:
        return v
    return 0


cdef void _forward_task(const Geom* g, const real* x, const real* w, real* y, const real* bias,
                        int act, real* col, int64_t task) noexcept nogil:
    cdef int64_t tile = task % g.ntiles
    cdef int64_t ng = task // g.ntiles
    cdef int64_t n = ng // g.G, gi = ng - (ng // g.G) * g.G
    cdef int64_t r0 = tile * g.tile_rows
    cdef int64_t r1 = r0 + g.tile_rows
    if r1 > g.R:
        r1 = g.R
    cdef int64_t nc = (r1 - r0) * g.OW
    cdef const real* xg = x + (n * g.C + gi * g.Cg) * g.S
    cdef real* yt = y + (n * g.O + gi * g.Og) * g.L + r0 * g.OW
    cdef const real* wg = w + gi * g.Og * g.Kc
    cdef int64_t o, l
    cdef real b
    cdef real* yr
    if g.direct:
        _gemm(False, False, g.Og, nc, g.Kc, wg, g.Kc, xg + r0 * g.OW, g.L, 0, yt, g.L)
    else:
        _im2col(g, xg, col, r0, r1)
        _gemm(False, False, g.Og, nc, g.Kc, wg, g.Kc, col, nc, 0, yt, g.L)
    if bias == NULL and act == _ACT_NONE:
        return
    for o in range(g.Og):
        yr = yt + o * g.L
        if bias != NULL:
            b = bias[gi * g.Og + o]
            if act == _ACT_RELU:
                for l in range(nc):
                    yr[l] = _relu(yr[l] + b)
            else:
                for l in range(nc):
                    yr[l] = yr[l] + b
        elif act == _ACT_RELU:
            for l in range(nc):
                yr[l] = _relu(yr[l])


cdef void _input_grad_task(const Geom* g, const real* u, const real* w, real* dx, real* col,
                           int64_t task) noexcept nogil:
    cdef int64_t n = task // g.G, gi = task - (task // g.G) * g.G
    cdef real* dxg = dx + (n * g.C + gi * g.Cg) * g.S
    cdef const real* wg = w + gi * g.Og * g.Kc
    cdef int64_t tile, r0, r1, nc
    cdef const real* ut
    if not g.direct:
        memset(dxg, 0, g.Cg * g.S * sizeof(real))
    for tile in range(g.ntiles):
        r0 = tile * g.tile_rows
        r1 = r0 + g.tile_rows
        if r1 > g.R:
            r1 = g.R
        nc = (r1 - r0) * g.OW
        ut = u + (n * g.O + gi * g.Og) * g.L + r0 * g.OW
        if g.direct:
            _gemm(True, False, g.Kc, nc, g.Og, wg, g.Kc, ut, g.L, 0, dxg + r0 * g.OW, g.L)
        else:
            _gemm(True, False, g.Kc, nc, g.Og, wg, g.Kc, ut, g.L, 0, col, nc)
            _col2im(g, col, dxg, r0, r1)


cdef void _weight_grad_task(const Geom* g, const real* x, const real* gy, real* part,
                            real* col, int64_t nchunks, int64_t task) noexcept nogil:
    cdef int64_t chunk = task // g.G, gi = task - (task // g.G) * g.G
    cdef int64_t per = (g.N + nchunks - 1) // nchunks
    cdef int64_t n0 = chunk * per, n1 = n0 + per
    if n1 > g.N:
        n1 = g.N
    cdef real* pw = part + (chunk * g.O + gi * g.Og) * g.Kc
    cdef int64_t n, tile, r0, r1, nc
    cdef const real* xg
    cdef const real* gt
    cdef real beta = 0
    if n0 >= n1:
        memset(pw, 0, g.Og * g.Kc * sizeof(real))
        return
    for n in range(n0, n1):
        xg = x + (n * g.C + gi * g.Cg) * g.S
        for tile in range(g.ntiles):
            r0 = tile * g.tile_rows
            r1 = r0 + g.tile_rows
            if r1 > g.R:
                r1 = g.R
            nc = (r1 - r0) * g.OW
            gt = gy + (n * g.O + gi * g.Og) * g.L + r0 * g.OW
            if g.direct:
                _gemm(False, True, g.Og, g.Kc, nc, gt, g.L, xg + r0 * g.OW, g.L, beta, pw, g.Kc)
            else:
                _im2col(g, xg, col, r0, r1)
                _gemm(False, True, g.Og, g.Kc, nc, gt, g.L, col, nc, beta, pw, g.Kc)
            beta = 1


cdef int _run_forward(Geom* g, real* x, real* w, real* y, real* bias, int act,
                      int nthreads) except -1:
    cdef int64_t ntasks = g.N * g.G * g.ntiles, t
    if ntasks == 0:
        return 0
    cdef int64_t colsize = 0 if g.direct else g.Kc * g.tile_cols
    cdef int nt = nthreads if nthreads < ntasks else <int>ntasks
    if nt < 1:
        nt = 1
    cdef real* scratch = <real*>malloc((colsize * nt + 1) * sizeof(real))
    if scratch == NULL:
        raise MemoryError()
    with nogil:
        if nt == 1:
            for t in range(ntasks):
                _forward_task(g, x, w, y, bias, act, scratch, t)
        else:
            for t in prange(ntasks, num_threads=nt, schedule="dynamic"):
                _forward_task(g, x, w, y, bias, act, scratch + threadid() * colsize, t)
    free(scratch)
    return 0


cdef int _run_input_grad(Geom* g, real* u, real* w, real* dx, int nthreads) except -1:
    cdef int64_t ntasks = g.N * g.G, t
    if ntasks == 0:
        return 0
    cdef int64_t colsize = 0 if g.direct else g.Kc * g.tile_cols
    cdef int nt = nthreads if nthreads < ntasks else <int>ntasks
    if nt < 1:
        nt = 1
    cdef real* scratch = <real*>malloc((colsize * nt + 1) * sizeof(real))
    if scratch == NULL:
        raise MemoryError()
    with nogil:
        if nt == 1:
            for t in range(ntasks):
                _input_grad_task(g, u, w, dx, scratch, t)
        else:
            for t in prange(ntasks, num_threads=nt, schedule="dynamic"):
                _input_grad_task(g, u, w, dx, scratch + threadid() * colsize, t)
    free(scratch)
    return 0


cdef int _run_weight_grad(Geom* g, real* x, real* gy, real* dw, int64_t nchunks,
                          int nthreads) except -1:
    cdef int64_t ntasks = nchunks * g.G, t, e, c
    cdef int64_t colsize = 0 if g.direct else g.Kc * g.tile_cols
    cdef int64_t wsize = g.O * g.Kc
    cdef int nt = nthreads if nthreads < ntasks else <int>ntasks
    if nt < 1:
        nt = 1
    cdef real* scratch = <real*>malloc((colsize * nt + 1) * sizeof(real))
    if scratch == NULL:
        raise MemoryError()
    # one chunk writes dw itself; more add their partial sums into it in chunk order
    cdef real* part = dw
    if nchunks > 1:
        part = <real*>malloc(nchunks * wsize * sizeof(real))
        if part == NULL:
            free(scratch)
            raise MemoryError()
    cdef real acc
    with nogil:
        if nt == 1:
            for t in range(ntasks):
                _weight_grad_task(g, x, gy, part, scratch, nchunks, t)
        else:
            for t in prange(ntasks, num_threads=nt, schedule="dynamic"):
                _weight_grad_task(g, x, gy, part, scratch + threadid() * colsize, nchunks, t)
        if nchunks > 1:
            if nthreads > 1 and wsize >= 4096:
                for e in prange(wsize, num_threads=nthreads, schedule="static"):
                    acc = part[e]
                    for c in range(1, nchunks):
                        acc = acc + part[c * wsize + e]
                    dw[e] = acc
            else:
                for e in range(wsize):
                    acc = part[e]
                    for c in range(1, nchunks):
                        acc = acc + part[c * wsize + e]
                    dw[e] = acc
    if nchunks > 1:
        free(part)
    free(scratch)
    return 0


cdef void* _data(cnp.ndarray a):
    return cnp.PyArray_DATA(a)


def conv_forward(cnp.ndarray x, cnp.ndarray w, cnp.ndarray y, tuple stride, tuple pad,
                 tuple dilation, int64_t groups, int64_t tile_rows, int nthreads,
                 cnp.ndarray bias=None, int act=_ACT_NONE):
    """``y = conv(x, w)`` (then ``act(y + bias)``), written into ``y``.

    ``pad``: the leading paddings (the trailing ones are implied by ``y``'s shape); ``bias``:
    ``O`` values of ``y``'s dtype, or None.

    >>> conv_forward(x, w, y, (1, 1, 1), (0, 2, 2), (1, 1, 1), 1, 0, 2)  # doctest: +SKIP
    """
    if not gemm_available():
        raise RuntimeError("conv kernels need NumPy's BLAS (fastgraph._numpy_blas.load())")
    cdef Geom g
    _geom(&g, x, w, y, stride, pad, dilation, groups, tile_rows)
    if not cnp.PyArray_ISWRITEABLE(y):
        raise ValueError("conv_forward: the output is read-only")
    if act != _ACT_NONE and act != _ACT_RELU:
        raise ValueError(f"conv_forward: unknown activation code {act}")
    cdef void* pb = NULL
    if bias is not None:
        if cnp.PyArray_TYPE(bias) != cnp.PyArray_TYPE(x) or cnp.PyArray_SIZE(bias) != g.O \
                or not cnp.PyArray_IS_C_CONTIGUOUS(bias):
            raise ValueError("conv_forward: the bias must be O contiguous values of x's dtype")
        pb = _data(bias)
    if cnp.PyArray_TYPE(x) == cnp.NPY_FLOAT32:
        _run_forward[float](&g, <float*>_data(x), <float*>_data(w), <float*>_data(y),
                            <float*>pb, act, nthreads)
    else:
        _run_forward[double](&g, <double*>_data(x), <double*>_data(w), <double*>_data(y),
                             <double*>pb, act, nthreads)


def conv_input_grad(cnp.ndarray u, cnp.ndarray w, cnp.ndarray dx, tuple stride, tuple pad,
                    tuple dilation, int64_t groups, int64_t tile_rows, int nthreads):
    """``dx = conv_transpose(u, w)``: the gradient of ``conv(x, w)`` with respect to ``x`` for
    the output gradient ``u``, written into ``dx`` (shaped like ``x``)."""
    if not gemm_available():
        raise RuntimeError("conv kernels need NumPy's BLAS (fastgraph._numpy_blas.load())")
    cdef Geom g
    _geom(&g, dx, w, u, stride, pad, dilation, groups, tile_rows)
    if not cnp.PyArray_ISWRITEABLE(dx):
        raise ValueError("conv_input_grad: the output is read-only")
    if cnp.PyArray_TYPE(u) == cnp.NPY_FLOAT32:
        _run_input_grad[float](&g, <float*>_data(u), <float*>_data(w), <float*>_data(dx),
                               nthreads)
    else:
        _run_input_grad[double](&g, <double*>_data(u), <double*>_data(w), <double*>_data(dx),
                                nthreads)


def conv_weight_grad(cnp.ndarray x, cnp.ndarray gy, cnp.ndarray dw, tuple stride, tuple pad,
                     tuple dilation, int64_t groups, int64_t tile_rows, int64_t nchunks,
                     int nthreads):
    """``dw``: the gradient of ``conv(x, w)`` with respect to ``w`` for the output gradient
    ``gy``, written into ``dw`` (shaped like ``w``); the samples are summed in ``nchunks``
    partial sums, added in order."""
    if not gemm_available():
        raise RuntimeError("conv kernels need NumPy's BLAS (fastgraph._numpy_blas.load())")
    cdef Geom g
    _geom(&g, x, dw, gy, stride, pad, dilation, groups, tile_rows)
    if not cnp.PyArray_ISWRITEABLE(dw):
        raise ValueError("conv_weight_grad: the output is read-only")
    if g.N == 0:
        dw.fill(0)
        return
    if nchunks < 1:
        nchunks = 1
    if nchunks > g.N:
        nchunks = g.N
    if cnp.PyArray_TYPE(x) == cnp.NPY_FLOAT32:
        _run_weight_grad[float](&g, <float*>_data(x), <float*>_data(gy), <float*>_data(dw),
                                nchunks, nthreads)
    else:
        _run_weight_grad[double](&g, <double*>_data(x), <double*>_data(gy),
                                 <double*>_data(dw), nchunks, nthreads)
