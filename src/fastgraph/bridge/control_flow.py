"""Control flow: ``fg.scan``, ``fg.while_loop``, ``fg.fori_loop``, ``fg.cond``.

On graph values (a ``Session``'s nodes, an ``fg.function`` trace) each becomes one graph
operation whose functions are traced once into sub-graphs (see
:mod:`fastgraph.static.control_flow`), differentiable to any order.  On eager values (Tensors,
arrays, numbers) they are the plain Python loop or ``if``, which the tape records op by op.
"""
from __future__ import annotations

import numpy as np

from .. import ops as F
from .._core.dispatch import is_tensor
from .._core.tree import flatten, map_structure
from ..static import control_flow as cf
from ..static.graph import SubGraph, get_default_graph
from ..static.node import NODE_TYPES, as_node, capture

__all__ = ["scan", "while_loop", "fori_loop", "cond"]

_INTS = (int, np.integer)


def _is_node(v) -> bool:
    return type(v) in NODE_TYPES


def _holds_node(tree) -> bool:
    from .._core.tree import find_leaf
    return find_leaf(_is_node, tree) is not None


def _structure(tree):
    return map_structure(lambda v: None, tree)


def _home_graph(leaves):
    """The graph a control-flow node on ``leaves`` goes into: the innermost of their graphs
    (and of the default graph, while a control-flow function is traced there)."""
    graph = None
    for v in leaves:
        if _is_node(v) and (graph is None or (isinstance(v.graph, SubGraph)
                                              and v.graph.encloses(graph))):
            graph = v.graph
    default = get_default_graph()
    if graph is None or (isinstance(default, SubGraph) and default.encloses(graph)):
        graph = default
    return graph


def _in_graph(graph, v):
    if _is_node(v):
        return v if v.graph is graph else capture(graph, v)
    return as_node(v if isinstance(v, (bool, int, float)) else np.asarray(v), graph)


def _captured(sub):
    return [o for o, _ in sub.captures], [p for _, p in sub.captures]


def _spec(node, drop_leading=False):
    shape = node.shape
    if drop_leading and shape is not None:
        shape = shape[1:]
    return node.dtype, shape


def _weak_recast(what, nodes, traced_out, graph):
    """Python-number carries whose loop body returns another dtype (``0.0`` summing float32
    values): the carries cast to the body's dtype, for a second trace; None if none."""
    changed = False
    out = list(nodes)
    for i, (a, b) in enumerate(zip(nodes, traced_out)):
        if a.weak and b.dtype is not None and b.dtype != a.dtype:
            out[i] = as_node(np.asarray(a.value, b.dtype), graph)
            changed = True
    return out if changed else None


# ---- scan -------------------------------------------------------------------------------------
def scan(f, init, xs=None, length=None, reverse=False):
    """JAX's ``lax.scan``: ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``;
    returns ``(carry, ys)``, the final carry and the stacked ``y``s.  ``init``, ``xs`` and the
    results may be nested lists, tuples and dicts; ``xs=None`` with ``length`` scans that many
    times with ``x = None``; ``reverse=True`` runs from the last slice to the first (``ys``
    stay in the order of ``xs``).

    On graph values (``init`` or ``xs``, or what ``f`` reads) one ``scan`` node, ``f`` traced
    once and compiled to one sub-plan, differentiable to any order; on eager values a Python
    loop the tape records.

        >>> carry, ys = fg.scan(lambda c, x: (c + x, c * x), 0.0, np.arange(4.0))
        >>> float(carry), ys.tolist()
        (6.0, [0.0, 0.0, 2.0, 9.0])
    """
    return _scan(f, init, xs, length, reverse)


def _scan(f, init, xs, length, reverse, weak_xs=False):
    """:func:`scan`; ``weak_xs``: the slices of ``xs`` (integers) are Python numbers to ``f``
    (fori_loop's index, as JAX's is weakly typed)."""
    c_leaves: list = []
    rebuild_c = flatten(init, c_leaves)
    x_leaves: list = []
    rebuild_x = flatten(xs, x_leaves)
    n = _scan_length(x_leaves, length)
    if any(_is_node(v) for v in c_leaves + x_leaves):
        return _graph_scan(f, init, c_leaves, rebuild_c, xs, x_leaves, rebuild_x, length,
                           reverse, weak_xs)
    carry, ys = init, []
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        x = None if xs is None else rebuild_x([v[t] for v in x_leaves])
        carry, y = _pair(f(carry, x))
        if not ys and _holds_node((carry, y)):   # f reads graph values: a graph scan after all
            return _graph_scan(f, init, c_leaves, rebuild_c, xs, x_leaves, rebuild_x, length,
                               reverse, weak_xs)
        ys.append(y)
    if reverse:
        ys.reverse()
    if not ys:
        return init, _empty_ys(f, init, c_leaves, rebuild_c, xs, x_leaves, rebuild_x, length,
                               reverse, weak_xs)
    y_leaves: list = []
    rebuild_y = flatten(ys[0], y_leaves)
    cols = [[] for _ in y_leaves]
    for y in ys:
        leaves: list = []
        flatten(y, leaves)
        for col, v in zip(cols, leaves):
            col.append(v)
    return carry, rebuild_y([F.stack(col) for col in cols])


def _empty_ys(f, init, c_leaves, rebuild_c, xs, x_leaves, rebuild_x, length, reverse,
              weak_xs):
    """The ``ys`` of a scan of length 0 on eager values, as JAX gives them: empty arrays of the
    shapes and dtypes ``f`` would stack, found by tracing ``f`` into a throw-away graph (it
    does not run on values).  An ``f`` that reads eager Tensors cannot be traced: it runs once,
    without recording, on the initial carry and a zero slice."""
    from .._core.errors import MixedKindsError
    from ..eager.grad_mode import no_grad
    from ..static.graph import Graph

    def values(leaves):     # (only their shapes and dtypes matter here)
        return [v._ndarray if is_tensor(v) else v for v in leaves]

    try:
        with Graph().as_default():
            _, ys = _graph_scan(f, init, values(c_leaves), rebuild_c, xs, values(x_leaves),
                                rebuild_x, length, reverse, weak_xs)
    except MixedKindsError:
        x0 = None if xs is None else rebuild_x(
            [0 if weak_xs else np.zeros(np.shape(v)[1:], v.dtype) for v in values(x_leaves)])
        with no_grad():
            _, ys = _pair(f(init, x0))
        leaves: list = []
        rebuild = flatten(ys, leaves)
        return rebuild([np.empty((0,) + np.shape(v), np.asarray(v._ndarray if is_tensor(v) else v)
                                 .dtype) for v in leaves])
    leaves: list = []
    rebuild = flatten(ys, leaves)
    out = []
    for k, y in enumerate(leaves):
        if y.shape is None or None in y.shape:
            raise ValueError(f"scan: length 0 on eager values, and the shape of y output {k} "
                             f"({cf.fmt_shape(y.shape)}) is not known without running f: "
                             f"the empty ys need f's results to have shapes that do not "
                             f"depend on values")
        out.append(np.empty(tuple(y.shape), y.dtype))
    return rebuild(out)


def _scan_length(x_leaves, length):
    lengths = set()
    for v in x_leaves:
        shape = np.shape(v) if not _is_node(v) else v.shape
        if shape is not None and len(shape) == 0:
            raise ValueError("scan: every array in xs needs a leading axis to scan over; got "
                             "a scalar")
        if shape is not None and shape[0] is not None:
            lengths.add(int(shape[0]))
    if length is not None:
        if not isinstance(length, _INTS) or length < 0:
            raise TypeError(f"scan: length must be a non-negative int, got {length!r}")
        if lengths and lengths != {length}:
            raise ValueError(f"scan: length={length} but xs have leading axis "
                             f"{sorted(lengths)}")
        return int(length)
    if len(lengths) > 1:
        raise ValueError(f"scan: the arrays in xs differ in length: {sorted(lengths)}")
    if not x_leaves:
        raise ValueError("scan: with xs=None, give length (how many times to run f)")
    return lengths.pop() if lengths else None


def _pair(out):
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"scan: f must return a pair (carry, y), got "
                        f"{type(out).__name__}" + (f" of length {len(out)}"
                                                   if isinstance(out, tuple) else ""))
    return out


def _graph_scan(f, init, c_leaves, rebuild_c, xs, x_leaves, rebuild_x, length, reverse,
                weak_xs):
    graph = _home_graph(c_leaves + x_leaves)
    carry = [_in_graph(graph, v) for v in c_leaves]
    xnodes = [_in_graph(graph, v) for v in x_leaves]
    nc = len(carry)
    for _ in range(2):
        meta = {}

        def traced(phs):
            c = rebuild_c(phs[:nc])
            x = None if xs is None else rebuild_x(phs[nc:])
            new_c, y = _pair(f(c, x))
            if _structure(new_c) != _structure(init):
                raise TypeError(f"scan: f must return the carry in the structure it came in: "
                                f"{_structure(init)!r} came in, {_structure(new_c)!r} went out")
            lc: list = []
            flatten(new_c, lc)
            ly: list = []
            meta["rebuild_y"] = flatten(y, ly)
            return lc, ly

        specs = [_spec(c) for c in carry] + [_spec(x, True) + (weak_xs,) for x in xnodes]
        sub, phs, (lc, ly) = cf.trace(traced, specs, graph, "scan")
        outs = [cf.inner_node(sub, v, "scan: f") for v in lc + ly]
        recast = _weak_recast("scan", carry, outs[:nc], graph)
        if recast is None:
            break
        carry = recast
    consts, k_ph = _captured(sub)
    body = cf.Body(sub, phs + k_ph, outs, "scan/body")
    node = cf.make_scan(body, carry, xnodes, consts, reverse=reverse, length=length)
    return (rebuild_c([cf.output(node, i) for i in range(nc)]),
            meta["rebuild_y"]([cf.output(node, nc + k) for k in range(len(ly))]))


# ---- while_loop ---------------------------------------------------------------------------
def while_loop(cond_fun, body_fun, loop_vars, maximum_iterations=None):
    """TensorFlow 1's ``tf.while_loop``: while ``cond_fun(*loop_vars)``, ``loop_vars =
    body_fun(*loop_vars)``; returns the final ``loop_vars`` in their structure (a list or tuple
    of values, each possibly nested).  At most ``maximum_iterations`` iterations run when given:
    a Python int, a 0-d integer array or Tensor, or a graph value (a 0-d integer node, read
    when the loop runs, as TensorFlow 1 takes a tensor).

    On graph values one ``while_loop`` node, differentiable (reverse mode, to any order): the
    loop saves what each iteration's backward needs and its gradient is a reverse scan over
    that; the trip count may depend on the data.  On eager values a Python ``while``.

        >>> i, x = fg.while_loop(lambda i, x: x < 100.0, lambda i, x: (i + 1, x * 2.0),
        ...                      (0, 3.0))
        >>> i, x
        (6, 192.0)
    """
    if not isinstance(loop_vars, (list, tuple)):
        raise TypeError(f"while_loop: loop_vars must be a list or tuple, got "
                        f"{type(loop_vars).__name__}")
    maximum_iterations = _iteration_limit(maximum_iterations)
    leaves: list = []
    rebuild = flatten(list(loop_vars), leaves)

    def as_vars(out):
        if len(loop_vars) == 1 and not (isinstance(out, (list, tuple)) and len(out) == 1):
            out = [out]
        if not isinstance(out, (list, tuple)) or len(out) != len(loop_vars):
            raise TypeError(f"while_loop: body must return {len(loop_vars)} loop variable(s), "
                            f"got {_describe(out)}")
        return list(out)

    if not any(_is_node(v) for v in leaves + [maximum_iterations]):
        vs, i = list(loop_vars), 0
        while maximum_iterations is None or i < maximum_iterations:
            go = cond_fun(*vs)
            if _is_node(go):        # cond_fun reads graph values: a graph loop after all
                break
            if not bool(go):
                return type(loop_vars)(vs) if type(loop_vars) in (list, tuple) else vs
            new = as_vars(body_fun(*vs))
            if _holds_node(new):
                break
            vs = new
            i += 1
        else:
            return type(loop_vars)(vs) if type(loop_vars) in (list, tuple) else vs
        if i:
            raise TypeError("while_loop: the loop's values became graph values after "
                            f"{i} iteration(s) of Python; give graph loop variables")
    graph = _home_graph(leaves + [maximum_iterations])
    init = [_in_graph(graph, v) for v in leaves]
    if _is_node(maximum_iterations) and maximum_iterations.graph is not graph:
        maximum_iterations = capture(graph, maximum_iterations)
    for _ in range(2):
        def traced(phs):
            vs = rebuild(phs)
            pred = cond_fun(*vs)
            out = as_vars(body_fun(*vs))
            if _structure(out) != _structure(list(loop_vars)):
                raise TypeError(f"while_loop: body must return the loop variables in their "
                                f"structure: {_structure(list(loop_vars))!r} came in, "
                                f"{_structure(out)!r} went out")
            lo: list = []
            flatten(out, lo)
            return pred, lo

        sub, phs, (pred, lo) = cf.trace(traced, [_spec(v) for v in init], graph, "while")
        pred = _predicate(cf.inner_node(sub, pred, "while_loop: cond"), "while_loop: cond")
        outs = [cf.inner_node(sub, v, "while_loop: body") for v in lo]
        recast = _weak_recast("while_loop", init, outs, graph)
        if recast is None:
            break
        init = recast
    it = cf.placeholder_in(sub, np.int64, (), "while/iteration")
    consts, k_ph = _captured(sub)
    test = cf.Body(sub, phs + k_ph, [pred], "while/cond")
    body = cf.Body(sub, phs + [it] + k_ph, outs, "while/body")
    node = cf.make_while(test, body, init, consts, maximum_iterations)
    out = rebuild([cf.output(node, i) for i in range(len(init))])
    return type(loop_vars)(out) if type(loop_vars) in (list, tuple) else out


def _iteration_limit(limit):
    """``maximum_iterations`` as a Python int, a graph node (a 0-d integer, checked when the
    loop runs) or None.  A 0-d integer array or eager Tensor counts as its value, as TensorFlow
    1 takes a tensor there."""
    if limit is None or _is_node(limit):
        if limit is not None and (limit.dtype.kind not in "iu" or (
                limit.shape is not None and len(limit.shape) != 0)):
            raise TypeError(f"while_loop: maximum_iterations must be a 0-d integer, got a node "
                            f"of {cf.describe(limit)}")
        return limit
    value = limit._ndarray if is_tensor(limit) else limit
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, _INTS + (np.ndarray,)):
        raise TypeError(f"while_loop: maximum_iterations must be a non-negative int (or a 0-d "
                        f"integer array, Tensor or graph node), got {limit!r}")
    value = np.asarray(value)
    if value.ndim != 0 or value.dtype.kind not in "iu" or value < 0:
        raise TypeError(f"while_loop: maximum_iterations must be a non-negative int (or a 0-d "
                        f"integer array, Tensor or graph node), got shape {value.shape} dtype "
                        f"{value.dtype} value {value.tolist()!r}")
    return int(value)


def _describe(v) -> str:
    if isinstance(v, (list, tuple)):
        return f"a {type(v).__name__} of {len(v)}"
    return type(v).__name__


def _predicate(p, what):
    """A graph predicate as a boolean scalar: booleans and integers (nonzero: true); a float
    or a non-scalar is refused."""
    if p.shape is not None and len(p.shape) != 0:
        raise ValueError(f"{what}: the predicate must be a scalar, got shape {tuple(p.shape)}")
    if p.dtype.kind == "b":
        return p
    if p.dtype.kind in "iu":
        return F.not_equal(p, 0)
    raise TypeError(f"{what}: the predicate must be a boolean (or integer) scalar, got dtype "
                    f"{p.dtype}; compare it (x > 0) to make a boolean")


# ---- fori_loop ----------------------------------------------------------------------------
def fori_loop(lower, upper, body_fun, init_val):
    """JAX's ``lax.fori_loop``: ``val = body_fun(i, val)`` for ``i`` in ``range(lower,
    upper)``; returns the final ``val``.  With Python int bounds on graph values it is a
    ``scan`` (so reverse-mode gradients work); with graph bounds a ``while_loop``.

        >>> fg.fori_loop(0, 5, lambda i, v: v + i, 0)
        10
    """
    leaves: list = []
    flatten(init_val, leaves)
    static_bounds = isinstance(lower, _INTS) and isinstance(upper, _INTS)
    if static_bounds and not any(_is_node(v) for v in leaves):
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(i, val)
        return val
    if static_bounds:
        carry, _ = _scan(lambda c, i: (body_fun(i, c), None), init_val,
                         np.arange(lower, max(lower, upper), dtype=np.int64), None, False,
                         weak_xs=True)
        return carry
    _, val = while_loop(lambda i, v: i < upper, lambda i, v: (i + 1, body_fun(i, v)),
                        (lower, init_val))
    return val


# ---- cond -------------------------------------------------------------------------------------
def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)`` (TensorFlow 1's
    ``tf.cond(pred, true_fn, false_fn)`` with closures, JAX's ``lax.cond`` with operands).

    On a graph predicate one ``cond`` node: both functions are traced, only the branch taken
    runs; their results must agree in structure, dtype and shape.  Differentiable to any order
    in the operands and the values the branches capture.  On an eager predicate a Python
    ``if``.

        >>> fg.cond(True, lambda x: x + 1.0, lambda x: x - 1.0, 2.0)
        3.0
    """
    if not _is_node(pred):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)
    leaves: list = []
    rebuild = flatten(list(operands), leaves)
    graph = _home_graph([pred] + leaves)
    pred = _predicate(_in_graph(graph, pred), "cond")
    args = [_in_graph(graph, v) for v in leaves]
    traced = []
    for fn, which in ((true_fun, "true_fun"), (false_fun, "false_fun")):
        meta = {}

        def call(phs, fn=fn):
            out = fn(*rebuild(phs))
            lo: list = []
            meta["rebuild"] = flatten(out, lo)
            meta["structure"] = _structure(out)
            return lo

        sub, phs, lo = cf.trace(call, [_spec(a) for a in args], graph, f"cond/{which}")
        outs = [cf.inner_node(sub, v, f"cond: {which}") for v in lo]
        traced.append((which, sub, phs, outs, meta))
    _check_branches(traced)
    consts: list = []
    for _, sub, _, _, _ in traced:
        for o, _ in sub.captures:
            if all(o is not c for c in consts):
                consts.append(o)
    bodies = []
    for which, sub, phs, outs, _ in traced:
        k_ph = [sub.captured[id(c)] if id(c) in sub.captured
                else cf.placeholder_in(sub, c.dtype, c.shape, "unused") for c in consts]
        bodies.append(cf.Body(sub, phs + k_ph, outs, f"cond/{which}"))
    node = cf.make_cond(pred, args + consts, bodies)
    return traced[0][4]["rebuild"]([cf.output(node, m) for m in range(len(traced[0][3]))])


def _check_branches(traced):
    (_, _, _, outs_t, meta_t), (_, _, _, outs_f, meta_f) = traced
    if meta_t["structure"] != meta_f["structure"]:
        raise TypeError(f"cond: true_fun and false_fun must return the same structure: "
                        f"true_fun returns {meta_t['structure']!r}, false_fun "
                        f"{meta_f['structure']!r}")
    bad = cf.mismatch(outs_t, outs_f, exact=True)
    if bad is not None:
        m, a, b = bad
        raise TypeError(f"cond: output {m} differs between the branches: true_fun returns "
                        f"{cf.describe(a)}, false_fun returns {cf.describe(b)}")
