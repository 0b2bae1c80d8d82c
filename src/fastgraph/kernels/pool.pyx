"""Pooling loops over ``(P, D, H, W)`` planes (``P = N * C``), OpenMP over planes.

Windows are boxes given per spatial axis by tables the policy (``fastgraph.ops.pooling``)
computes, so regular, padded, ceil-mode and adaptive pools share the loops:

* max pooling: window ``o`` along an axis reads ``start[o] + j * dilation`` for ``j <
  count[o]``, positions outside ``[0, n)`` skipped (PyTorch's implicit ``-inf`` padding);
  :func:`max_pool_indices` writes the flat index (into the plane) of the first maximum, NaN
  winning as in PyTorch; :func:`take_pooled` gathers values at indices and
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


def take_pooled(cnp.ndarray x, cnp.ndarray idx, cnp.ndarray out, int nthreads):
    """``out[p, j] = x[p, idx[p, j]]`` for planes ``x`` ``(P, S)``, ``idx`` and ``out``
    ``(P, M)`` (0 where an index is -1)."""
    cdef int t = cnp.PyArray_TYPE(x)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError("take_pooled takes float32 or float64 values")
    _check(x, 2, t, "x")
    _check(idx, 2, cnp.NPY_INT64, "idx")
    _check(out, 2, t, "out")
    if idx.shape[0] != x.shape[0] or out.shape[0] != x.shape[0] or out.shape[1] != idx.shape[1]:
        raise ValueError("take_pooled: the planes do not fit")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("take_pooled: the output is read-only")
    cdef int64_t P = x.shape[0], S = x.shape[1], M = idx.shape[1]
    cdef void* px = cnp.PyArray_DATA(x)
    cdef void* po = cnp.PyArray_DATA(out)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(idx)
    _check_indices(pi, P * M, S)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            _take[float](<float*>px, pi, <float*>po, P, S, M, nthreads)
        else:
            _take[double](<double*>px, pi, <double*>po, P, S, M, nthreads)


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


def scatter_pooled(cnp.ndarray g, cnp.ndarray idx, cnp.ndarray out, int nthreads):
    """``out[p, idx[p, j]] += g[p, j]`` in index order, for ``out`` ``(P, S)`` of zeros (or
    anything to add to), ``g`` and ``idx`` ``(P, M)``."""
    cdef int t = cnp.PyArray_TYPE(g)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError("scatter_pooled takes float32 or float64 values")
    _check(g, 2, t, "g")
    _check(idx, 2, cnp.NPY_INT64, "idx")
    _check(out, 2, t, "out")
    if idx.shape[0] != g.shape[0] or out.shape[0] != g.shape[0] or idx.shape[1] != g.shape[1]:
        raise ValueError("scatter_pooled: the planes do not fit")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("scatter_pooled: the output is read-only")
    cdef int64_t P = g.shape[0], S = out.shape[1], M = g.shape[1]
    cdef void* pg = cnp.PyArray_DATA(g)
    cdef void* po = cnp.PyArray_DATA(out)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(idx)
    _check_indices(pi, P * M, S)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            _scatter[float](<float*>pg, pi, <float*>po, P, S, M, nthreads)
        else:
            _scatter[double](<double*>pg, pi, <double*>po, P, S, M, nthreads)


# ---- average pooling ------------------------------------------------------------------------------
cdef void _avg_plane(const real* x, real* out, const Tab* t, double divisor) noexcept nogil:
    cdef int64_t od, oh, ow, id_, ih, iw, k
    cdef int64_t H = t[1].n, W = t[2].n
    cdef real acc, div
    k = 0
    for od in range(t[0].m):
        for oh in range(t[1].m):
            for ow in range(t[2].m):
                acc = 0
                for id_ in range(t[0].a[od], t[0].b[od]):
                    for ih in range(t[1].a[oh], t[1].b[oh]):
                        for iw in range(t[2].a[ow], t[2].b[ow]):
                            acc = acc + x[(id_ * H + ih) * W + iw]
                if divisor > 0:
                    div = <real>divisor
                else:
                    div = <real>(t[0].c[od] * t[1].c[oh] * t[2].c[ow])
                out[k] = acc / div
                k += 1


cdef void _avg_back_plane(const real* g, real* dx, const Tab* t, double divisor) noexcept nogil:
    cdef int64_t od, oh, ow, id_, ih, iw, k
    cdef int64_t H = t[1].n, W = t[2].n
    cdef real v, div
    k = 0
    for od in range(t[0].m):
        for oh in range(t[1].m):
            for ow in range(t[2].m):
                if divisor > 0:
                    div = <real>divisor
                else:
                    div = <real>(t[0].c[od] * t[1].c[oh] * t[2].c[ow])
                v = g[k] / div
                k += 1
                for id_ in range(t[0].a[od], t[0].b[od]):
                    for ih in range(t[1].a[oh], t[1].b[oh]):
                        for iw in range(t[2].a[ow], t[2].b[ow]):
                            dx[(id_ * H + ih) * W + iw] += v


cdef void _avg_all(const real* x, real* out, const Tab* t, double divisor, int64_t P,
                   int64_t S, int64_t M, bint backward, int nthreads) noexcept nogil:
    cdef int64_t p
    if nthreads <= 1 or P < 2:
        for p in range(P):
            if backward:
                _avg_back_plane(x + p * M, out + p * S, t, divisor)
            else:
                _avg_plane(x + p * S, out + p * M, t, divisor)
    else:
        for p in prange(P, num_threads=nthreads, schedule="static"):
            if backward:
                _avg_back_plane(x + p * M, out + p * S, t, divisor)
            else:
                _avg_plane(x + p * S, out + p * M, t, divisor)


def avg_pool(cnp.ndarray x, cnp.ndarray out, tuple tabs, double divisor, int nthreads):
    """Window means of planes ``x`` ``(P, D, H, W)`` into ``out`` ``(P, OD, OH, OW)``; the
    divisor is ``divisor`` when positive, else the product of the tables' counts."""
    cdef int t = cnp.PyArray_TYPE(x)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError("avg_pool takes float32 or float64 values")
    _check(x, 4, t, "x")
    _check(out, 4, t, "out")
    cdef Tab tb[3]
    cdef list keep = []
    _tables(tb, tabs, (x.shape[1], x.shape[2], x.shape[3]), (1, 1, 1), keep)
    _check_windows(tb, False)
    if out.shape[0] != x.shape[0] or out.shape[1] != tb[0].m or out.shape[2] != tb[1].m or \
            out.shape[3] != tb[2].m or not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("avg_pool: the output does not fit the tables (or is read-only)")
    cdef int64_t P = x.shape[0], S = x.shape[1] * x.shape[2] * x.shape[3]
    cdef int64_t M = tb[0].m * tb[1].m * tb[2].m
    cdef void* px = cnp.PyArray_DATA(x)
    cdef void* po = cnp.PyArray_DATA(out)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            _avg_all[float](<float*>px, <float*>po, tb, divisor, P, S, M, False, nthreads)
        else:
            _avg_all[double](<double*>px, <double*>po, tb, divisor, P, S, M, False, nthreads)


def avg_pool_backward(cnp.ndarray g, cnp.ndarray dx, tuple tabs, double divisor, int nthreads):
    """The adjoint of :func:`avg_pool`: adds ``g / divisor`` over each window into ``dx``."""
    cdef int t = cnp.PyArray_TYPE(g)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        raise TypeError("avg_pool_backward takes float32 or float64 values")
    _check(g, 4, t, "g")
    _check(dx, 4, t, "dx")
    cdef Tab tb[3]
    cdef list keep = []
    _tables(tb, tabs, (dx.shape[1], dx.shape[2], dx.shape[3]), (1, 1, 1), keep)
    _check_windows(tb, False)
    if g.shape[0] != dx.shape[0] or g.shape[1] != tb[0].m or g.shape[2] != tb[1].m or \
            g.shape[3] != tb[2].m or not cnp.PyArray_ISWRITEABLE(dx):
        raise ValueError("avg_pool_backward: the gradient does not fit the tables")
    cdef int64_t P = dx.shape[0], S = dx.shape[1] * dx.shape[2] * dx.shape[3]
    cdef int64_t M = tb[0].m * tb[1].m * tb[2].m
    cdef void* pg = cnp.PyArray_DATA(g)
    cdef void* pd = cnp.PyArray_DATA(dx)
    with nogil:
        if t == cnp.NPY_FLOAT32:
            _avg_all[float](<float*>pg, <float*>pd, tb, divisor, P, S, M, True, nthreads)
        else:
            _avg_all[double](<double*>pg, <double*>pd, tb, divisor, P, S, M, True, nthreads)
