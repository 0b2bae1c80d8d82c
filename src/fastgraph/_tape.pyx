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
from cpython.object cimport PyObject, PyTypeObject

import numpy as np

cnp.import_array()


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)

cdef object _ndarray = np.ndarray
cdef object _generic = np.generic
cdef object _asarray = np.asarray


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


@cython.no_gc
@cython.final
cdef class TapeNode:
    """One recorded operation: the op, its inputs, its output value, and its parents on the tape."""
    cdef public OpDef op         # the operation
    cdef public tuple inputs     # the arguments as given (Tensors and constants); None once freed
    cdef public object attrs     # dict of attributes, or None
    cdef public object ans       # the output's value (ndarray or NumPy scalar); None once freed
    cdef public tuple parents    # per input: TapeNode, leaf Tensor, or None (no gradient needed)
    cdef public object hooks     # list of hooks on the output tensor, or None
    cdef public object retained  # weakref to the output tensor when retain_grad() was called
    # per-walk scratch, valid while _walk equals the current walk's number
    cdef object _g
    cdef Py_ssize_t _deps
    cdef unsigned long long _walk
    # sum of the input Tensors' versions when recorded: in-place changes since then are errors
    cdef long long _versions

    def __init__(self, op, tuple inputs, attrs, ans, tuple parents):
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.ans = ans
        self.parents = parents

    def name(self):
        return self.op.name

    def __repr__(self):
        return f"<{self.op.name}>"


cdef class TensorBase:
    """The fields of an eager Tensor (methods live in ``fastgraph.eager.tensor.Tensor``)."""
    cdef public object _data
    cdef public object grad
    cdef public object grad_fn
    cdef public object _hooks
    cdef public bint _requires_grad
    cdef public bint _retains
    cdef public long long _version  # bumped by every in-place change of the data
    cdef object __weakref__
    # per-walk scratch when this tensor is a leaf of a backward walk (see TapeNode)
    cdef object _g
    cdef Py_ssize_t _deps
    cdef unsigned long long _walk

    def __init__(self, data, bint requires_grad=False, grad_fn=None):
        self._data = data
        self._requires_grad = requires_grad or grad_fn is not None
        self.grad_fn = grad_fn

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


# ---- configuration set once by the Python layer -----------------------------------------------
cdef object _Tensor = None          # the Python Tensor class
cdef object _grad_state = None      # grad_mode's thread-local state (reads .enabled)
cdef dict _other_kinds = {}         # type -> applier, for non-eager kinds (graph Nodes)
cdef object _ZERO = None
cdef object _sum_to_like = None
cdef object _astype = None
cdef object _op_error = None
cdef object _ADD = None, _SUB = None, _MUL = None, _DIV = None, _NEG = None


def configure(tensor_cls, grad_mode_module, zero, sum_to_like, astype, op_error, registry):
    """Wire the Python layer in (called once when ``fastgraph.eager.tensor`` is imported)."""
    global _Tensor, _grad_state, _ZERO, _sum_to_like, _astype, _op_error
    global _ADD, _SUB, _MUL, _DIV, _NEG
    _ADD, _SUB, _MUL, _DIV, _NEG = (registry[name] for name in
                                    ("add", "subtract", "multiply", "divide", "negative"))
    _Tensor = tensor_cls
    _grad_state = grad_mode_module._state
    _ZERO = zero
    _sum_to_like = sum_to_like
    _astype = astype
    _op_error = op_error


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


# ---- forward ----------------------------------------------------------------------------------
cpdef object apply(OpDef op, tuple args, object attrs):
    """Run ``op`` on ``args``: NumPy for plain values, the tape for Tensors, else their engine."""
    cdef bint has_tensor = False
    cdef object a, applier = None
    for a in args:
        if isinstance(a, TensorBase):
            has_tensor = True
        elif _other_kinds:
            applier = _other_kinds.get(type(a), applier)
    if applier is not None:
        return applier(op, args, attrs)
    if has_tensor:
        return record(op, args, attrs)
    if attrs:
        return op.forward(*args, **attrs)
    return op.forward(*args)


cdef object _f64 = np.float64


cdef inline object _forward(OpDef op, list values, Py_ssize_t n, object attrs):
    cdef object v0, v1
    if attrs:
        return op.forward(*values, **attrs)
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


cpdef object record(OpDef op, tuple args, object attrs):
    """The eager applier: compute ``op`` and, if a gradient is needed, record one TapeNode."""
    cdef Py_ssize_t n = len(args), i
    cdef list values = [None] * n
    cdef list parents = None
    cdef bint needs_grad = False
    cdef object a, vjps = op.vjps, out, grad_fn
    cdef TensorBase t
    for i in range(n):
        a = args[i]
        if isinstance(a, TensorBase):
            t = <TensorBase>a
            values[i] = _scalar_if_0d(t._data)
            if t._requires_grad and vjps[i] is not None:
                if parents is None:
                    parents = [None] * n
                parents[i] = t.grad_fn if t.grad_fn is not None else t
                needs_grad = True
        else:
            values[i] = a
    try:
        out = _forward(op, values, n, attrs)
    except Exception as e:
        raise _op_error(op, values, attrs, e) from e
    if type(out) is not _ndarray and not isinstance(out, _generic):
        out = _asarray(out)
    cdef TapeNode node
    if needs_grad and op.differentiable and _grad_state.enabled:
        node = TapeNode.__new__(TapeNode)
        node._versions = _version_sum(args)
        node.op = op
        node.inputs = args
        node.attrs = attrs
        node.ans = out
        node.parents = tuple(parents)
        PyObject_GC_UnTrack(<void*>node.inputs)   # held only by the node, which is untracked
        PyObject_GC_UnTrack(<void*>node.parents)
        return _new_tensor(out, node)
    return _new_tensor(out, None)


# ---- backward ---------------------------------------------------------------------------------
cdef inline long long _version_sum(tuple args):
    cdef long long total = 0
    cdef object a
    for a in args:
        if isinstance(a, TensorBase):
            total += (<TensorBase>a)._version
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
    cdef int nd = cnp.PyArray_NDIM(a), k
    if nd != cnp.PyArray_NDIM(b):
        return False
    cdef cnp.npy_intp* da = cnp.PyArray_DIMS(a)
    cdef cnp.npy_intp* db = cnp.PyArray_DIMS(b)
    for k in range(nd):
        if da[k] != db[k]:
            return False
    return cnp.PyArray_DESCR(a) == cnp.PyArray_DESCR(b)  # builtin dtypes are singletons


cdef object _fit_to_input(object gi, object x):
    """Sum ``gi`` back to the broadcast shape of input ``x`` and cast it to ``x``'s dtype."""
    cdef object tx = type(x)
    if type(gi) is tx:
        if tx is _ndarray:
            if _same_layout(<cnp.ndarray>gi, <cnp.ndarray>x):
                return gi
        elif not isinstance(gi, TensorBase):
            return gi  # two NumPy scalars of one type: same shape () and dtype
    if gi.shape != x.shape:
        gi = _sum_to_like(gi, x)
    xdt = x.dtype
    if gi.dtype != xdt:
        gi = _astype(gi, xdt)
    return gi


cdef object _input_gradient(TapeNode node, Py_ssize_t i, object g, object ans, tuple args,
                            bint create_graph):
    cdef object rule = node.op.vjps[i]  # (vjps may be a lazy table for variadic ops)
    cdef object x = args[i]
    if rule is _ZERO:
        gi = np.zeros(np.shape(x), dtype=np.result_type(g))
        return _new_tensor(gi, None) if create_graph else gi
    if node.attrs:
        gi = rule(g, ans, *args, **node.attrs)
    else:
        gi = rule(g, ans, *args)
    return _fit_to_input(gi, x)


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

    ``engine`` supplies the Python policy at the ends: ``engine.deliver(leaf, g, create_graph)``
    (hooks, accumulation into ``.grad``) and ``engine.node_hooks(node, g, create_graph)`` (hooks
    and ``retain_grad`` of non-leaf outputs).  With ``capture`` (a dict ``id(target) -> None``),
    as ``fg.autograd.grad`` uses it, the gradient reaching each target is stored there, only the
    nodes on a path to a target are visited, and no leaf's ``.grad`` is touched.

    Gradient sums and pending-consumer counts live in scratch fields of the TapeNodes and leaf
    Tensors, stamped with this walk's number (so a walk interrupted by an exception leaves
    nothing stale): no dictionary on the hot path.
    """
    global _walk_counter
    _walk_counter += 1
    cdef unsigned long long stamp = _walk_counter
    cdef list stack = []
    cdef list ready = []
    cdef list visited = []
    cdef bint finished = False
    cdef object node, parent, g, gi, ans, prev
    cdef Py_ssize_t i, n_parents
    cdef tuple parents, inputs, args
    cdef TapeNode tn, pn
    cdef TensorBase leaf
    cdef bint capturing = capture is not None
    cdef set needed = _leading_to(roots, capture) if capturing else None
    cdef object deliver = engine.deliver

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
                stack.append(tn)
        else:
            leaf = <TensorBase>node
            if leaf._walk != stamp:
                leaf._walk = stamp
                leaf._deps = 0
                leaf._g = None
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
                ready.append(tn)
        else:
            leaf = <TensorBase>node
            if leaf._deps == 0:
                leaf._deps = -1
                ready.append(leaf)

    try:
        while ready:
            node = ready.pop()
            if type(node) is not TapeNode:
                leaf = <TensorBase>node
                g = leaf._g
                leaf._g = None
                if capturing:
                    capture[id(leaf)] = g
                else:
                    deliver(leaf, g, create_graph)
                continue
            tn = <TapeNode>node
            g = tn._g
            tn._g = None
            inputs = tn.inputs
            if inputs is None:
                raise RuntimeError(_FREED_MESSAGE)
            if tn._versions != _version_sum(inputs):
                raise RuntimeError(_MODIFIED_MESSAGE.format(op=tn.op.name))
            if tn.hooks is not None or tn.retained is not None:
                g = engine.node_hooks(tn, g, create_graph)
            if capturing and id(tn) in capture:
                capture[id(tn)] = g
            if create_graph:
                args = inputs
                ans = _new_tensor(tn.ans, tn)
            else:
                args = tuple([_scalar_if_0d((<TensorBase>a)._data) if isinstance(a, TensorBase)
                              else a for a in inputs])
                ans = tn.ans
            parents = tn.parents
            n_parents = len(parents)
            for i in range(n_parents):
                parent = parents[i]
                if parent is None or (capturing and id(parent) not in needed):
                    continue
                gi = _input_gradient(tn, i, g, ans, args, create_graph)
                if type(parent) is TapeNode:
                    pn = <TapeNode>parent
                    prev = pn._g
                    pn._g = gi if prev is None else prev + gi
                    pn._deps -= 1
                    if pn._deps == 0:
                        ready.append(pn)
                else:
                    leaf = <TensorBase>parent
                    prev = leaf._g
                    leaf._g = gi if prev is None else prev + gi
                    leaf._deps -= 1
                    if leaf._deps == 0:
                        ready.append(leaf)
            if not retain_graph:
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
