"""Compiled elementwise kernels on small float arrays, and the column sum of bias gradients.

A ufunc call on a 64-element array costs ~1 us, nearly all of it NumPy's dispatch (type
resolution, wrapping, error-state lookup); the loop itself is a few dozen ns.  For the common case
-- same-shape, C-contiguous, native float64/float32 arrays, or one such array and a scalar -- the
dispatcher and the eager tape call an op's inner loop directly (:c:func:`ew`).  Anything else, and
any floating-point exception (so that NumPy's warnings and ``np.errstate`` behave as before), is
left to NumPy: ``ew`` then returns None.

The loops are NumPy's own (a ufunc's ``dd->d``/``ff->f`` loops: results are NumPy's bit for bit)
or the built-in ones below: the VJP building blocks (their rules in ``fg_grad_rules.h``, shared with
the fused VM; contraction into FMA is off, so results are bit-identical to the NumPy
expressions), ``relu`` and ``relu``'s gradient.  Arrays only: this module imports no other
fastgraph module.
"""
cimport cython
cimport numpy as cnp
from fastgraph.kernels.ufunc_loops cimport find_loop, loop_t
from cpython.object cimport PyObject
from cpython.long cimport PyLong_AsLongLongAndOverflow
from libc.math cimport isinf
from libc.string cimport memcpy

import numpy as np

cnp.import_array()


cdef extern from "numpy/arrayobject.h":
    object PyArray_Scalar(void* data, cnp.dtype descr, PyObject* base)

from fastgraph.kernels.fenv cimport (
    fetestexcept, feclearexcept, FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW, FE_INVALID,
)

cdef extern from *:
    """
    #include "fg_x86_dispatch.h"     /* FG_X86_DISPATCH, FG_AVX2, fg_cpu_avx2_fma */
    #include "fg_fp_exact_begin.h"   /* no FMA contraction: NumPy's rounding */
    #define FG_LOOP2(NAME, T, EXPR) \
    static void NAME(char **args, npy_intp *dims, npy_intp *steps, void *data) { \
        char *pa = args[0], *pb = args[1], *po = args[2]; \
        npy_intp n = dims[0], sa = steps[0], sb = steps[1], so = steps[2], i; \
        if (sa == sizeof(T) && sb == sizeof(T) && so == sizeof(T)) { \
            const T *A = (const T *)pa, *B = (const T *)pb; T *O = (T *)po; \
            for (i = 0; i < n; i++) { T a = A[i], b = B[i]; O[i] = (EXPR); } \
        } else { \
            for (i = 0; i < n; i++, pa += sa, pb += sb, po += so) { \
                T a = *(const T *)pa, b = *(const T *)pb; *(T *)po = (EXPR); } \
        } \
    }
    #include "fg_grad_rules.h"
    FG_LOOP2(fg_tanh_grad_d, double, FG_TANH_GRAD(double, a, b))
    FG_LOOP2(fg_tanh_grad_f, float, FG_TANH_GRAD(float, a, b))
    FG_LOOP2(fg_sigmoid_grad_d, double, FG_SIGMOID_GRAD(double, a, b))
    FG_LOOP2(fg_sigmoid_grad_f, float, FG_SIGMOID_GRAD(float, a, b))
    /* relu_grad(x, g) = g * (x > 0) in one pass, without the boolean temporary */
    FG_LOOP2(fg_relu_grad_d, double, FG_MUL_GREATER(double, b, a, 0.0))
    FG_LOOP2(fg_relu_grad_f, float, FG_MUL_GREATER(float, b, a, 0.0f))
    /* The sum of the R rows of a C-contiguous (R, C) array, C >= 2: NumPy's add.reduce over
       leading axes adds the rows in order to its identity, +0.0 (pairwise summation is only for
       a reduction along the contiguous axis; the +0.0 shows in a column of -0.0s), so this is
       the same sum, bit for bit; the compiler vectorises across the columns, which are
       independent. */
    #define FG_COLSUM(NAME, T, ATTR) \
    ATTR static void NAME(const T *g, T *out, Py_ssize_t R, Py_ssize_t C) { \
        Py_ssize_t i, j; \
        for (j = 0; j < C; j++) out[j] = (T)0 + g[j]; \
        for (i = 1; i < R; i++) { \
            const T *row = g + i * C; \
            for (j = 0; j < C; j++) out[j] = out[j] + row[j]; } }
    FG_COLSUM(fg_colsum_d_base, double, )
    FG_COLSUM(fg_colsum_f_base, float, )
    /* and an AVX2 copy (8 floats per add instead of 4), chosen at run time (fg_x86_dispatch.h) */
    #if FG_X86_DISPATCH
    FG_COLSUM(fg_colsum_d_avx2, double, FG_AVX2)
    FG_COLSUM(fg_colsum_f_avx2, float, FG_AVX2)
    static int fg_colsum_isa = -1;
    static int fg_colsum_avx2(void) {
        if (fg_colsum_isa < 0)
            fg_colsum_isa = fg_cpu_avx2_fma();
        return fg_colsum_isa;
    }
    static void fg_colsum_d(const double *g, double *o, Py_ssize_t R, Py_ssize_t C) {
        if (fg_colsum_avx2()) fg_colsum_d_avx2(g, o, R, C); else fg_colsum_d_base(g, o, R, C); }
    static void fg_colsum_f(const float *g, float *o, Py_ssize_t R, Py_ssize_t C) {
        if (fg_colsum_avx2()) fg_colsum_f_avx2(g, o, R, C); else fg_colsum_f_base(g, o, R, C); }
    static void fg_colsum_force_base(int base) { fg_colsum_avx2(); if (base) fg_colsum_isa = 0;
                                                 else fg_colsum_isa = -1; }
    #else
    #  define fg_colsum_d fg_colsum_d_base
    #  define fg_colsum_f fg_colsum_f_base
    static void fg_colsum_force_base(int base) { (void)base; }
    #endif
    #include "fg_fp_exact_end.h"
    /* relu(x) = np.maximum(x, 0) through NumPy's own maximum loop, but against a block of zeros
       instead of the scalar 0: NumPy's loop is vectorised only when both operands advance
       (~3x faster on 32k floats); the values are the same (checked by the tests, -0.0 and NaN
       included).  ``data`` points to the maximum loop of the dtype. */
    typedef struct { void (*loop)(char **, npy_intp *, npy_intp *, void *); void *data;
                     npy_intp itemsize; } fg_relu_ctx;
    static fg_relu_ctx fg_relu_ctx_d, fg_relu_ctx_f;
    static const double fg_zero_block[512];   /* +0.0 in either dtype */
    static void fg_relu(char **args, npy_intp *dims, npy_intp *steps, void *data) {
        fg_relu_ctx *c = (fg_relu_ctx *)data;
        npy_intp n = dims[0], done = 0, chunk = (npy_intp)sizeof(fg_zero_block) / c->itemsize;
        npy_intp st[3];
        char *a[3];
        st[0] = steps[0]; st[1] = c->itemsize; st[2] = steps[1];
        while (done < n) {
            npy_intp m = n - done < chunk ? n - done : chunk;
            a[0] = args[0] + done * steps[0];
            a[1] = (char *)fg_zero_block;
            a[2] = args[1] + done * steps[1];
            c->loop(a, &m, st, c->data);
            done += m;
        }
    }
    """
    void fg_tanh_grad_d(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil
    void fg_tanh_grad_f(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil
    void fg_sigmoid_grad_d(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil
    void fg_sigmoid_grad_f(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil
    void fg_relu_grad_d(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil
    void fg_relu_grad_f(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil
    void fg_colsum_d(const double*, double*, Py_ssize_t, Py_ssize_t) noexcept nogil
    void fg_colsum_f(const float*, float*, Py_ssize_t, Py_ssize_t) noexcept nogil
    void fg_colsum_force_base(int) noexcept nogil
    ctypedef struct fg_relu_ctx:
        loop_t loop
        void* data
        cnp.npy_intp itemsize
    fg_relu_ctx fg_relu_ctx_d, fg_relu_ctx_f
    void fg_relu(char**, cnp.npy_intp*, cnp.npy_intp*, void*) noexcept nogil


cdef object _ndarray = np.ndarray
cdef object _f64 = np.float64
cdef object _f32 = np.float32
cdef cnp.dtype _descr_f64 = np.dtype(np.float64)
cdef cnp.dtype _descr_f32 = np.dtype(np.float32)


# ---- the kernels ----------------------------------------------------------------------------------
cdef int kernel_of_ufunc(ew_kernel* k, object ufunc) except -1:
    """Fill ``k`` with ``ufunc``'s own ``dd->d``/``ff->f`` (``ddd``/``fff``) inner loops, so that
    results are NumPy's bit for bit: 1, or 0 (``k`` unchanged) for a ufunc without both loops,
    of other than one or two inputs, or with several outputs or a core signature."""
    cdef ew_kernel found
    cdef int nin = ufunc.nin
    if ufunc.nout != 1 or nin not in (1, 2) or ufunc.signature is not None:
        return 0
    if not (find_loop(ufunc, nin + 1, cnp.NPY_DOUBLE, &found.loop[0], &found.data[0])
            and find_loop(ufunc, nin + 1, cnp.NPY_FLOAT, &found.loop[1], &found.data[1])):
        return 0
    found.nin = nin
    found.any_size = False
    k[0] = found
    return 1


cdef int builtin_kernel(ew_kernel* k, str name) except -1:
    """Fill ``k`` with one of the built-in loops: ``"tanh_grad"``, ``"sigmoid_grad"`` (two
    inputs), ``"relu_grad"`` (``g * (x > 0)``, inputs ``x, g``) or ``"relu"``.  The last two also
    run on large arrays when they write a new array: they do in one fast pass what NumPy does in
    two, or in one slow one.  0 (``k`` emptied) when NumPy's loop that ``relu`` builds on is
    missing; ``ValueError`` (``k`` unchanged) for another name."""
    if name not in ("tanh_grad", "sigmoid_grad", "relu_grad", "relu"):
        raise ValueError(f"no built-in kernel named {name!r}")
    k.nin = 0
    k.any_size = False
    if name == "tanh_grad":
        k.loop[0], k.loop[1] = fg_tanh_grad_d, fg_tanh_grad_f
        k.nin = 2
    elif name == "sigmoid_grad":
        k.loop[0], k.loop[1] = fg_sigmoid_grad_d, fg_sigmoid_grad_f
        k.nin = 2
    elif name == "relu_grad":
        k.loop[0], k.loop[1] = fg_relu_grad_d, fg_relu_grad_f
        k.nin = 2
        k.any_size = True
    elif name == "relu":
        if fg_relu_ctx_d.loop == NULL:
            if not (find_loop(np.maximum, 3, cnp.NPY_DOUBLE, &fg_relu_ctx_d.loop,
                              &fg_relu_ctx_d.data)
                    and find_loop(np.maximum, 3, cnp.NPY_FLOAT, &fg_relu_ctx_f.loop,
                                  &fg_relu_ctx_f.data)):
                return 0
            fg_relu_ctx_d.itemsize, fg_relu_ctx_f.itemsize = 8, 4
        k.loop[0] = k.loop[1] = fg_relu
        k.data[0], k.data[1] = <void*>&fg_relu_ctx_d, <void*>&fg_relu_ctx_f
        k.nin = 1
        k.any_size = True
    return 1


# NumPy's own addition: ``ew`` adds a result into an accumulator with it (NumPy's rounding)
cdef ew_kernel _ADD
kernel_of_ufunc(&_ADD, np.add)


cdef extern from *:
    """
    /* From this size on NumPy's dispatch is noise (and the VJP building blocks switch to the
       fused VM): NumPy does the work. */
    #define FG_EW_MAX_SIZE (1 << 15)
    /* where in-place kernels compute before copying (see ew); the GIL serialises its users */
    static double fg_scratch[FG_EW_MAX_SIZE];
    """
    const Py_ssize_t EW_MAX_SIZE "FG_EW_MAX_SIZE"
    double fg_scratch[]
cdef int _FP_FLAGS = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID
cdef int _KERNEL_FLAGS = cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_ALIGNED


cdef inline int _float_slot(object v):
    """0 / 1 for a float64 / float32 ndarray the kernels can read directly, else -1."""
    if type(v) is not _ndarray:
        return -1
    cdef cnp.ndarray a = <cnp.ndarray>v
    if (cnp.PyArray_FLAGS(a) & _KERNEL_FLAGS) != _KERNEL_FLAGS or cnp.PyArray_NDIM(a) == 0:
        return -1
    if not cnp.PyArray_ISNOTSWAPPED(a):
        return -1
    cdef int t = cnp.PyArray_TYPE(a)
    return 0 if t == cnp.NPY_DOUBLE else (1 if t == cnp.NPY_FLOAT else -1)


cdef inline bint _scalar_operand(object v, int slot, double* d, float* f):
    """A scalar NumPy would combine with a ``slot`` array without changing its dtype (a Python
    float or small int -- NEP 50's weak scalars -- or a NumPy scalar of that very dtype), stored
    at ``d`` / ``f``.  False for anything else."""
    cdef object tv = type(v)
    cdef double x
    cdef long long iv
    cdef int overflow
    if tv is float:
        x = <double>v
        if slot == 1:
            f[0] = <float>x
            # a Python float beyond float32's range: NumPy's cast warns; let it
            return not (isinf(f[0]) and not isinf(x))
        d[0] = x
        return True
    if tv is int:
        iv = PyLong_AsLongLongAndOverflow(v, &overflow)
        if overflow or not -(1 << 24) <= iv <= (1 << 24):  # exact in float32 (and float64)
            return False
        d[0] = <double>iv
        f[0] = <float>d[0]
        return True
    if slot == 0 and tv is _f64:
        d[0] = <double>v
        return True
    if slot == 1 and tv is _f32:
        f[0] = <float>v
        return True
    return False


cdef inline int _numpy_float_scalar(object v):
    """0 / 1 for a NumPy float64 / float32 scalar (0-d Tensors hold these), else -1."""
    cdef object tv = type(v)
    return 0 if tv is _f64 else (1 if tv is _f32 else -1)


cdef inline bint _is_layout_of(object a, cnp.ndarray arr, int slot):
    """``a`` is a kernel-readable array of ``arr``'s shape and of dtype ``slot``."""
    return _float_slot(a) == slot and same_dims(<cnp.ndarray>a, arr)


cdef object _ew_scalars(ew_kernel* op, object x, object y):
    """``op``'s kernel on NumPy float scalars (one of them may be a weak Python scalar): the
    arithmetic of the compiled VJPs on 0-d values.  None where NumPy must do it."""
    cdef int slot = _numpy_float_scalar(x)
    cdef double d[3]
    cdef float f[3]
    cdef char* args[3]
    cdef cnp.npy_intp steps[3]
    cdef cnp.npy_intp n = 1
    cdef int k
    if op.nin == 1:
        if slot < 0 or not _scalar_operand(x, slot, &d[0], &f[0]):
            return None
    else:
        if slot < 0:
            slot = _numpy_float_scalar(y)
            if slot < 0:
                return None
        if not (_scalar_operand(x, slot, &d[0], &f[0])
                and _scalar_operand(y, slot, &d[1], &f[1])):
            return None
    for k in range(3):
        args[k] = <char*>&d[k] if slot == 0 else <char*>&f[k]
        steps[k] = 0
    if fetestexcept(_FP_FLAGS):
        feclearexcept(_FP_FLAGS)
    op.loop[slot](args, &n, steps, op.data[slot])
    if fetestexcept(_FP_FLAGS):
        feclearexcept(_FP_FLAGS)
        return None
    return PyArray_Scalar(args[op.nin], _descr_f64 if slot == 0 else _descr_f32, NULL)


cdef object ew(ew_kernel* op, object x, object y, object into, object acc):
    """``op``'s kernel on ``x`` (and ``y`` for a binary op), or None where NumPy must do it.

    ``into``: an array operand (``x`` or ``y``) that is dead after this call and that only the
    caller holds; the result then overwrites it instead of taking a new array.
    ``acc``: an array of the result's layout that only the caller holds; the result is added
    into it (``acc + result``, NumPy's order and rounding) and ``acc`` returned.
    (Both compute in a scratch buffer first, so that after a floating-point exception the
    operands are intact for NumPy to redo the operation.)"""
    cdef int sx = _float_slot(x), sy, slot
    cdef cnp.ndarray arr, out
    cdef char* args[3]
    cdef cnp.npy_intp steps[3]
    cdef cnp.npy_intp n
    cdef double sd
    cdef float sf
    if op.nin == 0:
        return None
    if op.nin == 1:
        if sx < 0:
            return _ew_scalars(op, x, None) if acc is None else None
        arr = <cnp.ndarray>x
        slot = sx
        args[0] = cnp.PyArray_BYTES(arr)
        steps[0] = steps[1] = 4 << (1 - slot)
    else:
        sy = _float_slot(y)
        if sx >= 0 and sy >= 0:
            if sx != sy or not same_dims(<cnp.ndarray>x, <cnp.ndarray>y):
                return None
            slot = sx
            arr = <cnp.ndarray>x
            args[0] = cnp.PyArray_BYTES(arr)
            args[1] = cnp.PyArray_BYTES(<cnp.ndarray>y)
            steps[0] = steps[1] = steps[2] = 4 << (1 - slot)
        elif sx >= 0:
            slot = sx
            if not _scalar_operand(y, slot, &sd, &sf):
                return None
            arr = <cnp.ndarray>x
            args[0] = cnp.PyArray_BYTES(arr)
            args[1] = <char*>&sd if slot == 0 else <char*>&sf
            steps[0] = steps[2] = 4 << (1 - slot)
            steps[1] = 0
        elif sy >= 0:
            slot = sy
            if not _scalar_operand(x, slot, &sd, &sf):
                return None
            arr = <cnp.ndarray>y
            args[0] = <char*>&sd if slot == 0 else <char*>&sf
            args[1] = cnp.PyArray_BYTES(arr)
            steps[0] = 0
            steps[1] = steps[2] = 4 << (1 - slot)
        else:
            return _ew_scalars(op, x, y) if acc is None else None
    n = cnp.PyArray_SIZE(arr)
    if acc is not None:
        if not _is_layout_of(acc, arr, slot):
            return None
        into = acc
    cdef bint in_place = (into is not None and (acc is not None or into is x or into is y)
                          and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>into))
    if n >= EW_MAX_SIZE:
        # in place needs the scratch buffer; a new array, a kernel worth it at any size
        if acc is not None or not op.any_size:
            return None
        in_place = False
    if in_place:
        args[op.nin] = <char*>fg_scratch
    else:
        out = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(arr), cnp.PyArray_DIMS(arr),
                                cnp.NPY_DOUBLE if slot == 0 else cnp.NPY_FLOAT, 0)
        args[op.nin] = cnp.PyArray_BYTES(out)
    if fetestexcept(_FP_FLAGS):
        feclearexcept(_FP_FLAGS)
    op.loop[slot](args, &n, steps, op.data[slot])
    if acc is not None:  # scratch = acc + scratch
        args[0] = cnp.PyArray_BYTES(<cnp.ndarray>acc)
        args[1] = args[2] = <char*>fg_scratch
        steps[0] = steps[1] = steps[2] = 4 << (1 - slot)
        _ADD.loop[slot](args, &n, steps, _ADD.data[slot])
    if fetestexcept(_FP_FLAGS):
        # overflow, 0/0, ...: NumPy recomputes it and warns or raises as np.errstate says
        feclearexcept(_FP_FLAGS)
        return None
    if in_place:
        memcpy(cnp.PyArray_BYTES(<cnp.ndarray>into), fg_scratch, n * (4 << (1 - slot)))
        return into
    return out


# ---- the column sum (bias gradients) ------------------------------------------------------------
cdef object _add_reduce = np.add.reduce
cdef int _COLSUM_IN = cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_ALIGNED
cdef int _COLSUM_OUT = cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_ALIGNED | cnp.NPY_ARRAY_WRITEABLE


cdef bint _sum_leading(cnp.ndarray G, int lead, object out):
    """``np.add.reduce(G, axis=range(lead))`` written into ``out`` (C-contiguous, ``G``'s dtype
    and trailing size) by ``fg_colsum``; False when it does not apply -- another dtype or
    layout, fewer than 2 columns or no rows, ``out`` overlapping ``G``, or a floating-point
    exception (NumPy then recomputes, and warns or raises as ``np.errstate`` says)."""
    if type(out) is not _ndarray:
        return False
    cdef cnp.ndarray O = <cnp.ndarray>out
    cdef int t = cnp.PyArray_TYPE(G)
    if ((t != cnp.NPY_DOUBLE and t != cnp.NPY_FLOAT) or cnp.PyArray_TYPE(O) != t
            or (cnp.PyArray_FLAGS(G) & _COLSUM_IN) != _COLSUM_IN
            or (cnp.PyArray_FLAGS(O) & _COLSUM_OUT) != _COLSUM_OUT
            or not cnp.PyArray_ISNOTSWAPPED(G) or not cnp.PyArray_ISNOTSWAPPED(O)):
        return False
    cdef Py_ssize_t R = 1, C = 1, isz = 8 if t == cnp.NPY_DOUBLE else 4
    cdef int i, nd = cnp.PyArray_NDIM(G)
    for i in range(nd):
        if i < lead:
            R *= cnp.PyArray_DIMS(G)[i]
        else:
            C *= cnp.PyArray_DIMS(G)[i]
    if R < 1 or C < 2 or cnp.PyArray_SIZE(O) != C:
        return False
    cdef char* gp = cnp.PyArray_BYTES(G)
    cdef char* op = cnp.PyArray_BYTES(O)
    if op < gp + R * C * isz and gp < op + C * isz:
        return False
    cdef bint clean
    with nogil:
        if fetestexcept(_FP_FLAGS):
            feclearexcept(_FP_FLAGS)
        if t == cnp.NPY_DOUBLE:
            fg_colsum_d(<const double*>gp, <double*>op, R, C)
        else:
            fg_colsum_f(<const float*>gp, <float*>op, R, C)
        clean = not fetestexcept(_FP_FLAGS)
        if not clean:
            feclearexcept(_FP_FLAGS)
    return clean


def _colsum_baseline(bint on):
    """For tests: run the column sum's baseline copy (``True``) or the CPU's best (``False``)."""
    fg_colsum_force_base(on)


def sum_leading(object g, int lead, object out):
    """``np.add.reduce(g, axis=tuple(range(lead)), out=out)`` -- the same values, bit for bit
    -- in one C pass where it applies (see ``_sum_leading``), else NumPy's.  Returns ``out``.

        >>> sum_leading(np.ones((4, 3)), 1, np.empty(3))        # array([4., 4., 4.])
    """
    if (type(g) is _ndarray and 0 < lead < cnp.PyArray_NDIM(<cnp.ndarray>g)
            and _sum_leading(<cnp.ndarray>g, lead, out)):
        return out
    return _add_reduce(g, axis=tuple(range(lead)), out=out)


cpdef object sum_to_shape_of(object g, object x):
    """``g`` summed over the axes that broadcasting added to reach its shape from ``x``'s, reshaped
    to ``x``'s shape (``np.add.reduce(g, axes, keepdims=True)``): the forward of the
    ``sum_to_like`` op, which the walker also calls directly for plain arrays (a bias gradient
    takes this path on every backward pass).

        >>> sum_to_shape_of(np.ones((4, 3)), np.zeros(3))        # array([4., 4., 4.])
    """
    cdef cnp.ndarray G = g if type(g) is _ndarray else np.asarray(g)
    cdef cnp.ndarray X = x if type(x) is _ndarray else np.asarray(x)
    cdef int nd = cnp.PyArray_NDIM(G), nx = cnp.PyArray_NDIM(X), lead = nd - nx, i
    cdef cnp.npy_intp* dg = cnp.PyArray_DIMS(G)
    cdef cnp.npy_intp* dx = cnp.PyArray_DIMS(X)
    cdef list axes = list(range(lead)) if lead > 0 else []
    for i in range(nx if lead >= 0 else 0):
        if dx[i] == dg[lead + i]:
            continue
        if dx[i] != 1:
            lead = -1
            break
        axes.append(lead + i)
    if lead < 0:
        raise ValueError(f"sum_to_like: shape {(<object>G).shape} is not a broadcast of "
                         f"shape {(<object>X).shape}")
    if not axes:
        return G
    cdef object out
    if len(axes) == lead and nx > 0:      # leading axes only (a bias gradient)
        out = cnp.PyArray_EMPTY(nx, dx, cnp.PyArray_TYPE(G), 0)
        if _sum_leading(G, lead, out):
            return out
    return _add_reduce(G, axis=tuple(axes), keepdims=True).reshape((<object>X).shape)


