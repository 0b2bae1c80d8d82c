"""``buffers``: liveness-based buffer planning.

Every ufunc step whose result has a known, non-empty array shape and does not escape (it is not
fetched, not committed to a variable, and no fetched/committed value may be a view of it) gets a
preallocated buffer, written with ``out=``.  A buffer returns to the pool (keyed by shape and
dtype) after the last step that reads its value -- or any value that may be a view of it (every
non-ufunc step is assumed to possibly return a view of its inputs).  Values handed to the user
never live in a plan buffer, so a later run cannot overwrite them.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..plan import known, live_order

INF = 1 << 62


def ufunc_of(p):
    """The NumPy ufunc computing step ``p`` elementwise into a fresh array (or ``None``): an op
    whose registry forward *is* a ufunc (so it takes ``out=``), of a float dtype that all its
    inputs share (so writing into the buffer is exact)."""
    if p.kind != "op" or p.attrs:
        return None
    u = getattr(p.op, "forward", None)
    if type(u) is not np.ufunc or p.dtype is None or p.dtype.kind != "f":
        return None
    dt = p.dtype
    for q in p.inputs:
        if not q.weak and q.dtype != dt:
            return None
    return u


def is_ufunc_step(p) -> bool:
    return ufunc_of(p) is not None


def is_fresh_step(p) -> bool:
    """A step whose value is a new array, never a view of its inputs: a ufunc step, or a fused
    kernel's ``call``/``proj`` (``p.fresh``, set by the ``fuse`` pass)."""
    return p.fresh or ufunc_of(p) is not None


def writes_elementwise(p) -> bool:
    """Does step ``p`` compute elementwise, so that ``out=`` may be one of its own inputs (a
    ufunc, an elementwise fused kernel, a lowered call that says so)?  Other steps (a matrix
    product) must get a buffer none of their inputs lives in: ``np.matmul`` writing over its
    own operand first copies it (11 us for float32 (128, 256) @ (256, 256), measured)."""
    if p.kind == "op":
        u = ufunc_of(p)
        return u is not None and u.signature is None    # not a gufunc (matmul)
    if p.kind != "call" or not p.fresh or p.n_outputs != 1:
        return False
    return bool(getattr(p.fn, "elementwise", False))


def _bufferable(p) -> bool:
    """Can the step write its one array result into a planned buffer (``out=``)?"""
    if p.fresh:
        return p.kind == "proj" or (p.kind == "call" and p.n_outputs == 1)
    return ufunc_of(p) is not None


def buffers(ir, ctx) -> None:
    order = live_order(ir)
    pos = {id(p): i for i, p in enumerate(order)}
    n = len(order)
    last = [-1] * n
    for i, p in enumerate(order):
        for q in p.inputs:
            j = pos[id(q)]
            if last[j] < i:
                last[j] = i
    for o in ir.outputs:
        if o is not None:
            last[pos[id(o)]] = INF
    for p in order:
        if p.kind == "assign":
            last[pos[id(p.inputs[0])]] = INF
    for i in range(n - 1, -1, -1):
        p = order[i]
        if p.kind in ("op", "call", "proj", "assign") and not is_fresh_step(p):
            li = last[i]
            for q in p.inputs:
                j = pos[id(q)]
                if last[j] < li:
                    last[j] = li
    pool: dict = {}
    dies: dict = {}
    specs = []

    def release(steps):
        for h in steps:
            pool.setdefault((h.shape, h.dtype), []).append(h.buf)

    for i, p in enumerate(order):
        dying = dies.pop(i, ())
        # the buffers whose last reader is this step: free for its own output only when it
        # computes elementwise (or is a multi-output kernel's ``proj``: the kernel has run)
        late = p.kind != "proj" and not writes_elementwise(p)
        if not late:
            release(dying)
        p.buf = -1
        if (last[i] != INF and _bufferable(p) and known(p.shape) and len(p.shape) >= 1
                and 0 not in p.shape):
            key = (tuple(p.shape), p.dtype)
            free = pool.get(key)
            if free:
                p.buf = free.pop()
            else:
                p.buf = len(specs)
                specs.append(key)
            if last[i] >= 0:
                dies.setdefault(last[i], []).append(p)
        if late:
            release(dying)
    ir.buffer_specs = specs
    users = sum(1 for p in order if p.buf >= 0)
    total = sum(prod(s) * d.itemsize for s, d in specs)
    ctx.note("buffers", f"{len(specs)} buffer(s) ({total} bytes) shared by {users} step(s)")
