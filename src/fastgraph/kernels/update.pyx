"""In-place parameter updates for the eager optimizers (``fastgraph.eager.optim``).

``p -= lr * g`` in NumPy makes a temporary the size of the parameter and passes over memory
twice (multiply into the temporary, subtract from it).  :func:`sub_scaled` does the same
arithmetic in one pass with no temporary, rounding exactly as NumPy does: ``lr`` is converted
to the parameter's dtype (a Python float is a weak scalar, NEP 50), the product is rounded to
that dtype, then subtracted -- contraction into FMA is off.  The optimizers keep the policy;
this is only the loop.

Each block of elements is computed into a small buffer first and copied over the parameter only
if it raised no floating-point exception; at the first block that did, the function stops and
reports how far it got, so NumPy redoes the rest and warns or raises as ``np.errstate`` says.
"""
cimport cython
cimport numpy as cnp
from libc.math cimport isinf
from libc.string cimport memcpy

cnp.import_array()

from fastgraph.kernels.fenv cimport (
    fetestexcept, feclearexcept, FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW, FE_INVALID,
)

cdef extern from *:
    """
    #include "fg_fp_exact_begin.h"   /* no FMA contraction: NumPy's rounding */
    /* Elements per block: small enough that the buffer stays in L1. */
    #define FG_UPD_BLOCK 1024
    #define FG_SUB_SCALED(NAME, T) \
    static void NAME(T *p, const T *g, T lr, Py_ssize_t lo, Py_ssize_t hi, T *buf) { \
        Py_ssize_t i; \
        for (i = lo; i < hi; i++) { T t = lr * g[i]; buf[i - lo] = p[i] - t; } \
    }
    FG_SUB_SCALED(fg_sub_scaled_f, float)
    FG_SUB_SCALED(fg_sub_scaled_d, double)
    #include "fg_fp_exact_end.h"
    """
    const Py_ssize_t BLOCK "FG_UPD_BLOCK"
    void fg_sub_scaled_f(float*, const float*, float, Py_ssize_t, Py_ssize_t, float*) noexcept nogil
    void fg_sub_scaled_d(double*, const double*, double, Py_ssize_t, Py_ssize_t,
                         double*) noexcept nogil

cdef int _FP_FLAGS = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID
cdef int _FLAGS = cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_ALIGNED | cnp.NPY_ARRAY_WRITEABLE


cdef inline bint _usable(object a, int typenum):
    if type(a) is not cnp.ndarray:
        return False
    cdef cnp.ndarray arr = <cnp.ndarray>a
    return ((cnp.PyArray_FLAGS(arr) & _FLAGS) == _FLAGS and cnp.PyArray_TYPE(arr) == typenum
            and cnp.PyArray_ISNOTSWAPPED(arr))


@cython.boundscheck(False)
def sub_scaled(object p, object g, double lr):
    """``p -= lr * g`` in place, as NumPy computes it, for C-contiguous float32/float64 arrays
    of one shape and dtype (``g`` need not be writeable).

    Returns how many leading elements (in C order) were updated: ``p.size`` when done, less when
    it stopped at a floating-point exception or when the operands are not ones it handles
    (0: other dtypes or layouts, or ``g`` overlapping ``p`` other than exactly) -- the caller
    finishes the rest with NumPy."""
    if type(p) is not cnp.ndarray or type(g) is not cnp.ndarray:
        return 0
    cdef cnp.ndarray P = <cnp.ndarray>p, G = <cnp.ndarray>g
    cdef int t = cnp.PyArray_TYPE(P)
    if t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE:
        return 0
    if not _usable(P, t):
        return 0
    if (cnp.PyArray_TYPE(G) != t or not cnp.PyArray_ISNOTSWAPPED(G)
            or (cnp.PyArray_FLAGS(G) & (cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_ALIGNED))
            != (cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_ALIGNED)):
        return 0
    cdef int nd = cnp.PyArray_NDIM(P), k
    if nd != cnp.PyArray_NDIM(G):
        return 0
    for k in range(nd):
        if cnp.PyArray_DIMS(P)[k] != cnp.PyArray_DIMS(G)[k]:
            return 0
    cdef Py_ssize_t n = cnp.PyArray_SIZE(P), lo = 0, hi
    cdef size_t isz = 4 if t == cnp.NPY_FLOAT else 8
    cdef char* pp = cnp.PyArray_BYTES(P)
    cdef char* gp = cnp.PyArray_BYTES(G)
    # a gradient that is the parameter itself is fine block by block; a shifted overlap is not
    if pp != gp and pp < gp + n * isz and gp < pp + n * isz:
        return 0
    cdef double dbuf[BLOCK]
    cdef float* fbuf = <float*>dbuf
    cdef float lrf = <float>lr
    if t == cnp.NPY_FLOAT and isinf(lrf) and not isinf(lr):
        return 0  # lr beyond float32's range: NumPy's cast warns; let it
    with nogil:
        if fetestexcept(_FP_FLAGS):
            feclearexcept(_FP_FLAGS)
        while lo < n:
            hi = lo + BLOCK if n - lo > BLOCK else n
            if t == cnp.NPY_FLOAT:
                fg_sub_scaled_f(<float*>pp, <const float*>gp, lrf, lo, hi, fbuf)
            else:
                fg_sub_scaled_d(<double*>pp, <const double*>gp, lr, lo, hi, dbuf)
            if fetestexcept(_FP_FLAGS):
                feclearexcept(_FP_FLAGS)
                break
            memcpy(pp + lo * isz, dbuf, (hi - lo) * isz)
            lo = hi
    return lo
