"""Row loops of the softmax family: ``softmax``, ``log_softmax`` and the cross-entropy of
``(N, C)`` logits against integer labels (its loss and its gradient), over the last axis.

NumPy spends most of a small softmax's time on per-call and per-reduction overhead: the
cross-entropy's forward is ten ufunc calls and its gradient eight, ~21 and ~30 us on the batch
of bench_mlp (128 x 10 float32) for ~1 us of arithmetic (a reduction over a short last axis costs
4-6 us).  These loops do that arithmetic in one pass over the rows and round exactly as the NumPy
expressions of ``ops/nn.py`` do, so the values are bit for bit the same
(``tests/test_softmax_loops.py``):

* ``exp`` and ``log`` are NumPy's own inner loops (found once in the ufuncs' loop tables) called
  on the same contiguous buffers the NumPy expressions pass them;
* the row sums and the final sum follow NumPy's pairwise summation (8 accumulators within blocks
  of 128, halving above);
* no ``a * b + c`` is contracted into an FMA (``fg_fp_exact_begin.h``).

Every function returns ``None`` where it does not apply and the caller runs the NumPy
expressions instead: dtypes other than float32/float64, non-contiguous or byte-swapped operands,
another axis than the last, labels that are not int64 or are out of range, empty input,
non-finite values, or any floating-point exception but an ignored underflow -- so NumPy raises or
warns as ``np.errstate`` says, and bad labels get NumPy's ``IndexError``.
"""
cimport numpy as cnp
from fastgraph.kernels.ufunc_loops cimport find_loop, loop_t
from libc.math cimport isfinite
from libc.stdlib cimport malloc, free

import numpy as np

cnp.import_array()

from fastgraph.kernels.fenv cimport (
    fetestexcept, feclearexcept, FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW, FE_INVALID,
)

cdef extern from *:
    """
    #include <math.h>
    #include "fg_fp_exact_begin.h"   /* no FMA contraction: NumPy's rounding */
    typedef void (*fg_xent_loop_t)(char**, npy_intp*, npy_intp*, void*);

    /* NumPy's pairwise summation (loops_utils.h.src) over n contiguous elements, 0 + the sum as
     * an add.reduce with the identity as its start. */
    #define FG_PAIRWISE(NAME, T)                                                              \
    static T NAME(const T *a, npy_intp n) {                                                 \
        if (n < 8) {                                                                        \
            T res = 0.;                                                                     \
            for (npy_intp i = 0; i < n; i++) res += a[i];                                   \
            return res;                                                                     \
        }                                                                                   \
        if (n <= 128) {                                                                     \
            T r[8], res;                                                                    \
            npy_intp i;                                                                     \
            for (int k = 0; k < 8; k++) r[k] = a[k];                                        \
            for (i = 8; i < n - (n % 8); i += 8)                                            \
                for (int k = 0; k < 8; k++) r[k] += a[i + k];                               \
            res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));        \
            for (; i < n; i++) res += a[i];                                                 \
            return res;                                                                     \
        }                                                                                   \
        npy_intp n2 = n / 2;                                                                \
        n2 -= n2 % 8;                                                                       \
        return NAME(a, n2) + NAME(a + n2, n - n2);                                          \
    }

    static void fg_xent_call(fg_xent_loop_t f, void *data, void *in, void *out, npy_intp n,
                             npy_intp itemsize) {
        char *args[2] = {(char *)in, (char *)out};
        npy_intp dims[1] = {n};
        npy_intp steps[2] = {itemsize, itemsize};
        f(args, dims, steps, data);
    }

    /* z = x - rowmax(x); e = exp(z) (NumPy's loop); s = rowsum(e).  Returns 0, or -1 when a
     * logit is not finite (NumPy's maximum propagates NaN; leave that to NumPy). */
    #define FG_SOFTMAX_PARTS(NAME, T, PAIRWISE)                                               \
    static int NAME(const T *x, npy_intp N, npy_intp C, T *z, T *e, T *s,                   \
                    fg_xent_loop_t exp_f, void *exp_d) {                                    \
        for (npy_intp i = 0; i < N; i++) {                                                  \
            const T *row = x + i * C;                                                       \
            T m = row[0];                                                                   \
            for (npy_intp j = 0; j < C; j++) {                                              \
                if (!isfinite(row[j])) return -1;                                           \
                if (row[j] > m) m = row[j];                                                 \
            }                                                                               \
            for (npy_intp j = 0; j < C; j++) z[i * C + j] = row[j] - m;                     \
        }                                                                                   \
        fg_xent_call(exp_f, exp_d, z, e, N * C, sizeof(T));                                 \
        for (npy_intp i = 0; i < N; i++) s[i] = PAIRWISE(e + i * C, C);                     \
        return 0;                                                                           \
    }

    /* loss = sum_i(log(s_i) - z[i, lab_i]) / N (work: 2NC + 3N elements) */
    #define FG_XENT_LOSS(NAME, T, PARTS, PAIRWISE)                                            \
    static int NAME(const T *x, const npy_int64 *lab, npy_intp N, npy_intp C, T *work,      \
                    fg_xent_loop_t exp_f, void *exp_d, fg_xent_loop_t log_f, void *log_d,   \
                    T *loss) {                                                              \
        T *z = work, *e = z + N * C, *s = e + N * C, *lse = s + N, *d = lse + N;            \
        if (PARTS(x, N, C, z, e, s, exp_f, exp_d)) return -1;                               \
        fg_xent_call(log_f, log_d, s, lse, N, sizeof(T));                                   \
        for (npy_intp i = 0; i < N; i++) d[i] = lse[i] - z[i * C + lab[i]];                 \
        *loss = PAIRWISE(d, N) / (T)N;                                                      \
        return 0;                                                                           \
    }

    /* e = exp(z) in place -> (e / s - onehot(lab)) * scale */
    #define FG_XENT_GRAD_ROWS(NAME, T)                                                        \
    static void NAME(T *out, const T *s, const npy_int64 *lab, npy_intp N, npy_intp C,      \
                     T scale) {                                                             \
        for (npy_intp i = 0; i < N; i++) {                                                  \
            T *row = out + i * C;                                                           \
            for (npy_intp j = 0; j < C; j++) row[j] = row[j] / s[i];                        \
            row[lab[i]] = row[lab[i]] - 1;                                                  \
            for (npy_intp j = 0; j < C; j++) row[j] = row[j] * scale;                       \
        }                                                                                   \
    }

    /* out = (exp(z) / s - onehot(lab)) * scale and, unless loss is NULL, the loss too (a static
       plan computing both): the parts once, the loss exactly as FG_XENT_LOSS computes it (work:
       NC + N elements, NC + 3N with the loss) */
    #define FG_XENT_GRAD(NAME, T, PARTS, PAIRWISE, ROWS)                                      \
    static int NAME(const T *x, const npy_int64 *lab, npy_intp N, npy_intp C, T scale,      \
                    T *work, fg_xent_loop_t exp_f, void *exp_d, fg_xent_loop_t log_f,       \
                    void *log_d, T *loss, T *out) {                                         \
        T *z = work, *s = z + N * C;                                                        \
        if (PARTS(x, N, C, z, out, s, exp_f, exp_d)) return -1;                             \
        if (loss) {                                                                         \
            T *lse = s + N, *d = lse + N;                                                   \
            fg_xent_call(log_f, log_d, s, lse, N, sizeof(T));                               \
            for (npy_intp i = 0; i < N; i++) d[i] = lse[i] - z[i * C + lab[i]];             \
            *loss = PAIRWISE(d, N) / (T)N;                                                  \
        }                                                                                   \
        ROWS(out, s, lab, N, C, scale);                                                     \
        return 0;                                                                           \
    }

    /* softmax: out = exp(z) / s; log_softmax: out = z - log(s).  One signature, work NC + 2N
       elements (z or exp(z), then s, then log(s)). */
    #define FG_SOFTMAX(NAME, T, PARTS)                                                        \
    static int NAME(const T *x, npy_intp N, npy_intp C, T *work, fg_xent_loop_t exp_f,      \
                    void *exp_d, fg_xent_loop_t log_f, void *log_d, T *out) {               \
        T *s = work + N * C;                                                                \
        (void)log_f; (void)log_d;                                                           \
        if (PARTS(x, N, C, work, out, s, exp_f, exp_d)) return -1;                          \
        for (npy_intp i = 0; i < N; i++)                                                    \
            for (npy_intp j = 0; j < C; j++) out[i * C + j] = out[i * C + j] / s[i];        \
        return 0;                                                                           \
    }
    #define FG_LOG_SOFTMAX(NAME, T, PARTS)                                                    \
    static int NAME(const T *x, npy_intp N, npy_intp C, T *work, fg_xent_loop_t exp_f,      \
                    void *exp_d, fg_xent_loop_t log_f, void *log_d, T *out) {               \
        T *s = work + N * C, *lse = s + N;                                                  \
        if (PARTS(x, N, C, out, work, s, exp_f, exp_d)) return -1;                          \
        fg_xent_call(log_f, log_d, s, lse, N, sizeof(T));                                   \
        for (npy_intp i = 0; i < N; i++)                                                    \
            for (npy_intp j = 0; j < C; j++) out[i * C + j] = out[i * C + j] - lse[i];      \
        return 0;                                                                           \
    }

    FG_PAIRWISE(fg_pairwise_f, float)
    FG_PAIRWISE(fg_pairwise_d, double)
    FG_SOFTMAX_PARTS(fg_softmax_parts_f, float, fg_pairwise_f)
    FG_SOFTMAX_PARTS(fg_softmax_parts_d, double, fg_pairwise_d)
    FG_XENT_LOSS(fg_xent_loss_f, float, fg_softmax_parts_f, fg_pairwise_f)
    FG_XENT_LOSS(fg_xent_loss_d, double, fg_softmax_parts_d, fg_pairwise_d)
    FG_XENT_GRAD_ROWS(fg_xent_rows_f, float)
    FG_XENT_GRAD_ROWS(fg_xent_rows_d, double)
    FG_XENT_GRAD(fg_xent_grad_f, float, fg_softmax_parts_f, fg_pairwise_f, fg_xent_rows_f)
    FG_XENT_GRAD(fg_xent_grad_d, double, fg_softmax_parts_d, fg_pairwise_d, fg_xent_rows_d)
    FG_SOFTMAX(fg_softmax_f, float, fg_softmax_parts_f)
    FG_SOFTMAX(fg_softmax_d, double, fg_softmax_parts_d)
    FG_LOG_SOFTMAX(fg_log_softmax_f, float, fg_softmax_parts_f)
    FG_LOG_SOFTMAX(fg_log_softmax_d, double, fg_softmax_parts_d)
    #include "fg_fp_exact_end.h"
    """
    ctypedef void (*fg_xent_loop_t)(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil
    int fg_xent_loss_f(const float*, const cnp.npy_int64*, cnp.npy_intp, cnp.npy_intp, float*,
                       fg_xent_loop_t, void*, fg_xent_loop_t, void*, float*) noexcept nogil
    int fg_xent_loss_d(const double*, const cnp.npy_int64*, cnp.npy_intp, cnp.npy_intp, double*,
                       fg_xent_loop_t, void*, fg_xent_loop_t, void*, double*) noexcept nogil
    int fg_xent_grad_f(const float*, const cnp.npy_int64*, cnp.npy_intp, cnp.npy_intp, float,
                       float*, fg_xent_loop_t, void*, fg_xent_loop_t, void*, float*,
                       float*) noexcept nogil
    int fg_xent_grad_d(const double*, const cnp.npy_int64*, cnp.npy_intp, cnp.npy_intp, double,
                       double*, fg_xent_loop_t, void*, fg_xent_loop_t, void*, double*,
                       double*) noexcept nogil
    int fg_softmax_f(const float*, cnp.npy_intp, cnp.npy_intp, float*, fg_xent_loop_t, void*,
                     fg_xent_loop_t, void*, float*) noexcept nogil
    int fg_softmax_d(const double*, cnp.npy_intp, cnp.npy_intp, double*, fg_xent_loop_t, void*,
                     fg_xent_loop_t, void*, double*) noexcept nogil
    int fg_log_softmax_f(const float*, cnp.npy_intp, cnp.npy_intp, float*, fg_xent_loop_t, void*,
                         fg_xent_loop_t, void*, float*) noexcept nogil
    int fg_log_softmax_d(const double*, cnp.npy_intp, cnp.npy_intp, double*, fg_xent_loop_t,
                         void*, fg_xent_loop_t, void*, double*) noexcept nogil
    float fg_pairwise_f(const float*, cnp.npy_intp) noexcept nogil
    double fg_pairwise_d(const double*, cnp.npy_intp) noexcept nogil

# softmax and log_softmax share this signature (see FG_SOFTMAX)
ctypedef int (*fg_rows_f_t)(const float*, cnp.npy_intp, cnp.npy_intp, float*, fg_xent_loop_t,
                            void*, fg_xent_loop_t, void*, float*) noexcept nogil
ctypedef int (*fg_rows_d_t)(const double*, cnp.npy_intp, cnp.npy_intp, double*, fg_xent_loop_t,
                            void*, fg_xent_loop_t, void*, double*) noexcept nogil

cdef loop_t _exp_f = NULL, _exp_d = NULL, _log_f = NULL, _log_d = NULL
cdef void *_exp_fd = NULL
cdef void *_exp_dd = NULL
cdef void *_log_fd = NULL
cdef void *_log_dd = NULL
find_loop(np.exp, 2, cnp.NPY_FLOAT, &_exp_f, &_exp_fd)
find_loop(np.exp, 2, cnp.NPY_DOUBLE, &_exp_d, &_exp_dd)
find_loop(np.log, 2, cnp.NPY_FLOAT, &_log_f, &_log_fd)
find_loop(np.log, 2, cnp.NPY_DOUBLE, &_log_d, &_log_dd)

cdef int _FAIL_FLAGS = FE_DIVBYZERO | FE_OVERFLOW | FE_INVALID
cdef int _IN_FLAGS = cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_ALIGNED
_f32, _f64 = np.float32, np.float64


cdef int _rows(object x, object axis, cnp.npy_intp* N, cnp.npy_intp* C) except -2:
    """The type number of ``x`` (float32/float64) when it is an array the loops handle along
    ``axis`` (the last one), with ``N`` rows of ``C``; else -1."""
    if type(x) is not cnp.ndarray or type(axis) is not int:
        return -1
    cdef cnp.ndarray a = <cnp.ndarray>x
    cdef int nd = cnp.PyArray_NDIM(a), t = cnp.PyArray_TYPE(a)
    if nd < 1 or (axis != -1 and axis != nd - 1):
        return -1
    if t == cnp.NPY_FLOAT:
        if _exp_f == NULL or _log_f == NULL:
            return -1
    elif t == cnp.NPY_DOUBLE:
        if _exp_d == NULL or _log_d == NULL:
            return -1
    else:
        return -1
    if (cnp.PyArray_FLAGS(a) & _IN_FLAGS) != _IN_FLAGS or not cnp.PyArray_ISNOTSWAPPED(a):
        return -1
    C[0] = cnp.PyArray_DIMS(a)[nd - 1]
    if C[0] == 0 or cnp.PyArray_SIZE(a) == 0:
        return -1
    N[0] = cnp.PyArray_SIZE(a) // C[0]
    return t


cdef int _operands(object logits, object labels, cnp.npy_intp* N, cnp.npy_intp* C) except -2:
    """The logits' type number (float32/float64) when the operands are ones the loops handle,
    with ``N``, ``C`` set; else -1 (negative labels too: NumPy wraps them, the loops do not)."""
    cdef int t = _rows(logits, -1, N, C)
    if t < 0 or cnp.PyArray_NDIM(<cnp.ndarray>logits) != 2 or type(labels) is not cnp.ndarray:
        return -1
    cdef cnp.ndarray lab = <cnp.ndarray>labels
    if (cnp.PyArray_NDIM(lab) != 1 or cnp.PyArray_TYPE(lab) != cnp.NPY_INT64
            or (cnp.PyArray_FLAGS(lab) & _IN_FLAGS) != _IN_FLAGS
            or not cnp.PyArray_ISNOTSWAPPED(lab) or cnp.PyArray_DIMS(lab)[0] != N[0]):
        return -1
    cdef const cnp.npy_int64* lp = <const cnp.npy_int64*>cnp.PyArray_DATA(lab)
    cdef cnp.npy_intp i
    for i in range(N[0]):
        if lp[i] < 0 or lp[i] >= C[0]:
            return -1     # NumPy wraps negative labels and raises on the rest: let it
    return t


cdef bint _flags_ok():
    """After the loops: no exception NumPy would report, else fall back (cleared either way)."""
    cdef int raised = fetestexcept(_FAIL_FLAGS | FE_UNDERFLOW)
    if raised:
        feclearexcept(_FAIL_FLAGS | FE_UNDERFLOW)
    if raised & _FAIL_FLAGS:
        return False
    # exp underflows for logits ~88 (float32) below their row's maximum: fine unless the user
    # asked NumPy to report underflow
    return not (raised & FE_UNDERFLOW) or np.geterr()["under"] == "ignore"


def cross_entropy(object logits, object labels):
    """``mean(log(sum(exp(z), -1)) - z[i, labels[i]])`` with ``z = logits - max(logits, -1)``:
    a NumPy scalar of the logits' dtype, or ``None`` where the loops do not apply (see the
    module docstring).

    >>> import numpy as np
    >>> from fastgraph.kernels import softmax
    >>> float(softmax.cross_entropy(np.zeros((2, 4)), np.array([0, 3])))  # log(4)
    1.3862943611198906
    """
    cdef cnp.npy_intp N, C
    cdef int t = _operands(logits, labels, &N, &C)
    if t < 0:
        return None
    cdef cnp.ndarray x = <cnp.ndarray>logits, lab = <cnp.ndarray>labels
    cdef const cnp.npy_int64* lp = <const cnp.npy_int64*>cnp.PyArray_DATA(lab)
    cdef size_t isz = 4 if t == cnp.NPY_FLOAT else 8
    cdef void* work = malloc((2 * N * C + 3 * N) * isz)
    if work == NULL:
        return None
    cdef int rc
    cdef float rf = 0
    cdef double rd = 0
    feclearexcept(_FAIL_FLAGS | FE_UNDERFLOW)
    with nogil:
        if t == cnp.NPY_FLOAT:
            rc = fg_xent_loss_f(<const float*>cnp.PyArray_DATA(x), lp, N, C, <float*>work,
                                <fg_xent_loop_t>_exp_f, _exp_fd, <fg_xent_loop_t>_log_f,
                                _log_fd, &rf)
        else:
            rc = fg_xent_loss_d(<const double*>cnp.PyArray_DATA(x), lp, N, C, <double*>work,
                                <fg_xent_loop_t>_exp_d, _exp_dd, <fg_xent_loop_t>_log_d,
                                _log_dd, &rd)
    free(work)
    if rc != 0 or not _flags_ok():
        return None
    return _f32(rf) if t == cnp.NPY_FLOAT else _f64(rd)


cdef inline bint _real_scalar(object g):
    if type(g) is float or type(g) is int or isinstance(g, (np.floating, np.integer)):
        return True
    return (type(g) is cnp.ndarray and cnp.PyArray_NDIM(<cnp.ndarray>g) == 0
            and (<cnp.ndarray>g).dtype.kind in "fiu")


cdef object _xent_grad(object g, object logits, object labels, bint with_loss):
    """The gradient (and, ``with_loss``, the loss first) by the loops, or ``None`` where they do
    not apply: the checks, the work buffer and the dtype dispatch of both entry points below."""
    cdef cnp.npy_intp N, C
    if not _real_scalar(g):
        return None
    cdef int t = _operands(logits, labels, &N, &C)
    if t < 0:
        return None
    cdef double gd = float(g)
    if not isfinite(gd):
        return None          # NumPy's path warns (or raises) about what follows
    cdef cnp.ndarray x = <cnp.ndarray>logits, lab = <cnp.ndarray>labels
    cdef const cnp.npy_int64* lp = <const cnp.npy_int64*>cnp.PyArray_DATA(lab)
    cdef size_t isz = 4 if t == cnp.NPY_FLOAT else 8
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(2, cnp.PyArray_DIMS(x), t, 0)
    cdef void* work = malloc((N * C + (3 * N if with_loss else N)) * isz)
    if work == NULL:
        return None
    cdef int rc
    cdef float sf, rf = 0
    cdef double sd, rd = 0
    feclearexcept(_FAIL_FLAGS | FE_UNDERFLOW)
    with nogil:
        if t == cnp.NPY_FLOAT:
            sf = <float>gd      # an overflowing cast raises FE_OVERFLOW: NumPy's path warns
            sf = sf / <float>N
            rc = fg_xent_grad_f(<const float*>cnp.PyArray_DATA(x), lp, N, C, sf, <float*>work,
                                <fg_xent_loop_t>_exp_f, _exp_fd, <fg_xent_loop_t>_log_f,
                                _log_fd, &rf if with_loss else NULL,
                                <float*>cnp.PyArray_DATA(out))
        else:
            sd = gd / <double>N
            rc = fg_xent_grad_d(<const double*>cnp.PyArray_DATA(x), lp, N, C, sd,
                                <double*>work, <fg_xent_loop_t>_exp_d, _exp_dd,
                                <fg_xent_loop_t>_log_d, _log_dd, &rd if with_loss else NULL,
                                <double*>cnp.PyArray_DATA(out))
    free(work)
    if rc != 0 or not _flags_ok():
        return None
    if not with_loss:
        return out
    return (_f32(rf) if t == cnp.NPY_FLOAT else _f64(rd)), out


def cross_entropy_grad(object g, object logits, object labels):
    """``(softmax(logits) - onehot(labels)) * (g / N)`` as a new ``(N, C)`` array of the logits'
    dtype, with ``g / N`` rounded as ``np.asarray(g, logits.dtype) / N`` rounds it; ``None``
    where the loops do not apply (see the module docstring; ``g`` must be a real scalar).

    >>> import numpy as np
    >>> from fastgraph.kernels import softmax
    >>> softmax.cross_entropy_grad(1.0, np.zeros((1, 4)), np.array([1]))
    array([[ 0.25, -0.75,  0.25,  0.25]])
    """
    return _xent_grad(g, logits, labels, False)


def cross_entropy_and_grad(object g, object logits, object labels):
    """``(cross_entropy(logits, labels), cross_entropy_grad(g, logits, labels))`` -- the same
    two values, bit for bit -- from one pass over the rows (the softmax's parts are computed
    once); ``None`` where the loops do not apply to both.

    >>> import numpy as np
    >>> from fastgraph.kernels import softmax
    >>> loss, grad = softmax.cross_entropy_and_grad(1.0, np.zeros((1, 4)), np.array([1]))
    >>> float(loss), grad.tolist()
    (1.3862943611198906, [[0.25, -0.75, 0.25, 0.25]])
    """
    return _xent_grad(g, logits, labels, True)


cdef object _along_rows(object x, object axis, fg_rows_f_t loop_f, fg_rows_d_t loop_d):
    """Run one of the row loops (softmax, log_softmax) on ``x`` into a new array of its shape and
    dtype, or ``None`` where the loops do not apply."""
    cdef cnp.npy_intp N, C
    cdef int t = _rows(x, axis, &N, &C)
    if t < 0:
        return None
    cdef cnp.ndarray a = <cnp.ndarray>x
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(a), cnp.PyArray_DIMS(a), t, 0)
    cdef void* work = malloc((N * C + 2 * N) * (4 if t == cnp.NPY_FLOAT else 8))
    if work == NULL:
        return None
    cdef int rc
    feclearexcept(_FAIL_FLAGS | FE_UNDERFLOW)
    with nogil:
        if t == cnp.NPY_FLOAT:
            rc = loop_f(<const float*>cnp.PyArray_DATA(a), N, C, <float*>work,
                        <fg_xent_loop_t>_exp_f, _exp_fd, <fg_xent_loop_t>_log_f, _log_fd,
                        <float*>cnp.PyArray_DATA(out))
        else:
            rc = loop_d(<const double*>cnp.PyArray_DATA(a), N, C, <double*>work,
                        <fg_xent_loop_t>_exp_d, _exp_dd, <fg_xent_loop_t>_log_d, _log_dd,
                        <double*>cnp.PyArray_DATA(out))
    free(work)
    if rc != 0 or not _flags_ok():
        return None
    return out


def softmax(object x, object axis=-1):
    """``exp(z) / sum(exp(z))`` along the last axis with ``z = x - max(x)``, as a new array of
    ``x``'s shape and dtype, or ``None`` where the loops do not apply (see the module docstring).

    >>> import numpy as np
    >>> from fastgraph.kernels import softmax
    >>> softmax.softmax(np.zeros((1, 4)))
    array([[0.25, 0.25, 0.25, 0.25]])
    """
    return _along_rows(x, axis, fg_softmax_f, fg_softmax_d)


def log_softmax(object x, object axis=-1):
    """``z - log(sum(exp(z)))`` along the last axis with ``z = x - max(x)``, as a new array of
    ``x``'s shape and dtype, or ``None`` where the loops do not apply (see the module docstring).

    >>> import numpy as np
    >>> from fastgraph.kernels import softmax
    >>> float(softmax.log_softmax(np.zeros(4))[0])  # -log(4)
    -1.3862943611198906
    """
    return _along_rows(x, axis, fg_log_softmax_f, fg_log_softmax_d)


def pairwise_sum(object a):
    """NumPy's pairwise sum of a contiguous 1-D float32/float64 array, as these loops compute it
    (for tests: it must equal ``np.add.reduce(a)`` bit for bit)."""
    cdef cnp.ndarray arr = np.ascontiguousarray(a)
    if arr.ndim != 1:
        raise ValueError("pairwise_sum takes a 1-D array")
    if arr.dtype == np.float32:
        return _f32(fg_pairwise_f(<const float*>cnp.PyArray_DATA(arr), arr.shape[0]))
    if arr.dtype == np.float64:
        return _f64(fg_pairwise_d(<const double*>cnp.PyArray_DATA(arr), arr.shape[0]))
    raise TypeError(f"pairwise_sum takes float32 or float64, not {arr.dtype}")
