"""``Session``: runs fetches of a graph, holding the variables' values (TensorFlow 1 semantics).

``run`` looks up a compiled :class:`~fastgraph.static.executor.Plan` per (fetches, feed
signature) -- a single dict lookup when the fetch is one node -- validates the feeds, runs the
plan and restores the fetch structure.  Nothing is committed unless the whole run succeeds.
"""
from __future__ import annotations

import contextlib
import gc
import threading

import numpy as np

from .._core.random_state import Store
from .._core.tree import flatten
from .errors import FailedPreconditionError, InvalidArgumentError
from .executor import UNINIT, Plan
from .graph import Graph, get_default_graph
from .node import NODE_TYPES
from .passes import PASS_NAMES
from .plan import Context, compile_ir, lower

__all__ = ["Session", "InteractiveSession", "get_default_session"]

_ndarray = np.ndarray
_generic = np.generic
_F64 = np.dtype(np.float64)
_f64 = np.float64


def _flatten(fetches, leaves, graph):
    """Leaves of a nested fetch structure (nodes, or node names), and a function rebuilding it
    from their values (the pytree rules of ``_core.tree``)."""
    def fetched(v):
        if type(v) in NODE_TYPES:
            return v
        if isinstance(v, str):
            return graph.get(v)
        raise TypeError(f"Session.run: cannot fetch an object of type {type(v).__name__}; "
                        f"fetch graph nodes (or lists, tuples, dicts, namedtuples of them)")
    return flatten(fetches, leaves, fetched)


@contextlib.contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector while a plan compiles.  Compiling allocates a few
    objects per graph node and frees nothing cyclic, yet every 700 allocations trigger a
    collection that scans them all again -- ~25% of compile time at 100,000 nodes, more in a
    process holding many other objects (measured with ``fastgraph.bench.compile``), and the
    share grows with the graph (each full collection scans every node built so far).
    ``fg.function`` traces and compiles under it too.  Nested uses are fine."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_defaults = threading.local()     # .sessions: this thread's default-session stack


def _default_sessions() -> list:
    stack = getattr(_defaults, "sessions", None)
    if stack is None:
        stack = _defaults.sessions = []
    return stack


def get_default_session():
    """The session ``node.eval()`` and ``operation.run()`` use in this thread: the innermost
    ``with sess:`` / ``with sess.as_default():`` block's, or an open ``InteractiveSession``;
    None when there is none (TensorFlow 1's ``tf.get_default_session``).

        >>> with fg.Session() as sess:
        ...     assert fg.get_default_session() is sess
    """
    stack = _default_sessions()
    return stack[-1] if stack else None


class Session:
    """Runs a graph; variables live here (two sessions are independent).

    As in TensorFlow 1, ``with fg.Session() as sess:`` also makes ``sess`` the default session
    (``node.eval()``, ``operation.run()``) and its graph the default graph inside the block, and
    closes it at the end.

        >>> with fg.Session() as sess:
        ...     sess.run(fg.global_variables_initializer())
        ...     sess.run([y, z], feed_dict={x: 3.0})
    """

    def __init__(self, graph: Graph | None = None, disable=(), config=None):
        self.graph = graph if graph is not None else get_default_graph()
        unknown = [d for d in disable if d not in PASS_NAMES and d != "fuse"]
        if unknown:
            raise ValueError(f"Session: unknown pass(es) {unknown}; the passes are {PASS_NAMES}")
        self.disable = tuple(disable)
        self._store: list = Store()     # variable values by index, and random generators
        self._node_plans: dict = {}     # node -> {feed signature: plan}
        self._plans: dict = {}          # (leaves, feed signature) -> plan
        # held by every run of a plan that reads or writes variables: updates are atomic
        # across all plans (re-entrant, for a step that runs the same Session again)
        self._state_lock = threading.RLock()
        self._entered: list = []        # graph blocks entered by ``with sess:``
        self._closed = False

    # ---- context manager / default session / close --------------------------------------------
    def __enter__(self):
        self._check_open()
        graph_block = self.graph.as_default()
        graph_block.__enter__()
        self._entered.append(graph_block)
        _default_sessions().append(self)
        return self

    def __exit__(self, *exc):
        stack = _default_sessions()
        if stack and stack[-1] is self:
            stack.pop()
        if self._entered:
            self._entered.pop().__exit__(None, None, None)
        self.close()
        return False

    @contextlib.contextmanager
    def as_default(self):
        """Make this the default session inside the ``with`` block, without closing it after.

            >>> with sess.as_default():
            ...     y.eval({x: 3.0})
        """
        self._check_open()
        stack = _default_sessions()
        stack.append(self)
        try:
            yield self
        finally:
            if self in stack:
                del stack[len(stack) - 1 - stack[::-1].index(self)]

    def close(self) -> None:
        """Release the session's state; any later use raises ``RuntimeError``."""
        self._closed = True
        self._store = Store()
        self._node_plans.clear()
        self._plans.clear()

    def _check_open(self):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")

    # ---- feeds -------------------------------------------------------------------------------
    def _feed_value(self, node, v):
        dt = node.dtype
        t = type(v)
        if t is float and dt is _F64 and node.shape == ():
            return _f64(v)
        if t is _ndarray or isinstance(v, _generic):
            arr = v
        elif type(v) in NODE_TYPES:
            raise TypeError(f"feed_dict: the value fed for {node.name!r} is a graph node; feed "
                            f"data (NumPy arrays, numbers, lists)")
        else:
            try:    # (an eager Tensor that requires grad refuses: its gradient would be lost)
                arr = np.asarray(v)
            except Exception as e:
                raise InvalidArgumentError(f"cannot convert the value fed for {node.name!r} to "
                                           f"an array: {e}", node) from None
        if arr.dtype != dt:
            k, dk = arr.dtype.kind, dt.kind
            if dk == "S" and k == "U":      # (a Python string fed to a string placeholder)
                arr = np.char.encode(arr, "utf-8")
            elif k == dk or (dk == "f" and k in "iu") or (dk in "iu" and k in "iu") or (
                    dk == "c" and k in "iuf"):
                arr = arr.astype(dt)
            else:
                raise InvalidArgumentError(
                    f"cannot feed a value of dtype {arr.dtype} (shape {np.shape(arr)}) to "
                    f"{node.name!r}, which has dtype {dt} and shape {node.shape}", node)
        shape = node.shape
        ashape = arr.shape
        if shape is not None:
            if len(shape) != len(ashape) or any(d is not None and d != a
                                                for d, a in zip(shape, ashape)):
                raise InvalidArgumentError(
                    f"cannot feed a value of shape {ashape} to {node.name!r}, which has shape "
                    f"{tuple(shape)}", node)
        if t is _ndarray and arr is v and arr.ndim == 0:
            arr = arr[()]
        elif type(arr) is _ndarray and arr.ndim == 0:
            arr = arr[()]
        return arr

    def _feeds(self, feed_dict):
        graph = self.graph
        nodes = []
        vals = []
        sig = []
        for k, v in feed_dict.items():
            if type(v) is float and type(k) in NODE_TYPES and k.dtype is _F64 and \
                    k.shape == () and k.graph is graph:
                nodes.append(k)     # the common scalar feed
                vals.append(_f64(v))
                sig.append(k)
                continue
            if type(k) not in NODE_TYPES:
                if isinstance(k, str):
                    k = graph.get(k)
                else:
                    raise TypeError(f"feed_dict keys must be graph nodes, got "
                                    f"{type(k).__name__}")
            if k.graph is not graph:
                raise ValueError(f"feed_dict: node {k.name!r} belongs to another graph than "
                                 f"the session's")
            val = self._feed_value(k, v)
            nodes.append(k)
            vals.append(val)
            sig.append(k)
            if k.shape is None or None in k.shape:
                sig.append(np.shape(val))
        return nodes, vals, tuple(sig)

    # ---- run ---------------------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Evaluate ``fetches`` (a node, an operation, or any nesting of lists, tuples, dicts and
        namedtuples of them); returns NumPy values in the same structure (operations: None)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if feed_dict:
            feed_nodes, feed_vals, sig = self._feeds(feed_dict)
        else:
            feed_nodes, feed_vals, sig = (), (), ()
        if type(fetches) in NODE_TYPES:
            plans = self._node_plans.get(fetches)
            if plans is None:
                if fetches.graph is not self.graph:
                    raise ValueError(f"Session.run: node {fetches.name!r} belongs to another "
                                     f"graph than the session's")
                plans = self._node_plans.setdefault(fetches, {})
            plan = plans.get(sig)
            if plan is None:    # (threads compiling at once all run the plan stored first)
                plan = plans.setdefault(sig, self._compile([fetches], feed_nodes, feed_vals))
            return plan.run(feed_vals, self._store)[0]
        leaves: list = []
        rebuild = _flatten(fetches, leaves, self.graph)
        key = (tuple(leaves), sig)
        plan = self._plans.get(key)
        if plan is None:
            for n in leaves:
                if n.graph is not self.graph:
                    raise ValueError(f"Session.run: node {n.name!r} belongs to another graph "
                                     f"than the session's")
            plan = self._plans.setdefault(key, self._compile(leaves, feed_nodes, feed_vals))
        return rebuild(plan.run(feed_vals, self._store))

    def _compile(self, leaves, feed_nodes, feed_vals, ctx=None, native_scalars=True):
        ctx = ctx or Context(self.disable)
        with collector_paused():
            ir = lower(leaves, list(feed_nodes), [np.shape(v) for v in feed_vals])
            ir = compile_ir(ir, ctx)
            plan = Plan(ir, ctx, self.graph, native_scalars, self._state_lock)
        need = len(self.graph.variables)
        if len(self._store) < need:
            self._store.extend([UNINIT] * (need - len(self._store)))
        return plan

    # ---- variable values (checkpoints) ----------------------------------------------------------
    def _variable_values(self, variables) -> list:
        """The current values of ``variables`` (Variables of the Session's graph), read
        together under the state lock; an uninitialised one raises
        ``FailedPreconditionError`` naming it."""
        self._check_open()
        with self._state_lock:
            store = self._store
            out = []
            for v in variables:
                val = store[v.var_index] if v.var_index < len(store) else UNINIT
                if val is UNINIT:
                    raise FailedPreconditionError(
                        f"Attempting to use uninitialized value {v.name!r} (run its "
                        f"initializer, e.g. fg.global_variables_initializer(), first)", v)
                out.append(np.array(val))
            return out

    def _set_variables(self, pairs) -> None:
        """Set each ``(variable, array)`` of ``pairs`` at once, under the state lock (the
        caller has checked every shape and dtype: nothing here can fail half-way)."""
        self._check_open()
        values = [(v.var_index, np.array(a, dtype=v.dtype, order="C")) for v, a in pairs]
        with self._state_lock:
            need = len(self.graph.variables)
            if len(self._store) < need:
                self._store.extend([UNINIT] * (need - len(self._store)))
            for idx, arr in values:     # (the store's arrays are private: plans write them)
                self._store[idx] = arr[()] if arr.ndim == 0 else arr

    def explain(self, fetches, feed_dict=None, format: str = "text") -> str:
        """A readable account of the compiled plan: kept steps, folded, simplified, merged and
        pruned nodes, and the buffers; ``format="dot"``: the plan's steps as Graphviz DOT text,
        each fused kernel a box (``fg.render_dot`` draws it).

            >>> print(sess.explain(loss, {x: batch}, format="dot"))   # doctest: +SKIP
        """
        if format not in ("text", "dot"):
            raise ValueError(f"explain: format must be 'text' or 'dot', got {format!r}")
        self._check_open()
        if feed_dict:
            feed_nodes, feed_vals, _ = self._feeds(feed_dict)
        else:
            feed_nodes, feed_vals = (), ()
        leaves: list = []
        _flatten(fetches, leaves, self.graph)
        plan = self._compile(leaves, feed_nodes, feed_vals)
        return plan.explain() if format == "text" else plan.explain_dot()

    def __repr__(self) -> str:
        return f"<fastgraph.Session{' (closed)' if self._closed else ''} {self.graph!r}>"


class InteractiveSession(Session):
    """A session that makes itself the default session when it is made, until ``close()``
    (TensorFlow 1's, for shells and notebooks: ``y.eval()`` without a ``with`` block).

        >>> sess = fg.InteractiveSession()
        >>> fg.global_variables_initializer().run()
        >>> sess.close()
    """

    def __init__(self, graph: Graph | None = None, disable=(), config=None):
        super().__init__(graph, disable, config)
        _default_sessions().append(self)

    def close(self) -> None:
        stack = _default_sessions()
        if self in stack:
            stack.remove(self)
        super().close()
