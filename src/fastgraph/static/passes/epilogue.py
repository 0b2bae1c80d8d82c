"""Epilogues: a per-channel bias and an activation after an op that can apply them itself.

Part of the ``fuse`` pass (it runs first there, so ``disable=("fuse",)`` switches it off too).
An op whose ``epilogue`` field names another op (``conv`` -> ``conv_bias``) computes
``activation(op(...) + bias)`` in one pass when given the bias and the activation: the
convolution adds the bias and applies the activation to each output tile while it is in cache,
instead of two more passes over the output.  Two rewrites, each where the intermediate value is
used only by the next step (and not fetched):

* ``add(op(*ins), b)`` with ``b`` one value per channel (axis 1: shape ``(C, 1, ..., 1)`` or
  ``(1, C, 1, ...)``, of the result's dtype) -> ``epilogue(*ins, b, activation=None)``;
* ``act(epilogue(*ins, b, activation=None))`` with ``act`` an op whose ``activation`` field
  names it (``relu``) -> ``epilogue(*ins, b, activation=act)``.

The values are those of the separate steps, bit for bit (the kernel adds and clamps each
element exactly as NumPy's ``add`` and ``maximum`` do).  The backward pass reads ReLU's result
for its mask (``simplify``), so the pre-activation values need not exist.
"""
from __future__ import annotations

from math import prod

from ... import ops as F
from ..plan import PNode, known, live_order, users_of


def _per_channel(q, shape) -> bool:
    """Is ``q`` one value per channel (axis 1) of a result of ``shape``?"""
    s = q.shape
    if q.kind == "const":
        import numpy as np
        s = np.shape(q.value)
    if s is None or not known(s) or len(shape) < 2 or len(s) > len(shape):
        return False
    pad = (1,) * (len(shape) - len(s)) + tuple(s)
    return pad[1] == shape[1] and prod(pad) == shape[1]


def _single_use(p, users, outputs) -> bool:
    return len(users.get(id(p), ())) == 1 and id(p) not in outputs


def _bias_vector(ir, q, channels, name):
    """A step giving ``q``'s values as a ``(C,)`` vector: ``q`` itself, the input of a reshape
    that made it, or a new reshape step placed right after ``q``."""
    if q.shape is not None and tuple(q.shape) == (channels,):
        return q
    if q.kind == "op" and q.op is F.reshape.op and q.inputs[0].shape is not None and \
            tuple(q.inputs[0].shape) == (channels,):
        return q.inputs[0]
    r = PNode("op", None, F.reshape.op, [q], {"shape": (channels,)}, (channels,), q.dtype,
              name=f"{name}/bias")
    ir.order.insert(ir.order.index(q) + 1, r)
    return r


def fuse_epilogues(ir, ctx) -> int:
    order = live_order(ir)
    forms = {id(op.epilogue) for op in F.REGISTRY.values() if op.epilogue is not None}
    if not any(p.kind == "op" and (p.op.epilogue is not None or id(p.op) in forms)
               for p in order):
        return 0
    users = users_of(order)
    outputs = {id(o) for o in ir.outputs if o is not None}
    n = 0
    # bias: add(op(*ins), b) -> epilogue(*ins, b)
    for p in order:
        if p.kind != "op" or p.op.opcode != "add" or len(p.inputs) != 2 or \
                not known(p.shape) or p.dtype is None:
            continue
        for c, b in (p.inputs, p.inputs[::-1]):
            ep = c.op.epilogue if c.kind == "op" else None
            if ep is None:
                continue
            if not known(c.shape) or tuple(c.shape) != tuple(p.shape) or c.dtype != p.dtype:
                continue
            if b.dtype != p.dtype or b.weak or not _per_channel(b, p.shape):
                continue
            if not _single_use(c, users, outputs):
                continue
            bias = _bias_vector(ir, b, p.shape[1], p.name)
            p.op = ep
            p.inputs = list(c.inputs) + [bias]
            p.attrs = dict(c.attrs or {}, activation=None)
            ctx.note("fuse", f"{p.name}: {c.op.name} + bias -> {ep.name} ({c.name})")
            n += 1
            break
    # activation: act(epilogue(..., activation=None)) -> epilogue(..., activation=act)
    order = live_order(ir)
    users = users_of(order)
    for p in order:
        act = p.op.activation if p.kind == "op" else None
        if act is None or len(p.inputs) != 1:
            continue
        e = p.inputs[0]
        if e.kind != "op" or id(e.op) not in forms or (e.attrs or {}).get("activation", 0) \
                is not None:
            continue
        if e.dtype != p.dtype or not _single_use(e, users, outputs):
            continue
        ctx.note("fuse", f"{p.name}: {e.op.name} + {p.op.name} -> {e.op.name}(activation="
                         f"{act!r})")
        p.op = e.op
        p.inputs = list(e.inputs)
        p.attrs = dict(e.attrs, activation=act)
        n += 1
    return n
