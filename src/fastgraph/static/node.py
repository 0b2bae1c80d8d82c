"""``Node``: a symbolic value in a static :class:`~fastgraph.static.graph.Graph`.

Operations reach the static engine through :func:`static_apply` (registered with the op registry
for ``Node`` and its subclasses, priority 2).  It converts plain arguments to constant nodes
(Python scalars stay *weak*, as in NumPy 2: ``float32_node * 2.0`` is float32), infers the static
shape with the op's shape rule and the dtype by running the NumPy forward on tiny dummies (cached),
and hash-conses ``(op, inputs, attrs)`` so that building the same expression twice gives the same
node.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np

from .. import ops as F
from .._core import OpDef, holds_graph_value, is_tensor, random_state, register_kind
from .._core.errors import MixedKindsError
from .._core.naming import register_namer
from ..ops.methods import OpMethods
from ..ops.torch_methods import SizeValue, TorchMethods
from .graph import Graph, SubGraph, get_default_graph

__all__ = ["Node", "UnknownSize", "static_apply", "as_node", "attrs_key", "NODE_TYPES"]

_ndarray = np.ndarray


def _pseudo(name: str) -> OpDef:
    """Graph-only operations (sources, state): not in the registry, never run by NumPy."""
    return OpDef(name, differentiable=False)


PLACEHOLDER = _pseudo("Placeholder")
CONST = _pseudo("Const")
VARIABLE = _pseudo("Variable")
ASSIGN = _pseudo("Assign")
GROUP = _pseudo("NoOp")


class UnknownSize:
    """``node.size`` of a Node whose static shape has unknown dimensions: the element count is
    known only when the graph runs, so it is no ``int`` (``int()`` of it raises).  Called as
    PyTorch's ``x.size(d)`` it gives dimension ``d`` when the static shape knows it; an unknown
    dimension, and ``x.size()`` (a ``torch.Size`` holds ints), raise naming the node and
    saying what to write instead (``-1`` in ``view``/``reshape``)."""

    __slots__ = ("node",)

    def __init__(self, node: "Node") -> None:
        self.node = node

    def _unknown(self, what: str) -> ValueError:
        node = self.node
        shape = "unknown" if node.shape is None else tuple(node.shape)
        return ValueError(
            f"{what} of node {node.name!r} is not known before the graph runs (static shape "
            f"{shape}): write -1 for it in view()/reshape(), or read x.shape, the static shape "
            f"with None where unknown")

    def __call__(self, dim=None):
        shape = self.node.shape
        if shape is None:
            raise self._unknown("size(): the rank")
        if dim is None:
            raise self._unknown("size(): the shape")
        d = SizeValue(0, tuple(shape))(dim)          # PyTorch's check of dim, then the value
        if d is None:
            raise self._unknown(f"size({dim}): dimension {dim}")
        return d

    def __int__(self):
        raise self._unknown("the element count")

    __index__ = __int__

    def __repr__(self) -> str:
        return f"<unknown size of node {self.node.name!r}>"


class Node(TorchMethods, OpMethods):
    """A symbolic value: ``name op inputs shape dtype graph`` (+ ``attrs``).

    Supports every ``fg`` operation, the arithmetic/comparison operators, indexing and the
    method forms (``x.sum(axis=0)``), exactly as the eager ``Tensor`` does.
    """

    __slots__ = ("name", "op", "inputs", "attrs", "shape", "dtype", "graph", "id", "kind",
                 "value", "weak", "is_operation", "__weakref__")
    __array_ufunc__ = None          # ndarray <op> Node -> Node.__r<op>__
    __array_priority__ = 2000

    def __init__(self, graph: Graph, op: OpDef, inputs: tuple, attrs, shape, dtype, name: str,
                 kind: str = "op", value=None, weak: bool = False, is_operation: bool = False):
        self.graph = graph
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.shape = shape
        self.dtype = dtype
        self.name = name
        self.kind = kind
        self.value = value
        self.weak = weak
        self.is_operation = is_operation
        graph._add(self)

    # ---- metadata ---------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        if self.shape is None:
            raise ValueError(f"node {self.name!r} has an unknown rank")
        return len(self.shape)

    @property
    def size(self):
        """The element count of the static shape (NumPy's ``ndarray.size``, an ``int``);
        called, PyTorch's ``x.size()`` (the shape) or ``x.size(dim)``, as on a Tensor.  Where
        the shape has unknown dimensions (a placeholder's ``None`` batch) the count is not an
        ``int`` but an :class:`UnknownSize`: ``x.size(d)`` still gives a known dimension.

            >>> x = fg.placeholder(fg.float32, (None, 3, 4))   # doctest: +SKIP
            >>> x.size(1), x.size(-1)                           # doctest: +SKIP
            (3, 4)
        """
        if self.shape is None or None in self.shape:
            return UnknownSize(self)
        return SizeValue(int(np.prod(self.shape, dtype=np.int64)), tuple(self.shape))

    def backward(self, *args, **kwargs):
        """Not on a graph value: the PyTorch step's ``loss.backward(); opt.step()`` has no
        graph form, so it raises, saying what to write instead."""
        raise TypeError(
            f"backward() on the symbolic Node {self.name!r}: inside fg.function (or in a graph) "
            f"gradients are symbolic, and loss.backward(); opt.step() has no graph form. Return "
            f"the loss from a function and differentiate it with fg.grad / fg.value_and_grad "
            f"(then step the optimizer outside), or, for a module's parameters, write the update "
            f"in the trace: params = list(model.parameters()); for p, g in zip(params, "
            f"fg.gradients(loss, params)): fg.assign(p, p - lr * g) (docs/pytorch.md, "
            f"\"Compiled and static\")")

    def get_shape(self):
        return self.shape

    def __repr__(self) -> str:
        shape = "<unknown>" if self.shape is None else tuple(self.shape)
        dt = "" if self.dtype is None else f" dtype={self.dtype}"
        return f"<fg.Node {self.name!r} op={self.op.name} shape={shape}{dt}>"

    __str__ = __repr__
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError(f"the truth value of a symbolic Node ({self.name!r}) is not defined: "
                        f"a Python `if` or `while` on a traced value cannot run in a graph; "
                        f"use fg.cond (if/else), fg.while_loop, fg.fori_loop or fg.scan (loops), "
                        f"fg.where (elementwise choice), or run it in a Session")

    def _no_value(self, what: str):
        raise TypeError(f"{what} needs the value of symbolic Node {self.name!r}, which exists "
                        f"only when the graph runs (inside @fg.function too): use fg or "
                        f"fastgraph.numpy operations on it (fg.sum, fg.reshape, fg.where, ...), "
                        f"or run it in a Session")

    def __array__(self, dtype=None, copy=None):
        self._no_value("converting to a NumPy array (np.asarray, np.array)")

    def __array_function__(self, func, types, args, kwargs):
        query = _STATIC_QUERIES.get(func)
        if query is not None and len(args) == 1 and not kwargs and args[0] is self:
            return query(self)      # np.shape(x) in a traced function: the static shape
        self._no_value(f"np.{getattr(func, '__name__', func)}")

    def __float__(self):
        self._no_value("float()")

    def __int__(self):
        self._no_value("int()")

    def __index__(self):
        self._no_value("using it as an index or size")

    def __complex__(self):
        self._no_value("complex()")

    def item(self):
        self._no_value("item()")

    def tolist(self):
        self._no_value("tolist()")

    def numpy(self):
        self._no_value("numpy()")

    def __len__(self) -> int:
        if not self.shape or self.shape[0] is None:
            raise TypeError(f"len() of node {self.name!r} with shape {self.shape} is not known")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def eval(self, feed_dict=None, session=None):
        """This node's value, run in ``session`` or the default session (TensorFlow's
        ``Tensor.eval``: inside ``with fg.Session():``, ``y.eval({x: 3.0})``)."""
        return _session_for(self, session, "eval").run(self, feed_dict)

    def run(self, feed_dict=None, session=None) -> None:
        """Run this operation in ``session`` or the default session (TensorFlow's
        ``Operation.run``: ``fg.global_variables_initializer().run()``)."""
        _session_for(self, session, "run").run(self, feed_dict)

    def _fg_index_value(self):
        raise IndexError(f"a symbolic Node ({self.name!r}) cannot be used as an index")



NODE_TYPES: set = {Node}


def _session_for(node, session, what: str):
    if session is None:
        from .session import get_default_session
        session = get_default_session()
        if session is None:
            raise ValueError(f"Cannot {what} {node.name!r}: No default session is registered. "
                             f"Use `with fg.Session() as sess:` or `with sess.as_default():`, or "
                             f"pass the session: {what}(session=sess)")
    if session.graph is not node.graph:
        raise ValueError(f"Cannot {what} {node.name!r} in a session of another graph")
    return session


def _static_shape(node, what: str, need_all: bool = False) -> tuple:
    if node.shape is None or (need_all and None in node.shape):
        raise TypeError(f"{what} of node {node.name!r}: its shape {node.shape} is unknown until "
                        f"the graph runs (run it in a Session)")
    return tuple(node.shape)


# NumPy functions a Node answers without a value, from its static shape (None: an unknown
# dimension, as in node.shape)
_STATIC_QUERIES = {
    np.shape: lambda node: _static_shape(node, "np.shape"),
    np.ndim: lambda node: len(_static_shape(node, "np.ndim")),
    np.size: lambda node: int(np.prod(_static_shape(node, "np.size", True), dtype=np.int64)),
}


# ---- attribute keys (hash-consing) ----------------------------------------------------------
def _key(v):
    t = type(v)
    if t is int or t is str or v is None or t is bool:
        return (t, v)
    if t is float:
        return (t, repr(v))
    if t is tuple or t is list:
        return (t, tuple(_key(e) for e in v))
    if t is slice:
        return (slice, _key(v.start), _key(v.stop), _key(v.step))
    if isinstance(v, _ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, np.dtype):
        return ("dt", v.str)
    if isinstance(v, np.generic):
        return ("sc", v.dtype.str, v.tobytes())
    if v is Ellipsis:
        return ("...",)
    if isinstance(v, type):
        return ("type", v.__module__, v.__qualname__)
    try:
        hash(v)
        return (t, v)
    except TypeError:
        return ("id", id(v))


def attrs_key(attrs):
    if not attrs:
        return None
    return tuple((k, _key(v)) for k, v in attrs.items())


# ---- constants ------------------------------------------------------------------------------
_PY_SCALARS = (bool, int, float)
_SMALL = 1024


def _normalize_value(arr: np.ndarray):
    """0-d values are kept as NumPy scalars (cheap arithmetic)."""
    return arr[()] if arr.ndim == 0 else arr


def implicit_constant(graph: Graph, value):
    """A constant node for a plain argument (hash-consed; Python scalars stay weak)."""
    t = type(value)
    if t in _PY_SCALARS:
        key = ("const", t, repr(value))
        node = graph._cons.get(key)
        if node is None:
            dtype = np.result_type(value)
            node = Node(graph, CONST, (), None, (), dtype, graph.unique_name("Const", False),
                        kind="const", value=value, weak=True)
            graph._cons[key] = node
        return node
    arr = np.asarray(value)
    if arr.dtype.kind == "U":       # (TensorFlow's strings are bytes)
        arr = np.char.encode(arr, "utf-8")
    if arr.dtype.kind not in "biufcS":
        raise TypeError(f"cannot use a value of dtype {arr.dtype} ({t.__name__}) in a graph")
    key = None
    if arr.size <= _SMALL:
        key = ("const", arr.dtype.str, arr.shape, arr.tobytes())
        node = graph._cons.get(key)
        if node is not None:
            return node
    if isinstance(value, _ndarray) and arr is value:
        arr = arr.copy()  # the graph must not change when the caller's array does
    arr.flags.writeable = False
    node = Node(graph, CONST, (), None, arr.shape, arr.dtype, graph.unique_name("Const", False),
                kind="const", value=_normalize_value(arr))
    if key is not None:
        graph._cons[key] = node
    return node


def as_node(value, graph: Graph | None = None, dtype=None):
    """``value`` as a node of ``graph`` (Nodes pass through, after a same-graph check)."""
    if type(value) in NODE_TYPES:
        if graph is not None and value.graph is not graph:
            raise ValueError(f"node {value.name!r} belongs to another graph")
        if dtype is not None and value.dtype != np.dtype(dtype):
            return F.astype(value, dtype)
        return value
    if isinstance(value, (list, tuple)) and holds_graph_value((value,)):
        return as_node(F.stack(value), graph, dtype)  # one node, as TF1 packs such a list
    _reject_tensor(value)
    g = graph or get_default_graph()
    if dtype is not None:
        return implicit_constant(g, np.asarray(value, dtype=dtype))
    return implicit_constant(g, value)


def _reject_tensor(a):
    if is_tensor(a):
        raise MixedKindsError("cannot mix an eager fg.Tensor with symbolic graph Nodes in one "
                              "operation; use fg.constant(t.data) or a placeholder (the "
                              "factories fg.zeros, fg.ones, fg.randn... make eager Tensors: "
                              "inside a graph or @fg.function build constant arrays with NumPy, "
                              "e.g. np.ones(shape))")


# ---- dtype inference --------------------------------------------------------------------------
_DTYPE_CACHE: dict = {}
_PROBE = {float: 1.0, int: 1, bool: True}


def _dummy(node, shape_mode, view: bool = False):
    """A stand-in value for ``node``; ``view``: a large one as a read-only broadcast of one
    element, which costs nothing to make (indexing ``xs[t]`` of a large placeholder once per
    step would otherwise fill an array of its whole shape each time)."""
    if node.weak:
        return _PROBE[type(node.value)]
    dt = node.dtype
    if shape_mode is None or node.shape is None:
        shape = ()
    else:
        shape = tuple(shape_mode if d is None else d for d in node.shape)
    if node.kind == "const" and node.shape == shape and (shape == () or
                                                         np.prod(shape) <= _SMALL):
        return node.value
    one = np.ones((), dt) if dt.kind == "f" else np.zeros((), dt)
    if view and shape and np.prod(shape) > _SMALL:
        return np.broadcast_to(one, shape)
    return np.full(shape, one)


def _infer_dtype(op: OpDef, inputs, attrs, akey):
    elementwise = op.elementwise
    key = (op, tuple([type(n.value) if n.weak else n.dtype for n in inputs]), akey,
           None if elementwise else tuple(n.shape for n in inputs))
    dt = _DTYPE_CACHE.get(key)
    if dt is not None:
        return dt
    dt = None
    # (the dummies are not the user's values: no NumPy warning about them reaches the user;
    # a stateful op draws from a throwaway generator, not the user's)
    with np.errstate(all="ignore"), warnings.catch_warnings(), \
            (random_state.scratch() if op.stateful else contextlib.nullcontext()):
        warnings.simplefilter("ignore")
        # (each shape mode with broadcast views first, then with real arrays: a forward may
        # refuse a read-only or zero-stride input)
        for mode, view in (((None, False),) if elementwise else
                           ((1, True), (1, False), (2, True), (2, False))):
            try:
                vals = [_dummy(n, mode, view) for n in inputs]
                out = op.forward(*vals, **attrs) if attrs else op.forward(*vals)
                dt = np.result_type(out)
                break
            except Exception:
                continue
    if dt is None:
        dt = np.result_type(*[n.dtype for n in inputs]) if inputs else np.dtype(np.float64)
    _DTYPE_CACHE[key] = dt
    return dt


def _probe_shape(op, inputs, attrs):
    results = []
    with np.errstate(all="ignore"):
        for mode in (2, 3):
            vals = [_dummy(n, mode) for n in inputs]
            try:
                results.append(np.shape(op.forward(*vals, **(attrs or {}))))
            except Exception as e:
                if all(n.shape is not None and None not in n.shape for n in inputs):
                    raise ValueError(f"{op.name}: {e} (input shapes "
                                     f"{' '.join(str(n.shape) for n in inputs)})") from None
                return None
    a, b = results
    if len(a) != len(b):
        return None
    return tuple(d if d == e else None for d, e in zip(a, b))


# ---- the static applier ------------------------------------------------------------------------


#: how many control-flow functions are being traced into sub-graphs (on any thread): while
#: none is, an operation's graph is its inputs' graph without asking for the default graph
TRACING_SUBGRAPHS = [0]


def _target_graph(op, args, graph):
    """The graph an operation on ``args`` goes into while a sub-graph is traced: the innermost
    of the inputs' graphs and the default graph, when the others enclose it (their nodes are
    captured); two unrelated graphs are an error."""
    target = graph
    default = get_default_graph()
    if isinstance(default, SubGraph) and default.encloses(graph):
        target = default
    for a in args:
        if type(a) in NODE_TYPES and a.graph is not target:
            g = a.graph
            if isinstance(g, SubGraph) and g.encloses(target):
                target = g
            elif not (isinstance(target, SubGraph) and target.encloses(g)):
                raise ValueError(f"{op.name}: cannot combine nodes of two different graphs "
                                 f"({a.name!r} is from another graph)")
    for a in args:      # (a second pass: the target may have moved inwards)
        if type(a) in NODE_TYPES and a.graph is not target and not (
                isinstance(target, SubGraph) and target.encloses(a.graph)):
            raise ValueError(f"{op.name}: cannot combine nodes of two different graphs "
                             f"({a.name!r} is from another graph)")
    return target


def capture(graph, node):
    """``node`` of an enclosing graph as seen inside sub-graph ``graph``: a constant is copied,
    anything else becomes a placeholder that the control-flow node feeds from outside."""
    if node.graph is graph:
        return node
    inner = graph.captured.get(id(node))
    if inner is not None:
        return inner
    if node.graph is not graph.outer:
        node = capture(graph.outer, node)
        inner = graph.captured.get(id(node))
        if inner is not None:
            return inner
    if node.kind == "const":
        inner = Node(graph, CONST, (), None, node.shape, node.dtype,
                     graph.unique_name("Const", False), kind="const", value=node.value,
                     weak=node.weak)
    else:
        inner = Node(graph, PLACEHOLDER, (), None, node.shape, node.dtype,
                     graph.unique_name("captured/" + node.name.replace(":", "_")),
                     kind="placeholder", weak=node.weak, value=node.value if node.weak
                     else None)
        graph.captures.append((node, inner))
    graph.captured[id(node)] = inner
    return inner


def static_apply(op: OpDef, args: tuple, attrs):
    graph = None
    mixed = False
    for a in args:
        if type(a) in NODE_TYPES:
            if graph is None:
                graph = a.graph
            elif a.graph is not graph:
                mixed = True
    if graph is not None and (mixed or TRACING_SUBGRAPHS[0]):
        graph = _target_graph(op, args, graph)
        args = tuple(capture(graph, a) if type(a) in NODE_TYPES and a.graph is not graph
                     else a for a in args)
    inputs = []
    for a in args:
        if type(a) in NODE_TYPES:
            inputs.append(a)
        else:
            _reject_tensor(a)
            inputs.append(implicit_constant(graph, a))
    inputs = tuple(inputs)
    if not attrs:
        attrs = None
    akey = attrs_key(attrs)
    # (list comprehensions, not generators: this runs once per node built)
    cons_key = (op, tuple([n.id for n in inputs]), akey)
    # (every application a new node, never shared by hash-consing: distinct and stateful ops)
    fresh = op.distinct or op.stateful
    node = None if fresh else graph._cons.get(cons_key)
    if node is not None:
        return node
    shapes = [n.shape for n in inputs]
    if None in shapes:
        shape = None
    elif op.shape is not None:
        try:
            shape = op.shape(shapes, **attrs) if attrs else op.shape(shapes)
        except ValueError as e:
            msg = str(e)
            raise ValueError(msg if msg.startswith(op.name) else f"{op.name}: {msg}") from None
        if shape is not None:   # (None: a rule that cannot know the rank)
            shape = tuple(shape)
    else:
        shape = _probe_shape(op, inputs, attrs)
    dtype = _infer_dtype(op, inputs, attrs or {}, akey)
    cls = Node
    if TORCH_FACE:     # (a node with an input of PyTorch's face has it: the eager rule)
        for n in inputs:
            if type(n) in TORCH_FACE:
                cls = _FACED_SUBCLASS[Node]
                break
    node = cls(graph, op, inputs, attrs, shape, dtype, graph.unique_name(op.name))
    if not fresh:
        graph._cons[cons_key] = node
    return node


def register_node_type(cls) -> None:
    """Route ops on ``cls`` (lookup is by exact type) to :func:`static_apply`."""
    NODE_TYPES.add(cls)
    register_kind(cls, static_apply)


#: PyTorch's face for graph values: the node classes that have it (``fastgraph.torch``'s
#: subclasses of ``Node`` and ``Variable``), filled by :func:`register_torch_face`
TORCH_FACE: set = set()
#: each node class of NumPy's face -> its subclass of PyTorch's face
_FACED_SUBCLASS: dict = {}
#: the eager Tensor class of PyTorch's face (``fastgraph.torch.Tensor``), once registered
TORCH_TENSOR: list = [None]


def register_torch_face(tensor_cls, faced: dict) -> None:
    """Give graph values PyTorch's face: ``faced`` maps node classes to their subclasses with
    PyTorch's methods; a node traced from a ``tensor_cls`` instance, or with an input of such a
    subclass, has it."""
    for base, sub in faced.items():
        register_node_type(sub)
        _FACED_SUBCLASS[base] = sub
        TORCH_FACE.add(sub)
    TORCH_TENSOR[0] = tensor_cls


def is_torch_faced(value) -> bool:
    """Whether ``value`` (a Tensor or a Node) has PyTorch's face."""
    return type(value) in TORCH_FACE or (TORCH_TENSOR[0] is not None and
                                         isinstance(value, TORCH_TENSOR[0]))


def give_torch_face(node):
    """``node``, just made, given PyTorch's face (its class swapped for its faced subclass,
    which adds no fields)."""
    faced = _FACED_SUBCLASS.get(type(node))
    if faced is not None:
        node.__class__ = faced
    return node


register_node_type(Node)


def _named_node(node, name: str):
    """A node called ``name`` (in the current name scope) with ``node``'s value: a new
    ``identity`` node (removed from plans), so ``node`` keeps its own name whoever else built
    it (hash-consing shares nodes)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    g = node.graph
    with g.as_default():
        out = F.identity(node)
    del g._by_name[out.name]
    out.name = g.unique_name(name)
    g._by_name[out.name] = out
    return out


register_namer(Node, _named_node)
