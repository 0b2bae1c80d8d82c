"""``fg.gradients``: symbolic reverse-mode differentiation with the registry's VJP rules.

The VJP rules are written with ``fg`` operations, so applied to Nodes they build gradient nodes
(which can be differentiated again).  The walk is iterative: node ids grow in creation order and
inputs always exist before their consumers, so decreasing id is a reverse topological order.
"""
from __future__ import annotations

import numpy as np

from .. import ops as F
from .._core import ZERO
from .._core.errors import complex_gradient_error
from .node import NODE_TYPES, as_node

__all__ = ["gradients", "TUPLE_VJPS", "OutputCotangent"]

#: ops whose value is a tuple read by projection nodes (the control-flow ops): op ->
#: ``rule(node, cotangents, needed) -> gradients``: ``cotangents`` maps an output's index to its
#: cotangent (outputs without one are absent), ``needed`` says which inputs need a gradient
#: (the rule computes no other: a loop would run it on every iteration), and the result has one
#: gradient (or None) per input of the node
TUPLE_VJPS: dict = {}


class OutputCotangent:
    """What a projection's VJP returns: the cotangent of output ``index`` of a tuple node."""

    __slots__ = ("index", "value")

    def __init__(self, index: int, value):
        self.index = index
        self.value = value


def _float(node) -> bool:
    return node.dtype is None or node.dtype.kind in "fc"    # (None: a tuple node)


def _complex(node) -> bool:
    return node.dtype is not None and node.dtype.kind == "c"


def _as_list(v):
    if isinstance(v, (list, tuple)):
        return list(v), True
    return [v], False


def _same_shape(a, b) -> bool:
    return a is not None and b is not None and None not in a and tuple(a) == tuple(b)


def gradients(ys, xs, grad_ys=None, stop_gradients=None):
    """Symbolic ``sum(ys)`` gradients with respect to each of ``xs`` (``None`` if unconnected).
    ``stop_gradients`` (TensorFlow's): nodes held constant, nothing flows through them to their
    inputs; a node both there and in ``xs`` gets the gradient of the paths that end at it.

        >>> z = x * y; gx, gy = fg.gradients(z, [x, y])
    """
    ys, _ = _as_list(ys)
    xs, xs_list = _as_list(xs)
    for n in ys + xs:
        if type(n) not in NODE_TYPES:
            raise TypeError(f"gradients: expected graph Nodes, got {type(n).__name__}")
    graph = ys[0].graph
    for n in ys + xs:
        if n.graph is not graph:
            raise ValueError(f"gradients: node {n.name!r} belongs to another graph")
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    else:
        grad_ys, _ = _as_list(grad_ys)
        if len(grad_ys) != len(ys):
            raise ValueError(f"gradients: {len(grad_ys)} grad_ys for {len(ys)} ys")

    stops = set() if stop_gradients is None else {n.id for n in _as_list(stop_gradients)[0]}
    # the nodes ys depend on (iterative walk)
    seen = set()
    stack = [y for y in ys]
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if n.kind == "op" and n.id not in stops:
            stack.extend(n.inputs)
    order = sorted(seen)
    nodes = graph.nodes
    # which of them depend on some x
    xset = {x.id for x in xs}
    dep = set()
    for i in order:
        n = nodes[i]
        if i in xset or (n.kind == "op" and n.op.differentiable and i not in stops
                         and any(p.id in dep for p in n.inputs)):
            dep.add(i)

    contribs: dict = {}
    for y, gy in zip(ys, grad_ys):
        if y.id not in dep or not _float(y):
            continue
        if gy is None:
            if y.shape is not None and None not in y.shape:
                gy = as_node(np.ones(y.shape, dtype=y.dtype), graph)
            else:
                gy = F.broadcast_like(as_node(np.ones((), y.dtype), graph), y)
        else:
            gy = as_node(gy, graph)
        contribs.setdefault(y.id, []).append(gy)

    grads: dict = {}
    for i in reversed(order):
        if i not in dep:
            continue
        cs = contribs.pop(i, None)
        if cs is None:
            continue
        n = nodes[i]
        tuple_rule = TUPLE_VJPS.get(n.op) if n.kind == "op" else None
        if tuple_rule is not None:
            g = _per_output(cs)
        else:
            g = cs[0]
            for c in cs[1:]:
                g = g + c
        if i in xset:
            grads[i] = g
        if n.kind != "op" or not n.op.differentiable or i in stops:
            continue
        attrs = n.attrs or {}
        vjps = n.op.vjps
        if tuple_rule is None and not n.op.complex_vjps and (_complex(n) or any(
                _complex(inp) for inp in n.inputs)):
            raise complex_gradient_error(n.op, n.inputs)
        in_grads = None
        if tuple_rule is not None:   # (told which inputs need a gradient: a loop's backward
            in_grads = tuple_rule(n, g, [p.id in dep and _float(p) for p in n.inputs])
        for k, inp in enumerate(n.inputs):
            if inp.id not in dep or not _float(inp):
                continue
            if in_grads is not None:
                c = in_grads[k]
            else:
                rule = vjps[k]
                if rule is None or rule is ZERO:
                    continue
                c = rule(g, n, *n.inputs, **attrs)
            if c is None or c is ZERO:
                continue
            if type(c) is OutputCotangent:
                contribs.setdefault(inp.id, []).append(c)
                continue
            c = as_node(c, graph)
            if not _same_shape(c.shape, inp.shape):
                c = F.sum_to_like(c, inp)
            if c.dtype != inp.dtype:
                c = F.astype(c, inp.dtype)
            contribs.setdefault(inp.id, []).append(c)
    out = [grads.get(x.id) for x in xs]
    return out if xs_list else out


def _per_output(cotangents) -> dict:
    """``output index -> summed cotangent`` of a tuple node's projections' contributions."""
    out: dict = {}
    for c in cotangents:
        prev = out.get(c.index)
        out[c.index] = c.value if prev is None else prev + c.value
    return out
