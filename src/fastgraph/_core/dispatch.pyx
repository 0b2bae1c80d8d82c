"""The dispatcher every operation goes through, and the compiled op declaration it reads.

* :class:`OpDef` is one operation as ``fastgraph.ops`` declares it (``_core/registry.py`` makes
  them); compiled so that the dispatcher, the recorder and the walker read its fields directly.
* :func:`apply` runs an op: plain values get the op's NumPy forward (or its compiled kernel on
  small float arrays, with NumPy's bits); arguments holding a value of an engine go to that
  engine.  Engines register themselves, so this layer imports none of them: the eager tape
  registers its Tensor type and its recorder at C level (:c:func:`set_recorder`), every other
  kind (the static graph's ``Node``) an applier in Python (:func:`register_kind`).
* A list, tuple or object array holding such values is first packed into one value of the graph
  (by the function given to :func:`set_pack`, ``stack``), as ``np.array`` would read it.
"""
cimport cython
cimport numpy as cnp
from cpython.object cimport PyObject, PyTypeObject, PyObject_TypeCheck
from fastgraph.kernels.elementwise cimport ew_kernel, ew, kernel_of_ufunc, builtin_kernel

import numpy as np

cnp.import_array()

cdef object _ndarray = np.ndarray


@cython.final
cdef class OpDef:
    """One operation, as declared in ``fastgraph.ops`` (made by ``_core.registry.defop``).

    Compiled so that the dispatcher, the recorder and the walker read its fields directly.
    ``operator`` (binary ops) is the Python operator with the same NumPy semantics, and
    ``scalar_math`` (unary ops) a ``math`` function: the recorder uses them when an operand is a
    NumPy value, because NumPy scalars then take their fast scalar path (~10x cheaper than a
    ufunc call on 0-d data).
    """
    def __init__(self, name, forward, vjps, shape, elementwise, opcode, differentiable,
                 variadic, operator=None, scalar_math=None):
        self.name, self.forward, self.vjps, self.shape = name, forward, tuple(vjps), shape
        self.elementwise, self.opcode, self.differentiable = elementwise, opcode, differentiable
        self.variadic, self.operator, self.scalar_math = variadic, operator, scalar_math

    def __repr__(self):
        return f"OpDef({self.name!r})"

    def set_kernel(self, source):
        """Give the op a compiled elementwise kernel, used on small float arrays (see
        ``kernels/elementwise.pyx``).

        ``source`` is a NumPy ufunc whose ``forward`` this op is (its own ``dd->d``/``ff->f``
        inner loops are called, so results are NumPy's bit for bit), or the name of a built-in
        loop (``"tanh_grad"``, ``"sigmoid_grad"``, ``"relu_grad"``, ``"relu"``).  Returns whether
        the op now has one."""
        if isinstance(source, str):
            return bool(builtin_kernel(&self.kernel, source))
        return bool(kernel_of_ufunc(&self.kernel, source))

    @property
    def has_kernel(self):
        return self.kernel.nin != 0

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
                two_d = not (<OpDef?>k).kernel.nin
                if two_d and len(slots) != 2 or not two_d and len(slots) != (<OpDef>k).kernel.nin:
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




# ---- the engines, registered at import -----------------------------------------------------------
cdef PyTypeObject* _tensor_type = NULL  # the eager Tensor's compiled base (set_recorder)
cdef object _tensor_type_ref = None     # (keeps it alive)
cdef recorder_t _record = NULL
cdef dict _other_kinds = {}             # type -> applier, for the other kinds (graph Nodes)
cdef object _pack = None                # nested sequence holding Tensors/Nodes -> one value


cdef int set_recorder(type tensor_type, recorder_t record) except -1:
    """Route operations whose arguments include an instance of ``tensor_type`` (or of a subclass)
    to ``record`` (a C function: no Python call on the eager hot path).  Called once, by the
    eager tape when it is imported."""
    global _tensor_type, _tensor_type_ref, _record
    if record == NULL:
        raise TypeError("set_recorder: the recorder must not be NULL")
    _tensor_type_ref = tensor_type
    _tensor_type = <PyTypeObject*>tensor_type
    _record = record
    return 0


def register_kind(cls, applier):
    """Route operations whose arguments include a ``cls`` instance (exactly that type) to
    ``applier(op, args, attrs)``; a registered kind takes precedence over Tensors, so that
    mixing the two reaches an engine that can say so."""
    if not isinstance(cls, type) or not callable(applier):
        raise TypeError(f"register_kind: need a type and a callable, got {cls!r} and "
                        f"{applier!r}")
    _other_kinds[cls] = applier


def set_pack(pack):
    """The function that packs a (nested) sequence holding Tensors or Nodes into one value of the
    graph (``fastgraph.ops`` gives ``stack``: autograd's ``np.array([x, y])``)."""
    global _pack
    if pack is not None and not callable(pack):
        raise TypeError(f"set_pack: pack must be callable, not {type(pack).__name__}")
    _pack = pack


cpdef bint is_tensor(object v):
    """Whether ``v`` is a value of the eager engine (a Tensor), told without importing it: the
    static engine refuses to mix one with its Nodes."""
    return _tensor_type != NULL and PyObject_TypeCheck(v, _tensor_type)


# ---- dispatch ----------------------------------------------------------------------------------
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
        if _tensor_type != NULL and PyObject_TypeCheck(v, _tensor_type):
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
        if _tensor_type != NULL and PyObject_TypeCheck(v, _tensor_type):
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
    """Run ``op`` on ``args``: NumPy for plain values, the recorder for Tensors, else their
    engine.  A list, tuple or object array holding Tensors or Nodes is first packed into one
    (by the function given to :func:`set_pack`).

        >>> apply(REGISTRY["add"], (np.ones(2), 1.0), None)          # array([2., 2.])
    """
    if op is None or args is None:    # (typed arguments accept None; the fields below do not)
        raise TypeError("apply: op must be an OpDef and args a tuple, not None")
    cdef bint has_tensor = False, has_sequence = False
    cdef object a, applier = None
    cdef tuple packed
    for a in args:
        if _tensor_type != NULL and PyObject_TypeCheck(a, _tensor_type):
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
        return _record(op, args, attrs)
    if attrs:
        return op.forward(*args, **attrs)
    cdef Py_ssize_t n = len(args)
    if op.kernel.nin == n:  # plain arrays too: the VJP rules' building blocks come through here
        a = ew(&op.kernel, args[0], args[1] if n == 2 else None, None, None)
        if a is not None:
            return a
    return op.forward(*args)
