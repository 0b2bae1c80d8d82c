"""``fold``: evaluate at compile time every operation whose inputs are all constants."""
from __future__ import annotations

import numpy as np


def fold(ir, ctx) -> None:
    n = 0
    with np.errstate(all="ignore"):
        for p in ir.order:
            if p.kind != "op" or p.op.forward is None:
                continue
            ins = p.inputs
            if not ins:
                continue
            for q in ins:
                if q.kind != "const":
                    break
            else:
                try:
                    vals = [q.value for q in ins]
                    v = p.op.forward(*vals, **p.attrs) if p.attrs else p.op.forward(*vals)
                except Exception:
                    continue  # left for run time, where the error is reported
                if not isinstance(v, (np.ndarray, np.generic)):
                    v = np.asarray(v)
                if isinstance(v, np.ndarray):
                    if v.ndim == 0:
                        v = v[()]
                    elif v.base is not None or v.flags.writeable:
                        v = np.array(v)
                        v.flags.writeable = False
                if np.result_type(v) != p.dtype:
                    continue  # never change a dtype
                p.kind = "const"
                p.value = v
                p.shape = np.shape(v)
                p.inputs = []
                p.weak = False
                p.note = "folded"
                n += 1
                ctx.note("fold", p.name)
    ctx.note("fold", f"{n} operation(s) folded")
