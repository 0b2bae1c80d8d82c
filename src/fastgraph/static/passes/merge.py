"""``merge``: common-subexpression elimination (equal op, inputs and attributes -> one node;
equal small constants -> one constant).  Stateful ops (random draws) are never merged."""
from __future__ import annotations

import numpy as np

from ..node import attrs_key


def _const_key(p):
    v = p.value
    if p.weak:
        return ("w", type(v), repr(v))
    if np.size(v) > 1024:
        return None
    a = np.asarray(v)
    return ("c", a.dtype.str, a.shape, a.tobytes(), isinstance(v, np.ndarray))


def merge(ir, ctx) -> None:
    from ..plan import resolve
    seen = {}
    n = 0
    for p in ir.order:
        ins = p.inputs
        for k in range(len(ins)):
            if ins[k].repl is not None:
                ins[k] = resolve(ins[k])
        if p.kind == "op" and not p.op.stateful:   # (two random draws are two values)
            key = (p.op, tuple([id(q) for q in ins]), attrs_key(p.attrs))
        elif p.kind == "const":
            key = _const_key(p)
        else:
            continue
        if key is None:
            continue
        other = seen.get(key)
        if other is None:
            seen[key] = p
        else:
            p.repl = other
            n += 1
            ctx.note("merge", f"{p.name} = {other.name}")
    ctx.note("merge", f"{n} node(s) merged")
