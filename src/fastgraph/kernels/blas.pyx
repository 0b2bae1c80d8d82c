"""BLAS calls NumPy's API cannot make, on NumPy's own BLAS (``fastgraph._numpy_blas``).

* :func:`scaled_matmul`: ``out = alpha * (a @ b)`` as one ``gemm`` with BLAS's own ``alpha``.
  The kernel scales each finished dot product once, so this is ``np.multiply(np.matmul(a, b),
  alpha)`` bit for bit -- as long as BLAS does not split the sum over ``k`` into panels (it
  would then scale each panel): the ``blas`` pass checks that on the product's own shape
  before using it.
* :func:`sub_inplace`: ``v -= s`` as ``axpy`` with ``alpha = -1`` (``-1 * s`` is exact, so the
  one rounding is that of ``v - s``), run by BLAS's own threads.
* :func:`accumulate_matmul`: ``acc += a @ b`` as one ``gemm`` with ``beta = 1``, where that is
  ``acc + np.matmul(a, b)`` bit for bit (the eager tape's weight gradients summed over a loop).

Each takes the operands only in the layouts NumPy's ``matmul`` itself hands to BLAS as they
are, and refuse (``False`` or ``REFUSED``: nothing written) otherwise, so the caller can compute
the same thing with NumPy.  :func:`scaled_matmul` also reports a floating-point exception raised on the
calling thread (as NumPy's ``matmul`` would see it), so that the caller can redo the product
with NumPy, which then warns or raises as ``np.errstate`` says.  The library's functions are looked up in Python and handed over once
(:func:`configure`); until then :func:`available` is false.
"""
cimport cython
cimport numpy as cnp
import numpy as np
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


# ---- acc += a @ b as one gemm with beta = 1 (the eager tape's weight gradients) -----------------
# ``acc + np.matmul(a, b)`` is one rounding per element of the finished dot product into acc,
# which is what gemm with beta = 1 does -- unless OpenBLAS splits the sum over k into panels
# (it then adds each panel into acc).  Whether a shape is split is asked once per shape of
# ``_acc_check`` (Python: it computes both ways on random values) and kept here, in C, so
# that the tape's hot path makes no Python call.
cdef struct AccShape:
    int t
    int ta
    int tb
    int ok
    int64_t m
    int64_t k
    int64_t n

cdef enum:
    ACC_SHAPES = 64
    ACC_REFUSED = 0
    ACC_DONE = 1
    ACC_FP_EXCEPTION = 2

cdef AccShape _acc_shapes[ACC_SHAPES]
cdef int _acc_count = 0
cdef object _acc_check = None
cdef int _acc_flags = 0
cdef object _ndarray_t = np.ndarray


def configure_accumulate(check) -> None:
    """Install ``check(dtype, m, k, n, trans_a, trans_b) -> bool``: does
    :func:`accumulate_matmul` give ``acc + np.matmul(a, b)`` bit for bit on that shape?
    (``None``: refuse every shape.)  Forgets the answers kept so far."""
    global _acc_check, _acc_count
    _acc_check = check
    _acc_count = 0


cdef int _acc_exact(int t, int64_t m, int64_t k, int64_t n, int ta, int tb) except -1:
    global _acc_count
    cdef int i
    for i in range(_acc_count):
        if (_acc_shapes[i].m == m and _acc_shapes[i].k == k and _acc_shapes[i].n == n and
                _acc_shapes[i].t == t and _acc_shapes[i].ta == ta and _acc_shapes[i].tb == tb):
            return _acc_shapes[i].ok
    if _acc_check is None:
        return 0
    cdef int ok = 1 if _acc_check(np.dtype(np.float32 if t == cnp.NPY_FLOAT32 else np.float64),
                                  m, k, n, ta == TRANS, tb == TRANS) else 0
    if _acc_count < ACC_SHAPES:     # (past that many shapes, each further one is asked again)
        _acc_shapes[_acc_count] = AccShape(t, ta, tb, ok, m, k, n)
        _acc_count += 1
    return ok


cdef int accumulate_matmul_c(object a, object b, object acc) except -1:
    """``acc += a @ b`` in one BLAS ``gemm`` call (``beta = 1``), where that gives ``acc +
    np.matmul(a, b)`` bit for bit: 2-D float32 or float64 ndarrays of one dtype, laid out as
    NumPy hands them to BLAS (rows or columns contiguous), ``acc`` C-contiguous, writeable, of
    the product's shape and overlapping neither operand, on a shape the check found exact.
    ``REFUSED`` (nothing written) otherwise or without BLAS; ``DONE``; ``FP_EXCEPTION``: ``acc``
    was written but the call raised a floating-point exception on this thread (its flags are
    then :func:`accumulate_flags`'s), so the caller owes NumPy's warnings."""
    return _accumulate(a, b, acc, True)


cdef int _accumulate(object a, object b, object acc, bint ask) except -1:
    """:func:`accumulate_matmul_c`; ``ask``: only on shapes the check found exact (else on any
    shape: the check itself).  ``acc`` None: into zeros, for the product's own flags."""
    global _acc_flags
    if _sgemm == NULL:
        return ACC_REFUSED
    if type(a) is not _ndarray_t or type(b) is not _ndarray_t:
        return ACC_REFUSED
    cdef cnp.ndarray A = <cnp.ndarray>a, B = <cnp.ndarray>b, C
    if cnp.PyArray_NDIM(A) != 2 or cnp.PyArray_NDIM(B) != 2:
        return ACC_REFUSED
    if acc is None:
        acc = np.zeros((cnp.PyArray_DIM(A, 0), cnp.PyArray_DIM(B, 1)), A.dtype)
    elif type(acc) is not _ndarray_t or cnp.PyArray_NDIM(<cnp.ndarray>acc) != 2:
        return ACC_REFUSED
    C = <cnp.ndarray>acc
    cdef int t = cnp.PyArray_TYPE(C)
    if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
        return ACC_REFUSED
    if not (_float_array(A, t) and _float_array(B, t) and _float_array(C, t)):
        return ACC_REFUSED
    if not (cnp.PyArray_ISNOTSWAPPED(A) and cnp.PyArray_ISNOTSWAPPED(B)
            and cnp.PyArray_ISNOTSWAPPED(C)):
        return ACC_REFUSED
    cdef int64_t m = cnp.PyArray_DIM(A, 0), k = cnp.PyArray_DIM(A, 1), n = cnp.PyArray_DIM(B, 1)
    if cnp.PyArray_DIM(B, 0) != k or cnp.PyArray_DIM(C, 0) != m or cnp.PyArray_DIM(C, 1) != n:
        return ACC_REFUSED
    if m < 2 or n < 2 or k < 1 or m > MAXSIZE or n > MAXSIZE or k > MAXSIZE:
        return ACC_REFUSED
    if not (cnp.PyArray_IS_C_CONTIGUOUS(C) and cnp.PyArray_ISWRITEABLE(C)):
        return ACC_REFUSED
    cdef int ta = _blas_trans(A), tb = _blas_trans(B)
    if ta == 0 or tb == 0:
        return ACC_REFUSED     # NumPy would copy the operand first
    if cnp.PyArray_DATA(A) == cnp.PyArray_DATA(B) and m == n:
        return ACC_REFUSED     # NumPy computes x @ x.T with syrk
    if _overlap(C, A) or _overlap(C, B):
        return ACC_REFUSED
    if ask and not _acc_exact(t, m, k, n, ta, tb):
        return ACC_REFUSED
    cdef int64_t lda = cnp.PyArray_STRIDE(A, 0 if ta == NO_TRANS else 1) // cnp.PyArray_ITEMSIZE(A)
    cdef int64_t ldb = cnp.PyArray_STRIDE(B, 0 if tb == NO_TRANS else 1) // cnp.PyArray_ITEMSIZE(B)
    cdef void *pa = cnp.PyArray_DATA(A)
    cdef void *pb = cnp.PyArray_DATA(B)
    cdef void *pc = cnp.PyArray_DATA(C)
    cdef int flags = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID
    feclearexcept(flags)
    if t == cnp.NPY_FLOAT32:
        with nogil:
            _sgemm(ROW_MAJOR, ta, tb, m, n, k, 1.0, <const float *>pa, lda,
                   <const float *>pb, ldb, 1.0, <float *>pc, n)
    else:
        with nogil:
            _dgemm(ROW_MAJOR, ta, tb, m, n, k, 1.0, <const double *>pa, lda,
                   <const double *>pb, ldb, 1.0, <double *>pc, n)
    _acc_flags = fetestexcept(flags)
    if _acc_flags:
        feclearexcept(flags)
        return ACC_FP_EXCEPTION
    return ACC_DONE


def accumulate_matmul(a, b, acc) -> int:
    """:func:`accumulate_matmul_c` from Python (``REFUSED``, ``DONE`` or ``FP_EXCEPTION``).

    >>> acc = np.ones((2, 2), np.float32)
    >>> accumulate_matmul(np.eye(2, dtype=np.float32), np.ones((2, 2), np.float32), acc)  # doctest: +SKIP
    1
    """
    return accumulate_matmul_c(a, b, acc)


def accumulate_matmul_unchecked(a, b, acc) -> bool:
    """``acc += a @ b`` as :func:`accumulate_matmul` but on any shape (whether it is exact is
    what the check asks this), or into zeros when ``acc`` is None (the product's own flags,
    then :func:`accumulate_flags`'s): whether it ran."""
    global _acc_flags
    _acc_flags = 0
    return _accumulate(a, b, acc, False) != ACC_REFUSED


def accumulate_flags() -> dict:
    """The floating-point exceptions the last :func:`accumulate_matmul` that reported
    ``FP_EXCEPTION`` raised, by NumPy's names (``"over"``, ``"invalid"``, ...)."""
    return {"divide": bool(_acc_flags & FE_DIVBYZERO), "over": bool(_acc_flags & FE_OVERFLOW),
            "under": bool(_acc_flags & FE_UNDERFLOW), "invalid": bool(_acc_flags & FE_INVALID)}
