"""Convolution over NumPy's own BLAS: im2col tiles and one ``gemm`` per tile, OpenMP over tiles.

Every array is 5-D, C-contiguous and of one float dtype (float32 or float64): the input
``(N, C, D, H, W)``, the weight ``(O, C / groups, KD, KH, KW)`` and the output
``(N, O, OD, OH, OW)``; 1-d and 2-d convolutions are 3-d ones with unit dimensions (the policy in
``fastgraph.ops.conv`` makes those views, checks the arguments and chooses the tiling).

The work is cut into *tasks* fixed by the shapes and the policy's ``tile_rows`` (output rows per
``gemm``), ``fold`` (whole samples whose columns sit side by side in one ``gemm``, so that
small per-sample products become fewer larger ones) and ``nchunks`` (weight-gradient partial
sums), never by the thread count, and each task makes its own ``gemm`` calls in a fixed order,
so results do not depend on how many threads run the tasks:

* :func:`conv_forward` -- ``y[n, o] = sum_c w[o, c] * x[n, c]`` (cross-correlation, PyTorch's
  ``conv``): per (samples, group, tile of output rows), the tile's columns of the input (im2col,
  zeros where the window leaves the padded input) and ``y_tile = w_group @ col``; optionally the
  epilogue ``act(y + bias[o])`` on the tile while it is in cache (the values the separate
  ``add`` and ``relu`` steps compute, bit for bit);
* :func:`conv_input_grad` -- the transposed convolution: per (samples, group), for each tile
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
    int64_t fold, nfold             # samples side by side in one product (whole-sample tiles);
                                    # groups of them (ceil(N / fold))
    bint direct                     # 1x1, unit strides, no padding: the input is the columns


def available() -> bool:
    """Whether the kernels can run (NumPy's BLAS was found and configured)."""
    return gemm_available()


cdef int _geom(Geom* g, cnp.ndarray x, cnp.ndarray w, cnp.ndarray y, tuple stride, tuple pad,
               tuple dilation, int64_t groups, int64_t tile_rows, int64_t fold) except -1:
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
    # folding needs whole-sample tiles and columns (a direct convolution reads the input)
    if fold < 1 or g.ntiles > 1 or g.direct:
        fold = 1
    if fold > g.N:
        fold = g.N if g.N > 0 else 1
    g.fold = fold
    g.nfold = (g.N + fold - 1) // fold
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


cdef inline void _row(real* s, real* d, int64_t lo, int64_t hi, int64_t OW, int64_t sw,
                      bint back) noexcept nogil:
    """One output row of a column row: ``d[ow] = s[ow * sw]`` for ``ow`` in ``[lo, hi)`` and
    zeros around (or, with ``back``, ``s[ow * sw] += d[ow]``)."""
    cdef int64_t ow
    if back and sw == 1:
        for ow in range(lo, hi):
            s[ow] += d[ow]
    elif back:
        for ow in range(lo, hi):
            s[ow * sw] += d[ow]
    else:
        if lo > 0:
            memset(d, 0, lo * sizeof(real))
        if sw == 1:
            memcpy(d + lo, s + lo, (hi - lo) * sizeof(real))
        else:
            for ow in range(lo, hi):
                d[ow] = s[ow * sw]
        if hi < OW:
            memset(d + hi, 0, (OW - hi) * sizeof(real))


cdef inline void _plane_rows(const Geom* g, real* xc, real* d, int64_t kdoff, int64_t khoff,
                             int64_t kwoff, int64_t lo, int64_t hi, int64_t r0, int64_t r1,
                             bint back) noexcept nogil:
    """One column row of :func:`_columns` when the output has one depth (1-d and 2-d
    convolutions): the output rows whose input row is inside the input form one range, copied
    (or added back) row after row; the rows above and below it are zeros."""
    cdef int64_t OW = g.OW, sh = g.sh, sw = g.sw, rlo = r1, rhi = r1, first, last, r
    cdef real* s
    cdef real* dr
    if 0 <= kdoff < g.D and lo < hi:
        first = (-khoff + sh - 1) // sh if khoff < 0 else 0
        last = (g.H - 1 - khoff) // sh + 1 if g.H - 1 - khoff >= 0 else 0
        rlo = first if first > r0 else r0
        rhi = last if last < r1 else r1
        if rhi < rlo:
            rhi = rlo
    if not back:
        if rlo > r0:
            memset(d, 0, (rlo - r0) * OW * sizeof(real))
        if rhi < r1:
            memset(d + (rhi - r0) * OW, 0, (r1 - rhi) * OW * sizeof(real))
    s = xc + (kdoff * g.H + rlo * sh + khoff) * g.W + kwoff
    dr = d + (rlo - r0) * OW
    for r in range(rlo, rhi):
        _row(s, dr, lo, hi, OW, sw, back)
        s += sh * g.W
        dr += OW


cdef void _columns(const Geom* g, real* xg, real* col, int64_t ld, int64_t r0, int64_t r1,
                   bint back) noexcept nogil:
    """im2col, or with ``back`` its adjoint col2im.

    Forward: write the columns of output rows ``[r0, r1)`` of one sample's group of channels
    ``xg`` (``Cg`` channels of ``S`` positions), ``col[(c, kd, kh, kw), (r - r0) * OW + ow]``
    (rows ``ld`` apart: several samples' columns side by side), zeros where the window reads
    padding.  Back: add those columns into ``xg``, in the same order (so the sums are the same
    whatever the tiling of other tasks).  The output row's position is stepped along (no
    division a row) and the geometry is held in locals across the row copies."""
    cdef int64_t c, kd, kh, kw, r, lo, hi, od, oh, idd, ih
    cdef int64_t OW = g.OW, OH = g.OH, sw = g.sw, sd = g.sd, sh = g.sh
    cdef int64_t D = g.D, H = g.H, W = g.W
    cdef int64_t od0 = r0 // OH
    cdef int64_t oh0 = r0 - od0 * OH
    cdef int64_t row = 0, kdoff, khoff, kwoff
    cdef real* d
    cdef real* xc
    for c in range(g.Cg):
        xc = xg + c * g.S
        for kd in range(g.KD):
            kdoff = kd * g.dd - g.pd
            for kh in range(g.KH):
                khoff = kh * g.dh - g.ph
                for kw in range(g.KW):
                    kwoff = kw * g.dw - g.pw
                    d = col + row * ld
                    row += 1
                    _ow_range(g, kw, &lo, &hi)
                    if g.OD == 1:
                        _plane_rows(g, xc, d, kdoff, khoff, kwoff, lo, hi, r0, r1, back)
                        continue
                    od = od0
                    oh = oh0
                    for r in range(r0, r1):
                        idd = od * sd + kdoff
                        ih = oh * sh + khoff
                        oh += 1
                        if oh == OH:
                            oh = 0
                            od += 1
                        if idd < 0 or idd >= D or ih < 0 or ih >= H or lo >= hi:
                            if not back:
                                memset(d, 0, OW * sizeof(real))
                            d += OW
                            continue
                        _row(xc + (idd * H + ih) * W + kwoff, d, lo, hi, OW, sw, back)
                        d += OW


cdef inline int64_t _tile_span(const Geom* g, int64_t tile, int64_t* r0) noexcept nogil:
    """The first output row of ``tile`` (into ``r0``) and the tile's number of columns."""
    cdef int64_t r1 = (tile + 1) * g.tile_rows
    r0[0] = tile * g.tile_rows
    if r1 > g.R:
        r1 = g.R
    return (r1 - r0[0]) * g.OW


cdef inline real _relu(real v) noexcept nogil:
    # NumPy's maximum(v, 0): NaN stays NaN, -0.0 becomes +0.0
    if v > 0 or v != v:
        return v
    return 0


cdef enum:
    _FORWARD = 0
    _INPUT_GRAD = 1
    _WEIGHT_GRAD = 2


cdef inline void _bias_act(real* dst, const real* src, int64_t n, const real* bias, int64_t o,
                           int act) noexcept nogil:
    """``dst = act(src + bias[o])`` over ``n`` values (``dst`` may be ``src``)."""
    cdef int64_t l
    cdef real b
    if bias == NULL and act == _ACT_NONE:
        if dst != src:
            memcpy(dst, src, n * sizeof(real))
        return
    b = bias[o] if bias != NULL else 0
    if act == _ACT_RELU and bias != NULL:
        for l in range(n):
            dst[l] = _relu(src[l] + b)
    elif act == _ACT_RELU:
        for l in range(n):
            dst[l] = _relu(src[l])
    else:
        for l in range(n):
            dst[l] = src[l] + b


cdef inline int64_t _fold_span(const Geom* g, int64_t group, int64_t* n0) noexcept nogil:
    """The first sample of a ``group`` of folded samples (into ``n0``) and its size."""
    cdef int64_t n1 = (group + 1) * g.fold
    n0[0] = group * g.fold
    if n1 > g.N:
        n1 = g.N
    return n1 - n0[0]


cdef void _gather_planes(const Geom* g, const real* a, real* buf, int64_t n0, int64_t nb,
                         int64_t gi) noexcept nogil:
    """``buf[o, j * L + l] = a[n0 + j, gi * Og + o, l]``: a group of channels of ``nb``
    output-shaped samples side by side."""
    cdef int64_t j, o
    for o in range(g.Og):
        for j in range(nb):
            memcpy(buf + (o * nb + j) * g.L, a + ((n0 + j) * g.O + gi * g.Og + o) * g.L,
                   g.L * sizeof(real))


cdef void _forward_task(const Geom* g, const real* x, const real* w, real* y, const real* bias,
                        int act, real* col, int64_t task) noexcept nogil:
    """One (group of folded samples, group of channels, tile of output rows): ``y_tile =
    w_group @ col`` (the samples' columns side by side), then the epilogue."""
    cdef int64_t ng = task // g.ntiles, r0, n0
    cdef int64_t nc = _tile_span(g, task % g.ntiles, &r0)
    cdef int64_t chunk = ng // g.G, gi = ng - (ng // g.G) * g.G
    cdef int64_t nb = _fold_span(g, chunk, &n0)
    cdef int64_t ld = nb * nc, o, j
    cdef const real* wg = w + gi * g.Og * g.Kc
    cdef real* yt = y + (n0 * g.O + gi * g.Og) * g.L + r0 * g.OW
    cdef real* buf
    if g.direct:
        _gemm(False, False, g.Og, nc, g.Kc, wg, g.Kc, x + (n0 * g.C + gi * g.Cg) * g.S
              + r0 * g.OW, g.L, 0, yt, g.L)
    else:
        for j in range(nb):
            _columns(g, <real*>x + ((n0 + j) * g.C + gi * g.Cg) * g.S, col + j * nc, ld, r0,
                     r0 + nc // g.OW, False)
    if nb == 1:
        if not g.direct:
            _gemm(False, False, g.Og, nc, g.Kc, wg, g.Kc, col, nc, 0, yt, g.L)
        if bias == NULL and act == _ACT_NONE:
            return
        for o in range(g.Og):
            _bias_act(yt + o * g.L, yt + o * g.L, nc, bias, gi * g.Og + o, act)
        return
    # whole samples (nc == L): the product into scratch, then the epilogue writes y
    buf = col + g.Kc * ld
    _gemm(False, False, g.Og, ld, g.Kc, wg, g.Kc, col, ld, 0, buf, ld)
    for j in range(nb):
        for o in range(g.Og):
            _bias_act(yt + (j * g.O + o) * g.L, buf + o * ld + j * g.L, g.L, bias, gi * g.Og + o,
                      act)


cdef void _input_grad_task(const Geom* g, const real* u, const real* w, real* dx, real* col,
                           int64_t task) noexcept nogil:
    """One (group of folded samples, group of channels): ``col = w_group.T @ u_tile`` and
    col2im, tile after tile (folded: one product for the samples side by side)."""
    cdef int64_t chunk = task // g.G, gi = task - (task // g.G) * g.G
    cdef int64_t n0, nb = _fold_span(g, chunk, &n0)
    cdef int64_t ld = nb * g.L, j
    cdef real* dxg = dx + (n0 * g.C + gi * g.Cg) * g.S
    cdef const real* wg = w + gi * g.Og * g.Kc
    cdef int64_t tile, r0, nc
    cdef const real* ut
    cdef real* ubuf
    if nb > 1:
        ubuf = col + g.Kc * ld
        _gather_planes(g, u, ubuf, n0, nb, gi)
        _gemm(True, False, g.Kc, ld, g.Og, wg, g.Kc, ubuf, ld, 0, col, ld)
        for j in range(nb):
            dxg = dx + ((n0 + j) * g.C + gi * g.Cg) * g.S
            memset(dxg, 0, g.Cg * g.S * sizeof(real))
            _columns(g, dxg, col + j * g.L, ld, 0, g.R, True)
        return
    if not g.direct:
        memset(dxg, 0, g.Cg * g.S * sizeof(real))
    for tile in range(g.ntiles):
        nc = _tile_span(g, tile, &r0)
        ut = u + (n0 * g.O + gi * g.Og) * g.L + r0 * g.OW
        if g.direct:
            _gemm(True, False, g.Kc, nc, g.Og, wg, g.Kc, ut, g.L, 0, dxg + r0 * g.OW, g.L)
        else:
            _gemm(True, False, g.Kc, nc, g.Og, wg, g.Kc, ut, g.L, 0, col, nc)
            _columns(g, dxg, col, nc, r0, r0 + nc // g.OW, True)


cdef void _weight_grad_task(const Geom* g, const real* x, const real* gy, real* part,
                            real* col, int64_t nchunks, int64_t task) noexcept nogil:
    """One (chunk of samples, group): ``part_chunk = sum g_tile @ col.T`` in sample, tile order
    (folded: one product per ``fold`` samples of the chunk, side by side)."""
    cdef int64_t chunk = task // g.G, gi = task - (task // g.G) * g.G
    cdef int64_t per = (g.N + nchunks - 1) // nchunks
    cdef int64_t n0 = chunk * per, n1 = n0 + per
    if n1 > g.N:
        n1 = g.N
    cdef real* pw = part + (chunk * g.O + gi * g.Og) * g.Kc
    cdef int64_t n, tile, r0, nc, nb, j, ld
    cdef const real* xg
    cdef const real* gt
    cdef real* gbuf
    cdef real beta = 0
    if n0 >= n1:
        memset(pw, 0, g.Og * g.Kc * sizeof(real))
        return
    n = n0
    while n < n1:
        nb = g.fold if n + g.fold <= n1 else n1 - n
        if nb > 1:
            ld = nb * g.L
            gbuf = col + g.Kc * ld
            for j in range(nb):
                _columns(g, <real*>x + ((n + j) * g.C + gi * g.Cg) * g.S, col + j * g.L, ld, 0,
                         g.R, False)
            _gather_planes(g, gy, gbuf, n, nb, gi)
            _gemm(False, True, g.Og, g.Kc, ld, gbuf, ld, col, ld, beta, pw, g.Kc)
            beta = 1
            n += nb
            continue
        xg = x + (n * g.C + gi * g.Cg) * g.S
        for tile in range(g.ntiles):
            nc = _tile_span(g, tile, &r0)
            gt = gy + (n * g.O + gi * g.Og) * g.L + r0 * g.OW
            if g.direct:
                _gemm(False, True, g.Og, g.Kc, nc, gt, g.L, xg + r0 * g.OW, g.L, beta, pw, g.Kc)
            else:
                _columns(g, <real*>xg, col, nc, r0, r0 + nc // g.OW, False)
                _gemm(False, True, g.Og, g.Kc, nc, gt, g.L, col, nc, beta, pw, g.Kc)
            beta = 1
        n += 1


cdef inline void _task(int kind, const Geom* g, const real* a, const real* b, real* out,
                       const real* bias, int act, int64_t nchunks, real* col,
                       int64_t task) noexcept nogil:
    if kind == _FORWARD:
        _forward_task(g, a, b, out, bias, act, col, task)
    elif kind == _INPUT_GRAD:
        _input_grad_task(g, a, b, out, col, task)
    else:
        _weight_grad_task(g, a, b, out, col, nchunks, task)


cdef void _sum_chunks(const real* part, real* dw, int64_t wsize, int64_t nchunks,
                      int nthreads) noexcept nogil:
    """``dw = part[0] + part[1] + ...``, the chunks added in order for every element."""
    cdef int64_t e, c
    cdef real acc
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


cdef int _run(int kind, Geom* g, real* a, real* b, real* out, real* bias, int act,
              int64_t nchunks, int nthreads) except -1:
    """Run every task of ``kind`` on at most ``nthreads`` threads, each with its own columns.

    The tasks: (folded samples, group, tile) for the forward, (folded samples, group) for the
    input gradient, (chunk, group) for the weight gradient, whose chunks' partial sums are
    added at the end.  Folded tasks also hold the output-shaped operand side by side."""
    cdef int64_t ntasks = g.nfold * g.G * g.ntiles if kind == _FORWARD else \
        (g.nfold if kind == _INPUT_GRAD else nchunks) * g.G
    cdef int64_t colsize = 0 if g.direct else (
        g.Kc * g.tile_cols if g.fold == 1 else (g.Kc + g.Og) * g.L * g.fold)
    cdef int64_t wsize = g.O * g.Kc, t
    if ntasks == 0:
        return 0
    cdef int nt = nthreads if nthreads < ntasks else <int>ntasks
    if nt < 1:
        nt = 1
    cdef real* scratch = <real*>malloc((colsize * nt + 1) * sizeof(real))
    # one weight-gradient chunk writes dw itself; more write partial sums, added at the end
    cdef bint partial = kind == _WEIGHT_GRAD and nchunks > 1
    cdef real* target = <real*>malloc(nchunks * wsize * sizeof(real)) if partial else out
    if scratch == NULL or target == NULL:
        free(scratch)
        if partial:
            free(target)
        raise MemoryError()
    with nogil:
        if nt == 1:
            for t in range(ntasks):
                _task(kind, g, a, b, target, bias, act, nchunks, scratch, t)
        else:
            for t in prange(ntasks, num_threads=nt, schedule="dynamic"):
                _task(kind, g, a, b, target, bias, act, nchunks,
                      scratch + threadid() * colsize, t)
        if partial:
            _sum_chunks(target, out, wsize, nchunks, nthreads)
    if partial:
        free(target)
    free(scratch)
    return 0


cdef void* _data(cnp.ndarray a):
    return cnp.PyArray_DATA(a)


cdef int _prepare(Geom* g, str name, cnp.ndarray x, cnp.ndarray w, cnp.ndarray y,
                  cnp.ndarray out, tuple stride, tuple pad, tuple dilation, int64_t groups,
                  int64_t tile_rows, int64_t fold) except -1:
    """Check BLAS and the arguments, fill ``g`` from the input ``x``-, weight ``w``- and output
    ``y``-shaped arrays; ``out`` is the one written."""
    if not gemm_available():
        raise RuntimeError("conv kernels need NumPy's BLAS (fastgraph._numpy_blas.load())")
    _geom(g, x, w, y, stride, pad, dilation, groups, tile_rows, fold)
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError(f"{name}: the output is read-only")
    return 0


cdef int _run_typed(int kind, Geom* g, cnp.ndarray a, cnp.ndarray b, cnp.ndarray out,
                    void* bias, int act, int64_t nchunks, int nthreads) except -1:
    if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT32:
        return _run[float](kind, g, <float*>_data(a), <float*>_data(b), <float*>_data(out),
                           <float*>bias, act, nchunks, nthreads)
    return _run[double](kind, g, <double*>_data(a), <double*>_data(b), <double*>_data(out),
                        <double*>bias, act, nchunks, nthreads)


def conv_forward(cnp.ndarray x, cnp.ndarray w, cnp.ndarray y, tuple stride, tuple pad,
                 tuple dilation, int64_t groups, int64_t tile_rows, int nthreads,
                 cnp.ndarray bias=None, int act=_ACT_NONE, int64_t fold=1):
    """``y = conv(x, w)`` (then ``act(y + bias)``), written into ``y``.

    ``pad``: the leading paddings (the trailing ones are implied by ``y``'s shape); ``bias``:
    ``O`` values of ``y``'s dtype, or None; ``fold``: samples per product (columns side by
    side), where a tile is a whole sample.

    >>> conv_forward(x, w, y, (1, 1, 1), (0, 2, 2), (1, 1, 1), 1, 0, 2)  # doctest: +SKIP
    """
    cdef Geom g
    _prepare(&g, "conv_forward", x, w, y, y, stride, pad, dilation, groups, tile_rows, fold)
    if act != _ACT_NONE and act != _ACT_RELU:
        raise ValueError(f"conv_forward: unknown activation code {act}")
    cdef void* pb = NULL
    if bias is not None:
        if cnp.PyArray_TYPE(bias) != cnp.PyArray_TYPE(x) or cnp.PyArray_SIZE(bias) != g.O \
                or not cnp.PyArray_IS_C_CONTIGUOUS(bias):
            raise ValueError("conv_forward: the bias must be O contiguous values of x's dtype")
        pb = _data(bias)
    _run_typed(_FORWARD, &g, x, w, y, pb, act, 1, nthreads)


def conv_input_grad(cnp.ndarray u, cnp.ndarray w, cnp.ndarray dx, tuple stride, tuple pad,
                    tuple dilation, int64_t groups, int64_t tile_rows, int nthreads,
                    int64_t fold=1):
    """``dx = conv_transpose(u, w)``: the gradient of ``conv(x, w)`` with respect to ``x`` for
    the output gradient ``u``, written into ``dx`` (shaped like ``x``)."""
    cdef Geom g
    _prepare(&g, "conv_input_grad", dx, w, u, dx, stride, pad, dilation, groups, tile_rows,
             fold)
    _run_typed(_INPUT_GRAD, &g, u, w, dx, NULL, _ACT_NONE, 1, nthreads)


def conv_weight_grad(cnp.ndarray x, cnp.ndarray gy, cnp.ndarray dw, tuple stride, tuple pad,
                     tuple dilation, int64_t groups, int64_t tile_rows, int64_t nchunks,
                     int nthreads, int64_t fold=1):
    """``dw``: the gradient of ``conv(x, w)`` with respect to ``w`` for the output gradient
    ``gy``, written into ``dw`` (shaped like ``w``); the samples are summed in ``nchunks``
    partial sums, added in order."""
    cdef Geom g
    _prepare(&g, "conv_weight_grad", x, dw, gy, dw, stride, pad, dilation, groups, tile_rows,
             fold)
    if g.N == 0:
        dw.fill(0)
        return
    _run_typed(_WEIGHT_GRAD, &g, x, gy, dw, NULL, _ACT_NONE, max(1, min(nchunks, g.N)),
               nthreads)
