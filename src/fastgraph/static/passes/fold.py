"""``fold``: evaluate at compile time every operation whose inputs are all constants.

Some operations read an input only for its shape and dtype (``broadcast_like(g, x)`` takes ``x``'s
shape, ``size_ratio(a, b)`` the sizes of both).  When such an input's shape is known for the plan,
it counts as a constant too: the fold evaluates the operation on a zero-stride stand-in of that
shape and dtype.  This turns the seeds of mean/sum gradients (``broadcast_like(-1, pick) *
size_ratio(mean, pick)``) into one constant instead of three run-time steps.  A stateful op
(a random draw: dropout's mask) is never folded: each run draws anew.
"""
from __future__ import annotations

import numpy as np

from ..plan import known

def _stand_in(q):
    """A free array of ``q``'s shape and dtype (its values are never read), or ``None``."""
    if not known(q.shape) or q.dtype is None:
        return None
    return np.broadcast_to(np.zeros((), q.dtype), tuple(q.shape))


def _fold_inputs(p):
    """The values to evaluate ``p`` on at compile time, or ``None`` when ``p`` must run later."""
    shape_only = p.op.shape_only     # inputs read only for their shape and dtype
    vals = []
    for k, q in enumerate(p.inputs):
        if q.kind == "const":
            vals.append(q.value)
        elif k in shape_only:
            v = _stand_in(q)
            if v is None:
                return None
            vals.append(v)
        else:
            return None
    return vals


def fold(ir, ctx) -> None:
    n = 0
    with np.errstate(all="ignore"):
        for p in ir.order:
            if p.kind != "op" or p.op.forward is None or p.op.stateful:
                continue    # (a stateful op, a random draw, runs anew on every run)
            ins = p.inputs
            if not ins:
                continue
            vals = _fold_inputs(p)
            if vals is None:
                continue
            try:
                v = p.op.forward(*vals, **p.attrs) if p.attrs else p.op.forward(*vals)
            except Exception:
                continue  # left for run time, where the error is reported
            if not isinstance(v, (np.ndarray, np.generic)):
                v = np.asarray(v)
            if isinstance(v, np.ndarray):
                if v.ndim == 0:
                    v = v[()]
                elif 0 in v.strides and not v.flags.writeable and v.size > 1:
                    pass  # a read-only broadcast (of a constant): kept as the free view
                elif v.base is not None or v.flags.writeable:
                    v = np.array(v)
                    v.flags.writeable = False
            if np.result_type(v) != p.dtype:
                continue  # never change a dtype
            p.become_const(v)
            n += 1
            ctx.note("fold", p.name)
    ctx.note("fold", f"{n} operation(s) folded")
