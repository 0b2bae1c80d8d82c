"""``simplify``: algebraic identities that never change a result's value, shape or dtype.

``x * 1``, ``1 * x``, ``x / 1``, ``x ** 1``, ``-(-x)``, ``identity(x)``, casts/reshapes/
broadcasts/sum-backs to the same shape and dtype, and the additive units that are exact in IEEE
arithmetic -- ``x + (-0.0)``, ``(-0.0) + x``, ``x - 0.0``, and ``x + 0``/``x - 0`` on integers --
all become ``x``, only where the concrete shapes and dtypes prove the result unchanged.
``x + 0.0`` is kept (``-0.0 + 0.0`` is ``+0.0``), and so is ``log(exp(x))`` (``exp`` overflows
and underflows: ``log(exp(800.0))`` is ``inf``), so a plan gives eager's and NumPy's bits.
ReLU's gradient mask ``greater(x, 0)`` reads ``relu(x)`` when that is computed anyway; the row
sums of a one-hot ``put_labels`` of a nonzero constant are that constant.
"""
from __future__ import annotations

import operator

import numpy as np

from ..plan import known


def _is_const(q, c) -> bool:
    if q.kind != "const":
        return False
    v = q.value
    if type(v) is float or type(v) is int:     # the common case: a Python scalar constant
        return v == c
    try:
        if np.size(v) > 64:
            return False
        return bool(np.all(np.asarray(v) == c))
    except Exception:
        return False


def _exact_unit(u, q, dtype) -> bool:
    """Whether constant ``q`` (already known equal to the identity ``u``) leaves ``x``
    unchanged: a zero must have the identity's sign for floats (``x + (-0.0)``, ``x - 0.0``)."""
    kind = np.dtype(dtype).kind
    if u != 0 or kind in "iub":
        return True
    if kind != "f":
        return False
    try:
        return bool(np.all(np.signbit(np.asarray(q.value, dtype=np.float64)) == np.signbit(u)))
    except Exception:
        return False


def _unit_label(u, dtype) -> str:
    if u == 0 and np.dtype(dtype).kind == "f":
        return "-0.0" if np.signbit(u) else "0.0"
    return str(int(u)) if float(u).is_integer() else str(u)


def _same(p, x) -> bool:
    return (not x.weak and x.kind != "feed_placeholder" and known(p.shape)
            and tuple(p.shape) == tuple(x.shape or ()) and known(x.shape)
            and p.dtype == x.dtype)


def _rewrite(p):
    op = p.op
    name = op.name
    ins = p.inputs
    if len(ins) == 2:
        a, b = ins
        u = op.right_identity
        if u is not None and _is_const(b, u) and _same(p, a) and _exact_unit(u, b, p.dtype):
            return a, f"{name}(x, {_unit_label(u, p.dtype)}) -> x"
        u = op.left_identity
        if u is not None and _is_const(a, u) and _same(p, b) and _exact_unit(u, a, p.dtype):
            return b, f"{name}({_unit_label(u, p.dtype)}, x) -> x"
        if op.noop_same_shape and _same(p, a):
            return a, f"{name}(x, like) -> x (same shape)"
    elif len(ins) == 1:
        (a,) = ins
        if op.involution and a.kind == "op" and a.op is op and _same(p, a.inputs[0]):
            twice = "-(-x)" if op.operator is operator.neg else f"{name}({name}(x))"
            return a.inputs[0], f"{twice} -> x"
        if op.noop_same_shape and _same(p, a):
            return a, f"{name}(x) -> x (same shape and dtype)"
        if op.permutation is not None and _same(p, a) and len(p.shape) <= 1:
            return a, f"{name}(x) -> x (ndim <= 1)"
    return None, None


def _mask_from_relu(p, relu_of, pos) -> bool:
    """``greater(x, 0)`` (ReLU's gradient mask) reads ``relu(x)`` instead of ``x`` when the plan
    computes ``relu(x)`` before it: ``relu(x) > 0`` exactly when ``x > 0`` (NaN and -0.0
    included), and ``x`` need not stay alive for the backward pass (it can be overwritten in
    place by the ReLU and the mask can join the backward kernel)."""
    if p.op.compares != "gt" or len(p.inputs) != 2 or not _is_const(p.inputs[1], 0):
        return False
    if np.ndim(p.inputs[1].value) != 0:
        return False
    r = relu_of.get(id(p.inputs[0]))
    if r is None or pos.get(id(r), len(pos)) >= pos[id(p)] or r.dtype != p.inputs[0].dtype:
        return False
    p.inputs[0] = r
    return True


def _one_hot_row_sum(p):
    """``sum(put_labels(c, x, labels), axis=-1, keepdims=True)`` with a constant ``c`` without
    zeros is ``c`` as a column: each row of ``put_labels`` holds ``c[i]`` once and zeros
    elsewhere, and adding zeros to a nonzero value is exact (cross-entropy's gradient through
    ``log_softmax``).  Returns the constant column's value, or ``None``."""
    if p.op.reduction != "sum" or len(p.inputs) != 1 or not known(p.shape) or \
            len(p.shape) != 2:
        return None
    a = p.attrs or {}
    if not a.get("keepdims") or a.get("axis") not in (-1, 1, (-1,), (1,)) or set(a) - {
            "axis", "keepdims"}:
        return None
    g = p.inputs[0]
    if g.kind != "op" or not g.op.one_hot or g.inputs[0].kind != "const":
        return None
    c = np.asarray(g.inputs[0].value)
    if c.ndim != 1 or c.shape[0] != p.shape[0] or c.dtype != p.dtype or not np.all(c != 0):
        return None
    v = np.array(c.reshape(-1, 1))
    v.flags.writeable = False
    return v


def simplify(ir, ctx) -> None:
    from ..plan import resolve
    n = 0
    pos = {id(p): i for i, p in enumerate(ir.order)}
    relu_of = {}
    for p in ir.order:
        if p.kind != "op":
            continue
        ins = p.inputs
        for k in range(len(ins)):
            if ins[k].repl is not None:
                ins[k] = resolve(ins[k])
        if p.op.same_positives and len(ins) == 1:
            relu_of.setdefault(id(ins[0]), p)
        elif _mask_from_relu(p, relu_of, pos):
            n += 1
            ctx.note("simplify", f"{p.name}: greater(x, 0) -> greater(relu(x), 0) "
                                 f"({p.inputs[0].name})")
            continue
        col = _one_hot_row_sum(p)
        if col is not None:
            p.become_const(col)
            n += 1
            ctx.note("simplify", f"{p.name}: sum(put_labels(c, ...), axis=-1) -> c as a column")
            continue
        x, why = _rewrite(p)
        if x is not None:
            p.repl = x
            n += 1
            ctx.note("simplify", f"{p.name}: {why} ({x.name})")
    ctx.note("simplify", f"{n} node(s) simplified")
