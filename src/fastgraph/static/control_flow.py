"""Control flow as graph operations: ``scan``, ``while_loop`` and ``cond`` nodes.

A control-flow node holds *bodies* (:class:`Body`): functions traced once into a
:class:`~fastgraph.static.graph.SubGraph` whose placeholders stand for the loop's carry, the
current slice of the scanned arrays and the captured outer nodes.  A body is compiled once per
input signature into a :class:`~fastgraph.static.executor.Plan` (every pass runs inside it) and
the node's forward runs that plan once per iteration, or once for the branch taken.

The node's value is a tuple; projection nodes (``loop_output``) read its entries.  Its gradient
(:data:`~fastgraph.static.gradients.TUPLE_VJPS`) is another control-flow node built from the
body's symbolic gradient: for ``scan`` and ``while_loop`` a scan in the other direction over the
values each iteration's backward needs, which the forward loop is made to save (the residuals
are appended to the forward body's outputs, as TensorFlow 1 adds accumulators to a loop it
differentiates); for ``cond`` a cond of the branches' gradients.  Those are control-flow nodes
again, so gradients of gradients work the same way.
"""
from __future__ import annotations

import weakref

import numpy as np

from .. import ops as F
from .._core import OpDef
from .._core.random_state import Store
from .errors import InvalidArgumentError
from .executor import Plan
from .gradients import TUPLE_VJPS, OutputCotangent, gradients
from .graph import SubGraph
from .node import NODE_TYPES, PLACEHOLDER, TRACING_SUBGRAPHS, Node, as_node
from .plan import Context, compile_ir, lower

__all__ = ["Body", "SubGraph", "trace", "output", "make_scan", "make_while", "make_cond",
           "mismatch", "describe", "fmt_shape", "SCAN", "WHILE", "COND", "OUTPUT"]


# ---- bodies -----------------------------------------------------------------------------------
class Body:
    """A sub-plan: ``outputs`` of sub-graph ``graph`` computed from values fed to ``inputs``
    (placeholders, or any nodes: a fed node's own inputs are not computed).  ``outputs`` may
    grow (a gradient appends what its backward needs); the plan is compiled once per (outputs,
    input shapes)."""

    def __init__(self, graph, inputs, outputs, name: str):
        self.graph = graph
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.name = name
        self.store = Store()        # (a body has no variables; random draws keep theirs here)
        # inputs standing for Python numbers (fori_loop's index): fed as Python numbers
        self.weak = [n.weak for n in self.inputs]
        self._plans: dict = {}

    def plan(self, shapes: tuple, raw: bool = False) -> Plan:
        """The plan for inputs of ``shapes``; ``raw``: its outputs uncopied (see
        :class:`~fastgraph.static.executor.Plan`)."""
        key = (len(self.outputs), shapes, raw)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._compile(shapes, raw)
        return plan

    def _compile(self, shapes, raw=False) -> Plan:
        ctx = Context()
        ir = compile_ir(lower(list(self.outputs), list(self.inputs), list(shapes)), ctx)
        for p in ir.order:
            if p.kind in ("var", "assign"):
                raise ValueError(f"{self.name}: a control-flow body cannot create or assign "
                                 f"variables ({p.name!r}); read variables made outside it")
        return Plan(ir, ctx, self.graph, native_scalars=False, raw_outputs=raw)

    def static_shapes(self) -> tuple:
        return tuple(None if n.shape is None else tuple(n.shape) for n in self.inputs)

    def explain_lines(self) -> list:
        """The body's plan for its inputs' static shapes, for the enclosing plan's explain()."""
        shapes = self.static_shapes()
        if any(s is None or None in s for s in shapes):
            return [f"[sub-plan {self.name}] (compiled when the shapes are known)"]
        lines = self.plan(shapes).explain().splitlines()
        return [f"[sub-plan {self.name}]"] + ["  " + line for line in lines]

    def __repr__(self) -> str:
        return f"<Body {self.name}: {len(self.inputs)} input(s), {len(self.outputs)} output(s)>"


def trace(fn, args, outer, what: str):
    """Trace ``fn(*args)`` into a new sub-graph of ``outer``; ``args`` are ``(dtype, shape)``
    pairs (placeholders stand for them).  Returns ``(sub-graph, placeholders, result)``: the
    result as ``fn`` returned it, its leaves still whatever ``fn`` made.  A third entry
    ``True`` makes a weak placeholder (a Python number)."""
    sub = SubGraph(outer)
    with sub.as_default():
        phs = [placeholder_in(sub, *spec[:2], f"{what}/input", *spec[2:]) for spec in args]
        TRACING_SUBGRAPHS[0] += 1
        try:
            out = fn(phs)
        finally:
            TRACING_SUBGRAPHS[0] -= 1
    return sub, phs, out


def placeholder_in(graph, dtype, shape, name: str, weak: bool = False) -> Node:
    """A placeholder of ``graph``; ``weak``: it stands for a Python number (an int), as
    fg.function's weak arguments do (NumPy 2 lets the other operand's dtype win)."""
    return Node(graph, PLACEHOLDER, (), None, None if shape is None else tuple(shape),
                np.dtype(dtype), graph.unique_name(name), kind="placeholder", weak=weak,
                value=1 if weak else None)


def inner_node(graph, value, what: str) -> Node:
    """A result of a traced function as a node of its sub-graph (outer nodes captured, data a
    constant)."""
    from .node import capture
    if type(value) in NODE_TYPES:
        return value if value.graph is graph else capture(graph, value)
    try:
        return as_node(np.asarray(value), graph)
    except TypeError as e:
        raise TypeError(f"{what}: returned {type(value).__name__}, which is no array: {e}") \
            from None


# ---- the ops ------------------------------------------------------------------------------
def _pick(value, index):
    return value[index]


OUTPUT = OpDef("loop_output", _pick, (lambda g, ans, t, index: OutputCotangent(index, g),))


def _run_scan(*args, body, n_carry, n_xs, reverse, length, contiguous=()):
    nc, nx = n_carry, n_xs
    feeds = list(args)
    for k in contiguous:
        feeds[k] = np.ascontiguousarray(feeds[k])
    xs = args[nc:nc + nx]
    n = length if length is not None else len(xs[0])
    for j, x in enumerate(xs):
        if len(x) != n:
            raise InvalidArgumentError(f"scan: the scanned arrays differ in length: {n} and "
                                       f"{len(x)} (input {j})", None)
    shapes = tuple([np.shape(v) for v in args[:nc]] + [np.shape(x)[1:] for x in xs]
                   + [np.shape(v) for v in args[nc + nx:]])
    plan = body.plan(shapes, raw=True)
    run, store, weak = plan.run, body.store, body.weak
    # (each y is copied into its stack; a carry that may live in the plan's buffers is copied
    # before the next iteration overwrites them)
    copied = [k for k in range(nc) if plan.output_may_alias[k]]
    ys = [np.empty((n,) + _static(o.shape), o.dtype) for o in body.outputs[nc:]] if n == 0 \
        else None
    for step in range(n):
        t = n - 1 - step if reverse else step
        for j in range(nx):
            feeds[nc + j] = xs[j][t].item() if weak[nc + j] else xs[j][t]
        out = run(feeds, store)
        if ys is None:
            ys = [np.empty((n,) + np.shape(v), o.dtype)
                  for v, o in zip(out[nc:], body.outputs[nc:])]
        for k in range(len(ys)):
            ys[k][t] = out[nc + k]
        feeds[:nc] = out[:nc]
        for k in copied:
            feeds[k] = np.array(feeds[k])
    carry = feeds[:nc] if n else [np.array(v) for v in feeds[:nc]]
    return tuple(carry) + tuple(ys)


def _run_while(*args, cond, body, n_vars, maximum_iterations, limit_input=False):
    nv = n_vars
    if limit_input:     # the limit is a graph value: the node's last input
        args, maximum_iterations = args[:-1], _limit_value(args[-1])
    feeds = list(args[:nv]) + [np.int64(0)] + list(args[nv:])
    cond_feeds = list(args)
    shapes = tuple([np.shape(v) for v in args[:nv]] + [()] + [np.shape(v) for v in args[nv:]])
    run = body.plan(shapes).run
    test = cond.plan(shapes[:nv] + shapes[nv + 1:]).run
    store = body.store
    saved = [[] for _ in body.outputs[nv:]]
    i = 0
    while (maximum_iterations is None or i < maximum_iterations) and \
            test(cond_feeds, store)[0]:
        feeds[nv] = np.int64(i)
        out = run(feeds, store)
        for k, s in enumerate(saved):
            s.append(out[nv + k])
        feeds[:nv] = cond_feeds[:nv] = out[:nv]
        i += 1
    stacks = [np.stack(s) if s else np.empty((0,) + _static(o.shape), o.dtype)
              for s, o in zip(saved, body.outputs[nv:])]
    carry = feeds[:nv] if i else [np.array(v) for v in feeds[:nv]]
    return tuple(carry) + (np.arange(i, dtype=np.int64),) + tuple(stacks)


def _limit_value(limit) -> int:
    a = np.asarray(limit)
    if a.ndim != 0 or a.dtype.kind not in "iu":
        raise InvalidArgumentError(f"while_loop: maximum_iterations must be a 0-d integer, got "
                                   f"shape {a.shape} dtype {a.dtype}", None)
    if a < 0:
        raise InvalidArgumentError(f"while_loop: maximum_iterations must be non-negative, got "
                                   f"{int(a)}", None)
    return int(a)


def _run_cond(pred, *args, branches):
    body = branches[0] if pred else branches[1]
    return tuple(body.plan(tuple([np.shape(v) for v in args])).run(list(args), body.store))


# (stateful: never folded at compile time, each run runs the loop anew)
SCAN = OpDef("scan", _run_scan, stateful=True)
WHILE = OpDef("while_loop", _run_while, stateful=True)
COND = OpDef("cond", _run_cond, stateful=True)


def _static(shape) -> tuple:
    return tuple(0 if d is None else d for d in (shape or ()))


# ---- nodes --------------------------------------------------------------------------------
#: id(control-flow node) -> (a weak reference to it, {output index: projection node})
_OUTPUTS: dict = {}


def _core_node(graph, op, inputs, attrs, name):
    node = Node(graph, op, tuple(inputs), attrs, None, None, graph.unique_name(name))
    key = id(node)
    _OUTPUTS[key] = (weakref.ref(node, lambda _, key=key: _OUTPUTS.pop(key, None)), {})
    return node


def output(node, m: int) -> Node:
    """Output ``m`` of control-flow node ``node`` (one projection node per output)."""
    cache = _OUTPUTS[id(node)][1]
    out = cache.get(m)
    if out is None:
        shape, dtype = _SPECS[node.op](node, m)
        out = Node(node.graph, OUTPUT, (node,), {"index": m}, shape, dtype,
                   node.graph.unique_name(f"{node.name}/output{m}"))
        cache[m] = out
    return out


def _scan_spec(node, m):
    a = node.attrs
    o = a["body"].outputs[m]
    if m < a["n_carry"]:
        return o.shape, o.dtype
    n = a["length"]
    if n is None:
        x = node.inputs[a["n_carry"]]
        n = None if x.shape is None else x.shape[0]
    return (None if o.shape is None else (n,) + tuple(o.shape)), o.dtype


def _while_spec(node, m):
    a = node.attrs
    nv = a["n_vars"]
    if m == nv:
        return (None,), np.dtype(np.int64)
    o = a["body"].outputs[m if m < nv else m - 1]
    if m < nv:
        return o.shape, o.dtype
    return (None if o.shape is None else (None,) + tuple(o.shape)), o.dtype


def _cond_spec(node, m):
    o = node.attrs["branches"][0].outputs[m]
    return o.shape, o.dtype


_SPECS = {SCAN: _scan_spec, WHILE: _while_spec, COND: _cond_spec}


def _outer_graph(nodes):
    from .graph import get_default_graph
    for n in nodes:
        if type(n) in NODE_TYPES:
            return n.graph
    return get_default_graph()


def mismatch(nodes_a, nodes_b, exact: bool = False):
    """The first ``(index, a, b)`` where two lists of nodes differ in dtype or shape, or None.
    ``exact``: the shapes must be equal as known (an unknown one matches only an unknown one);
    otherwise an unknown shape or dimension matches anything."""
    same = _same_shape_exact if exact else _same_shape
    for i, (a, b) in enumerate(zip(nodes_a, nodes_b)):
        if a.dtype != b.dtype or not same(a.shape, b.shape):
            return i, a, b
    return None


def describe(node) -> str:
    """``shape (3,) dtype float64``, for the errors."""
    return f"shape {fmt_shape(node.shape)} dtype {node.dtype}"


def _check_carry(what, inits, outs):
    bad = mismatch(inits, outs)
    if bad is not None:
        i, a, b = bad
        raise TypeError(f"{what}: the body must return the carry as it came in: element "
                        f"{i} comes in with {describe(a)} and goes out with {describe(b)}")


def _same_shape(a, b) -> bool:
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _same_shape_exact(a, b) -> bool:
    return (a is None) == (b is None) and (a is None or tuple(a) == tuple(b))


def fmt_shape(shape) -> str:
    return "<unknown>" if shape is None else str(tuple(shape))


def make_scan(body, carry, xs, consts, reverse=False, length=None, name="scan",
              contiguous=()):
    """The scan node of ``body`` (inputs: carry, slices of xs, consts; outputs: carry, ys).
    ``contiguous``: the positions in ``consts`` made C-contiguous once before the loop."""
    nc, nx = len(carry), len(xs)
    if len(body.inputs) != nc + nx + len(consts):
        raise AssertionError("scan: the body's inputs do not match the node's")
    graph = _outer_graph(list(carry) + list(xs) + list(consts))
    _check_carry(name, body.inputs[:nc], body.outputs[:nc])
    node = _core_node(graph, SCAN, list(carry) + list(xs) + list(consts),
                      {"body": body, "n_carry": nc, "n_xs": nx, "reverse": bool(reverse),
                       "length": length,
                       "contiguous": tuple(nc + nx + k for k in contiguous)}, name)
    return node


def make_while(cond, body, init, consts, maximum_iterations=None, name="while"):
    """The while node: ``cond`` (inputs: vars, consts) and ``body`` (inputs: vars, iteration,
    consts; outputs: vars, then what gradients save).  ``maximum_iterations``: None, an int, or
    a node of the outer graph (then the node's last input)."""
    nv = len(init)
    graph = _outer_graph(list(init) + list(consts))
    _check_carry("while_loop", body.inputs[:nv], body.outputs[:nv])
    limit_input = type(maximum_iterations) in NODE_TYPES
    limit = [maximum_iterations] if limit_input else []
    return _core_node(graph, WHILE, list(init) + list(consts) + limit,
                      {"cond": cond, "body": body, "n_vars": nv, "limit_input": limit_input,
                       "maximum_iterations": None if limit_input else maximum_iterations},
                      name)


def make_cond(pred, args, branches, name="cond"):
    graph = _outer_graph([pred] + list(args))
    return _core_node(graph, COND, [pred] + list(args), {"branches": tuple(branches)}, name)


# ---- gradients ----------------------------------------------------------------------------
def _is_float(node) -> bool:
    return node.dtype is not None and node.dtype.kind in "fc"


def _zeros_like(node, graph):
    """Zeros of ``node``'s shape and dtype, a constant when the shape is known."""
    if node.shape is not None and None not in node.shape:
        return as_node(np.zeros(node.shape, node.dtype), graph)
    return F.broadcast_like(np.zeros((), node.dtype), node)


def _loop_grads(body, nc, nx, args, gcarry, gys, reverse, length, stacked, needed):
    """Gradients of a loop's inputs ``args`` (carry, xs, consts) from the cotangents of its
    final carry (``gcarry``) and of its stacked per-iteration outputs (``gys``, one per body
    output after the carry): a scan in the other direction whose body is ``body``'s symbolic
    gradient.  ``stacked(m)`` is the outer node stacking body output ``nc + m``; ``needed``
    says which of ``args`` need a gradient (the carry's is computed anyway: the backward loop
    carries it)."""
    B = body.graph
    ins = body.inputs
    c_in, x_in, k_in = ins[:nc], ins[nc:nc + nx], ins[nc + nx:]
    fc = [i for i in range(nc) if _is_float(c_in[i])]
    fx = [j for j in range(nx) if _is_float(x_in[j]) and needed[nc + j]]
    fk = [j for j in range(len(k_in)) if _is_float(k_in[j]) and needed[nc + nx + j]]
    ysel = [m for m, g in enumerate(gys) if g is not None and _is_float(body.outputs[nc + m])]
    outer = args[0].graph if args else _outer_graph(list(gcarry) + list(gys))
    with B.as_default():
        gc_ph = [placeholder_in(B, c_in[i].dtype, c_in[i].shape, "grad/carry") for i in fc]
        gy_ph = [placeholder_in(B, body.outputs[nc + m].dtype, body.outputs[nc + m].shape,
                                "grad/y") for m in ysel]
        acc_ph = [placeholder_in(B, k_in[j].dtype, k_in[j].shape, "grad/acc") for j in fk]
        # (before the gradient's nodes, which may come to read them: ids stay topological)
        kt_ph = {j: placeholder_in(B, k.dtype, tuple(k.shape)[::-1], "grad/transposed")
                 for j, k in enumerate(k_in) if _is_float(k) and k.shape is not None
                 and len(k.shape) == 2}
        mark = len(B.nodes)
        targets = [c_in[i] for i in fc] + [x_in[j] for j in fx] + [k_in[j] for j in fk]
        ys = [body.outputs[i] for i in fc] + [body.outputs[nc + m] for m in ysel]
        grads = gradients(ys, targets, grad_ys=gc_ph + gy_ph, stop_gradients=list(ins)) \
            if ys and targets else [None] * len(targets)
        grads = [_zeros_like(t, B) if g is None else g for g, t in zip(grads, targets)]
        g_c, g_x, g_k = grads[:len(fc)], grads[len(fc):len(fc) + len(fx)], grads[len(fc) + len(fx):]
        new_acc = [a + g for a, g in zip(acc_ph, g_k)]
    b_out = g_c + new_acc + g_x
    kt_ph, kt_of = _hoist_transposes(B, mark, k_in, kt_ph, b_out)
    fed = set(map(id, gc_ph + gy_ph + acc_ph + x_in + k_in + kt_ph))
    res = _residuals(b_out, mark, fed, set(map(id, c_in)), set(map(id, c_in + x_in)),
                     set(map(id, ins)))
    idx = []
    for r in res:
        m = next((m for m in range(nc, len(body.outputs)) if body.outputs[m] is r), None)
        if m is None:
            body.outputs.append(r)
            m = len(body.outputs) - 1
        idx.append(m - nc)
    res_ph = [body.outputs[nc + m] for m in idx]
    back = Body(B, gc_ph + acc_ph + x_in + res_ph + gy_ph + k_in + kt_ph, b_out,
                body.name + "/grad")
    carry_b = [gcarry[i] if gcarry[i] is not None else _zeros_like(args[i], outer) for i in fc] \
        + [_zeros_like(args[nc + nx + j], outer) for j in fk]
    xs_b = list(args[nc:nc + nx]) + [stacked(m) for m in idx] + [gys[m] for m in ysel]
    with outer.as_default():
        kt = [F.swapaxes(args[nc + nx + j], 0, 1) for j in kt_of]
    consts_b = list(args[nc + nx:]) + kt
    bnode = make_scan(back, carry_b, xs_b, consts_b, reverse=not reverse, length=length,
                      name="scan_grad",
                      contiguous=range(len(consts_b) - len(kt), len(consts_b)))
    out = [None] * len(args)
    for q, i in enumerate(fc):
        out[i] = output(bnode, q)
    for q, j in enumerate(fk):
        out[nc + nx + j] = output(bnode, len(fc) + q)
    for q, j in enumerate(fx):
        out[nc + j] = output(bnode, len(fc) + len(fk) + q)
    return out


def _is_matrix_transpose(n) -> bool:
    if n.op.name == "swapaxes":
        return n.attrs["axis1"] != n.attrs["axis2"]
    return n.op.name == "transpose" and (n.attrs or {}).get("axes") in (None, (1, 0), [1, 0])


def _hoist_transposes(B, mark, k_in, placeholders, outs):
    """The transposes of 2-D loop constants among the gradient body's nodes (from ``mark``:
    the matmul VJP's ``g @ W.T``), each replaced by a placeholder (of ``placeholders``, by the
    constant's index in ``k_in``) that the backward loop feeds with the transpose made once,
    C-contiguous, before its first iteration.  BLAS reads a transposed operand far slower than
    a contiguous one in small products (an RNN's ``dz @ Wh.T``, 32 x 128 by 128 x 128: ~3x
    here); the copy costs one such product per run.  Returns the placeholders used and, for
    each, the index in ``k_in`` of the constant it transposes.  ``outs`` (the body's outputs)
    are updated in place."""
    consts = {id(k_in[j]): j for j in placeholders}
    used: list = []

    def hoisted(q):     # (a transpose built earlier, and reused, counts too)
        if q.kind == "op" and len(q.inputs) == 1 and id(q.inputs[0]) in consts \
                and _is_matrix_transpose(q):
            j = consts[id(q.inputs[0])]
            if j not in used:
                used.append(j)
            return placeholders[j]
        return q

    for n in B.nodes[mark:]:
        if n.kind == "op":
            ins = tuple(hoisted(q) for q in n.inputs)
            if any(a is not b for a, b in zip(ins, n.inputs)):
                n.inputs = ins
    outs[:] = [hoisted(o) for o in outs]
    return [placeholders[j] for j in used], used


def _residuals(outs, mark, fed, carries, varying, inputs) -> list:
    """The nodes built before ``mark`` (the forward body) that the new gradient nodes ``outs``
    read and that change from one iteration to the next: they are saved per iteration.  Fed
    nodes and constants are not; a node computed from the loop's constants alone is computed
    again by the backward body."""
    varies: dict = {}

    def depends(n) -> bool:     # on the carry or the scanned slice (iteratively)
        stack = [n]
        while stack:
            q = stack[-1]
            if id(q) in varies:
                stack.pop()
                continue
            if id(q) in varying:
                varies[id(q)] = True
                stack.pop()
                continue
            if id(q) in inputs or q.kind != "op":
                varies[id(q)] = False
                stack.pop()
                continue
            todo = [p for p in q.inputs if id(p) not in varies]
            if todo:
                stack.extend(todo)
                continue
            varies[id(q)] = any(varies[id(p)] for p in q.inputs)
            stack.pop()
        return varies[id(n)]

    found, seen, stack = [], set(), list(outs)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.id >= mark and id(n) not in fed and not (n.op is OUTPUT
                                                       and n.inputs[0].id < mark):
            stack.extend(n.inputs)      # (an output of a forward loop is a forward value)
        elif id(n) not in fed and n.kind != "const" and (id(n) in carries or depends(n)):
            found.append(n)
    found.sort(key=lambda n: n.id)
    return found


def _scan_vjp(node, gouts, needed):
    a = node.attrs
    body, nc, nx = a["body"], a["n_carry"], a["n_xs"]
    ny = len(body.outputs) - nc
    return _loop_grads(body, nc, nx, list(node.inputs), [gouts.get(i) for i in range(nc)],
                       [gouts.get(nc + m) for m in range(ny)], a["reverse"], a["length"],
                       lambda m: output(node, nc + m), needed)


def _while_vjp(node, gouts, needed):
    a = node.attrs
    body, nv = a["body"], a["n_vars"]
    ny = len(body.outputs) - nv
    end = len(node.inputs) - (1 if a.get("limit_input") else 0)   # (the limit has none)
    args = list(node.inputs[:nv]) + [output(node, nv)] + list(node.inputs[nv:end])
    grads = _loop_grads(body, nv, 1, args, [gouts.get(i) for i in range(nv)],
                        [gouts.get(nv + 1 + m) for m in range(ny)], False, None,
                        lambda m: output(node, nv + 1 + m),
                        list(needed[:nv]) + [False] + list(needed[nv:end]))
    return grads[:nv] + grads[nv + 1:] + [None] * (len(node.inputs) - end)


def _cond_vjp(node, gouts, needed):
    branches = node.attrs["branches"]
    outs0 = branches[0].outputs
    fo = [m for m in range(len(outs0)) if _is_float(outs0[m])]
    args = node.inputs[1:]
    fa = [j for j in range(len(args)) if _is_float(args[j]) and needed[1 + j]]
    if not fo or not fa:
        return [None] * len(node.inputs)
    g_full = [gouts[m] if gouts.get(m) is not None else _zeros_like(output(node, m), node.graph)
              for m in fo]
    back = []
    for k, b in enumerate(branches):
        B = b.graph
        with B.as_default():
            gp = [placeholder_in(B, b.outputs[m].dtype, b.outputs[m].shape, "grad/output")
                  for m in fo]
            targets = [b.inputs[j] for j in fa]
            grads = gradients([b.outputs[m] for m in fo], targets, grad_ys=gp,
                              stop_gradients=list(b.inputs))
            grads = [_zeros_like(t, B) if g is None else g for g, t in zip(grads, targets)]
        back.append(Body(B, gp + b.inputs, grads, b.name + "/grad"))
    bnode = make_cond(node.inputs[0], g_full + list(args), back, name="cond_grad")
    out = [None] * len(node.inputs)
    for q, j in enumerate(fa):
        out[1 + j] = output(bnode, q)
    return out


TUPLE_VJPS.update({SCAN: _scan_vjp, WHILE: _while_vjp, COND: _cond_vjp})
