"""``lower``: steps whose shapes are known become cheaper calls computing the same values.

Runs after ``fuse`` (on what the fusion left) and before ``buffers``.  Each rewrite calls the very
NumPy routine the generic op would end up in, so results are bit-identical; what goes is the
generic op's run-time shape logic, and the result can be written into a planned buffer:

* ``sum_to_like(g, x)`` that sums leading axes only (a bias gradient: ``(128, 256) -> (256,)``)
  becomes ``np.add.reduce(g, axis=leading, out=buffer)``, computed by the tape's column sum
  (``kernels.elementwise.sum_leading``: the same values in one C pass, as eager bias gradients) (``x`` is
  read for its shape only, so it is dropped: measured 15 us -> 8 us for float32 (128, 256),
  then ~3 us with the C pass);
* ``matmul(swapaxes(a, -1, -2), b)`` (and the same on ``b``) reads the transpose as a view inside
  the call, one step instead of two; BLAS takes the transposed operand as it is;
* a 2-D float ``matmul`` of up to ``DIRECT_MAX_MNK`` multiply-adds makes NumPy's own BLAS call
  directly (``_blas.scaled_matmul`` with ``alpha = 1``, checked once per shape against
  ``np.matmul``): ~1.5 us less per product than the ufunc machinery around it;
* an op and its gradient op computed together (the gradient's ``computed_with`` field:
  ``cross_entropy(x, y)`` and ``cross_entropy_grad(g, x, y)`` with a constant seed) become one
  call returning both, from one pass over the rows, read by two ``proj`` steps.
"""
from __future__ import annotations

import numpy as np

from ...kernels.elementwise import sum_leading as _sum_leading
from ..plan import PNode, known, live_order, resolve
from .blas import BlasMatmul, direct_call_refused, is_last_swap, is_matrix_transpose

#: 2-D float products make NumPy's BLAS call directly (a switch for benchmarks and tests)
DIRECT_GEMM = True
#: ... up to this many multiply-adds: the call saves ~1.5 us, 0.4% of such a product's time and
#: less on larger ones, while checking the call costs two products at compile time
DIRECT_MAX_MNK = 1 << 25


class LeadingSum:
    """``np.add.reduce(g, axis=axes)``: ``sum_to_like`` over leading axes, with ``out=`` -- the
    one-pass column sum (``kernels.elementwise.sum_leading``, NumPy's values bit for bit) where it
    applies, as eager mode's bias gradients."""
    __slots__ = ("axes", "name", "lead")

    def __init__(self, axes, name):
        self.axes = axes
        self.name = name
        self.lead = len(axes)

    def __call__(self, g, out=None):
        if out is None:
            return np.add.reduce(g, axis=self.axes)
        return _sum_leading(g, self.lead, out)


def _leading_sum(p):
    """The axes when ``p`` is a float ``sum_to_like`` over leading axes only, else ``None``."""
    g, x = p.inputs
    if not (known(g.shape) and known(x.shape)) or p.dtype is None or p.dtype.kind != "f":
        return None
    if g.dtype != p.dtype or len(x.shape) == 0:
        return None
    lead = len(g.shape) - len(x.shape)
    if lead < 1 or tuple(g.shape[lead:]) != tuple(x.shape):
        return None
    return tuple(range(lead))


def _pair_computed_together(ir, ctx) -> int:
    """A step of an op ``f(x, y)`` and one of its gradient op ``df(g, x, y)`` whose declaration
    says they are computed together (``computed_with=(f, both)``; ``cross_entropy`` and its
    gradient), with a constant seed ``g`` (so it cannot depend on the value), become one call
    ``both(g, x, y)``, read by two ``proj`` steps in their places: the shared parts are
    computed once, the values are the same."""
    order = ir.order
    steps = [p for p in live_order(ir) if p.kind == "op" and not p.attrs]
    partners = {id(p.op.computed_with[0]) for p in steps if p.op.computed_with is not None}
    losses, grads = {}, []
    for p in steps:
        if id(p.op) in partners:
            losses.setdefault((id(p.op),) + tuple(id(resolve(q)) for q in p.inputs), p)
        elif p.op.computed_with is not None and resolve(p.inputs[0]).kind == "const":
            grads.append(p)
    n = 0
    for p in grads:
        partner, both = p.op.computed_with
        g, *rest = (resolve(q) for q in p.inputs)
        q = losses.pop((id(partner),) + tuple(id(r) for r in rest), None)
        if q is None:
            continue
        call = PNode("call", None, None, [g] + rest, None, None, None,
                     name=getattr(both, "__name__", "computed_together"))
        call.fn = both
        call.n_outputs = 2
        first = min(order.index(p), order.index(q))
        order.insert(first, call)
        for step, index in ((q, 0), (p, 1)):
            step.kind = "proj"
            step.inputs = [call]
            step.index = index
            step.op = None
        ctx.note("lower", f"{q.name}, {p.name}: {partner.name} and its gradient in one pass")
        n += 1
    return n


def lower(ir, ctx) -> None:
    n = _pair_computed_together(ir, ctx)
    for p in live_order(ir):
        if p.kind != "op":
            continue
        if p.op.unbroadcast:
            axes = _leading_sum(p)
            if axes is None:
                continue
            p.kind = "call"
            p.fn = LeadingSum(axes, p.op.name)
            p.inputs = p.inputs[:1]
            p.fresh = True
            ctx.note("lower", f"{p.name}: {p.op.name} -> add.reduce(axis={axes})")
            n += 1
        elif p.op.blas == "product" and not p.attrs and known(p.shape) and len(p.shape) >= 2:
            a, b = p.inputs
            if len(p.shape) == 2:
                ta, tb = is_matrix_transpose(a), is_matrix_transpose(b)
            else:
                ta = is_last_swap(a) and len(a.shape) == len(p.shape)
                tb = is_last_swap(b) and len(b.shape) == len(p.shape)
            ins = [a.inputs[0] if ta else a, b.inputs[0] if tb else b]
            direct = DIRECT_GEMM and len(p.shape) == 2 and direct_call_refused(
                p.dtype, *ins, ta, tb, False, DIRECT_MAX_MNK) is None
            if not (ta or tb or direct):
                continue
            p.kind = "call"
            p.fn = BlasMatmul(ta, tb, direct)
            p.note = ", ".join([f"{w} transposed" for w, t in (("a", ta), ("b", tb)) if t] +
                               (["direct BLAS call"] if direct else []))
            p.inputs = ins
            p.fresh = True
            if ta or tb:
                ctx.note("lower", f"{p.name}: matmul of "
                                  f"{'a transpose' if ta != tb else 'transposes'} reads "
                                  f"{'it' if ta != tb else 'them'} as views")
            if direct:
                ctx.note("lower", f"{p.name}: matmul as NumPy's BLAS call, made directly")
            n += 1
    ctx.note("lower", f"{n} step(s) lowered")
