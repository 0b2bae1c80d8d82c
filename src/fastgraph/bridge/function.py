"""``@fg.function`` -- the bridge: trace an eager-style function into a static graph once per
signature (argument shapes and dtypes), compile it with the full pass pipeline, run the plan.

    >>> @fg.function
    ... def f(x, y):
    ...     return fg.tanh(x * y).sum()
    >>> f(np.ones(3), np.ones(3))        # traces, compiles, runs
    >>> f(np.zeros(3), np.ones(3))       # runs the cached plan

Composes with the transforms: ``fg.function(fg.grad(f))`` traces ``fg.grad(f)`` with placeholder
arguments, and the transforms, given Nodes, differentiate symbolically
(``fastgraph.static.transforms``).

Each signature's trace (graph, plan and the plan's buffers) is kept until ``f.clear_cache()``
(JAX's name) or ``fg.clear_caches()`` (every live ``fg.function``) drops it; ``f.cache_size``
counts them.

``donate_argnums`` (JAX's name and meaning): the caller hands those arguments' arrays over, and an
output of the same shape and dtype may be written into one instead of a new array.  A training step
returning its updated parameters then updates them in place::

    >>> step = fg.function(train_step, donate_argnums=(0, 1))   # train_step(w, b, x, y)
    >>> loss, (w, b) = step(w, b, x, y)          # w, b: the same arrays, now updated

Outputs are paired with donated arguments in order: each output takes the first unpaired donated
argument with its shape and dtype.  A donated argument is traced as a variable whose value for the
call is the caller's array, and its paired output as an assignment to it, so the ``inplace`` pass
decides what is written in place (elementwise updates are; anything else is a new array, returned
as the output).  A donated argument that is not a writeable, aligned, C-contiguous ndarray of the
traced dtype, or that may share memory with another argument (the same array, or views of one
array: their ``.base`` owners are compared), is copied first.  Donated arrays hold
unspecified values after an error -- in practice their old ones: in-place writes come last.
"""
from __future__ import annotations

import functools
import inspect
import threading
import warnings
import weakref

import numpy as np

from .. import ops as F
from .._core import is_tensor
from .._core.tree import (LEAF, find_leaf, flatten, from_key, is_keyed, key_of, leaf_paths,
                          value_key)
from ..eager.tape import is_grad_enabled     # (the C thread-local itself: on every call)
from ..eager.tensor import Tensor as _Tensor
from ..static.graph import Graph
from ..static.node import (NODE_TYPES, PLACEHOLDER, TORCH_TENSOR, Node, as_node,
                           give_torch_face, is_torch_faced)
from ..static.executor import UNINIT
from ..static.session import Session, collector_paused
from ..static.variables import Variable, _make_assign, placeholder

__all__ = ["function", "clear_caches", "tracing_graph", "capture_variable", "Function",
           "BoundFunction"]


#: Python scalars stay *weak* (NumPy 2 / JAX promotion: ``float32_array * 2.0`` is float32,
#: ``int8_array * 2`` is int8): they are traced as weak placeholders of these dtypes and fed as
#: the Python values themselves, so every NumPy step promotes them as eager mode does.
_WEAK = {float: np.dtype(np.float64), int: np.dtype(np.int64), bool: np.dtype(np.bool_)}
#: the value a weak placeholder shows to dtype inference (node.py's probe for a weak constant)
_PROBE = {float: 1.0, int: 1, bool: True}


class _Inline(Exception):
    """An argument is a graph Node: the function is being called inside another trace, so its
    body joins that trace (as ``jax.jit`` inlines a jitted function called under ``jit``)."""


_TRACING = threading.local()   # .graphs: the graphs of the fg.function traces running here


def tracing_graph():
    """The graph of the innermost ``fg.function`` trace running in this thread, or None: the
    transforms differentiate symbolically there even when only a closure holds a Node."""
    graphs = getattr(_TRACING, "graphs", ())
    return graphs[-1] if graphs else None


def capture_variable(tensor, graph: Graph, name: str = "captured"):
    """The Variable that stands for the eager ``tensor`` (a module's parameter or buffer) in
    ``graph``, made once per graph.  In an ``fg.function`` trace its value in every run is the
    tensor's own array (read at each call), and an assignment to it made in the trace runs with
    the plan and lands in that array; in a graph run by a ``Session`` it is an ordinary Variable
    whose initial value is the tensor's value when it was captured."""
    captured = graph.__dict__.setdefault("_captured", {})
    entry = captured.get(id(tensor))
    if entry is not None and entry[0] is tensor:
        return entry[1]
    with graph.as_default():
        var = Variable(tensor, name=name, trainable=bool(getattr(tensor, "requires_grad", False)))
    if is_torch_faced(tensor):   # (a module's forward means the same traced as eager)
        give_torch_face(var)
    captured[id(tensor)] = (tensor, var)
    return var


def _captured_updates(graph: Graph, n0: int) -> list:
    """The assignments made in a trace (from node ``n0`` on) to captured variables: they run
    with every call, as a module's in-place updates do in eager code."""
    captured = graph.__dict__.get("_captured")
    if not captured:
        return []
    targets = {id(var) for _, var in captured.values()}
    inits = {id(var.initializer) for _, var in captured.values()}
    return [n for n in graph.nodes[n0:] if n.kind == "assign" and id(n.value) in targets and
            id(n) not in inits]


def _bind_captured(t, store) -> None:
    for idx, tensor in t.captured:
        store[idx] = tensor._ndarray


def _write_back_captured(t, store) -> None:
    """An update the plan did not write in place into the tensor's array is copied there (the
    eager side keeps its arrays, so optimizers holding them see the new values)."""
    for idx, tensor in t.captured:
        v = store[idx]
        d = tensor._ndarray
        if v is not d:
            np.copyto(d, v)
            store[idx] = d


class _Structured(Exception):
    """An argument is a list, tuple or dict: the call takes the structured path."""


def _short_repr(v) -> str:
    """A value for an error message: ``'abc'``, ``array(['a', 'b'], dtype='<U1')``, cut short."""
    r = repr(v.item() if getattr(v, "ndim", 1) == 0 else v)
    return r if len(r) <= 60 else r[:57] + "..."


class _PyComplex(np.ndarray):
    """A Python complex argument: a weak scalar in NumPy's promotion (complex64 arrays stay
    complex64 beside it), which a traced argument of a fixed dtype would not be; refused."""

    def __repr__(self):
        return repr(complex(self[()]))


def _torch_faced(args) -> tuple:
    """The positions of the arguments that are Tensors of PyTorch's face."""
    faced = TORCH_TENSOR[0]
    for a in args:
        ta = type(a)    # (NumPy-faced Tensors and arrays, the common arguments, pass at once)
        if ta is faced or (ta is not _Tensor and ta is not np.ndarray and is_tensor(a)
                           and ta._face is faced):
            return tuple([i for i, a in enumerate(args)
                          if is_tensor(a) and type(a)._face is faced])
    return ()


def _arg_value(a):
    """An argument as traced and fed: ndarrays, NumPy scalars and weak Python scalars as they
    are, eager Tensors as their data, anything else through ``np.asarray``."""
    if type(a) in NODE_TYPES:
        raise _Inline
    if is_tensor(a):
        if a.requires_grad and is_grad_enabled():
            raise _Inline   # an eager gradient is being taken through the call: run it eagerly
        a = a._ndarray
    if type(a) in _WEAK or isinstance(a, (np.ndarray, np.generic)):
        return a
    if type(a) is complex:
        return np.asarray(a).view(_PyComplex)
    if a is None or is_keyed(a):
        raise _Structured
    if isinstance(a, (list, tuple, dict)) and is_grad_enabled() and \
            find_leaf(_requires_grad, a) is not None:
        raise _Inline   # (a container class of its own is a leaf: np.asarray would strip it)
    return np.asarray(a)


def _requires_grad(v) -> bool:
    return is_tensor(v) and v.requires_grad


# ---- structured arguments (JAX's pytrees) ---------------------------------------------------
# A list, tuple (namedtuple too) or dict argument is a structure whose leaves are traced one by
# one, as jax.jit does: ``step(params, x)`` with ``params`` a list of arrays of several shapes.
# Its key (``_core.tree.key_of``) is part of the trace's signature.
def _kwarg_values(kwargs: dict) -> dict:
    """Keyword arguments as the body sees them (they are static, keyed by value): an eager
    Tensor as its data, as positional arguments are; a Node means an enclosing trace."""
    out = kwargs
    for k, v in kwargs.items():
        if type(v) in NODE_TYPES:
            raise _Inline
        if is_tensor(v):
            if v.requires_grad and is_grad_enabled():
                raise _Inline
            if out is kwargs:
                out = dict(kwargs)
            out[k] = v._ndarray
    return out


def _feed(v):
    """How an argument is fed: 0-d arrays as NumPy scalars (the plan's scalar fast paths)."""
    return v[()] if type(v) is np.ndarray and v.ndim == 0 else v


class _Traced:
    __slots__ = ("plan", "rebuild", "store", "graph", "feed_pos", "donated", "paired", "strong",
                 "captured")


def _memory_owner(v):
    """The object whose memory ``v`` uses (following ``.base``): arrays with different owners
    cannot overlap.  (Cheap, and conservative: two views of one array count as sharing.)"""
    if type(v) is not np.ndarray:
        return None
    while True:
        b = v.base
        if b is None:
            return v
        if not isinstance(b, np.ndarray):
            return b
        v = b


def _distinct_owners(vals) -> bool:
    """Whether every argument is an array owning its memory, no two of them the same object
    (then no two can overlap)."""
    for v in vals:
        if type(v) is not np.ndarray or v.base is not None:
            return False
    return len({id(v) for v in vals}) == len(vals)


def _donatable(v, dtype, shared: bool) -> np.ndarray:
    """``v`` itself when its memory may be written by the plan, else a private copy."""
    if not shared and type(v) is np.ndarray and v.dtype == dtype:
        flags = v.flags
        if flags.c_contiguous and flags.writeable and flags.aligned:
            return v
    return np.array(v, dtype=dtype, order="C")


#: weak references to every Function (``clear_caches``); a dead one removes its own reference.
#: A set of refs rather than a WeakSet: set.add / copy / discard are each one step under the GIL,
#: so a thread creating a Function cannot break another thread's walk over the live ones.
_live: set = set()


def clear_caches() -> None:
    """Drop the cached traces of every live ``fg.function`` (``jax.clear_caches``): each one's
    next call per signature traces and compiles again (a call in progress finishes on the plan
    it started with)."""
    for ref in _live.copy():
        f = ref()
        if f is not None:
            f.clear_cache()


class Function:
    """A traced function: ``__call__`` runs the cached plan of the arguments' signature."""

    def __init__(self, fun, disable=(), donate_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.disable = tuple(disable)
        if isinstance(donate_argnums, int):
            donate_argnums = (donate_argnums,)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in donate_argnums):
            raise TypeError(f"fg.function: donate_argnums must be ints, got {donate_argnums!r}")
        self.donate_argnums = tuple(donate_argnums)
        self._cache: dict = {}
        self.trace_count = 0
        self._bound: dict = {}    # id(instance) -> (weakref to it, its Function): methods
        self._warned_unbindable = False
        _live.add(weakref.ref(self, _live.discard))

    def clear_cache(self) -> None:
        """Drop every cached trace (graph, plan, buffers); the next call of each signature
        traces again (``trace_count`` keeps counting).  On a method read through the class
        (``Cls.method.clear_cache()``) every instance's traces go too; through an instance,
        that instance's.  Safe while other threads call: a run in progress holds its plan
        until it returns; the memory goes after the last such run, at the next garbage
        collection (a graph holds reference cycles)."""
        self._cache.clear()
        for _, bound in list(self._bound.values()):
            bound.clear_cache()

    @property
    def cache_size(self) -> int:
        """How many traces are cached (one per signature called; ``clear_cache`` empties it).
        ``trace_count`` counts traces ever made, including uncached ones."""
        return len(self._cache) + sum([b.cache_size for _, b in list(self._bound.values())])

    def _donated_positions(self, n_args: int, structure=None) -> list[int]:
        """The positions in the (flattened) arguments that ``donate_argnums`` donates: every
        leaf of a structured argument."""
        n_args = n_args if structure is None else len(structure[0])
        pos = []
        for i in self.donate_argnums:
            if not -n_args <= i < n_args:
                raise ValueError(f"fg.function({self.fun.__name__}): donate_argnums entry {i} is "
                                 f"out of range for {n_args} positional argument(s)")
            if i % n_args not in pos:
                pos.append(i % n_args)
        if structure is not None:   # every leaf of a structured argument
            offsets = structure[1]
            pos = [j for i in pos for j in range(offsets[i], offsets[i + 1])]
        return sorted(pos)

    def _signature(self, vals, kwargs):
        # arrays and NumPy scalars by shape and dtype, Python scalars (weak) by their type (no
        # try/except: raising costs ~2 us when a Python scalar is passed)
        sig = tuple([(v.shape, v.dtype) if type(v) not in _WEAK else type(v) for v in vals])
        if kwargs:
            sig += (tuple(sorted([(k, value_key(v)) for k, v in kwargs.items()])),)
        return sig

    def trace(self, vals, kwargs, structure=None, faces=()) -> _Traced:
        """Trace and compile for these argument values; ``faces``: the positions of the
        arguments of PyTorch's face (their placeholders get it)."""
        self.trace_count += 1
        for i, v in enumerate(vals):
            if type(v) not in _WEAK and (v.dtype.kind not in "biufc" or type(v) is _PyComplex):
                raise TypeError(
                    f"fg.function({self.fun.__name__}): {self._argument_name(i, structure)} is "
                    f"{_short_repr(v)} of dtype {v.dtype}, which a graph cannot take "
                    f"(bool, integer, float or complex arrays, or Python bool, int or float "
                    f"scalars); pass it as a keyword argument (each value traces once) or close "
                    f"over it")
        with collector_paused():    # (a trace frees nothing cyclic: see collector_paused)
            t = self._trace(vals, kwargs, (), structure, faces)
            if type(t) is tuple:    # weak arguments to trace strong: see _weak_only
                t = self._trace(vals, kwargs, t, structure, faces)
        return t

    def _argument_name(self, i: int, structure=None) -> str:
        """Leaf ``i`` of the flattened arguments, for error messages: ``argument x`` (by the
        function's parameter name where it has one, else ``#3``), ``argument d, at
        d['name'],``."""
        leaf = None
        if structure is not None:
            keys, offsets = structure
            j = next(j for j in range(len(offsets) - 1) if offsets[j] <= i < offsets[j + 1])
            leaf, i = i - offsets[j], j
        try:
            params = list(inspect.signature(self.fun).parameters.values())
        except (TypeError, ValueError):
            params = []
        name = (params[i].name if i < len(params) and params[i].kind in
                (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                else f"#{i}")
        if leaf is None or keys[i] is LEAF:
            return f"argument {name}"
        return f"argument {name}, at {list(leaf_paths(keys[i], name))[leaf]},"

    def _trace(self, vals, kwargs, strong, structure=None, faces=()) -> _Traced:
        """Trace with placeholders; a Python scalar argument is a weak placeholder unless its
        position is in ``strong``.  Returns the traced plan, or a tuple: the positions of weak
        arguments that must be traced strong instead.  ``vals`` are the leaves of structured
        arguments when ``structure`` (their keys and leaf offsets) is given."""
        donated = (self._donated_positions(len(vals), structure) if self.donate_argnums
                   else [])
        g = Graph()
        with g.as_default():
            args, phs, feed_pos, weak = [], [], [], []
            for i, v in enumerate(vals):
                tv = type(v)
                if tv in _WEAK and (i in strong or i in donated):
                    v = _WEAK[tv].type(v)       # traced (and fed) as a NumPy scalar
                    tv = type(v)
                if i in donated:   # its value is the caller's array, set per call
                    zero = as_node(np.zeros((), v.dtype), g)
                    args.append(Variable(F.broadcast_to(zero, v.shape), name=f"arg{i}"))
                    if i in faces:
                        give_torch_face(args[-1])
                    continue
                if tv in _WEAK:
                    # node.py's dtype inference shows a weak node as a Python value of its type
                    args.append(Node(g, PLACEHOLDER, (), None, (), _WEAK[tv],
                                     g.unique_name(f"arg{i}"), kind="placeholder",
                                     value=_PROBE[tv], weak=True))
                    weak.append(i)
                else:
                    args.append(placeholder(v.dtype, v.shape, name=f"arg{i}"))
                    if i in faces:
                        give_torch_face(args[-1])
                phs.append(args[-1])
                feed_pos.append(i)
            n0 = len(g.nodes)
            _TRACING.graphs = getattr(_TRACING, "graphs", ()) + (g,)
            try:
                if structure is None:
                    out = self.fun(*args, **kwargs)
                else:
                    keys, offsets = structure
                    out = self.fun(*[from_key(k, iter(args[offsets[i]:offsets[i + 1]]))
                                     for i, k in enumerate(keys)], **kwargs)
            finally:
                _TRACING.graphs = _TRACING.graphs[:-1]
            if weak:
                bad = _weak_only(g.nodes[n0:], [args[i] for i in weak])
                if bad:
                    return tuple(strong) + tuple(weak[j] for j in bad)
            leaves: list = []
            rebuild = _flatten_outputs(out, leaves, g)
            faced = [k for k, leaf in enumerate(leaves) if is_torch_faced(leaf)]
            if faced:
                rebuild = _with_torch_face(rebuild, faced)
            paired = _pair_donations(leaves, [args[i] for i in donated])
            fetches = list(leaves)
            for k, var in paired:   # the output becomes "var = value"; its value is read back
                fetches[k] = _make_assign(var, leaves[k], f"{var.name}/donated", operation=True)
            fetches += _captured_updates(g, n0)
            sess = Session(g, disable=self.disable)
            t = _Traced()
            t.captured = [(var.var_index, tensor) for tensor, var in
                          g.__dict__.get("_captured", {}).values()]
            if t.captured:
                need = max(idx for idx, _ in t.captured) + 1
                if len(sess._store) < need:
                    sess._store.extend([UNINIT] * (need - len(sess._store)))
                _bind_captured(t, sess._store)
            t.plan = sess._compile(fetches, phs, [_feed(vals[i]) for i in feed_pos],
                                   native_scalars=False)
            t.rebuild = rebuild
            t.store = sess._store
            t.graph = g
            t.feed_pos = feed_pos if donated else None
            t.donated = [(i, args[i].var_index, args[i].dtype) for i in donated]
            t.paired = [(k, var.var_index) for k, var in paired]
            t.strong = ()
            if strong or (donated and any(type(vals[i]) in _WEAK for i in donated)):
                # the feeds of those positions are NumPy scalars, as traced
                t.strong = tuple(i for i in range(len(vals)) if type(vals[i]) in _WEAK and (
                    i in strong or i in donated))
                if t.feed_pos is None:
                    t.feed_pos = feed_pos
        return t

    def __call__(self, *args, **kwargs):
        structure = None
        leaves = args
        try:
            try:
                vals = [a if type(a) is np.ndarray else _arg_value(a) for a in args]
            except _Structured:
                vals, structure, leaves = self._flatten_args(args)
            if kwargs:
                kwargs = _kwarg_values(kwargs)
        except _Inline:   # called while another fg.function (or a graph) is being traced
            return self.fun(*args, **kwargs)
        # (PyTorch-faced arguments, also inside lists and dicts, trace to PyTorch-faced
        # placeholders: a separate trace)
        faces = () if TORCH_TENSOR[0] is None else _torch_faced(leaves)
        try:
            sig = self._signature(vals, kwargs)
            if structure is not None:
                sig = (structure,) + sig
            if faces:
                sig += (("torch face", faces),)
            t = self._cache.get(sig)
        except TypeError:  # unhashable keyword arguments (or dict keys): trace every time
            sig, t = None, None
        if t is None:
            t = self.trace(vals, kwargs, structure, faces)
            if sig is not None:
                self._cache[sig] = t
        if t.captured:
            return self._call_captured(t, vals)
        if t.feed_pos is None:
            return t.rebuild(t.plan.run([_feed(v) for v in vals], t.store))
        if t.strong:
            vals = list(vals)
            for i in t.strong:
                vals[i] = _WEAK[type(vals[i])].type(vals[i])
        return self._call_donating(t, vals)

    @staticmethod
    def _flatten_args(args) -> tuple[list, tuple, list]:
        """The leaves of the arguments (as traced and fed), the structure (each argument's key
        and where its leaves start and end) and the leaves as given."""
        keys, leaves, offsets = [], [], [0]
        for a in args:
            keys.append(key_of(a, leaves))
            offsets.append(len(leaves))
        vals = [v if type(v) is np.ndarray else _arg_value(v) for v in leaves]
        return vals, (tuple(keys), tuple(offsets)), leaves

    def _call_captured(self, t: _Traced, vals: list):
        """A run reading (and perhaps updating) captured eager tensors: their current arrays
        are the variables' values for the run, and the updates end up in those arrays."""
        _bind_captured(t, t.store)
        if t.feed_pos is None:
            res = t.plan.run([_feed(v) for v in vals], t.store)
            _write_back_captured(t, t.store)
            return t.rebuild(res)
        if t.strong:
            vals = list(vals)
            for i in t.strong:
                vals[i] = _WEAK[type(vals[i])].type(vals[i])
        return self._call_donating(t, vals)   # (it writes the updates back)

    def _call_donating(self, t: _Traced, vals: list):
        """A run whose feeds are not simply the arguments: some are donated (variables) or
        weak scalars traced strong (``t.strong``)."""
        feeds = [_feed(vals[i]) for i in t.feed_pos]
        if not t.donated:
            return t.rebuild(t.plan.run(feeds, t.store))
        # a store of this call's own: the traced store keeps no reference to the caller's
        # arrays after the call
        store = t.store[:]
        if _distinct_owners(vals):    # the usual case: no argument can overlap another
            for i, idx, dtype in t.donated:
                store[idx] = _donatable(vals[i], dtype, False)
        else:
            owners = [id(_memory_owner(v)) for v in vals]
            for i, idx, dtype in t.donated:
                shared = owners.count(owners[i]) > 1 and _memory_owner(vals[i]) is not None
                store[idx] = _donatable(vals[i], dtype, shared)
        res = t.plan.run(feeds, store)
        if t.captured:
            _write_back_captured(t, store)
        for k, idx in t.paired:
            v = store[idx]
            res[k] = v[()] if v.ndim == 0 else v   # 0-d: a NumPy scalar, as undonated results
        return t.rebuild(res)

    def explain(self, *args, **kwargs) -> str:
        """The compiled plan for these arguments (``Session.explain``'s text)."""
        structure = None
        leaves = args
        try:
            try:
                vals = [_arg_value(a) for a in args]
            except _Structured:
                vals, structure, leaves = self._flatten_args(args)
        except _Inline:
            raise TypeError(f"fg.function({self.fun.__name__}).explain needs concrete "
                            f"arguments (arrays, numbers), not graph Nodes") from None
        faces = () if TORCH_TENSOR[0] is None else _torch_faced(leaves)
        return self.trace(vals, kwargs, structure, faces).plan.explain()

    def __get__(self, obj, objtype=None):
        """``@fg.function`` on a method: the instance is not traced (it is no array) but bound,
        like any captured value: each instance gets its own traced function, built once and
        kept while the instance lives.  ``donate_argnums`` count ``self`` as argument 0."""
        if obj is None:
            return self
        entry = self._bound.get(id(obj))     # by identity: equal instances may differ
        if entry is not None and entry[0]() is obj:
            return BoundFunction(obj, entry[1])
        try:
            ref = weakref.ref(obj, lambda _, key=id(obj), b=self._bound: b.pop(key, None))
        except TypeError:     # not weak-referenceable: bound (and traced) anew on every access
            if not self._warned_unbindable:
                self._warned_unbindable = True
                warnings.warn(f"fg.function({self.fun.__name__}): instances of "
                              f"{type(obj).__name__} cannot be weakly referenced, so the method "
                              f"is traced again on every access; add '__weakref__' to its "
                              f"__slots__", RuntimeWarning, stacklevel=2)
            return BoundFunction(obj, self._bind(functools.partial(self.fun, obj)))
        # the cached function reaches the instance through the weak reference, so the cache does
        # not keep the instance alive; the BoundFunction handed out does, as a bound method does
        bound = self._bind(functools.partial(_call_method, self.fun, ref))
        self._bound[id(obj)] = (ref, bound)
        return BoundFunction(obj, bound)

    def _bind(self, fun) -> "Function":
        donate = []
        for i in self.donate_argnums:
            if i == 0:
                raise ValueError(f"fg.function({self.fun.__name__}): donate_argnums cannot "
                                 f"donate the method's self")
            donate.append(i - 1 if i > 0 else i)
        bound = Function(fun, self.disable, tuple(donate))
        functools.update_wrapper(bound, self.fun)
        return bound


def _call_method(fun, ref, *args, **kwargs):
    return fun(ref(), *args, **kwargs)


class BoundFunction:
    """``instance.method`` for an ``@fg.function`` method: holds the instance (as a bound method
    does) and calls the instance's traced function (``.function``: ``trace_count``,
    ``cache_size``, ``clear_cache``, ``explain`` and the rest are read through)."""
    __slots__ = ("__self__", "function")

    def __init__(self, obj, function: Function) -> None:
        self.__self__ = obj
        self.function = function

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.function, name)


def _flatten_outputs(out, leaves, graph):
    """Like the Session's fetch flattening, with non-Node leaves (at any depth) turned into
    constants."""
    return flatten(out, leaves, lambda v: v if type(v) in NODE_TYPES else as_node(v, graph))


def _with_torch_face(rebuild, positions):
    """``rebuild`` giving the outputs at ``positions`` (graph values of PyTorch's face) as
    Tensors of PyTorch's face holding the results (not copied): a function of PyTorch-faced
    arguments, or a module's forward, returns compiled what it returns eager."""
    face = TORCH_TENSOR[0]

    def faced(vals):
        vals = list(vals)
        for k in positions:
            v = vals[k]
            if not isinstance(v, (np.ndarray, np.generic)):
                v = np.asarray(v)
            vals[k] = type.__call__(face, v, False)
        return rebuild(vals)
    return faced


def _weak_only(nodes, weak) -> list:
    """Indices into ``weak`` (weak placeholders) of those read by an op all of whose inputs are
    weak (``s * 2.0``, ``-s``).  Such an op's static dtype is NumPy's for two Python scalars
    given to a ufunc, a strong float64/int64, but a plan may compute it with Python's own
    operators (0-d steps are inlined), which would keep it a weak Python scalar: the dtypes
    of later steps would then depend on the plan (fused or not).  Those arguments are traced
    and fed as NumPy scalars instead (``fg.multiply(2.0, 3.0)`` is an ``np.float64`` too)."""
    ids = {id(w): j for j, w in enumerate(weak)}
    bad = set()
    for n in nodes:
        ins = n.inputs
        if n.kind == "op" and ins and all([q.weak for q in ins]):
            for q in ins:
                j = ids.get(id(q))
                if j is not None:
                    bad.add(j)
    return sorted(bad)


def _pair_donations(leaves, donated) -> list:
    """(output index, donated variable) pairs: each output takes the first unpaired donated
    argument of its shape and dtype (an output that *is* the argument stays unpaired)."""
    free = list(donated)     # (identity tests only: == on nodes builds an "equal" node)
    pairs = []
    for k, leaf in enumerate(leaves):
        if leaf is None or leaf.is_operation or leaf.shape is None or \
                any(leaf is d for d in donated):
            continue
        for j, var in enumerate(free):
            if tuple(var.shape) == tuple(leaf.shape) and var.dtype == leaf.dtype:
                pairs.append((k, var))
                del free[j]
                break
    return pairs


def function(fun=None, *, disable=(), donate_argnums=()):
    """Trace ``fun`` into a static graph per argument signature and run the compiled plan.

    Usable as ``@fg.function``, ``@fg.function(disable=("fold",))`` or
    ``fg.function(step, donate_argnums=(0, 1))`` (outputs may be written into those arguments'
    arrays; see the module docstring).
    """
    if fun is None:
        return lambda f: Function(f, disable, donate_argnums)
    return Function(fun, disable, donate_argnums)
