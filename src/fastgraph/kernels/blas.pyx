"""Two BLAS calls NumPy's API cannot make, on NumPy's own BLAS (``fastgraph._numpy_blas``).

* :func:`scaled_matmul`: ``out = alpha * (a @ b)`` as one ``gemm`` with BLAS's own ``alpha``.
  The kernel scales each finished dot product once, so this is ``np.multiply(np.matmul(a, b),
  alpha)`` bit for bit -- as long as BLAS does not split the sum over ``k`` into panels (it
  would then scale each panel): the ``blas`` pass checks that on the product's own shape
  before using it.
* :func:`sub_inplace`: ``v -= s`` as ``axpy`` with ``alpha = -1`` (``-1 * s`` is exact, so the
  one rounding is that of ``v - s``), run by BLAS's own threads.

Both take the operands only in the layouts NumPy's ``matmul`` itself hands to BLAS as they
are, and return ``False`` (nothing written) otherwise, so the caller can compute the same thing
with NumPy.  :func:`scaled_matmul` also reports a floating-point exception raised on the
calling thread (as NumPy's ``matmul`` would see it), so that the caller can redo the product
with NumPy, which then warns or raises as ``np.errstate`` says.  The library's functions are looked up in Python and handed over once
(:func:`configure`); until then :func:`available` is false.
"""
cimport cython
cimport numpy as cnp
from libc.stdint cimport int64_t, uintptr_t

from fastgraph.kernels.fenv cimport (
    fetestexcept, feclearexcept, FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW, FE_INVALID,
)

cnp.import_array()

ctypedef void (*sgemm_t)(int, int, int, int64_t, int64_t, int64_t, float, const float *,
                         int64_t, const float *, int64_t, float, float *, int64_t) noexcept nogil
ctypedef void (*dgemm_t)(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                         int64_t, const double *, int64_t, double, double *, int64_t) noexcept nogil
ctypedef void (*saxpy_t)(int64_t, float, const float *, int64_t, float *, int64_t) noexcept nogil
ctypedef void (*daxpy_t)(int64_t, double, const double *, int64_t, double *, int64_t) noexcept nogil

#: ``scaled_matmul``'s answers
REFUSED, DONE, FP_EXCEPTION = 0, 1, 2

cdef enum:
    ROW_MAJOR = 101
    NO_TRANS = 111
    TRANS = 112

#: NumPy hands BLAS no dimension or leading dimension above this (``BLAS_MAXSIZE``)
cdef int64_t MAXSIZE = 2147483646

cdef sgemm_t _sgemm = NULL
cdef dgemm_t _dgemm = NULL
cdef saxpy_t _saxpy = NULL
cdef daxpy_t _daxpy = NULL


def configure(uintptr_t sgemm, uintptr_t dgemm, uintptr_t saxpy, uintptr_t daxpy) -> None:
    """Install the library's ``cblas_{s,d}gemm`` and ``cblas_{s,d}axpy`` (64-bit integers),
    given as addresses; all four or none (zeros)."""
    global _sgemm, _dgemm, _saxpy, _daxpy
    if not (sgemm and dgemm and saxpy and daxpy):
        _sgemm = NULL; _dgemm = NULL; _saxpy = NULL; _daxpy = NULL
        return
    _sgemm = <sgemm_t>sgemm
    _dgemm = <dgemm_t>dgemm
    _saxpy = <saxpy_t>saxpy
    _daxpy = <daxpy_t>daxpy


def available() -> bool:
    return _sgemm != NULL


cdef inline bint _float_array(cnp.ndarray x, int type_num):
    return cnp.PyArray_TYPE(x) == type_num and cnp.PyArray_ISALIGNED(x)


cdef inline int _blas_trans(cnp.ndarray x):
    """NumPy's ``is_blasable2d`` for a 2-D operand: NO_TRANS when its rows are BLAS rows,
    TRANS when its columns are, 0 when neither (NumPy would copy it first)."""
    cdef Py_ssize_t sz = cnp.PyArray_ITEMSIZE(x)
    cdef Py_ssize_t s0 = cnp.PyArray_STRIDE(x, 0), s1 = cnp.PyArray_STRIDE(x, 1)
    cdef Py_ssize_t d0 = cnp.PyArray_DIM(x, 0), d1 = cnp.PyArray_DIM(x, 1)
    if s1 == sz and s0 % sz == 0 and s0 // sz >= d1 and s0 // sz <= MAXSIZE:
        return NO_TRANS
    if s0 == sz and s1 % sz == 0 and s1 // sz >= d0 and s1 // sz <= MAXSIZE:
        return TRANS
    return 0


cdef inline bint _overlap(cnp.ndarray x, cnp.ndarray y):
    """Do the byte ranges the two arrays span meet?  (Positive strides only: callers check.)"""
    cdef char *xa = <char *>cnp.PyArray_DATA(x)
    cdef char *ya = <char *>cnp.PyArray_DATA(y)
    cdef Py_ssize_t xe = cnp.PyArray_ITEMSIZE(x), ye = cnp.PyArray_ITEMSIZE(y)
    cdef int i
    for i in range(cnp.PyArray_NDIM(x)):
        xe += (cnp.PyArray_DIM(x, i) - 1) * cnp.PyArray_STRIDE(x, i)
    for i in range(cnp.PyArray_NDIM(y)):
        ye += (cnp.PyArray_DIM(y, i) - 1) * cnp.PyArray_STRIDE(y, i)
    return xa < ya + ye and ya < xa + xe


@cython.boundscheck(False)
@cython.wraparound(False)
def scaled_matmul(cnp.ndarray a, cnp.ndarray b, double alpha, cnp.ndarray out,
                  bint trans_a, bint trans_b) -> int:
    """``out = alpha * (a @ b)`` in one BLAS ``gemm`` call, for 2-D float32 or float64 operands
    of one dtype, ``out`` C-contiguous, with ``a`` and ``b`` laid out so that NumPy would pass
    them transposed exactly when ``trans_a``/``trans_b`` say: ``DONE``, or ``FP_EXCEPTION``
    when the call raised a floating-point exception (``out`` written all the same).
    ``REFUSED`` (nothing written) otherwise -- or when ``a @ b`` would not be a plain ``gemm``
    in NumPy (a matrix-vector product, ``x @ x.T``), or ``out`` overlaps an operand, or BLAS is
    not configured.

    >>> out = np.empty((2, 2), np.float32)
    >>> scaled_matmul(np.eye(2, dtype=np.float32), np.ones((2, 2), np.float32), 0.5, out,
    ...               False, False)   # doctest: +SKIP
    1
    """
    if _sgemm == NULL:
        return REFUSED
    if cnp.PyArray_NDIM(a) != 2 or cnp.PyArray_NDIM(b) != 2 or cnp.PyArray_NDIM(out) != 2:
        return REFUSED
    cdef int t = cnp.PyArray_TYPE(out)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        return REFUSED
    if not (_float_array(a, t) and _float_array(b, t) and _float_array(out, t)):
        return REFUSED
    cdef int64_t m = cnp.PyArray_DIM(a, 0), k = cnp.PyArray_DIM(a, 1), n = cnp.PyArray_DIM(b, 1)
    if cnp.PyArray_DIM(b, 0) != k or cnp.PyArray_DIM(out, 0) != m or cnp.PyArray_DIM(out, 1) != n:
        return REFUSED
    if m < 2 or n < 2 or k < 1 or m > MAXSIZE or n > MAXSIZE or k > MAXSIZE:
        return REFUSED
    if not (cnp.PyArray_IS_C_CONTIGUOUS(out) and cnp.PyArray_ISWRITEABLE(out)):
        return REFUSED
    cdef int ta = _blas_trans(a), tb = _blas_trans(b)
    if ta != (TRANS if trans_a else NO_TRANS) or tb != (TRANS if trans_b else NO_TRANS):
        return REFUSED
    if cnp.PyArray_DATA(a) == cnp.PyArray_DATA(b) and m == n:
        return REFUSED     # NumPy computes x @ x.T with syrk
    if _overlap(out, a) or _overlap(out, b):
        return REFUSED
    cdef int64_t lda = cnp.PyArray_STRIDE(a, 0 if ta == NO_TRANS else 1) // cnp.PyArray_ITEMSIZE(a)
    cdef int64_t ldb = cnp.PyArray_STRIDE(b, 0 if tb == NO_TRANS else 1) // cnp.PyArray_ITEMSIZE(b)
    cdef void *pa = cnp.PyArray_DATA(a)
    cdef void *pb = cnp.PyArray_DATA(b)
    cdef void *pc = cnp.PyArray_DATA(out)
    cdef int flags = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID
    feclearexcept(flags)
    if t == cnp.NPY_FLOAT32:
        with nogil:
            _sgemm(ROW_MAJOR, ta, tb, m, n, k, <float>alpha, <const float *>pa, lda,
                   <const float *>pb, ldb, 0.0, <float *>pc, n)
    else:
        with nogil:
            _dgemm(ROW_MAJOR, ta, tb, m, n, k, alpha, <const double *>pa, lda,
                   <const double *>pb, ldb, 0.0, <double *>pc, n)
    return FP_EXCEPTION if fetestexcept(flags) else DONE


def sub_inplace(cnp.ndarray v, cnp.ndarray s) -> bool:
    """``v -= s`` by BLAS ``axpy`` (``alpha = -1``): C-contiguous float32 or float64 arrays of
    one shape and dtype, ``v`` writeable, the two not overlapping.  ``False`` (nothing written)
    otherwise, or when BLAS is not configured."""
    if _saxpy == NULL:
        return False
    cdef int t = cnp.PyArray_TYPE(v)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        return False
    if not (_float_array(v, t) and _float_array(s, t)):
        return False
    if not (cnp.PyArray_IS_C_CONTIGUOUS(v) and cnp.PyArray_IS_C_CONTIGUOUS(s)
            and cnp.PyArray_ISWRITEABLE(v)):
        return False
    cdef int nd = cnp.PyArray_NDIM(v), i
    if cnp.PyArray_NDIM(s) != nd:
        return False
    for i in range(nd):
        if cnp.PyArray_DIM(v, i) != cnp.PyArray_DIM(s, i):
            return False
    cdef int64_t n = cnp.PyArray_SIZE(v)
    if n == 0:
        return True
    if _overlap(v, s):
        return False
    cdef void *pv = cnp.PyArray_DATA(v)
    cdef void *ps = cnp.PyArray_DATA(s)
    if t == cnp.NPY_FLOAT32:
        with nogil:
            _saxpy(n, -1.0, <const float *>ps, 1, <float *>pv, 1)
    else:
        with nogil:
            _daxpy(n, -1.0, <const double *>ps, 1, <double *>pv, 1)
    return True


# ---- for other kernels (blas.pxd): the configured gemm, row-major ------------------------------
cdef bint gemm_available() noexcept nogil:
    return _sgemm != NULL and _dgemm != NULL


cdef void sgemm_rm(bint ta, bint tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                   float *c, int64_t ldc) noexcept nogil:
    _sgemm(ROW_MAJOR, TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, m, n, k, alpha,
           a, lda, b, ldb, beta, c, ldc)


cdef void dgemm_rm(bint ta, bint tb, int64_t m, int64_t n, int64_t k, double alpha,
                   const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                   double *c, int64_t ldc) noexcept nogil:
    _dgemm(ROW_MAJOR, TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, m, n, k, alpha,
           a, lda, b, ldb, beta, c, ldc)
