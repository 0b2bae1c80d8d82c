"""``Graph``: the container of static nodes; default-graph stack, names and name scopes."""
from __future__ import annotations

import contextlib
import re
import threading

__all__ = ["Graph", "SubGraph", "get_default_graph", "reset_default_graph", "name_scope"]

_VALID = re.compile(r"[A-Za-z0-9_.\-/]+$")


class Graph:
    """A static computation graph (TensorFlow 1 style).

        >>> g = fg.Graph()
        >>> with g.as_default():
        ...     x = fg.placeholder(fg.float64, ())
    """

    def __init__(self):
        self.nodes: list = []          # every node, in creation (= topological) order
        self.variables: list = []      # every Variable, index = its slot in a Session's store
        self._trainable: list = []
        self._by_name: dict = {}
        self._name_counts: dict = {}
        self._cons: dict = {}          # hash-consing: (op, input ids, attrs key) -> node
        self._scope = ""
        self._version = 0
        self.seed = None               # the graph-level random seed (fg.set_random_seed)

    # ---- naming -------------------------------------------------------------------------
    def unique_name(self, base: str, scoped: bool = True) -> str:
        if scoped and self._scope:
            base = self._scope + base
        names = self._by_name
        if base not in names:
            return base
        counts = self._name_counts
        i = counts.get(base, 0)
        while True:
            i += 1
            cand = f"{base}_{i}"
            if cand not in names:
                counts[base] = i
                return cand

    def _add(self, node) -> None:
        node.id = len(self.nodes)
        self.nodes.append(node)
        self._by_name[node.name] = node

    def get(self, name: str):
        """The node called ``name``, or TensorFlow's name of its value, ``name + ":0"`` (each
        node has one output); ``KeyError`` if none.

            >>> g.get("x") is g.get("x:0")
            True
        """
        node = self._by_name.get(name)
        if node is not None:
            return node
        base, colon, index = name.rpartition(":")
        if colon and index.isdigit():
            node = self._by_name.get(base)
            if node is not None and index == "0":
                return node
            if node is not None:
                raise KeyError(f"{name!r}: node {base!r} has one output, {base + ':0'!r} (an "
                               f"op with several outputs, such as split, makes one node each)")
            name = base
        raise KeyError(f"the graph has no node named {name!r}")

    def get_tensor_by_name(self, name: str):
        """The node whose value TensorFlow calls ``name`` (``"x:0"``)."""
        if ":" not in name:
            raise ValueError(f"The name {name!r} refers to an operation, not a tensor: tensor "
                             f"names are of the form '<op_name>:<output_index>', e.g. "
                             f"{name + ':0'!r}")
        return self.get(name)

    def get_operation_by_name(self, name: str):
        """The node called ``name`` (TensorFlow's operation name, without ``":0"``)."""
        if ":" in name:
            raise ValueError(f"The name {name!r} refers to a tensor, not an operation: "
                             f"operation names have no ':<output_index>'")
        return self.get(name)

    def get_operations(self) -> list:
        return list(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    @contextlib.contextmanager
    def as_default(self):
        """Make this the default graph inside the ``with`` block."""
        _stack().append(self)
        try:
            yield self
        finally:
            _stack().pop()

    @contextlib.contextmanager
    def name_scope(self, name: str):
        if not name:
            yield self._scope
            return
        if not _VALID.match(name):
            raise ValueError(f"name_scope: invalid scope name {name!r}")
        old = self._scope
        self._scope = old + name.rstrip("/") + "/"
        try:
            yield self._scope
        finally:
            self._scope = old

    def __repr__(self) -> str:
        return f"<fastgraph.Graph with {len(self.nodes)} nodes>"


class SubGraph(Graph):
    """The graph a control-flow function is traced into (a loop's body, a branch of a cond).
    A node of an enclosing graph used inside is *captured*: it becomes a placeholder here, and
    the control-flow node built from the sub-graph takes the outer node as an input."""

    def __init__(self, outer: Graph):
        super().__init__()
        self.outer = outer
        self.captures: list = []        # (outer node, its placeholder here), in capture order
        self.captured: dict = {}        # id(outer node) -> its placeholder or constant here
        self.seed = outer.seed

    def encloses(self, graph: Graph) -> bool:
        """Whether ``graph`` is an enclosing graph of this one (its outer, or theirs...)."""
        g = self.outer
        while g is not None:
            if g is graph:
                return True
            g = getattr(g, "outer", None)
        return False


_local = threading.local()
_global_default = [Graph()]


def _stack() -> list:
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def get_default_graph() -> Graph:
    """The graph new nodes go into (the innermost ``as_default()``, else the global one)."""
    s = _stack()
    return s[-1] if s else _global_default[0]


def reset_default_graph() -> None:
    """Replace the global default graph by an empty one (not allowed inside ``as_default()``)."""
    if _stack():
        raise AssertionError("reset_default_graph: do not call inside a `with graph.as_default()` "
                             "block")
    _global_default[0] = Graph()


def name_scope(name: str):
    """Prefix the names of nodes built inside with ``name/`` (nestable)."""
    return get_default_graph().name_scope(name)
