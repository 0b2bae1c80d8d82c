"""DOT text, written: :class:`DotWriter` files nodes by name scope (each scope a cluster) and
writes Graphviz's ``digraph`` syntax; the graph engine (``fastgraph.static.dot``) and the eager
tape's picture (``fastgraph.dot``) both draw with it.

    >>> d = DotWriter("g"); d.node("a/x", "x", "shape=box", "a"); d.edge("a/x", "y")
    >>> d.text().splitlines()[0]
    'digraph "g" {'
"""
from __future__ import annotations

__all__ = ["DotWriter", "quote", "shape_text", "SOURCE_STYLE", "OP_STYLE", "FUSED_STYLE",
           "scope_of"]

#: how each kind of graph node is drawn
SOURCE_STYLE = {
    "placeholder": 'shape=invhouse, style=filled, fillcolor="#dbe9f6"',
    "variable": 'shape=cylinder, style=filled, fillcolor="#fdebd0"',
    "const": 'shape=note, fontsize=10, color="#888888"',
}
OP_STYLE = "shape=ellipse"
FUSED_STYLE = 'shape=box, style="filled,bold", fillcolor="#d5f5e3"'


def quote(text) -> str:
    """``text`` as a DOT double-quoted string (``\\n`` stays a DOT line break)."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + s.replace("\n", "\\n") + '"'


def shape_text(shape, dtype) -> str:
    """``(?, 3) float32``: a shape (``?`` where unknown) and a dtype."""
    if shape is None:
        text = "?"
    else:
        dims = ["?" if d is None else str(d) for d in shape]
        text = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
    return f"{text} {dtype}" if dtype is not None else text


class DotWriter:
    """DOT text under construction: nodes filed by name scope, then edges."""

    def __init__(self, title: str):
        self.title = title
        self.scopes: dict = {}      # scope path (a tuple) -> [node lines]
        self.edges: list = []

    def node(self, key, label, style, scope: str = "") -> None:
        path = tuple(scope.split("/")) if scope else ()
        self.scopes.setdefault(path, []).append(f"{quote(key)} [label={quote(label)}, "
                                                f"{style}];")

    def edge(self, src, dst, label=None) -> None:
        attr = f" [label={quote(label)}]" if label is not None else ""
        self.edges.append(f"{quote(src)} -> {quote(dst)}{attr};")

    def text(self) -> str:
        lines = [f"digraph {quote(self.title)} {{", "  rankdir=BT;",
                 '  node [fontname="Helvetica", fontsize=11];',
                 '  edge [fontname="Helvetica", fontsize=9, color="#555555"];']
        lines.extend(self._cluster((), 1))
        lines.extend("  " + e for e in self.edges)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def _cluster(self, path: tuple, depth: int) -> list:
        pad = "  " * depth
        out = [pad + line for line in self.scopes.get(path, [])]
        children = sorted({p[:len(path) + 1] for p in self.scopes
                           if len(p) > len(path) and p[:len(path)] == path})
        for child in children:
            out.append(f"{pad}subgraph {quote('cluster_' + '/'.join(child))} {{")
            out.append(f"{pad}  label={quote(child[-1])}; style=rounded; color=\"#999999\";")
            out.extend(self._cluster(child, depth + 1))
            out.append(f"{pad}}}")
        return out


def scope_of(name: str) -> str:
    """The name scope of a node called ``name`` (``"layer/W"`` -> ``"layer"``)."""
    return name.rpartition("/")[0]
