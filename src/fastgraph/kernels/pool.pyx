"""Pooling loops over ``(P, D, H, W)`` planes (``P = N * C``), OpenMP over planes.

Windows are boxes given per spatial axis by tables the policy (``fastgraph.ops.pooling``)
computes, so regular, padded, ceil-mode and adaptive pools share the loops:

* max pooling: window ``o`` along an axis reads ``start[o] + j * dilation`` for ``j <
  count[o]``, positions outside ``[0, n)`` skipped (PyTorch's implicit ``-inf`` padding);
  :func:`max_pool_indices` writes the flat index (into the plane) of the first maximum, NaN
  winning as in PyTorch (:func:`max_pool2x2_indices`: the same for 2x2 windows at stride 2,
  without tables); :func:`take_pooled` gathers values at indices and
  :func:`scatter_pooled` adds gradients back (each plane in index order);
* average pooling: window ``o`` sums ``[lo[o], hi[o])`` and divides by the product of the axes'
  ``count[o]`` (or ``divisor``); :func:`avg_pool_backward` spreads each gradient over its window.

Every plane is one task computed in a fixed order, so results do not depend on the thread count.
"""
cimport cython
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdint cimport int64_t

cnp.import_array()

ctypedef fused real:
    float
    double


cdef struct Tab:
    int64_t n           # input length along the axis
    int64_t m           # output length
    const int64_t* a    # max: start; avg: lo
    const int64_t* b    # max: count; avg: hi
    const int64_t* c    # avg: divisor factor (unused by max)
    int64_t dil


cdef int _tables(Tab* t, tuple tabs, tuple in_shape, tuple dil, list keep) except -1:
    """Fill three ``Tab`` from Python tables ``((a, b, c), ...)`` of int64 arrays."""
    cdef int i
    cdef cnp.ndarray arr
    if len(tabs) != 3 or len(in_shape) != 3 or len(dil) != 3:
        raise ValueError("pool kernels take tables for 3 axes")
    for i in range(3):
        row = tabs[i]
        m = -1
        ptrs = []
        for j in range(3):
            arr = <cnp.ndarray>row[j]
            if cnp.PyArray_TYPE(arr) != cnp.NPY_INT64 or not cnp.PyArray_IS_C_CONTIGUOUS(arr) \
                    or cnp.PyArray_NDIM(arr) != 1:
                raise ValueError("pool tables are contiguous 1-D int64 arrays")
            if m < 0:
                m = cnp.PyArray_DIM(arr, 0)
            elif cnp.PyArray_DIM(arr, 0) != m:
                raise ValueError("pool tables of one axis have one length")
            keep.append(arr)
        t[i].n = in_shape[i]
        t[i].m = m
        t[i].a = <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>row[0])
        t[i].b = <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>row[1])
        t[i].c = <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>row[2])
        t[i].dil = dil[i]
        if t[i].dil < 1:
            raise ValueError("pool dilation must be >= 1")
    return 0


cdef int _check(cnp.ndarray a, int ndim, int type_num, str what) except -1:
    if cnp.PyArray_NDIM(a) != ndim or cnp.PyArray_TYPE(a) != type_num or \
            not cnp.PyArray_IS_C_CONTIGUOUS(a) or not cnp.PyArray_ISALIGNED(a):
        raise ValueError(f"pool kernels: {what} must be an aligned C-contiguous {ndim}-D array "
                         f"of the expected dtype")
    return 0


cdef int _check_windows(Tab* t, bint is_max) except -1:
    """Every window stays inside its axis (max: taps may fall outside, they are skipped)."""
    cdef int i
    cdef int64_t o, lo, hi
    for i in range(3):
        for o in range(t[i].m):
            if is_max:
                if t[i].b[o] < 0:
                    raise ValueError("pool: negative window size")
            else:
                lo, hi = t[i].a[o], t[i].b[o]
                if lo < 0 or hi > t[i].n or lo > hi or t[i].c[o] < 0:
                    raise ValueError("pool: a window leaves its axis")
    return 0


# ---- max pooling --------------------------------------------------------------------------------
cdef void _max_plane(const real* x, int64_t* idx, const Tab* t) noexcept nogil:
    cdef int64_t od, oh, ow, jd, jh, jw, id_, ih, iw, best_i, k
    cdef real best, v
    cdef int64_t H = t[1].n, W = t[2].n
    k = 0
    for od in range(t[0].m):
        for oh in range(t[1].m):
            for ow in range(t[2].m):
                best_i = -1
                best = 0
                for jd in range(t[0].b[od]):
                    id_ = t[0].a[od] + jd * t[0].dil
                    if id_ < 0 or id_ >= t[0].n:
                        continue
                    for jh in range(t[1].b[oh]):
                        ih = t[1].a[oh] + jh * t[1].dil
                        if ih < 0 or ih >= H:
                            continue
                        for jw in range(t[2].b[ow]):
                            iw = t[2].a[ow] + jw * t[2].dil
                            if iw < 0 or iw >= W:
                                continue
                            v = x[(id_ * H + ih) * W + iw]
                            if best_i < 0 or v > best or (v != v and best == best):
                                best = v
                                best_i = (id_ * H + ih) * W + iw
                idx[k] = best_i
                k += 1


cdef void _max_all(const real* x, int64_t* idx, const Tab* t, int64_t P, int64_t S, int64_t M,
                   int nthreads) noexcept nogil:
    cdef int64_t p
    if nthreads <= 1 or P < 2:
        for p in range(P):
            _max_plane(x + p * S, idx + p * M, t)
    else:
        for p in prange(P, num_threads=nthreads, schedule="static"):
            _max_plane(x + p * S, idx + p * M, t)


def max_pool_indices(cnp.ndarray x, cnp.ndarray idx, tuple tabs, tuple dilation, int nthreads):
    """For each plane of ``x`` ``(P, D, H, W)``, the flat index of each window's maximum into
    ``idx`` ``(P, OD, OH, OW)`` int64 (-1 for a window without a position)."""
    cdef int t = cnp.PyArray_TYPE(x)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError("max_pool_indices takes float32 or float64 values")
    _check(x, 4, t, "x")
    _check(idx, 4, cnp.NPY_INT64, "idx")
    cdef Tab tb[3]
    cdef list keep = []
    _tables(tb, tabs, (x.shape[1], x.shape[2], x.shape[3]), dilation, keep)
    _check_windows(tb, True)
    if idx.shape[0] != x.shape[0] or idx.shape[1] != tb[0].m or idx.shape[2] != tb[1].m or \
            idx.shape[3] != tb[2].m:
        raise ValueError("max_pool_indices: the index array does not fit the tables")
    if not cnp.PyArray_ISWRITEABLE(idx):
        raise ValueError("max_pool_indices: the output is read-only")
    cdef int64_t P = x.shape[0], S = x.shape[1] * x.shape[2] * x.shape[3]
    cdef int64_t M = tb[0].m * tb[1].m * tb[2].m
    cdef void* px = cnp.PyArray_DATA(x)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(idx)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            _max_all[float](<float*>px, pi, tb, P, S, M, nthreads)
        else:
            _max_all[double](<double*>px, pi, tb, P, S, M, nthreads)


cdef inline void _max2_step(real v, int64_t i, real* best, int64_t* best_i) noexcept nogil:
    # the generic rule: a larger value, or the first NaN, replaces the best so far
    if v > best[0] or (v != v and best[0] == best[0]):
        best[0] = v
        best_i[0] = i


cdef void _max2x2_plane(const real* x, int64_t* idx, int64_t W, int64_t OH,
                        int64_t OW) noexcept nogil:
    """2x2 windows, stride 2, inside the plane: the first maximum of each, in the generic
    order (row by row)."""
    cdef int64_t oh, ow, i
    cdef int64_t best_i
    cdef real best
    cdef const real* a
    for oh in range(OH):
        a = x + 2 * oh * W
        for ow in range(OW):
            i = 2 * oh * W + 2 * ow
            best = a[2 * ow]
            best_i = i
            _max2_step(a[2 * ow + 1], i + 1, &best, &best_i)
            _max2_step(a[W + 2 * ow], i + W, &best, &best_i)
            _max2_step(a[W + 2 * ow + 1], i + W + 1, &best, &best_i)
            idx[oh * OW + ow] = best_i


cdef void _max2x2_all(const real* x, int64_t* idx, int64_t P, int64_t H, int64_t W,
                      int64_t OH, int64_t OW, int nthreads) noexcept nogil:
    cdef int64_t p
    if nthreads <= 1 or P < 2:
        for p in range(P):
            _max2x2_plane(x + p * H * W, idx + p * OH * OW, W, OH, OW)
    else:
        for p in prange(P, num_threads=nthreads, schedule="static"):
            _max2x2_plane(x + p * H * W, idx + p * OH * OW, W, OH, OW)


def max_pool2x2_indices(cnp.ndarray x, cnp.ndarray idx, int nthreads):
    """:func:`max_pool_indices` for 2x2 windows at stride 2 without padding or dilation (the
    windows ``(2 oh + {0, 1}, 2 ow + {0, 1})``): planes ``x`` ``(P, H, W)``, ``idx`` ``(P, OH,
    OW)`` with ``2 OH <= H`` and ``2 OW <= W``; the same indices, without the tables' checks."""
    cdef int t = cnp.PyArray_TYPE(x)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError("max_pool2x2_indices takes float32 or float64 values")
    _check(x, 3, t, "x")
    _check(idx, 3, cnp.NPY_INT64, "idx")
    cdef int64_t P = x.shape[0], H = x.shape[1], W = x.shape[2]
    cdef int64_t OH = idx.shape[1], OW = idx.shape[2]
    if idx.shape[0] != P or 2 * OH > H or 2 * OW > W:
        raise ValueError("max_pool2x2_indices: the index array does not fit the planes")
    if not cnp.PyArray_ISWRITEABLE(idx):
        raise ValueError("max_pool2x2_indices: the output is read-only")
    cdef void* px = cnp.PyArray_DATA(x)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(idx)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            _max2x2_all[float](<float*>px, pi, P, H, W, OH, OW, nthreads)
        else:
            _max2x2_all[double](<double*>px, pi, P, H, W, OH, OW, nthreads)


cdef void _take(const real* x, const int64_t* idx, real* out, int64_t P, int64_t S, int64_t M,
                int nthreads) noexcept nogil:
    cdef int64_t p, j, i
    cdef const real* xp
    cdef const int64_t* ip
    cdef real* op
    if nthreads <= 1 or P < 2:
        for p in range(P):
            xp = x + p * S
            ip = idx + p * M
            op = out + p * M
            for j in range(M):
                i = ip[j]
                op[j] = xp[i] if i >= 0 else 0
    else:
        for p in prange(P, num_threads=nthreads, schedule="static"):
            for j in range(M):
                i = idx[p * M + j]
                out[p * M + j] = x[p * S + i] if i >= 0 else 0


cdef int _check_indices(const int64_t* idx, int64_t n, int64_t S) except -1 nogil:
    cdef int64_t j
    for j in range(n):
        if idx[j] < -1 or idx[j] >= S:
            with gil:
                raise IndexError(f"pool indices must lie in [0, {S}), got {idx[j]}")
    return 0


cdef void _scatter(const real* g, const int64_t* idx, real* out, int64_t P, int64_t S,
                   int64_t M, int nthreads) noexcept nogil:
    cdef int64_t p, j, i
    if nthreads <= 1 or P < 2:
        for p in range(P):
            for j in range(M):
                i = idx[p * M + j]
                if i >= 0:
                    out[p * S + i] += g[p * M + j]
    else:
        for p in prange(P, num_threads=nthreads, schedule="static"):
            for j in range(M):
                i = idx[p * M + j]
                if i >= 0:
                    out[p * S + i] += g[p * M + j]


cdef _indexed_run(str name, cnp.ndarray src, cnp.ndarray idx, cnp.ndarray out, int nthreads,
                  bint scatter):
    """Check and run :func:`take_pooled` (``src`` the planes ``(P, S)``, ``out`` ``(P, M)``)
    or, with ``scatter``, :func:`scatter_pooled` (``src`` ``(P, M)``, ``out`` the planes)."""
    cdef int t = cnp.PyArray_TYPE(src)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError(f"{name} takes float32 or float64 values")
    _check(src, 2, t, "g" if scatter else "x")
    _check(idx, 2, cnp.NPY_INT64, "idx")
    _check(out, 2, t, "out")
    cdef cnp.ndarray pooled = src if scatter else out
    if idx.shape[0] != src.shape[0] or out.shape[0] != src.shape[0] or \
            pooled.shape[1] != idx.shape[1]:
        raise ValueError(f"{name}: the planes do not fit")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError(f"{name}: the output is read-only")
    cdef int64_t P = src.shape[0], M = idx.shape[1]
    cdef int64_t S = out.shape[1] if scatter else src.shape[1]
    cdef void* ps = cnp.PyArray_DATA(src)
    cdef void* po = cnp.PyArray_DATA(out)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(idx)
    _check_indices(pi, P * M, S)
    with nogil:
        if scatter and t == cnp.NPY_FLOAT32:
            _scatter[float](<float*>ps, pi, <float*>po, P, S, M, nthreads)
        elif scatter:
            _scatter[double](<double*>ps, pi, <double*>po, P, S, M, nthreads)
        elif t == cnp.NPY_FLOAT32:
            _take[float](<float*>ps, pi, <float*>po, P, S, M, nthreads)
        else:
            _take[double](<double*>ps, pi, <double*>po, P, S, M, nthreads)


def take_pooled(cnp.ndarray x, cnp.ndarray idx, cnp.ndarray out, int nthreads):
    """``out[p, j] = x[p, idx[p, j]]`` for planes ``x`` ``(P, S)``, ``idx`` and ``out``
    ``(P, M)`` (0 where an index is -1)."""
    _indexed_run("take_pooled", x, idx, out, nthreads, False)


def scatter_pooled(cnp.ndarray g, cnp.ndarray idx, cnp.ndarray out, int nthreads):
    """``out[p, idx[p, j]] += g[p, j]`` in index order, for ``out`` ``(P, S)`` of zeros (or
    anything to add to), ``g`` and ``idx`` ``(P, M)``."""
    _indexed_run("scatter_pooled", g, idx, out, nthreads, True)


# ---- average pooling ------------------------------------------------------------------------------
cdef void _avg_plane(const real* src, real* dst, const Tab* t, double divisor,
                     bint back) noexcept nogil:
    """One plane's window means (``src`` the plane, ``dst`` its means) or, with ``back``, the
    adjoint (``src`` the means' gradient; ``g / divisor`` added over each window into ``dst``)."""
    cdef int64_t od, oh, ow, id_, ih, iw, k = 0
    cdef int64_t H = t[1].n, W = t[2].n
    cdef real acc, div
    for od in range(t[0].m):
        for oh in range(t[1].m):
            for ow in range(t[2].m):
                if divisor > 0:
                    div = <real>divisor
                else:
                    div = <real>(t[0].c[od] * t[1].c[oh] * t[2].c[ow])
                acc = src[k] / div if back else 0
                for id_ in range(t[0].a[od], t[0].b[od]):
                    for ih in range(t[1].a[oh], t[1].b[oh]):
                        for iw in range(t[2].a[ow], t[2].b[ow]):
                            if back:
                                dst[(id_ * H + ih) * W + iw] += acc
                            else:
                                acc = acc + src[(id_ * H + ih) * W + iw]
                if not back:
                    dst[k] = acc / div
                k += 1


cdef void _avg_all(const real* x, real* out, const Tab* t, double divisor, int64_t P,
                   int64_t S, int64_t M, bint backward, int nthreads) noexcept nogil:
    cdef int64_t p
    # the planes are S values apart, their means M
    cdef int64_t sstep = M if backward else S, dstep = S if backward else M
    if nthreads <= 1 or P < 2:
        for p in range(P):
            _avg_plane(x + p * sstep, out + p * dstep, t, divisor, backward)
    else:
        for p in prange(P, num_threads=nthreads, schedule="static"):
            _avg_plane(x + p * sstep, out + p * dstep, t, divisor, backward)


cdef _avg_run(str name, cnp.ndarray src, cnp.ndarray dst, tuple tabs, double divisor,
              int nthreads, bint backward):
    """Check and run :func:`avg_pool` (``src`` the planes, ``dst`` the means) or, with
    ``backward``, :func:`avg_pool_backward` (``src`` the means' gradient, ``dst`` the planes')."""
    cdef int t = cnp.PyArray_TYPE(src)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError(f"{name} takes float32 or float64 values")
    _check(src, 4, t, "g" if backward else "x")
    _check(dst, 4, t, "dx" if backward else "out")
    cdef cnp.ndarray planes = dst if backward else src
    cdef cnp.ndarray means = src if backward else dst
    cdef Tab tb[3]
    cdef list keep = []
    _tables(tb, tabs, (planes.shape[1], planes.shape[2], planes.shape[3]), (1, 1, 1), keep)
    _check_windows(tb, False)
    if means.shape[0] != planes.shape[0] or means.shape[1] != tb[0].m or \
            means.shape[2] != tb[1].m or means.shape[3] != tb[2].m or \
            not cnp.PyArray_ISWRITEABLE(dst):
        raise ValueError(f"{name}: the {'gradient' if backward else 'output'} does not fit the "
                         f"tables (or is read-only)")
    cdef int64_t P = planes.shape[0], S = planes.shape[1] * planes.shape[2] * planes.shape[3]
    cdef int64_t M = tb[0].m * tb[1].m * tb[2].m
    cdef void* ps = cnp.PyArray_DATA(src)
    cdef void* pd = cnp.PyArray_DATA(dst)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            _avg_all[float](<float*>ps, <float*>pd, tb, divisor, P, S, M, backward, nthreads)
        else:
            _avg_all[double](<double*>ps, <double*>pd, tb, divisor, P, S, M, backward,
                             nthreads)


def avg_pool(cnp.ndarray x, cnp.ndarray out, tuple tabs, double divisor, int nthreads):
    """Window means of planes ``x`` ``(P, D, H, W)`` into ``out`` ``(P, OD, OH, OW)``; the
    divisor is ``divisor`` when positive, else the product of the tables' counts."""
    _avg_run("avg_pool", x, out, tabs, divisor, nthreads, False)


def avg_pool_backward(cnp.ndarray g, cnp.ndarray dx, tuple tabs, double divisor, int nthreads):
    """The adjoint of :func:`avg_pool`: adds ``g / divisor`` over each window into ``dx``."""
    _avg_run("avg_pool_backward", g, dx, tabs, divisor, nthreads, True)
