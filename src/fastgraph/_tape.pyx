# cython: freethreading_compatible = False
"""The eager tape: one :class:`TapeNode` per recorded operation, and the reverse walker.

Recording creates no reference cycles: an output ``Tensor`` points to its ``TapeNode``, which points
to its inputs (Tensors) and its parents (``TapeNode``s or leaf Tensors), never back to the output.
``TapeNode`` opts out of Python's cyclic GC, so long tapes cost the collector nothing.

The walker is Kahn's algorithm over the reachable nodes (iterative: a chain of 10**6 nodes is as
safe as one of 10): count each node's consumers, start from the roots, and process a node once all
of its consumers have sent their gradient.  The first gradient reaching a node is kept as is (no
copy); later ones are added.
"""
cimport cython
from cpython.ref cimport PyObject

import numpy as np


@cython.no_gc
@cython.final
cdef class TapeNode:
    """One recorded operation: the op, its inputs, its output value, and its parents on the tape."""
    cdef public object op        # the OpDef
    cdef public tuple inputs     # the arguments as given (Tensors and constants); None once freed
    cdef public object attrs     # dict of attributes, or None
    cdef public object ans       # the output's value (ndarray or NumPy scalar); None once freed
    cdef public tuple parents    # per input: TapeNode, leaf Tensor, or None (no gradient needed)
    cdef public object hooks     # list of hooks on the output tensor, or None
    cdef public object retained  # weakref to the output tensor when retain_grad() was called

    def __init__(self, op, tuple inputs, attrs, ans, tuple parents):
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.ans = ans
        self.parents = parents
        self.hooks = None
        self.retained = None

    def name(self):
        return self.op.name

    def __repr__(self):
        return f"<{self.op.name}>"


cdef inline object _accumulate(dict grads, object key, object g):
    cdef object prev = grads.get(key)
    if prev is None:
        grads[key] = g
    else:
        grads[key] = prev + g


_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or fg.autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


def walk(list roots, list root_grads, bint retain_graph, bint create_graph, object engine,
         object capture=None):
    """Propagate ``root_grads`` from ``roots`` (TapeNodes or leaf Tensors) back to the leaves.

    ``engine`` supplies the policy that lives in Python: ``engine.vjp(node, i, g, create_graph)``
    returns the gradient for input ``i`` already summed to that input's shape;
    ``engine.deliver(target, g, create_graph)`` runs hooks and accumulates into a leaf or a
    retained tensor; ``engine.node_hooks(node, g)`` runs hooks of a non-leaf output.  With
    ``capture`` (a dict ``id(target) -> None``), gradients reaching those targets are stored there
    instead of being accumulated, and the walk does not continue past them.
    """
    cdef dict deps = {}
    cdef dict grads = {}
    cdef list stack = []
    cdef list ready = []
    cdef object node, parent, g, gi, key
    cdef Py_ssize_t i, n_parents
    cdef tuple parents
    cdef bint capturing = capture is not None
    cdef object vjp = engine.vjp
    cdef object deliver = engine.deliver

    # 1. count, for every reachable node, how many reachable consumers feed it
    for node in roots:
        if id(node) not in deps:
            deps[id(node)] = 0
            stack.append(node)
    while stack:
        node = stack.pop()
        if type(node) is not TapeNode:
            continue
        if capturing and id(node) in capture:
            continue
        parents = (<TapeNode>node).parents
        for parent in parents:
            if parent is None:
                continue
            key = id(parent)
            if key in deps:
                deps[key] = deps[key] + 1
            else:
                deps[key] = 1
                stack.append(parent)

    # 2. Kahn's order from the roots
    for node, g in zip(roots, root_grads):
        _accumulate(grads, id(node), g)
    for node in roots:
        if deps[id(node)] == 0:
            deps[id(node)] = -1  # queued once, even if listed twice
            ready.append(node)

    while ready:
        node = ready.pop()
        key = id(node)
        g = grads.pop(key)
        if capturing and key in capture:
            capture[key] = g
            continue
        if type(node) is not TapeNode:
            deliver(node, g, create_graph)
            continue
        if (<TapeNode>node).inputs is None:
            raise RuntimeError(_FREED_MESSAGE)
        if (<TapeNode>node).hooks is not None or (<TapeNode>node).retained is not None:
            g = engine.node_hooks(node, g, create_graph)
        parents = (<TapeNode>node).parents
        n_parents = len(parents)
        for i in range(n_parents):
            parent = parents[i]
            if parent is None:
                continue
            gi = vjp(node, i, g, create_graph)
            key = id(parent)
            _accumulate(grads, key, gi)
            deps[key] = deps[key] - 1
            if deps[key] == 0:
                ready.append(parent)
        if not retain_graph:
            (<TapeNode>node).inputs = None
            (<TapeNode>node).ans = None
