"""The symbolic half of the functional transforms: on graph Nodes (or inside an ``fg.function``
trace) ``fg.grad``, ``fg.value_and_grad`` and ``fg.jacobian`` build their gradients as Nodes with
:func:`~fastgraph.static.gradients.gradients`.  The public transforms
(``fastgraph.bridge.transforms``) call these when the arguments are Nodes.
"""
from __future__ import annotations

import numpy as np

from .. import ops as F
from .._core.tree import find_leaf, flatten, map_structure, split_aux
from .gradients import gradients
from .node import NODE_TYPES, as_node

__all__ = ["value_and_grad", "jacobian", "linearize", "JACOBIAN_MAX_OUTPUTS"]


def _is_node(v) -> bool:
    return type(v) in NODE_TYPES


def _differentiated_args(args, nums, graph):
    """The graph (the one of a Node argument, else ``graph``), the arguments with each
    differentiated array (every array of a list, tuple or dict argument) a new ``identity``
    Node, those Nodes, and the differentiated arguments as given (their structure, for the
    results)."""
    node = find_leaf(_is_node, args)
    graph = graph if node is None else node.graph
    args = list(args)
    xs: list = []  # the differentiated Nodes: each array of a list, tuple or dict argument

    def differentiable(a):
        if a is None:          # an empty leaf (JAX's None subtree): no gradient, None back
            return None
        if type(a) not in NODE_TYPES:
            a = as_node(np.asarray(a, dtype=np.float64) if np.asarray(a).dtype.kind not in "fc"
                        else np.asarray(a), graph)
        elif a.dtype.kind not in "fc":
            a = F.astype(a, np.float64)
        # a new node for this differentiation, so other uses of the same value (a closure over
        # the argument, an outer grad's variable, an equal constant) are not counted as paths
        a = F.identity(a)
        xs.append(a)
        return a

    templates = [args[i] for i in nums]
    for i in nums:
        args[i] = map_structure(differentiable, args[i])
    return graph, args, xs, templates


def _zero_gradient(x, graph):
    """The gradient of something that does not depend on ``x``: zeros shaped like it."""
    return F.broadcast_like(as_node(np.zeros((), x.dtype), graph), x)


def _per_argument(templates, grads, xs, graph, single):
    """One result per differentiated array (``None`` gradients as zeros), back in the
    arguments' structure."""
    gs = iter([_zero_gradient(x, graph) if g is None else g for x, g in zip(xs, grads)])
    gs = tuple(map_structure(lambda v: None if v is None else next(gs), t) for t in templates)
    return gs[0] if single else gs


def _output_node(o, graph, name, transform: str):
    """A leaf of the function's output as a Node of ``graph``: an array (a string, or no value,
    is a ``TypeError``) of a floating-point or complex dtype (integers carry no gradient)."""
    if o is None or isinstance(o, (list, tuple, dict, str)):
        raise TypeError(f"{transform} of {name!r}: the function must return arrays, got "
                        f"{type(o).__name__}")
    o = as_node(o, graph)
    if o.dtype.kind not in "fc":
        raise TypeError(f"{transform} of {name!r}: the output has dtype {o.dtype}; only "
                        f"floating-point outputs can be differentiated")
    return o


def value_and_grad(fun, args, kwargs, nums, single, has_aux, graph=None):
    """``value_and_grad`` on Node arguments, or inside an ``fg.function`` trace of ``graph``:
    symbolic gradients, as Nodes."""
    graph, args, xs, templates = _differentiated_args(args, nums, graph)
    out, aux = split_aux(fun(*args, **kwargs), has_aux)
    out = as_node(out, graph)
    if out.shape is not None and None not in out.shape and int(np.prod(out.shape)) != 1:
        raise TypeError(f"grad requires a scalar-output function; got an output of shape "
                        f"{out.shape}")
    result = _per_argument(templates, gradients(out, xs) if xs else [], xs, graph, single)
    return ((out, aux) if has_aux else out), result


#: a traced Jacobian holds one gradient per output element (the eager transform's rows, built
#: into the graph): past this many the graph would be huge, so it is refused
JACOBIAN_MAX_OUTPUTS = 4096


def jacobian(fun, args, kwargs, nums, single, graph=None):
    """``jacobian`` on Node arguments, or inside an ``fg.function`` trace of ``graph``: one
    symbolic gradient per output element, stacked -- what the eager transform computes row by
    row."""
    graph, args, xs, templates = _differentiated_args(args, nums, graph)
    out = fun(*args, **kwargs)
    name = getattr(fun, "__name__", fun)

    def jac(o):
        o = _output_node(o, graph, name, "jacobian")
        if o.shape is None or None in o.shape:
            raise TypeError(f"jacobian of {name!r} inside a graph needs an output of known "
                            f"shape, got {o.shape}")
        m = int(np.prod(o.shape))
        if m > JACOBIAN_MAX_OUTPUTS:
            raise ValueError(f"jacobian of {name!r} inside fg.function: an output of {m} "
                             f"elements would take {m} gradients in the graph (at most "
                             f"{JACOBIAN_MAX_OUTPUTS}); call the jacobian eagerly, or take "
                             f"vector-Jacobian products with fg.grad")
        flat = F.reshape(o, (-1,))
        rows: list[list] = [[] for _ in xs]
        for k in range(m):
            for r, x, g in zip(rows, xs, gradients(flat[k], xs)):
                r.append(_zero_gradient(x, graph) if g is None else g)
        jacs = [F.reshape(F.stack(r), tuple(o.shape) + tuple(x.shape)) if r else
                as_node(np.zeros(tuple(o.shape) + tuple(x.shape), x.dtype), graph)
                for r, x in zip(rows, xs)]
        return _per_argument(templates, jacs, xs, graph, single)

    return map_structure(jac, out)


class Linearized:
    """The symbolic counterpart of ``fastgraph.eager.transforms.Linearized``: ``out``, ``aux``
    and what ``push`` gives are Nodes."""

    nested = True

    def __init__(self, fun, outs, rebuild, aux, push_flat, watched):
        self.fun, self.outs, self.rebuild, self.aux = fun, outs, rebuild, aux
        self.out = rebuild(outs)
        self.push_flat, self.watched = push_flat, watched

    def push(self, tangents):
        return self.rebuild(self.push_flat(tangents))

    def export(self, v):
        return v


def linearize(fun, args, kwargs, nums, has_aux=False, graph=None, transform="jvp"):
    """``fun`` linearized on Node arguments, or inside an ``fg.function`` trace of ``graph``:
    the vector-Jacobian product's gradient nodes built with new ``identity`` nodes standing for
    the cotangents, and each ``push`` the gradient of those nodes with respect to the
    cotangents, seeded with the tangents (the eager transform's passes, as Nodes)."""
    graph, args, xs, templates = _differentiated_args(args, nums, graph)
    out, aux = split_aux(fun(*args, **kwargs), has_aux)
    name = getattr(fun, "__name__", fun)
    leaves: list = []
    rebuild = flatten(out, leaves)
    outs = [_output_node(o, graph, name, transform) for o in leaves]
    cotangents = [F.identity(_zero_gradient(o, graph)) for o in outs]
    vjps = gradients(outs, xs, grad_ys=cotangents) if outs and xs else [None] * len(xs)

    def push_flat(tangents):
        pairs = [(g, as_node(t, graph, g.dtype)) for g, t in zip(vjps, tangents)
                 if g is not None and t is not None]
        res = gradients([g for g, _ in pairs], cotangents, grad_ys=[t for _, t in pairs]) \
            if pairs and cotangents else [None] * len(cotangents)
        return [_zero_gradient(o, graph) if r is None else r for o, r in zip(outs, res)]

    return Linearized(fun, outs, rebuild, aux, push_flat, xs)
