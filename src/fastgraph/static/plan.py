"""Compilation of fetches to a plan: lowering to an IR, the pass pipeline, explain().

The IR is a topologically ordered list of :class:`PNode` (one per kept graph node, plus whatever
passes add).  A ``PNode`` is a *step*: ``kind`` says how the executor runs it:

* ``feed`` / ``placeholder`` (unfed) / ``var`` / ``const``: sources;
* ``op``: ``op.forward(*inputs, **attrs)`` (a ufunc may write into a planned buffer);
* ``call``: ``fn(*inputs)`` with ``n_outputs`` results -- the hook for fused kernels: a ``fuse``
  pass replaces a group of elementwise ``op`` steps by one ``call`` step whose outputs are read by
  ``proj`` steps (``value[index]``);
* ``proj``: output ``index`` of a multi-output ``call``;
* ``assign``: its value is ``inputs[1]``; committed to variable ``var_index`` after the whole run;
* ``group``: nothing (runs its inputs).

Every pass is ``fn(ir, ctx) -> None`` in its own module under ``passes/``; see
:data:`fastgraph.static.passes.PIPELINE`.
"""
from __future__ import annotations

import numpy as np

from .._core.toposort import toposort
from .errors import InvalidArgumentError

__all__ = ["PNode", "IR", "Context", "lower", "compile_ir"]


class PNode:
    __slots__ = ("kind", "node", "op", "inputs", "attrs", "shape", "dtype", "weak", "value",
                 "name", "repl", "fn", "n_outputs", "index", "var_index", "buf", "slot",
                 "fresh", "last", "note", "inplace")

    def __init__(self, kind, node=None, op=None, inputs=(), attrs=None, shape=None, dtype=None,
                 weak=False, value=None, name=""):
        self.kind = kind
        self.node = node
        self.op = op
        self.inputs = list(inputs)
        self.attrs = attrs
        self.shape = shape
        self.dtype = dtype
        self.weak = weak
        self.value = value
        self.name = name
        self.repl = None
        self.fn = None
        self.n_outputs = 1
        self.index = 0
        self.var_index = -1
        self.buf = -1
        self.slot = -1
        self.fresh = False
        self.last = -1
        self.note = ""
        self.inplace = None     # a ``var`` step whose array this step overwrites (``out=``)

    def become_const(self, value) -> None:
        """Turn this step into a constant holding ``value`` (computed at compile time)."""
        self.kind = "const"
        self.value = value
        self.shape = np.shape(value)
        self.inputs = []
        self.attrs = None
        self.weak = False
        self.note = "folded"

    def __repr__(self):
        return f"<PNode {self.kind} {self.name}>"


def live_order(ir) -> list:
    """The IR nodes the outputs depend on, in IR order (a fed node's inputs are not followed)."""
    live = set()
    stack = [p for p in ir.outputs if p is not None]
    while stack:
        p = stack.pop()
        if id(p) in live:
            continue
        live.add(id(p))
        stack.extend(p.inputs)      # a fed step has none once prune has cut them
    return [p for p in ir.order if id(p) in live]


def users_of(order) -> dict:
    """``id(step) -> [steps reading it]``, each list in ``order``'s order."""
    users: dict = {}
    for p in order:
        for q in p.inputs:
            users.setdefault(id(q), []).append(p)
    return users


def resolve(p: PNode) -> PNode:
    while p.repl is not None:
        p = p.repl
    return p


class IR:
    """The nodes of one plan (topological order) and its outputs/commits."""

    def __init__(self, order, outputs, feeds):
        self.order = order                  # list[PNode]
        self.outputs = outputs              # list[PNode | None] (None: an operation)
        self.feeds = feeds                  # list[PNode] of kind "feed", in feed order

    def replace_all(self) -> None:
        """Apply ``repl`` links to every input and output; drop replaced nodes."""
        if not any(p.repl is not None for p in self.order):
            return                      # nothing replaced (a pass that only annotates)
        keep = []
        for p in self.order:
            if p.repl is not None:
                continue
            ins = p.inputs
            for k in range(len(ins)):
                q = ins[k]
                if q.repl is not None:
                    ins[k] = resolve(q)
            keep.append(p)
        self.order = keep
        self.outputs = [None if o is None else resolve(o) for o in self.outputs]


class Context:
    """What passes share: the disabled set and a log for ``explain()``."""

    def __init__(self, disable=()):
        self.disable = frozenset(disable)
        self.log: dict = {}

    def note(self, pass_name: str, text) -> None:
        """Log ``text`` for ``explain()``: a string, or a callable giving it (for text that is
        costly to build, e.g. a kernel listing, only built when someone asks)."""
        self.log.setdefault(pass_name, []).append(text)


def _shape_of(v):
    return np.shape(v)


def lower(leaves, feed_nodes, feed_shapes) -> IR:
    """Build the IR: every ancestor of ``leaves`` (fed nodes become ``feed`` sources)."""
    index = {}
    nodes = []
    src = []
    dst = []
    stack = [n for n in leaves if n is not None]
    fed = {n: k for k, n in enumerate(feed_nodes)}
    for n in stack:
        if n not in index:
            index[n] = len(nodes)
            nodes.append(n)
    stack = list(nodes)
    while stack:
        n = stack.pop()
        j = index[n]
        for p in n.inputs:
            i = index.get(p)
            if i is None:
                i = index[p] = len(nodes)
                nodes.append(p)
                stack.append(p)
            src.append(i)
            dst.append(j)
    order = toposort(len(nodes), np.asarray(src, np.int64), np.asarray(dst, np.int64))
    pn = [None] * len(nodes)
    out_order = []
    feeds = [None] * len(feed_nodes)
    for i in order.tolist():
        n = nodes[i]
        k = fed.get(n)
        if k is not None:
            p = PNode("feed", n, n.op, (), None, feed_shapes[k], n.dtype, name=n.name)
            p.index = k
            feeds[k] = p
            # the original inputs stay reachable (pruning removes them)
            p.inputs = [pn[index[q]] for q in n.inputs]
            p.note = "fed"
        else:
            kind = n.kind
            ins = [pn[index[q]] for q in n.inputs]
            p = PNode(kind, n, n.op, ins, n.attrs, None, n.dtype, n.weak, n.value, n.name)
            if kind == "variable":
                p.kind = "var"
                p.var_index = n.var_index
                p.shape = n.shape
            elif kind == "assign":
                p.var_index = n.value.var_index
            elif kind == "const":
                p.shape = np.shape(n.value)
            elif kind == "placeholder":
                p.shape = n.shape
            p.shape = _concrete_shape(p) if kind in ("op", "assign") else p.shape
        pn[i] = p
        out_order.append(p)
    outputs = [None if n is None else pn[index[n]] for n in leaves]
    for k, p in enumerate(feeds):
        if p is None:  # a fed node the fetches do not need: still validated, never read
            n = feed_nodes[k]
            p = PNode("feed", n, n.op, (), None, feed_shapes[k], n.dtype, name=n.name)
            p.index = k
            feeds[k] = p
    return IR(out_order, outputs, feeds)


def _concrete_shape(p: PNode):
    """The shape of ``p`` for this feed signature (``None`` entries where still unknown)."""
    if p.kind == "assign":
        return p.node.shape
    for q in p.inputs:
        qs = q.shape
        if qs is not q.node.shape and qs != q.node.shape:
            break
    else:
        # every input has its static shape (nothing fed is narrower): the node's own static
        # shape, which its shape rule computed from those same shapes when it was built
        return p.node.shape
    shapes = [q.shape for q in p.inputs]
    if any(s is None for s in shapes):
        return p.node.shape
    op = p.op
    if op.shape is None:
        return p.node.shape
    try:
        return tuple(op.shape(shapes, **p.attrs) if p.attrs else op.shape(shapes))
    except ValueError as e:
        raise InvalidArgumentError(f"{e} (while computing node {p.name!r} for the fed shapes)",
                                   p.node) from None


def known(shape) -> bool:
    return shape is not None and None not in shape


def compile_ir(ir: IR, ctx: Context):
    """Run the pipeline on ``ir`` (each pass unless disabled); returns the final IR."""
    from .passes import PIPELINE
    for name, fn in PIPELINE:
        if name in ctx.disable:
            ctx.note(name, "(disabled)")
            continue
        fn(ir, ctx)
        ir.replace_all()
    return ir
