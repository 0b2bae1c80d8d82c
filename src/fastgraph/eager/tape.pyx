"""The eager tape: recording an operation, and walking the tape backwards.

* :class:`TensorBase` holds a Tensor's fields (the Python class ``fastgraph.Tensor`` adds the
  methods); :class:`TapeNode` is one recorded operation; :class:`VersionCounter` the in-place
  version of some data.
* :func:`record` is the eager engine's applier: the core dispatcher (``_core/dispatch.pyx``) calls
  it, through the C pointer this module registers at import, for every op with a Tensor among
  its arguments.
* :func:`walk` is the reverse pass: Kahn's algorithm over the reachable nodes (iterative, so a
  chain of 10**6 nodes is as safe as one of 10), calling each op's VJP rules.
* Grad mode is a C thread-local read on every op.

Recording creates no reference cycles: an output Tensor points to its TapeNode, which points to
its inputs and parents, never back to the output; TapeNode opts out of the cyclic GC.
0-d values are computed as NumPy scalars (scalar arithmetic is ~7x cheaper than 0-d arrays).
"""
cimport cython
cimport numpy as cnp
from cpython.object cimport PyObject, PyTypeObject, PyObject_TypeCheck
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from fastgraph._core.dispatch cimport OpDef, apply, set_recorder
from fastgraph.kernels.blas cimport accumulate_matmul_c
from fastgraph.kernels.elementwise cimport ew, same_layout, scalar_if_0d, sum_to_shape_of

import numpy as np

from fastgraph._numpy_blas import accumulate_warnings as _accumulate_warnings, load as _load_blas
from fastgraph._core.errors import complex_gradient_error

cnp.import_array()


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)

cdef object _ndarray = np.ndarray
cdef object _generic = np.generic
cdef object _asarray = np.asarray
cdef object _f64 = np.float64
cdef object _f32 = np.float32


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
    # fg.autograd.grad's walk: 2 * its number once visited, + 1 if on a path to a target
    cdef unsigned long long _lead
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
    # hooks called during a backward walk as soon as this leaf's gradient is complete (see walk)
    cdef public object _ready_hooks
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
    cdef unsigned long long _lead

    def __init__(self, data, bint requires_grad=False, grad_fn=None):
        if grad_fn is not None and type(grad_fn) is not TapeNode:
            raise TypeError(f"grad_fn must be a TapeNode or None, not {type(grad_fn).__name__}")
        if requires_grad and grad_fn is None and not _is_float_value(data):
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require "
                               f"gradients (got {np.asarray(data).dtype})")
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
cdef object _ZERO = None
cdef object _sum_to_like = None
cdef object _astype = None
cdef object _op_error = None
cdef object _ADD = None, _SUB = None, _MUL = None, _DIV = None, _NEG = None


def configure(tensor_cls, zero, sum_to_like, astype, op_error, operators):
    """Wire the Python layer in (called once when ``fastgraph.eager.tensor`` is imported).
    ``operators``: the op of each Python operator (``"__add__"``: the op ``add``), for the
    compiled ones of ``TensorBase``."""
    global _Tensor, _ZERO, _sum_to_like, _astype, _op_error
    global _ADD, _SUB, _MUL, _DIV, _NEG
    # the recorder makes tensor_cls instances with tp_new and writes TensorBase fields
    if not (isinstance(tensor_cls, type) and issubclass(tensor_cls, TensorBase)):
        raise TypeError(f"configure: tensor_cls must be a TensorBase subclass, not "
                        f"{tensor_cls!r}")
    ops = [operators[name] for name in ("__add__", "__sub__", "__mul__", "__truediv__",
                                        "__neg__")]
    for o in ops:
        if type(o) is not OpDef:
            raise TypeError(f"configure: operators must map to OpDefs, not {type(o).__name__}")
    _ADD, _SUB, _MUL, _DIV, _NEG = ops
    _Tensor = tensor_cls
    _ZERO = zero
    _sum_to_like = sum_to_like
    _astype = astype
    _op_error = op_error


cdef tuple _EMPTY = ()

# The class of the results of operations with an input of PyTorch's face (``fastgraph.torch``'s
# ``Tensor``, a subclass of ``_Tensor`` whose methods mean what PyTorch's mean), or None until
# that front-end registers it.  An operation's result takes its inputs' face: PyTorch's if any
# input has it, else ``_Tensor``'s.
cdef object _torch_face = None


def set_torch_face(cls):
    """Give the results of operations with an input of class ``cls`` (or of a subclass:
    ``nn.Parameter``) the class ``cls`` (``fastgraph.torch`` registers its ``Tensor``, once)."""
    global _torch_face
    if not (isinstance(cls, type) and _Tensor is not None and issubclass(cls, _Tensor)
            and cls is not _Tensor):
        raise TypeError(f"set_torch_face: need a subclass of {_Tensor!r}, not {cls!r}")
    _torch_face = cls


cdef inline object _face_of(tuple args):
    """The class of a result of ``args``: PyTorch's face if an input has it.  (Two pointer
    comparisons per input when ``fastgraph.torch`` is imported, none otherwise.)"""
    cdef object a, ta
    if _torch_face is None:
        return _Tensor
    for a in args:
        ta = type(a)
        if ta is _torch_face:
            return _torch_face
        if ta is not _Tensor and PyObject_TypeCheck(a, <PyTypeObject*>_torch_face):
            return _torch_face
    return _Tensor


cdef inline TensorBase _new_tensor(object data, object grad_fn, object cls):
    # straight to tp_new: no __init__ call, no argument parsing
    cdef TensorBase t = <TensorBase>(<PyTypeObject*>cls).tp_new(cls, <PyObject*>_EMPTY, NULL)
    # Tensors made by operations hold no reference cycles (the tape points backwards only), so
    # the cyclic GC need not scan them: long tapes then cost the collector nothing. (A cycle
    # made through a hook closure is the one thing this gives up collecting.)
    PyObject_GC_UnTrack(<void*>t)
    t._data = data
    t.grad_fn = grad_fn
    t._requires_grad = grad_fn is not None
    return t



# ---- forward ----------------------------------------------------------------------------------
cdef inline object _forward(OpDef op, tuple values, Py_ssize_t n, object attrs):
    cdef object v0
    if attrs:
        return op.forward(*values, **attrs)
    if op.kernel.nin == n:
        v0 = ew(&op.kernel, values[0], values[1] if n == 2 else None, None, None)
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


def record(OpDef op, tuple args, object attrs):
    """The eager applier: compute ``op`` and, if a gradient is needed, record one TapeNode (what
    the dispatcher calls for arguments holding a Tensor)."""
    if op is None or args is None:
        raise TypeError("record: op must be an OpDef and args a tuple, not None")
    return _record_op(op, args, attrs)


cdef object _record_op(OpDef op, tuple args, object attrs):
    cdef tuple values = _plain_values(args)
    cdef object out
    try:
        out = _forward(op, values, len(values), attrs)
    except Exception as e:
        raise _op_error(op, values, attrs, e) from e
    cdef TensorBase t
    cdef object cls = _face_of(args)
    if type(out) is _ndarray:
        # a view, maybe of an input's data (or an input itself: identity, astype to its dtype)
        if cnp.PyArray_BASE(<cnp.ndarray>out) != NULL or (len(values) and out is values[0]):
            t = _record(op, args, attrs, out, cls)
            _link_view(t, args)
            return t
    elif not isinstance(out, _generic):
        out = _asarray(out)
    return _record(op, args, attrs, out, cls)


cdef inline TensorBase _record(OpDef op, tuple args, object attrs, object out, object cls):
    if not (op.differentiable and fg_grad_enabled):
        return _new_tensor(out, None, cls)
    cdef tuple parents = _parents_of(args, op.vjps)
    if parents is None:
        return _new_tensor(out, None, cls)
    if not _is_float_value(out):
        return _new_tensor(out, None, cls)  # integer and boolean results carry no gradient
    if not op.complex_vjps and _touches_complex(out, args):
        raise complex_gradient_error(op, _plain_values(args))
    cdef TapeNode node = TapeNode.__new__(TapeNode)
    node._versions = _version_sum(args)
    node.op = op
    node.inputs = args
    node.attrs = attrs
    node.ans = out
    node.parents = parents
    PyObject_GC_UnTrack(<void*>args)      # held only by the node, which is untracked
    PyObject_GC_UnTrack(<void*>parents)
    return _new_tensor(out, node, cls)


cdef inline bint _is_complex_value(object v):
    """``v`` (an operand or a result) holds complex values."""
    cdef object tv = type(v)
    if isinstance(v, TensorBase):
        v = (<TensorBase>v)._data
        tv = type(v)
    if tv is _ndarray:
        return cnp.PyArray_ISCOMPLEX(<cnp.ndarray>v)
    if tv is float or tv is int or tv is bool or tv is _f64 or tv is _f32:
        return False
    if tv is complex:
        return True
    if isinstance(v, _generic):
        return np.result_type(v).kind == "c"
    return False


cdef bint _touches_complex(object out, tuple args):
    """The result or an operand of a step being recorded is complex."""
    cdef object a
    if _is_complex_value(out):
        return True
    for a in args:
        if _is_complex_value(a):
            return True
    return False


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


cdef object _fit_to_input(object gi, object x):
    """Sum ``gi`` back to the broadcast shape of input ``x`` and cast it to ``x``'s dtype."""
    cdef object tx = type(x)
    if type(gi) is tx:
        if tx is _ndarray:
            if same_layout(<cnp.ndarray>gi, <cnp.ndarray>x):
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
    ndarray -- or a 1-D one not transposed (a matrix-vector product, with matmul's promotion of
    vectors: the caller takes at most one of those)."""
    cdef object v = _slot_value(~slot if slot < 0 else slot, g, ans, args)
    if type(v) is not _ndarray:
        return None
    cdef int nd = cnp.PyArray_NDIM(<cnp.ndarray>v)
    if nd == 2:
        return cnp.PyArray_Transpose(<cnp.ndarray>v, NULL) if slot < 0 else v
    return v if nd == 1 and slot >= 0 else None


cdef object _right_transpose(Py_ssize_t slot, object g, object ans, tuple args, dict tcache):
    """A 2-D recipe's right operand, ``_matrix_value``'s, except that a transposed one (``g @
    W.T``, the matmul VJP for its left input) read a second time in one walk -- a weight
    shared by every step of a loop -- comes as a C-contiguous copy made at that second read
    and kept for the rest of the walk: BLAS multiplies by a transposed right operand ~3x slower
    in small products (32 x 128 by 128 x 128).  The same values; ``tcache`` holds the walk's
    copies, keyed by the array, which it keeps alive so the key stays its own."""
    cdef object v = _matrix_value(slot, g, ans, args)
    if slot >= 0 or v is None or tcache is None:
        return v
    # (the operand itself, not v.base: NumPy points a view's base at the array owning the
    # memory, which other views of it -- slices of one stacked array -- share)
    cdef object base = _slot_value(~slot, g, ans, args)
    cdef object e = tcache.get(id(base))
    if e is None:
        tcache[id(base)] = (base, None)
        return v
    if (<tuple>e)[0] is not base:
        return v
    if (<tuple>e)[1] is None:
        e = tcache[id(base)] = (base, np.ascontiguousarray(v))
    return (<tuple>e)[1]


cdef bint _blas_loaded = False
cdef object _np_matmul = np.matmul


cdef object _accumulate_product(OpDef k, object a, object b, object acc):
    """``acc + a @ b`` written into ``acc`` (a gradient sum only the walk holds) by one BLAS
    ``gemm`` with ``beta = 1``, or None (nothing written) where that would not be ``acc +
    np.matmul(a, b)`` bit for bit (``kernels.blas.accumulate_matmul``).  A weight used by
    every step of a loop gets one such product per step: a fresh product would be zeroed by
    BLAS first, then added into the sum through a scratch buffer and copied back -- three
    passes over the weight's gradient saved per step.  After a floating-point exception the
    sum holds NumPy's values and NumPy's warnings are raised again (``_numpy_blas``)."""
    global _blas_loaded
    if k.forward is not _np_matmul:
        return None
    if not _blas_loaded:
        _blas_loaded = True
        _load_blas()
    cdef int r = accumulate_matmul_c(a, b, acc)
    if r == 0:
        return None
    if r == 2:
        _accumulate_warnings(a, b, acc.dtype)
    return acc


cdef inline object _eager_vjp(tuple recipe, object g, object ans, tuple args, object into,
                              object acc, dict tcache=None):
    """The compiled VJP ``recipe`` (see ``OpDef.set_eager_vjps``), or None where it does not
    apply; ``into``, ``acc``: as for ``kernels.elementwise.ew``; ``tcache``: see
    ``_right_transpose``.  A 2-D recipe returns a new array, or with ``acc`` adds the product
    into it by one ``gemm`` with ``beta = 1`` (see ``_accumulate_product``); it never writes
    ``into``, which is one of its operands."""
    cdef object k = recipe[0]
    cdef object a, b
    if not (<OpDef>k).kernel.nin:
        a = _matrix_value(recipe[1], g, ans, args)
        b = _right_transpose(recipe[2], g, ans, args, tcache)
        if a is None or b is None or (cnp.PyArray_NDIM(<cnp.ndarray>a) == 1 and
                                      cnp.PyArray_NDIM(<cnp.ndarray>b) == 1):
            return None
        if acc is not None:
            return _accumulate_product(<OpDef>k, a, b, acc)
        return (<OpDef>k).forward(a, b)
    if len(recipe) == 2:
        return ew(&(<OpDef>k).kernel, _slot_value(recipe[1], g, ans, args), None, into, acc)
    return ew(&(<OpDef>k).kernel, _slot_value(recipe[1], g, ans, args),
              _slot_value(recipe[2], g, ans, args), into, acc)


cdef object _input_gradient(TapeNode node, Py_ssize_t i, object g, object ans, tuple args,
                            bint create_graph, object into, object acc, int* how,
                            dict tcache=None):
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
                gi = _eager_vjp(<tuple>recipe, g, ans, args, None, acc, tcache)
                if gi is not None:  # (acc has the input's layout: nothing to fit)
                    how[0] = _GI_ADDED
                    return gi
            gi = _eager_vjp(<tuple>recipe, g, ans, args, into, None, tcache)
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
        return _new_tensor(gi, None, _face_of(args)) if create_graph else gi
    if node.attrs:
        gi = rule(g, ans, *args, **node.attrs)
    else:
        gi = rule(g, ans, *args)
    if gi is _ZERO:  # (a rule may answer ZERO for the values at hand: sign's for real ones)
        gi = np.zeros(np.shape(x), dtype=np.result_type(g))
        return _new_tensor(gi, None, _face_of(args)) if create_graph else gi
    return _fit_to_input(gi, x)


cdef enum:
    _GI_OTHER = 0
    _GI_PASSED = 1
    _GI_FRESH = 2
    _GI_ADDED = 3


cdef inline object _accumulate(object prev, bint* owned, TapeNode tn, Py_ssize_t i, object g,
                               object ans, tuple args, bint create_graph, object into,
                               int* how, dict tcache):
    """A parent's new gradient sum: ``prev`` (its ``_g``; ``owned[0]``, its ``_g_owned``,
    updated) plus input ``i``'s gradient."""
    cdef bint prev_owned = owned[0] and prev is not None
    cdef object gi = _input_gradient(tn, i, g, ans, args, create_graph, into,
                                     prev if prev_owned else None, how, tcache)
    if how[0] == _GI_ADDED:
        return prev  # already summed into prev, in place
    if prev is None:
        owned[0] = how[0] == _GI_FRESH
        return gi
    return _sum_grads(prev, prev_owned, gi, owned)


cdef inline object _sum_grads(object prev, bint prev_owned, object gi, bint* owned):
    """``prev + gi`` for two gradients reaching one node.  ``prev_owned``: only the walk holds
    ``prev``, so the sum may overwrite it; ``owned[0]`` says the same of the result."""
    cdef object r = ew(&(<OpDef>_ADD).kernel, prev, gi, prev if prev_owned else None, None)
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
            v = scalar_if_0d((<TensorBase>v)._data)
        Py_INCREF(v)  # PyTuple_SET_ITEM steals a reference
        PyTuple_SET_ITEM(out, i, v)
    return out


cdef unsigned long long _walk_counter = 0


# ---- a walk's scratch fields, the same in TapeNodes and leaf Tensors -----------------------------
ctypedef fused Reached:
    TapeNode
    TensorBase


cdef inline bint _reach(Reached v, unsigned long long stamp, Py_ssize_t consumers) noexcept:
    """The walk numbered ``stamp`` reaches ``v`` from ``consumers`` more consumers (0 for a
    root): True the first time, when its scratch fields start afresh."""
    if v._walk == stamp:
        v._deps += consumers
        return False
    v._walk = stamp
    v._deps = consumers
    v._g = None
    v._g_owned = False
    return True


cdef inline int _seed(Reached v, object g) except -1:
    """Add a root's given gradient ``g`` (a root listed twice gets the sum)."""
    v._g = g if v._g is None else v._g + g
    return 0


cdef inline bint _queue_root(Reached v) noexcept:
    """Whether root ``v`` is ready at the start (no consumer among the nodes visited), marked
    so that a root listed twice is queued once."""
    if v._deps != 0:
        return False
    v._deps = -1
    return True


cdef inline int _add_gradient(Reached v, TapeNode tn, Py_ssize_t i, object g, object ans,
                              tuple args, bint create_graph, object into, int* how,
                              dict tcache) except -1:
    """Add input ``i``'s gradient into parent ``v``'s sum (see :func:`_accumulate`): 1 when
    that was its last consumer, so that its gradient is complete."""
    v._g = _accumulate(v._g, &v._g_owned, tn, i, g, ans, args, create_graph, into, how, tcache)
    v._deps -= 1
    return v._deps == 0


cdef inline unsigned long long _lead_of(object v) noexcept:
    return (<TapeNode>v)._lead if type(v) is TapeNode else (<TensorBase>v)._lead


cdef inline void _set_lead(object v, unsigned long long mark) noexcept:
    if type(v) is TapeNode:
        (<TapeNode>v)._lead = mark
    else:
        (<TensorBase>v)._lead = mark


cdef inline bint _needed(object v, unsigned long long stamp) noexcept:
    """Whether ``v`` is on a path to a target of the walk numbered ``stamp`` (``_leading_to``)."""
    return _lead_of(v) == 2 * stamp + 1


cdef int _leading_to(list roots, dict targets, unsigned long long stamp) except -1:
    """Mark the nodes (and leaves) on some path from ``roots`` to a target (``_needed``): the only
    ones whose gradients ``fg.autograd.grad`` needs.  Iterative post-order over the DAG; the
    marks are fields stamped with the walk's number (no set of ids: each id() is an int made)."""
    cdef unsigned long long seen = 2 * stamp, need = 2 * stamp + 1
    cdef list stack = []
    cdef object node, parent
    cdef bint state, hit
    for node in roots:
        stack.append((node, False))
    while stack:
        node, state = stack.pop()
        if not state:
            if _lead_of(node) >= seen:   # (visited in this walk: marks only grow)
                continue
            _set_lead(node, seen)
            stack.append((node, True))
            if type(node) is TapeNode:
                for parent in (<TapeNode>node).parents:
                    if parent is not None and _lead_of(parent) < seen:
                        stack.append((parent, False))
            continue
        hit = id(node) in targets
        if not hit and type(node) is TapeNode:
            for parent in (<TapeNode>node).parents:
                if parent is not None and _lead_of(parent) == need:
                    hit = True
                    break
        if hit:
            _set_lead(node, need)
    return 0


def walk(list roots, list root_grads, bint retain_graph, bint create_graph, object engine,
         object capture=None):
    """Propagate ``root_grads`` from ``roots`` (TapeNodes or leaf Tensors) back to the leaves.

    ``engine`` supplies the Python policy at the ends: ``engine.node_hooks(node, g,
    create_graph)`` (hooks of non-leaf outputs, called during the walk; it returns the gradient
    to propagate) and ``engine.finish(tensors, grads, create_graph, capture)``, called once the
    whole walk has succeeded with the tensors reached and their gradients -- leaves, and
    non-leaf tensors that called ``retain_grad()`` -- in the order reached: it runs the leaves'
    hooks and then accumulates into ``.grad`` (with ``capture``, stores the leaves' gradients
    there instead).  A leaf with ready hooks (``Tensor.register_grad_ready_hook``) has them run,
    through ``engine.leaf_ready(leaf, g, create_graph)`` (its own hooks first; it returns the
    gradient to deliver), the moment its gradient is complete, during the walk.  So an exception anywhere in the walk (a VJP rule, a hook, a tensor
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
    cdef object node, parent, g, ans, into
    cdef Py_ssize_t i, n_parents, last
    cdef bint g_owned, owned
    cdef int how
    cdef tuple parents, inputs, args
    cdef TapeNode tn
    cdef TensorBase leaf
    cdef bint capturing = capture is not None
    cdef list done_leaves = []
    cdef list done_grads = []
    cdef list done_nodes = []
    cdef dict tcache = {}       # this walk's contiguous transposes (see _right_transpose)
    if len(root_grads) != len(roots):
        raise ValueError(f"walk: {len(root_grads)} gradient(s) for {len(roots)} root(s)")
    for node in roots:
        if type(node) is not TapeNode and not isinstance(node, TensorBase):
            raise TypeError(f"walk: a root must be a TapeNode or a Tensor, not "
                            f"{type(node).__name__}")
    if capturing:
        _leading_to(roots, capture, stamp)

    # 1. count, for every node to visit, how many visited consumers feed it
    for node in roots:
        if capturing and not _needed(node, stamp):
            continue
        if type(node) is TapeNode:
            if _reach(<TapeNode>node, stamp, 0):
                stack.append(node)
        else:
            _reach(<TensorBase>node, stamp, 0)
    while stack:
        tn = <TapeNode>stack.pop()
        for parent in tn.parents:
            if parent is None or (capturing and not _needed(parent, stamp)):
                continue
            if type(parent) is TapeNode:
                if _reach(<TapeNode>parent, stamp, 1):
                    stack.append(parent)
                    visited.append(parent)
            elif _reach(<TensorBase>parent, stamp, 1):
                visited.append(parent)

    # 2. Kahn's order from the roots
    for node, g in zip(roots, root_grads):
        if capturing and not _needed(node, stamp):
            continue
        if type(node) is TapeNode:
            _seed(<TapeNode>node, g)
        else:
            _seed(<TensorBase>node, g)
    for node in roots:
        if capturing and not _needed(node, stamp):
            continue
        if (_queue_root(<TapeNode>node) if type(node) is TapeNode
                else _queue_root(<TensorBase>node)):
            n_ready = _push(ready, n_ready, node)

    try:
        while n_ready:
            n_ready -= 1
            node = ready[n_ready]
            ready[n_ready] = None
            if type(node) is not TapeNode:
                leaf = <TensorBase>node
                g = leaf._g
                leaf._g = None
                if leaf._ready_hooks is not None and not capturing:
                    # (complete now, long before the walk ends: a data-parallel wrapper starts
                    # sending it while the rest of the backward pass runs)
                    g = engine.leaf_ready(leaf, g, create_graph)
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
                ans = _new_tensor(tn.ans, tn, _face_of(inputs))
            else:
                args = _plain_values(inputs)
                ans = tn.ans
            parents = tn.parents
            n_parents = len(parents)
            last = -1  # the last input needing a gradient: it may take g's buffer
            for i in range(n_parents):
                parent = parents[i]
                if parent is not None and not (capturing and not _needed(parent, stamp)):
                    last = i
            for i in range(last + 1):
                parent = parents[i]
                if parent is None or (capturing and not _needed(parent, stamp)):
                    continue
                into = g if g_owned and i == last else None
                if (_add_gradient(<TapeNode>parent, tn, i, g, ans, args, create_graph, into, &how,
                                  tcache)
                        if type(parent) is TapeNode else
                        _add_gradient(<TensorBase>parent, tn, i, g, ans, args, create_graph, into,
                                      &how, tcache)):
                    n_ready = _push(ready, n_ready, parent)
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


# ---- registered with the dispatcher -----------------------------------------------------------
set_recorder(TensorBase, _record_op)
