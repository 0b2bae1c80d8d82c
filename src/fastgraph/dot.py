"""Pictures of graphs: ``fg.to_dot`` gives Graphviz DOT text of a static graph, of the fetches
of a run, or of an eager tape (from a Tensor's ``grad_fn``), with name scopes as clusters;
``sess.explain(fetches, format="dot")`` draws the compiled plan (fused kernels as boxes).
:func:`render_dot` draws DOT text to PNG, SVG or PDF with the ``graphviz`` package
(``pip install "fastgraph[graphviz]"``, and Graphviz's ``dot`` program).

    >>> x = fg.placeholder(fg.float32, [None, 3], name="x")
    >>> with fg.name_scope("layer"):
    ...     y = fg.reduce_sum(fg.tanh(x))
    >>> print(fg.to_dot(y))             # doctest: +SKIP
    digraph "fastgraph" { ... subgraph "cluster_layer" { ... } ... }
"""
from __future__ import annotations

import os

from ._core import is_tensor
from ._core.dot import OP_STYLE, SOURCE_STYLE, DotWriter, shape_text
from .static.dot import graph_to_dot, is_graph_value

__all__ = ["to_dot", "render_dot"]


# ---- eager tapes --------------------------------------------------------------------------------
def _tape_dot(tensor, title: str) -> str:
    """The operations recorded for ``tensor``, from its ``grad_fn`` back to the leaves the
    gradient reaches (numbered in the order the walk meets them)."""
    d = DotWriter(title)
    d.node("output", "output\n" + shape_text(tensor.shape, tensor.dtype), "shape=doubleoctagon")
    root = tensor.grad_fn
    if root is None:
        return d.text()
    keys: dict = {}             # id(tape node or leaf) -> its DOT key

    def key_of(obj, prefix):
        k = keys.get(id(obj))
        if k is None:
            k = keys[id(obj)] = f"{prefix}{len(keys)}"
        return k

    d.edge(key_of(root, "op"), "output")
    stack, drawn = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in drawn:
            continue
        drawn.add(id(node))
        ans = node.ans
        label = node.name() or "?"
        if ans is not None:
            label += "\n" + shape_text(getattr(ans, "shape", ()), getattr(ans, "dtype", None))
        d.node(key_of(node, "op"), label, OP_STYLE)
        parents = node.parents or ()
        for k, parent in enumerate(parents):
            if parent is None:          # an input no gradient flows to
                continue
            edge_label = str(k) if len(parents) > 1 else None
            if is_tensor(parent):       # a leaf the gradient reaches
                new = id(parent) not in keys
                key = key_of(parent, "leaf")
                if new:
                    d.node(key, "leaf\n" + shape_text(parent.shape, parent.dtype),
                           SOURCE_STYLE["variable"])
            else:
                key = key_of(parent, "op")
                stack.append(parent)
            d.edge(key, key_of(node, "op"), edge_label)
    return d.text()


# ---- the public functions -----------------------------------------------------------------------
def to_dot(obj, title: str = "fastgraph") -> str:
    """Graphviz DOT text of a static graph (a ``Graph``: every node; fetches -- a node or a
    list/dict of them -- and what they depend on) or of an eager tape (a ``Tensor`` made by
    operations that record a gradient, drawn back from its ``grad_fn``).  Name scopes are
    clusters; placeholders, variables and constants have shapes of their own.  Render it with
    :func:`render_dot`, or paste it into any Graphviz viewer.

        >>> x = fg.placeholder(fg.float64, [None, 2], name="x")
        >>> print(fg.to_dot(fg.reduce_sum(x * 2.0)).splitlines()[0])
        digraph "fastgraph" {
    """
    if is_tensor(obj):
        return _tape_dot(obj, title)
    if type(obj).__name__ == "TapeNode":
        raise TypeError("to_dot: pass the Tensor (fg.to_dot(y)), not its grad_fn")
    if not is_graph_value(obj):
        raise TypeError(f"to_dot: expected a Graph, graph nodes (a node, or a list or dict of "
                        f"them) or an eager Tensor, got {type(obj).__name__}")
    return graph_to_dot(obj, title)


def render_dot(dot: str, path, format: str | None = None) -> str:
    """Draw DOT text to ``path`` (the format from its suffix, ``.png``, ``.svg`` or ``.pdf``, or
    ``format``) with the ``graphviz`` package; returns the file's path.  Without the package
    (``pip install "fastgraph[graphviz]"``) or Graphviz's ``dot`` program, a ``RuntimeError``
    says what to install.

        >>> fg.render_dot(fg.to_dot(loss), "loss.svg")      # doctest: +SKIP
        'loss.svg'
    """
    path = os.fspath(path)
    stem, suffix = os.path.splitext(path)
    fmt = format or suffix.lstrip(".").lower()
    if not fmt:
        raise ValueError(f"render_dot: cannot tell the format of {path!r}: give a .png, .svg "
                         f"or .pdf path, or format=")
    try:
        import graphviz
    except ImportError:
        raise RuntimeError("render_dot: drawing DOT text needs the graphviz package "
                           "(pip install \"fastgraph[graphviz]\") and Graphviz's dot program; "
                           "fg.to_dot's text can also be pasted into any Graphviz viewer") \
            from None
    try:
        out = graphviz.Source(dot).render(outfile=path, format=fmt, cleanup=True)
    except graphviz.ExecutableNotFound:
        raise RuntimeError("render_dot: Graphviz's dot program is not installed (the graphviz "
                           "package only drives it): install Graphviz, e.g. apt-get install "
                           "graphviz") from None
    return os.fspath(out) if out else path
