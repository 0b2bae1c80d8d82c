"""The eager tape: recording an operation, and walking the tape backwards.

* :class:`TensorBase` holds a Tensor's fields (the Python class ``fastgraph.Tensor`` adds the
  methods); :class:`TapeNode` is one recorded operation.
* :func:`apply` is the dispatcher every operation goes through: plain values run the op's NumPy
  forward, eager Tensors are recorded by :func:`record`, other registered kinds (graph ``Node``s)
  go to their engine.
* :func:`walk` is the reverse pass: Kahn's algorithm over the reachable nodes (iterative, so a
  chain of 10**6 nodes is as safe as one of 10), calling each op's VJP rules.

Recording creates no reference cycles: an output Tensor points to its TapeNode, which points to
its inputs and parents, never back to the output; TapeNode opts out of the cyclic GC.
0-d values are computed as NumPy scalars (scalar arithmetic is ~7x cheaper than 0-d arrays).
"""
cimport cython
cimport numpy as cnp
from fastgraph._ufunc_loops cimport find_loop, loop_t
from cpython.object cimport PyObject, PyTypeObject
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.math cimport isinf
from libc.string cimport memcpy

import numpy as np

cnp.import_array()


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)

cdef extern from "numpy/arrayobject.h":
    object PyArray_Scalar(void* data, cnp.dtype descr, PyObject* base)

from fastgraph._fenv cimport (
    fetestexcept, feclearexcept, FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW, FE_INVALID,
)

# A NumPy inner loop: ``loop(args, dimensions, steps, data)`` (``PyUFuncGenericFunction``).

# The VJP building blocks as inner loops of the same signature.  The rules themselves are in
# _grad_rules.h, shared with the VM; contraction into FMA is off, so results are bit-identical
# to the NumPy fallback.
cdef extern from *:
    """
    #include "_x86_dispatch.h"     /* FG_X86_DISPATCH, FG_AVX2, fg_cpu_avx2_fma */
    #include "_fp_exact_begin.h"   /* no FMA contraction: NumPy's rounding */
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
    #include "_grad_rules.h"
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
    /* and an AVX2 copy (8 floats per add instead of 4), chosen at run time (_x86_dispatch.h) */
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
    #include "_fp_exact_end.h"
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
cdef object _generic = np.generic
cdef object _asarray = np.asarray
cdef object _f64 = np.float64
cdef object _f32 = np.float32
cdef cnp.dtype _descr_f64 = np.dtype(np.float64)
cdef cnp.dtype _descr_f32 = np.dtype(np.float32)


@cython.final
cdef class OpDef:
    """One operation, as declared in ``fastgraph.ops`` (see ``ops/_registry.py``).

    Compiled so that the recorder and the walker read its fields directly.  ``operator`` (binary
    ops) is the Python operator with the same NumPy semantics, and ``scalar_math`` (unary ops) a
    ``math`` function: the recorder uses them when an operand is a NumPy value, because NumPy
    scalars then take their fast scalar path (~10x cheaper than a ufunc call on 0-d data).
    """
    cdef public str name
    cdef public object forward
    cdef public object vjps
    cdef public object shape
    cdef public bint elementwise
    cdef public object opcode
    cdef public bint differentiable
    cdef public bint variadic
    cdef public object operator
    cdef public object scalar_math
    # compiled VJPs for plain-array backward passes: see set_eager_vjps
    cdef readonly tuple eager_vjps
    # the op's elementwise kernel on float64 [0] / float32 [1] data: see set_kernel
    cdef int _knin
    # the kernel also runs on arrays of any size (see set_kernel)
    cdef bint _kany
    cdef loop_t _loop[2]
    cdef void* _loopdata[2]

    def __init__(self, name, forward, vjps, shape, elementwise, opcode, differentiable,
                 variadic, operator=None, scalar_math=None):
        self.name = name
        self.forward = forward
        self.vjps = tuple(vjps)
        self.shape = shape
        self.elementwise = elementwise
        self.opcode = opcode
        self.differentiable = differentiable
        self.variadic = variadic
        self.operator = operator
        self.scalar_math = scalar_math

    def __repr__(self):
        return f"OpDef({self.name!r})"

    def set_kernel(self, source):
        """Give the op a compiled elementwise kernel, used on small float arrays (see ``_ew``).

        ``source`` is a NumPy ufunc whose ``forward`` this op is (its own ``dd->d``/``ff->f``
        inner loops are called, so results are NumPy's bit for bit), or the name of one of the
        building-block loops above (``"tanh_grad"``, ``"sigmoid_grad"``, ``"relu_grad"``,
        ``"relu"``).  ``"relu"`` and ``"relu_grad"`` also run on large arrays (when they write
        a new array): they do in one fast pass what NumPy does in two, or in one slow one.
        Returns whether the op now has one."""
        cdef loop_t ld = NULL, lf = NULL
        cdef void* dd = NULL
        cdef void* df = NULL
        cdef int nin
        self._kany = False
        if isinstance(source, str):
            if source == "tanh_grad":
                ld, lf, nin = fg_tanh_grad_d, fg_tanh_grad_f, 2
            elif source == "sigmoid_grad":
                ld, lf, nin = fg_sigmoid_grad_d, fg_sigmoid_grad_f, 2
            elif source == "relu_grad":
                ld, lf, nin = fg_relu_grad_d, fg_relu_grad_f, 2
                self._kany = True
            elif source == "relu":
                if fg_relu_ctx_d.loop == NULL:
                    if not (find_loop(np.maximum, 3, cnp.NPY_DOUBLE, &fg_relu_ctx_d.loop,
                                      &fg_relu_ctx_d.data)
                            and find_loop(np.maximum, 3, cnp.NPY_FLOAT, &fg_relu_ctx_f.loop,
                                          &fg_relu_ctx_f.data)):
                        return False
                    fg_relu_ctx_d.itemsize, fg_relu_ctx_f.itemsize = 8, 4
                ld = lf = fg_relu
                dd, df, nin = <void*>&fg_relu_ctx_d, <void*>&fg_relu_ctx_f, 1
                self._kany = True
            else:
                raise ValueError(f"no built-in kernel named {source!r}")
        else:
            nin = source.nin
            if source.nout != 1 or nin not in (1, 2) or source.signature is not None:
                return False
            if not find_loop(source, nin + 1, cnp.NPY_DOUBLE, &ld, &dd):
                return False
            if not find_loop(source, nin + 1, cnp.NPY_FLOAT, &lf, &df):
                return False
        self._knin = nin
        self._loop[0], self._loop[1] = ld, lf
        self._loopdata[0], self._loopdata[1] = dd, df
        return True

    @property
    def has_kernel(self):
        return self._knin != 0

    def set_eager_vjps(self, recipes):
        """Compiled VJPs for plain-array backward passes (``create_graph=False``).

        One entry per input: ``None`` (call the VJP rule), ``"g"`` (the gradient passes
        through unchanged) or ``(kernel_op, slot, ...)``: ``kernel_op``'s kernel applied to the
        named values, each slot one of ``"g"``, ``"ans"``, ``0``, ``1``, ... (the inputs).  It
        must compute what the rule computes; where the kernel does not apply (broadcasting,
        other dtypes, scalars) the rule runs instead.

        A ``kernel_op`` without an elementwise kernel (``matmul``) makes a *2-D recipe*: its
        ``forward`` is called on the named values when every one is a 2-D ndarray, else the rule
        runs; a slot may then name a transpose, ``"g.T"``, ``"0.T"``, ... (a view, as ``.T``
        gives).  The rule's Python frames, and those of the ops it calls, are what it saves."""
        out = []
        for r in recipes:
            if r is None:
                out.append(None)
            elif r == "g":
                out.append((None, 0))
            else:
                k, *slots = r
                two_d = not (<OpDef?>k)._knin
                if two_d and len(slots) != 2 or not two_d and len(slots) != (<OpDef>k)._knin:
                    raise ValueError(f"{self.name}: eager VJP {r!r} needs {k.name}'s kernel "
                                     f"with {len(slots)} inputs, or two 2-D operands")
                codes = []
                for v in slots:
                    v = str(v)
                    t = v.endswith(".T")
                    if t and not two_d:
                        raise ValueError(f"{self.name}: eager VJP {r!r}: transposes are for "
                                         f"2-D recipes only")
                    v = v[:len(v) - 2] if t else v
                    c = 0 if v == "g" else 1 if v == "ans" else 2 + int(v)
                    codes.append(~c if t else c)  # negative: the value's transpose
                if type(self.vjps) is tuple and any(
                        (~c if c < 0 else c) - 2 >= len(self.vjps) for c in codes):
                    raise ValueError(f"{self.name}: eager VJP {r!r} names an input the op "
                                     f"does not have")
                out.append((k,) + tuple(codes))
        if type(self.vjps) is tuple and len(out) != len(self.vjps):
            raise ValueError(f"{self.name}: {len(out)} eager VJP(s) for {len(self.vjps)} "
                             f"input(s)")
        self.eager_vjps = tuple(out)


@cython.no_gc
@cython.final
cdef class TapeNode:
    """One recorded operation: the op, its inputs, its output value, and its parents on the tape."""
    # read-only from Python: the walker trusts their shape (one parent per input, each a
    # TapeNode, a Tensor or None, as the op's rules expect), and only the recorder sets them
    cdef readonly OpDef op       # the operation
    cdef readonly tuple inputs   # the arguments as given (Tensors and constants); None once freed
    cdef readonly object attrs   # dict of attributes, or None
    cdef readonly object ans     # the output's value (ndarray or NumPy scalar); None once freed
    cdef readonly tuple parents  # per input: TapeNode, leaf Tensor, or None (no gradient needed)
    cdef public object hooks     # list of hooks on the output tensor, or None
    cdef public object retained  # weakref to the output tensor when retain_grad() was called
    # per-walk scratch, valid while _walk equals the current walk's number; _g_owned: only the
    # walk holds the array _g, so it may be overwritten (see walk)
    cdef object _g
    cdef bint _g_owned
    cdef Py_ssize_t _deps
    cdef unsigned long long _walk
    # sum of the input Tensors' versions when recorded: in-place changes since then are errors
    cdef long long _versions

    def __init__(self, *args, **kwargs):
        # the recorder makes nodes with __new__ and sets their fields in C; one built from
        # Python could pair an op with inputs its rules cannot index, and crash the walker
        raise TypeError("TapeNode cannot be created from Python: nodes are recorded by "
                        "operations on Tensors that require a gradient")

    def name(self):
        return None if self.op is None else self.op.name

    def __repr__(self):
        return "<TapeNode (empty)>" if self.op is None else f"<{self.op.name}>"


@cython.final
cdef class VersionCounter:
    """The in-place version of some data, shared (as in PyTorch) by a tensor, its ``detach()``
    and the tensors that are views of its data: an in-place change through any of them bumps it,
    and a tape node that saved one of them then refuses to use it."""
    cdef public long long value

    def __repr__(self):
        return f"VersionCounter({self.value})"


cdef class TensorBase:
    """The fields of an eager Tensor (methods live in ``fastgraph.eager.tensor.Tensor``)."""
    cdef public object _data
    cdef public object _grad        # see the ``grad`` property
    cdef readonly object grad_fn    # the TapeNode that made this tensor, or None (a leaf)
    cdef public object _hooks
    cdef public bint _requires_grad
    cdef public bint _retains
    # the version counter of the data (None: version 0, not shared yet; made on first need)
    cdef VersionCounter _vc
    # for a view of another tensor's data: that tensor (the root of the chain of views)
    cdef public object _base
    cdef object __weakref__
    # per-walk scratch when this tensor is a leaf of a backward walk (see TapeNode)
    cdef object _g
    cdef bint _g_owned
    cdef Py_ssize_t _deps
    cdef unsigned long long _walk

    def __init__(self, data, bint requires_grad=False, grad_fn=None):
        if grad_fn is not None and type(grad_fn) is not TapeNode:
            raise TypeError(f"grad_fn must be a TapeNode or None, not {type(grad_fn).__name__}")
        if requires_grad and grad_fn is None and not _is_float_value(data):
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients "
                               f"(got {np.asarray(data).dtype})")
        self._data = data
        self._requires_grad = requires_grad or grad_fn is not None
        self.grad_fn = grad_fn

    @property
    def _version(self):
        """How many in-place changes the data has seen (shared with views and ``detach()``)."""
        return 0 if self._vc is None else self._vc.value

    def _bump_version(self):
        """Record an in-place change of the data (seen by every tensor sharing it)."""
        if self._vc is None:
            self._vc = VersionCounter()
        self._vc.value += 1

    def _share_version(self, TensorBase other):
        """Make ``other`` share this tensor's version counter (``detach()``, views)."""
        if self._vc is None:
            self._vc = VersionCounter()
        other._vc = self._vc

    @property
    def grad(self):
        """The accumulated gradient: None or a Tensor of this tensor's shape and dtype."""
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    # The hottest operators are compiled (no Python frame per ``a * b``); the rest are methods of
    # the Python class.
    def __add__(self, other):
        return apply(_ADD, (self, other), None)

    def __radd__(self, other):
        return apply(_ADD, (other, self), None)

    def __sub__(self, other):
        return apply(_SUB, (self, other), None)

    def __rsub__(self, other):
        return apply(_SUB, (other, self), None)

    def __mul__(self, other):
        return apply(_MUL, (self, other), None)

    def __rmul__(self, other):
        return apply(_MUL, (other, self), None)

    def __truediv__(self, other):
        return apply(_DIV, (self, other), None)

    def __rtruediv__(self, other):
        return apply(_DIV, (other, self), None)

    def __neg__(self):
        return apply(_NEG, (self,), None)


cdef _check_grad(TensorBase t, object value):
    if not isinstance(value, TensorBase):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                        f"{type(value).__name__}")
    cdef object v = (<TensorBase>value)._data, d = t._data
    if v is None or d is None:
        return
    if np.shape(v) != np.shape(d):
        raise RuntimeError(f"assigned grad has data of a different size: grad shape "
                           f"{np.shape(v)}, tensor shape {np.shape(d)}")
    if np.result_type(v) != np.result_type(d):
        raise RuntimeError(f"assigned grad has data of a different type: grad dtype "
                           f"{np.result_type(v)}, tensor dtype {np.result_type(d)}")


cdef inline object _root_buffer(object a):
    """The object at the end of ``a``'s chain of ``.base``s (``a`` itself when it owns its
    data)."""
    cdef PyObject* b
    while type(a) is _ndarray:
        b = <PyObject*>cnp.PyArray_BASE(<cnp.ndarray>a)
        if b == NULL:
            return a
        a = <object>b
    return a


cdef void _link_view(TensorBase t, tuple args) except *:
    """``t``'s data is a view (its ``.base`` is set): if it views the data of an input Tensor,
    share that input's version counter and remember the input (the root of its views) as
    ``t._base``.  Only called for outputs that are views, so ordinary ops pay nothing."""
    cdef object root = _root_buffer(t._data), a
    cdef TensorBase src
    for a in args:
        if not isinstance(a, TensorBase):
            continue
        src = <TensorBase>a
        if type(src._data) is not _ndarray or _root_buffer(src._data) is not root:
            continue
        if src._vc is None:
            src._vc = VersionCounter()
        t._vc = src._vc
        t._base = src._base if src._base is not None else src
        return


# ---- grad mode: per thread, as in PyTorch ------------------------------------------------------
# A C thread-local rather than a threading.local attribute: the recorder reads it on every
# operation (~600 instructions for the attribute, ~1 for this).  Every thread starts enabled.
cdef extern from *:
    """
    #if defined(_MSC_VER)
    #  define FG_THREAD_LOCAL __declspec(thread)
    #else
    #  define FG_THREAD_LOCAL __thread
    #endif
    static FG_THREAD_LOCAL int fg_grad_enabled = 1;
    """
    int fg_grad_enabled


def is_grad_enabled():
    """Whether this thread records eager operations (``fastgraph.eager.grad_mode`` owns the API)."""
    return bool(fg_grad_enabled)


def set_grad_enabled(bint mode):
    global fg_grad_enabled
    fg_grad_enabled = mode


# ---- configuration set once by the Python layer -----------------------------------------------
cdef object _Tensor = None          # the Python Tensor class
cdef dict _other_kinds = {}         # type -> applier, for non-eager kinds (graph Nodes)
cdef object _ZERO = None
cdef object _sum_to_like = None
cdef object _astype = None
cdef object _op_error = None
cdef object _ADD = None, _SUB = None, _MUL = None, _DIV = None, _NEG = None
cdef object _pack = None            # nested sequence holding Tensors/Nodes -> one (stacked) value


def configure(tensor_cls, zero, sum_to_like, astype, op_error, registry, pack=None):
    """Wire the Python layer in (called once when ``fastgraph.eager.tensor`` is imported)."""
    global _Tensor, _ZERO, _sum_to_like, _astype, _op_error, _pack
    global _ADD, _SUB, _MUL, _DIV, _NEG
    # the recorder makes tensor_cls instances with tp_new and writes TensorBase fields
    if not (isinstance(tensor_cls, type) and issubclass(tensor_cls, TensorBase)):
        raise TypeError(f"configure: tensor_cls must be a TensorBase subclass, not "
                        f"{tensor_cls!r}")
    ops = [registry[name] for name in ("add", "subtract", "multiply", "divide", "negative")]
    for o in ops:
        if type(o) is not OpDef:
            raise TypeError(f"configure: registry entries must be OpDefs, not {type(o).__name__}")
    _ADD, _SUB, _MUL, _DIV, _NEG = ops
    _Tensor = tensor_cls
    _ZERO = zero
    _sum_to_like = sum_to_like
    _astype = astype
    _op_error = op_error
    if pack is not None and not callable(pack):
        raise TypeError(f"configure: pack must be callable, not {type(pack).__name__}")
    _pack = pack


def register_kind(cls, applier):
    """Route operations whose arguments include a ``cls`` instance to ``applier(op, args, attrs)``."""
    _other_kinds[cls] = applier


cdef tuple _EMPTY = ()


cdef inline TensorBase _new_tensor(object data, object grad_fn):
    # straight to tp_new: no __init__ call, no argument parsing
    cdef TensorBase t = <TensorBase>(<PyTypeObject*>_Tensor).tp_new(_Tensor, <PyObject*>_EMPTY, NULL)
    # Tensors made by operations hold no reference cycles (the tape points backwards only), so
    # the cyclic GC need not scan them: long tapes then cost the collector nothing. (A cycle
    # made through a hook closure is the one thing this gives up collecting.)
    PyObject_GC_UnTrack(<void*>t)
    t._data = data
    t.grad_fn = grad_fn
    t._requires_grad = grad_fn is not None
    return t


cdef inline object _scalar_if_0d(object v):
    if type(v) is _ndarray and cnp.PyArray_NDIM(<cnp.ndarray>v) == 0:
        return (<cnp.ndarray>v)[()]
    return v


# ---- compiled elementwise kernels on small arrays ---------------------------------------------
# A ufunc call on a 64-element array costs ~1 us, nearly all of it NumPy's dispatch (type
# resolution, wrapping, error-state lookup); the loop itself is a few dozen ns.  For the common
# case -- same-shape, C-contiguous, native float64/float32 arrays, or one such array and a scalar
# -- the tape calls the op's inner loop directly.  Anything else, and any floating-point
# exception (so that NumPy's warnings and np.errstate behave as before), goes to NumPy.
cdef extern from *:
    """
    /* From this size on NumPy's dispatch is noise (and elementwise.py's building blocks switch
       to the fused VM): NumPy does the work. */
    #define FG_EW_MAX_SIZE (1 << 15)
    /* where in-place kernels compute before copying (see _ew); the GIL serialises its users */
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


cdef inline bint _same_dims(cnp.ndarray a, cnp.ndarray b):
    cdef int nd = cnp.PyArray_NDIM(a), k
    if nd != cnp.PyArray_NDIM(b):
        return False
    cdef cnp.npy_intp* da = cnp.PyArray_DIMS(a)
    cdef cnp.npy_intp* db = cnp.PyArray_DIMS(b)
    for k in range(nd):
        if da[k] != db[k]:
            return False
    return True


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
    return _float_slot(a) == slot and _same_dims(<cnp.ndarray>a, arr)


cdef object _ew_scalars(OpDef op, object x, object y):
    """``op``'s kernel on NumPy float scalars (one of them may be a weak Python scalar): the
    arithmetic of the compiled VJPs on 0-d values.  None where NumPy must do it."""
    cdef int slot = _numpy_float_scalar(x)
    cdef double d[3]
    cdef float f[3]
    cdef char* args[3]
    cdef cnp.npy_intp steps[3]
    cdef cnp.npy_intp n = 1
    cdef int k
    if op._knin == 1:
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
    op._loop[slot](args, &n, steps, op._loopdata[slot])
    if fetestexcept(_FP_FLAGS):
        feclearexcept(_FP_FLAGS)
        return None
    return PyArray_Scalar(args[op._knin], _descr_f64 if slot == 0 else _descr_f32, NULL)


cdef object _ew(OpDef op, object x, object y, object into=None, object acc=None):
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
    if op._knin == 1:
        if sx < 0:
            return _ew_scalars(op, x, None) if acc is None else None
        arr = <cnp.ndarray>x
        slot = sx
        args[0] = cnp.PyArray_BYTES(arr)
        steps[0] = steps[1] = 4 << (1 - slot)
    else:
        sy = _float_slot(y)
        if sx >= 0 and sy >= 0:
            if sx != sy or not _same_dims(<cnp.ndarray>x, <cnp.ndarray>y):
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
        if acc is not None or not op._kany:
            return None
        in_place = False
    if in_place:
        args[op._knin] = <char*>fg_scratch
    else:
        out = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(arr), cnp.PyArray_DIMS(arr),
                                cnp.NPY_DOUBLE if slot == 0 else cnp.NPY_FLOAT, 0)
        args[op._knin] = cnp.PyArray_BYTES(out)
    if fetestexcept(_FP_FLAGS):
        feclearexcept(_FP_FLAGS)
    op._loop[slot](args, &n, steps, op._loopdata[slot])
    if acc is not None:  # scratch = acc + scratch
        args[0] = cnp.PyArray_BYTES(<cnp.ndarray>acc)
        args[1] = args[2] = <char*>fg_scratch
        steps[0] = steps[1] = steps[2] = 4 << (1 - slot)
        (<OpDef>_ADD)._loop[slot](args, &n, steps, (<OpDef>_ADD)._loopdata[slot])
    if fetestexcept(_FP_FLAGS):
        # overflow, 0/0, ...: NumPy recomputes it and warns or raises as np.errstate says
        feclearexcept(_FP_FLAGS)
        return None
    if in_place:
        memcpy(cnp.PyArray_BYTES(<cnp.ndarray>into), fg_scratch, n * (4 << (1 - slot)))
        return into
    return out


# ---- forward ----------------------------------------------------------------------------------
cdef inline bint _is_sequence(object v):
    """A list or tuple (a namedtuple too: slogdet's result), or a NumPy object array: the
    containers whose items NumPy reads one by one when it makes an array of them."""
    return isinstance(v, (list, tuple)) or (
        type(v) is _ndarray and cnp.PyArray_TYPE(<cnp.ndarray>v) == cnp.NPY_OBJECT)


cdef bint _holds_graph_value(object seq, dict seen, int depth) except -1:
    """Whether a (nested) sequence holds a Tensor or another kind's value (a graph Node).
    ``seen`` maps the id of each sequence examined to 1 while its items are being walked, then
    to its answer (2 no, 3 yes): a sequence met again while being walked contains itself
    (NumPy's ValueError, raised even when a Tensor came first, or packing would never end), one
    met again later gives its answer (shared sub-lists are walked once).  Nesting deeper than
    NumPy's dimension limit is left to NumPy, which rejects it."""
    cdef object v, key = id(seq), state
    cdef bint found = False
    if depth > 64:
        return False
    state = seen.get(key)
    if state is not None:
        if state == 1:
            raise ValueError("setting an array element with a sequence: a list that contains "
                             "itself cannot be read as an array")
        return state == 3
    seen[key] = 1
    for v in seq:
        if isinstance(v, TensorBase):
            found = True
        elif _is_sequence(v):
            if _holds_graph_value(v, seen, depth + 1):
                found = True
        elif _other_kinds and type(v) in _other_kinds:
            found = True
    seen[key] = 3 if found else 2
    return found


cpdef bint holds_graph_value(tuple values) except -1:
    """Whether ``values`` hold a Tensor or another kind's value (a graph Node), themselves or
    inside a (nested) list, tuple or object array: what ``apply`` reads as a value of the graph
    and packs.  ``fastgraph.numpy`` (op or NumPy?) and ``as_node`` (pack a list?) ask the same."""
    cdef object v
    cdef dict seen = None
    for v in values:
        if isinstance(v, TensorBase):
            return True
        if _is_sequence(v):
            if seen is None:
                seen = {}
            if _holds_graph_value(v, seen, 1):
                return True
        elif _other_kinds and type(v) in _other_kinds:
            return True
    return False


cdef tuple _pack_sequences(tuple args):
    """``args`` with each sequence (list, tuple, object array) that holds Tensors (or Nodes)
    packed into one array of the graph by ``stack`` (autograd's ``np.array([x, y])``), so its
    gradient flows; ``args`` itself when none does."""
    cdef list out = None
    cdef Py_ssize_t i
    cdef object a
    for i in range(len(args)):
        a = args[i]
        if _is_sequence(a) and _holds_graph_value(a, {}, 1):
            if out is None:
                out = list(args)
            out[i] = _pack(a)
    return args if out is None else tuple(out)


cpdef object apply(OpDef op, tuple args, object attrs):
    """Run ``op`` on ``args``: NumPy for plain values, the tape for Tensors, else their engine.
    A list, tuple or object array holding Tensors or Nodes is first packed into one (``_pack``)."""
    if op is None or args is None:    # (typed arguments accept None; the fields below do not)
        raise TypeError("apply: op must be an OpDef and args a tuple, not None")
    cdef bint has_tensor = False, has_sequence = False
    cdef object a, applier = None
    cdef tuple packed
    for a in args:
        if isinstance(a, TensorBase):
            has_tensor = True
            continue
        if _is_sequence(a):
            has_sequence = True
        elif _other_kinds:
            applier = _other_kinds.get(type(a), applier)
    if has_sequence and _pack is not None:
        packed = _pack_sequences(args)
        if packed is not args:
            return apply(op, packed, attrs)
    if applier is not None:
        return applier(op, args, attrs)
    if has_tensor:
        return record(op, args, attrs)
    if attrs:
        return op.forward(*args, **attrs)
    cdef Py_ssize_t n = len(args)
    if op._knin == n:  # plain arrays too: the VJP rules' building blocks come through here
        a = _ew(op, args[0], args[1] if n == 2 else None)
        if a is not None:
            return a
    return op.forward(*args)


cdef inline object _forward(OpDef op, tuple values, Py_ssize_t n, object attrs):
    cdef object v0
    if attrs:
        return op.forward(*values, **attrs)
    if op._knin == n:
        v0 = _ew(op, values[0], values[1] if n == 2 else None)
        if v0 is not None:
            return v0
    if n == 2 and op.operator is not None:
        return op.operator(values[0], values[1])
    if n == 1 and op.scalar_math is not None:
        v0 = values[0]
        if type(v0) is _f64:
            try:
                return _f64(op.scalar_math(v0))
            except (OverflowError, ValueError):
                pass  # inf / nan: NumPy produces them (with its warning)
    return op.forward(*values)


cdef inline object _parent_of(object a, object vjps, Py_ssize_t i):
    """The tape parent of input ``i``, ``a`` (its TapeNode, or itself as a leaf), or None when
    no gradient flows to it."""
    if not isinstance(a, TensorBase) or not (<TensorBase>a)._requires_grad or vjps[i] is None:
        return None
    cdef object fn = (<TensorBase>a).grad_fn
    return a if fn is None else fn


cdef tuple _parents_of(tuple args, object vjps):
    """Per input, its tape parent or None; None when no input needs a gradient."""
    cdef Py_ssize_t n = len(args), i
    cdef tuple out = None
    cdef object p
    if type(vjps) is tuple and n > len(<tuple>vjps):
        raise TypeError(f"an operation with {len(<tuple>vjps)} differentiable input(s) got "
                        f"{n} argument(s)")
    for i in range(n):
        if _parent_of(args[i], vjps, i) is not None:
            break
    else:
        return None
    out = PyTuple_New(n)
    for i in range(n):
        p = _parent_of(args[i], vjps, i)
        Py_INCREF(p)  # PyTuple_SET_ITEM steals a reference
        PyTuple_SET_ITEM(out, i, p)
    return out


cpdef object record(OpDef op, tuple args, object attrs):
    """The eager applier: compute ``op`` and, if a gradient is needed, record one TapeNode."""
    if op is None or args is None:
        raise TypeError("record: op must be an OpDef and args a tuple, not None")
    cdef tuple values = _plain_values(args)
    cdef object out
    try:
        out = _forward(op, values, len(values), attrs)
    except Exception as e:
        raise _op_error(op, values, attrs, e) from e
    cdef TensorBase t
    if type(out) is _ndarray:
        # a view, maybe of an input's data (or an input itself: identity, astype to its dtype)
        if cnp.PyArray_BASE(<cnp.ndarray>out) != NULL or (len(values) and out is values[0]):
            t = _record(op, args, attrs, out)
            _link_view(t, args)
            return t
    elif not isinstance(out, _generic):
        out = _asarray(out)
    return _record(op, args, attrs, out)


cdef inline TensorBase _record(OpDef op, tuple args, object attrs, object out):
    if not (op.differentiable and fg_grad_enabled):
        return _new_tensor(out, None)
    cdef tuple parents = _parents_of(args, op.vjps)
    if parents is None:
        return _new_tensor(out, None)
    if not _is_float_value(out):
        return _new_tensor(out, None)  # integer and boolean results carry no gradient
    cdef TapeNode node = TapeNode.__new__(TapeNode)
    node._versions = _version_sum(args)
    node.op = op
    node.inputs = args
    node.attrs = attrs
    node.ans = out
    node.parents = parents
    PyObject_GC_UnTrack(<void*>args)      # held only by the node, which is untracked
    PyObject_GC_UnTrack(<void*>parents)
    return _new_tensor(out, node)


cdef inline bint _is_float_value(object out):
    """``out`` (an ndarray or NumPy scalar) is of a floating (or complex) dtype."""
    cdef object tv = type(out)
    if tv is _ndarray:
        return cnp.PyArray_ISFLOAT(<cnp.ndarray>out) or cnp.PyArray_ISCOMPLEX(<cnp.ndarray>out)
    if tv is _f64 or tv is _f32:
        return True
    if isinstance(out, _generic):
        return np.result_type(out).kind in "fc"
    return np.asarray(out).dtype.kind in "fc"   # (a list given to Tensor(...): its values)


# ---- backward ---------------------------------------------------------------------------------
cdef inline long long _version_sum(tuple args):
    cdef long long total = 0
    cdef object a
    cdef VersionCounter vc
    for a in args:
        if isinstance(a, TensorBase):
            vc = (<TensorBase>a)._vc
            if vc is not None:
                total += vc.value
    return total


_MODIFIED_MESSAGE = (
    "one of the variables needed for gradient computation has been modified by an inplace "
    "operation (an input of {op!r}); recompute the forward pass after changing it, or change a "
    "copy")


_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or fg.autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


cdef inline bint _same_layout(cnp.ndarray a, cnp.ndarray b):
    """Same shape and dtype, compared in C."""
    # builtin dtypes are singletons
    return _same_dims(a, b) and cnp.PyArray_DESCR(a) == cnp.PyArray_DESCR(b)


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


cdef object _fit_to_input(object gi, object x):
    """Sum ``gi`` back to the broadcast shape of input ``x`` and cast it to ``x``'s dtype."""
    cdef object tx = type(x)
    if type(gi) is tx:
        if tx is _ndarray:
            if _same_layout(<cnp.ndarray>gi, <cnp.ndarray>x):
                return gi
        elif not isinstance(gi, TensorBase):
            return gi  # two NumPy scalars of one type: same shape () and dtype
    if tx is _ndarray and type(gi) is _ndarray:
        gi = sum_to_shape_of(gi, x)
    elif gi.shape != x.shape:
        gi = _sum_to_like(gi, x)
    xdt = x.dtype
    if gi.dtype != xdt:
        gi = _astype(gi, xdt)
    return gi


cdef inline object _slot_value(Py_ssize_t slot, object g, object ans, tuple args):
    return g if slot == 0 else (ans if slot == 1 else args[slot - 2])


cdef inline object _matrix_value(Py_ssize_t slot, object g, object ans, tuple args):
    """The value of a 2-D recipe's ``slot`` (negative: transposed), or None unless it is a 2-D
    ndarray."""
    cdef object v = _slot_value(~slot if slot < 0 else slot, g, ans, args)
    if type(v) is not _ndarray or cnp.PyArray_NDIM(<cnp.ndarray>v) != 2:
        return None
    return cnp.PyArray_Transpose(<cnp.ndarray>v, NULL) if slot < 0 else v


cdef inline object _eager_vjp(tuple recipe, object g, object ans, tuple args, object into,
                              object acc):
    """The compiled VJP ``recipe`` (see ``OpDef.set_eager_vjps``), or None where it does not
    apply; ``into``, ``acc``: as for ``_ew``.  A 2-D recipe returns a new array (it neither
    adds into ``acc`` nor writes ``into``, which is one of its operands)."""
    cdef object k = recipe[0]
    cdef object a, b
    if not (<OpDef>k)._knin:
        if acc is not None:
            return None
        a = _matrix_value(recipe[1], g, ans, args)
        b = _matrix_value(recipe[2], g, ans, args)
        if a is None or b is None:
            return None
        return (<OpDef>k).forward(a, b)
    if len(recipe) == 2:
        return _ew(<OpDef>k, _slot_value(recipe[1], g, ans, args), None, into, acc)
    return _ew(<OpDef>k, _slot_value(recipe[1], g, ans, args),
               _slot_value(recipe[2], g, ans, args), into, acc)


cdef object _input_gradient(TapeNode node, Py_ssize_t i, object g, object ans, tuple args,
                            bint create_graph, object into, object acc, int* how):
    """The gradient for input ``i``.  ``how`` says where it came from: ``_GI_PASSED`` (it is
    ``g``), ``_GI_FRESH`` (a new array -- or ``into`` -- that nothing else holds),
    ``_GI_ADDED`` (it was added into ``acc``, the input's gradient sum so far, which is
    returned) or ``_GI_OTHER`` (a VJP rule's result, which may share memory with anything)."""
    cdef OpDef op = node.op
    cdef object rule, gi, fitted
    cdef object x = args[i]
    how[0] = _GI_OTHER
    if not create_graph and op.eager_vjps is not None and i < len(op.eager_vjps):
        recipe = op.eager_vjps[i]
        if recipe is not None:
            if (<tuple>recipe)[0] is None:  # the gradient passes through
                how[0] = _GI_PASSED
                return _fit_to_input(g, x)
            if acc is not None:
                gi = _eager_vjp(<tuple>recipe, g, ans, args, None, acc)
                if gi is not None:  # (acc has the input's layout: nothing to fit)
                    how[0] = _GI_ADDED
                    return gi
            gi = _eager_vjp(<tuple>recipe, g, ans, args, into, None)
            if gi is not None:
                fitted = _fit_to_input(gi, x)
                if fitted is gi:
                    how[0] = _GI_FRESH
                return fitted
    if type(op.vjps) is tuple and i >= len(<tuple>op.vjps):
        raise RuntimeError(f"{op.name}: no VJP rule for input {i}")
    rule = op.vjps[i]  # (vjps may be a lazy table for variadic ops)
    if rule is _ZERO:
        gi = np.zeros(np.shape(x), dtype=np.result_type(g))
        return _new_tensor(gi, None) if create_graph else gi
    if node.attrs:
        gi = rule(g, ans, *args, **node.attrs)
    else:
        gi = rule(g, ans, *args)
    return _fit_to_input(gi, x)


cdef enum:
    _GI_OTHER = 0
    _GI_PASSED = 1
    _GI_FRESH = 2
    _GI_ADDED = 3


cdef inline object _accumulate(object prev, bint* owned, TapeNode tn, Py_ssize_t i, object g,
                               object ans, tuple args, bint create_graph, object into,
                               int* how):
    """A parent's new gradient sum: ``prev`` (its ``_g``; ``owned[0]``, its ``_g_owned``,
    updated) plus input ``i``'s gradient."""
    cdef bint prev_owned = owned[0] and prev is not None
    cdef object gi = _input_gradient(tn, i, g, ans, args, create_graph, into,
                                     prev if prev_owned else None, how)
    if how[0] == _GI_ADDED:
        return prev  # already summed into prev, in place
    if prev is None:
        owned[0] = how[0] == _GI_FRESH
        return gi
    return _sum_grads(prev, prev_owned, gi, owned)


cdef inline object _sum_grads(object prev, bint prev_owned, object gi, bint* owned):
    """``prev + gi`` for two gradients reaching one node.  ``prev_owned``: only the walk holds
    ``prev``, so the sum may overwrite it; ``owned[0]`` says the same of the result."""
    cdef object r = _ew(<OpDef>_ADD, prev, gi, prev if prev_owned else None)
    owned[0] = type(r) is _ndarray  # (NumPy scalars are immutable)
    return prev + gi if r is None else r


cdef inline Py_ssize_t _push(list stack, Py_ssize_t n, object item) except -1:
    if n < len(stack):
        stack[n] = item
    else:
        stack.append(item)
    return n + 1


cdef tuple _plain_values(tuple inputs):
    """The inputs with Tensors replaced by their values (0-d ones as NumPy scalars)."""
    cdef Py_ssize_t n = len(inputs), i
    cdef tuple out = PyTuple_New(n)
    cdef object v
    for i in range(n):
        v = inputs[i]
        if isinstance(v, TensorBase):
            v = _scalar_if_0d((<TensorBase>v)._data)
        Py_INCREF(v)  # PyTuple_SET_ITEM steals a reference
        PyTuple_SET_ITEM(out, i, v)
    return out


cdef unsigned long long _walk_counter = 0


cdef set _leading_to(list roots, dict targets):
    """Ids of the nodes (and leaves) on some path from ``roots`` to a target: the only ones whose
    gradients ``fg.autograd.grad`` needs.  Iterative post-order over the DAG."""
    cdef set needed = set()
    cdef set visited = set()
    cdef list stack = []
    cdef object node, parent
    cdef bint state, hit
    for node in roots:
        stack.append((node, False))
    while stack:
        node, state = stack.pop()
        if not state:
            if id(node) in visited:
                continue
            visited.add(id(node))
            stack.append((node, True))
            if type(node) is TapeNode:
                for parent in (<TapeNode>node).parents:
                    if parent is not None and id(parent) not in visited:
                        stack.append((parent, False))
            continue
        hit = id(node) in targets
        if not hit and type(node) is TapeNode:
            for parent in (<TapeNode>node).parents:
                if parent is not None and id(parent) in needed:
                    hit = True
                    break
        if hit:
            needed.add(id(node))
    return needed


def walk(list roots, list root_grads, bint retain_graph, bint create_graph, object engine,
         object capture=None):
    """Propagate ``root_grads`` from ``roots`` (TapeNodes or leaf Tensors) back to the leaves.

    ``engine`` supplies the Python policy at the ends: ``engine.node_hooks(node, g,
    create_graph)`` (hooks of non-leaf outputs, called during the walk; it returns the gradient
    to propagate) and ``engine.finish(tensors, grads, create_graph, capture)``, called once the
    whole walk has succeeded with the tensors reached and their gradients -- leaves, and
    non-leaf tensors that called ``retain_grad()`` -- in the order reached: it runs the leaves'
    hooks and then accumulates into ``.grad`` (with ``capture``, stores the leaves' gradients
    there instead).  So an exception anywhere in the walk (a VJP rule, a hook, a tensor
    modified in place) leaves every ``.grad`` as it was and the graph unfreed.  With ``capture`` (a dict
    ``id(target) -> None``), as ``fg.autograd.grad`` uses it, the gradient reaching each target
    is stored there, only the nodes on a path to a target are visited, and no leaf's ``.grad``
    is touched.

    Gradient sums and pending-consumer counts live in scratch fields of the TapeNodes and leaf
    Tensors, stamped with this walk's number (so a walk interrupted by an exception leaves
    nothing stale): no dictionary on the hot path.
    """
    global _walk_counter
    _walk_counter += 1
    cdef unsigned long long stamp = _walk_counter
    cdef list stack = []
    # nodes whose gradient is complete, as a stack: ready[:n_ready] (a list popped to empty and
    # refilled would be reallocated on every node)
    cdef list ready = []
    cdef Py_ssize_t n_ready = 0
    cdef list visited = []
    cdef bint finished = False
    cdef object node, parent, g, ans
    cdef Py_ssize_t i, n_parents, last
    cdef bint g_owned, owned
    cdef int how
    cdef tuple parents, inputs, args
    cdef TapeNode tn, pn
    cdef TensorBase leaf
    cdef bint capturing = capture is not None
    cdef set needed
    cdef list done_leaves = []
    cdef list done_grads = []
    cdef list done_nodes = []
    if len(root_grads) != len(roots):
        raise ValueError(f"walk: {len(root_grads)} gradient(s) for {len(roots)} root(s)")
    for node in roots:
        if type(node) is not TapeNode and not isinstance(node, TensorBase):
            raise TypeError(f"walk: a root must be a TapeNode or a Tensor, not "
                            f"{type(node).__name__}")
    needed = _leading_to(roots, capture) if capturing else None

    # 1. count, for every node to visit, how many visited consumers feed it
    for node in roots:
        if capturing and id(node) not in needed:
            continue
        if type(node) is TapeNode:
            tn = <TapeNode>node
            if tn._walk != stamp:
                tn._walk = stamp
                tn._deps = 0
                tn._g = None
                tn._g_owned = False
                stack.append(tn)
        else:
            leaf = <TensorBase>node
            if leaf._walk != stamp:
                leaf._walk = stamp
                leaf._deps = 0
                leaf._g = None
                leaf._g_owned = False
    while stack:
        tn = <TapeNode>stack.pop()
        for parent in tn.parents:
            if parent is None or (capturing and id(parent) not in needed):
                continue
            if type(parent) is TapeNode:
                pn = <TapeNode>parent
                if pn._walk == stamp:
                    pn._deps += 1
                else:
                    pn._walk = stamp
                    pn._deps = 1
                    pn._g = None
                    pn._g_owned = False
                    stack.append(pn)
                    visited.append(pn)
            else:
                leaf = <TensorBase>parent
                if leaf._walk == stamp:
                    leaf._deps += 1
                else:
                    leaf._walk = stamp
                    leaf._deps = 1
                    leaf._g = None
                    leaf._g_owned = False
                    visited.append(leaf)

    # 2. Kahn's order from the roots
    for node, g in zip(roots, root_grads):
        if capturing and id(node) not in needed:
            continue
        if type(node) is TapeNode:
            tn = <TapeNode>node
            tn._g = g if tn._g is None else tn._g + g
        else:
            leaf = <TensorBase>node
            leaf._g = g if leaf._g is None else leaf._g + g
    for node in roots:
        if capturing and id(node) not in needed:
            continue
        if type(node) is TapeNode:
            tn = <TapeNode>node
            if tn._deps == 0:
                tn._deps = -1  # queued once, even if listed twice
                n_ready = _push(ready, n_ready, tn)
        else:
            leaf = <TensorBase>node
            if leaf._deps == 0:
                leaf._deps = -1
                n_ready = _push(ready, n_ready, leaf)

    try:
        while n_ready:
            n_ready -= 1
            node = ready[n_ready]
            ready[n_ready] = None
            if type(node) is not TapeNode:
                leaf = <TensorBase>node
                g = leaf._g
                leaf._g = None
                done_leaves.append(leaf)  # delivered once the whole walk has succeeded
                done_grads.append(g)
                continue
            tn = <TapeNode>node
            g = tn._g
            g_owned = tn._g_owned and not create_graph
            tn._g = None
            inputs = tn.inputs
            if inputs is None:
                raise RuntimeError(_FREED_MESSAGE)
            if tn._versions != _version_sum(inputs):
                raise RuntimeError(_MODIFIED_MESSAGE.format(op=tn.op.name))
            if tn.hooks is not None:
                g = engine.node_hooks(tn, g, create_graph)  # (user code may keep g)
                g_owned = False
            if tn.retained is not None:
                parent = tn.retained()  # (a weakref to the output tensor)
                if parent is not None:
                    done_leaves.append(parent)  # its .grad is set with the leaves'
                    done_grads.append(g)
                g_owned = False
            if capturing and id(tn) in capture:
                capture[id(tn)] = g
                g_owned = False
            if create_graph:
                args = inputs
                ans = _new_tensor(tn.ans, tn)
            else:
                args = _plain_values(inputs)
                ans = tn.ans
            parents = tn.parents
            n_parents = len(parents)
            last = -1  # the last input needing a gradient: it may take g's buffer
            for i in range(n_parents):
                parent = parents[i]
                if parent is not None and not (capturing and id(parent) not in needed):
                    last = i
            for i in range(last + 1):
                parent = parents[i]
                if parent is None or (capturing and id(parent) not in needed):
                    continue
                if type(parent) is TapeNode:
                    pn = <TapeNode>parent
                    pn._g = _accumulate(pn._g, &pn._g_owned, tn, i, g, ans, args,
                                        create_graph, g if g_owned and i == last else None,
                                        &how)
                    pn._deps -= 1
                    if pn._deps == 0:
                        n_ready = _push(ready, n_ready, pn)
                else:
                    leaf = <TensorBase>parent
                    leaf._g = _accumulate(leaf._g, &leaf._g_owned, tn, i, g, ans, args,
                                          create_graph, g if g_owned and i == last else None,
                                          &how)
                    leaf._deps -= 1
                    if leaf._deps == 0:
                        n_ready = _push(ready, n_ready, leaf)
                if how != _GI_FRESH and how != _GI_ADDED:
                    g_owned = False  # g handed on, or seen by a rule that may keep it
            if not retain_graph:
                done_nodes.append(tn)
        engine.finish(done_leaves, done_grads, create_graph, capture)
        for tn in done_nodes:  # free the graph only after the walk and deliveries succeeded
            tn.inputs = None
            tn.ans = None
        finished = True
    finally:
        if not finished:  # an error: drop the gradients parked in scratch fields
            for node in roots + visited:
                if type(node) is TapeNode:
                    (<TapeNode>node)._g = None
                else:
                    (<TensorBase>node)._g = None
