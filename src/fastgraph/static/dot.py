"""Pictures of static graphs as Graphviz DOT text: a graph or the fetches of a run
(:func:`graph_to_dot`, what ``fg.to_dot`` draws for graph values) and a compiled plan
(:func:`plan_to_dot`, ``sess.explain(..., format="dot")``: each fused kernel a box).

    >>> print(graph_to_dot(loss).splitlines()[0])     # doctest: +SKIP
    digraph "fastgraph" {
"""
from __future__ import annotations

import numpy as np

from .._core.dot import (FUSED_STYLE, OP_STYLE, SOURCE_STYLE, DotWriter, scope_of,
                         shape_text)
from .graph import Graph
from .node import NODE_TYPES

__all__ = ["graph_to_dot", "plan_to_dot", "is_graph_value"]

_STEP_STYLE = {"feed": SOURCE_STYLE["placeholder"], "var": SOURCE_STYLE["variable"],
               "const": SOURCE_STYLE["const"]}


def is_graph_value(obj) -> bool:
    """Whether ``obj`` is a Graph, a graph node, or a list/tuple/dict holding nodes."""
    if isinstance(obj, Graph) or type(obj) in NODE_TYPES:
        return True
    found: list = []
    _collect_nodes(obj, found)
    return bool(found)


def graph_to_dot(obj, title: str = "fastgraph") -> str:
    """DOT text of a ``Graph`` (every node) or of fetches (a node, or a list/tuple/dict of
    them) and every node they depend on."""
    return _graph_dot(_graph_nodes(obj), title)


def _graph_nodes(obj) -> list:
    """The nodes to draw: a whole graph, or the fetches and everything they depend on."""
    if isinstance(obj, Graph):
        return list(obj.nodes)
    fetches: list = []
    _collect_nodes(obj, fetches)
    if not fetches:
        raise TypeError(f"to_dot: expected a Graph, graph nodes or an eager Tensor, got "
                        f"{type(obj).__name__}")
    seen: dict = {}
    stack = list(fetches)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen[id(n)] = n
        stack.extend(_node_inputs(n))
    return sorted(seen.values(), key=lambda n: n.id)


def _collect_nodes(obj, out: list) -> None:
    if type(obj) in NODE_TYPES:
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _collect_nodes(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _collect_nodes(v, out)


def _node_inputs(n) -> list:
    ins = [i for i in (n.inputs or ()) if type(i) in NODE_TYPES]
    value = getattr(n, "value", None)       # an assignment's target
    if n.kind == "assign" and type(value) in NODE_TYPES:
        ins.append(value)
    return ins


def _scalar_text(value) -> str:
    v = np.asarray(value).item()
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _graph_dot(nodes, title: str) -> str:
    d = DotWriter(title)
    for n in nodes:
        if n.kind in SOURCE_STYLE:
            what = {"placeholder": "placeholder", "variable": "Variable"}.get(n.kind)
            label = n.name if what is None else f"{n.name}\n{what}"
            if n.kind == "const" and n.shape == ():     # a scalar: its value
                label = f"{n.name}\n{_scalar_text(n.value)}"
            style = SOURCE_STYLE[n.kind]
        elif n.kind == "assign":
            label, style = f"{n.name}\nassign", 'shape=box, style=dashed'
        elif n.kind == "group":
            label, style = f"{n.name}\ngroup", 'shape=box, style=dotted'
        else:
            op = n.op.name if n.op is not None else n.kind
            label, style = f"{n.name}\n{op}", OP_STYLE
        if n.kind not in ("group", "assign"):
            label += "\n" + shape_text(n.shape, n.dtype)
        d.node(n.name, label, style, scope_of(n.name))
        for k, i in enumerate(_node_inputs(n)):
            d.edge(i.name, n.name, str(k) if len(n.inputs or ()) > 1 else None)
    return d.text()


def plan_to_dot(plan, title: str = "plan") -> str:
    """DOT text of a compiled plan (what ``sess.explain(fetches, format="dot")`` returns): one
    node per step, each fused kernel a box listing the operations it replaces.

        >>> print(sess.explain(loss, {x: batch}, format="dot"))     # doctest: +SKIP
    """
    d = DotWriter(title)
    for p in plan.order:
        shape = shape_text(None if p.shape is None else tuple(p.shape), p.dtype)
        if p.kind in _STEP_STYLE:
            d.node(p.name, f"{p.name}\n{p.kind}\n{shape}", _STEP_STYLE[p.kind], scope_of(p.name))
        elif p.kind == "call" and type(p.fn).__name__ == "FusedKernel":
            d.node(p.name, f"{p.name}\nfused kernel: {p.note}\n{shape}", FUSED_STYLE)
        else:
            what = (p.op.name if p.kind == "op" else
                    getattr(p.fn, "name", None) if p.kind == "call" else p.kind)
            note = f" [{p.note}]" if p.kind == "call" and p.note else ""
            d.node(p.name, f"{p.name}\n{what}{note}\n{shape}", OP_STYLE, scope_of(p.name))
        for k, q in enumerate(p.inputs):
            d.edge(q.name, p.name, str(k) if len(p.inputs) > 1 else None)
    return d.text()
