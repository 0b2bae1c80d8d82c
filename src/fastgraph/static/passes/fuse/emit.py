"""Emission: each region worth it becomes one ``call`` step running a compiled ``FusedKernel``.

A region's members become expressions (:class:`RegionExprs`): its outside inputs are kernel
inputs, scalar constants (and constant arrays of one value) kernel constants.  The kernel is
compiled here, once; its outputs are read through ``proj`` steps (a single-output region's call
is the value itself), a comparison's through a cast back to ``bool``.  Fused steps are *fresh*
(never views), so the buffer planner writes intermediates into planned buffers (``out=``) and
fetched values are handed out uncopied.  The plan is then re-sorted (:func:`rebuild`).  The
compiler's superinstruction peephole runs unless the plan disables ``"superinstructions"``
(``fg.Session(disable=("superinstructions",))``), like a pass.
"""
from __future__ import annotations

import numpy as np

from .... import ops as F
from ...._core.toposort import toposort
from ....fused import Expr, compile_kernel
from ....fused.compiler import SUPERINSTRUCTIONS
from ...plan import PNode, known, resolve
from .cost import bcast_modes, kernel_settings, kernel_shape
from .regions import root

__all__ = ["emit", "rebuild", "SPLAT_CHECK_MAX"]

_BOOL = np.dtype(np.bool_)

#: constants up to this many elements are checked for holding one value (a vectorised compare
#: of their bits, once per compile: ~1 ms at the limit)
SPLAT_CHECK_MAX = 1 << 22


def _splat(v) -> bool:
    """A constant array holding one real value everywhere (a broadcast, or an array of
    bit-identical entries, like a folded gradient seed ``2 / N`` of the MSE's shape): the kernel
    takes the value as a constant (the region's shape, set by its other operands, is
    unchanged) instead of reading an array of it."""
    if not isinstance(v, np.ndarray) or v.size == 0 or v.dtype.kind not in "biuf":
        return False
    if all(st == 0 for st in v.strides):
        return True
    if v.size > SPLAT_CHECK_MAX or v.dtype.itemsize not in (1, 2, 4, 8):
        return False
    bits = np.ascontiguousarray(v).reshape(-1).view(f"u{v.dtype.itemsize}")
    return bool((bits == bits[0]).all())


def _is_const(e, v) -> bool:
    return e.kind == "const" and e.value == v


def _peephole(name, args):
    """Exact rewrites the gradient graphs are full of (seeds of ones): ``x * 1 -> x``.
    (``x + 0`` is not exact for ``-0.0`` and stays.)"""
    if name == "multiply":
        if _is_const(args[0], 1.0):
            return args[1]
        if _is_const(args[1], 1.0):
            return args[0]
    return None


class RegionExprs:
    """A region's members as kernel expressions: ``inputs`` (the outside steps read, in kernel
    input order), ``outs`` (the members read outside, with their reductions in ``specs``) and
    ``force`` (an input of another dtype: the kernel runs with an explicit dtype)."""

    def __init__(self, r, reduced, outside_used):
        self.dtype = r.dtype
        self.exprs: dict = {}
        self.inputs: list = []
        self.force = False
        self.outs: list = []
        self.specs: list = []
        exprs = self.exprs
        for m in r.members:
            if m.op.broadcasting or id(m) in reduced:
                e = self.leaf(m.inputs[0])
            else:
                # most operands are earlier members: their expression is already made (an
                # exponent NumPy's loop special-cases, power's, is read as a constant if it is)
                k0 = m.op.stride0_operand
                args = [self.power_exponent(q) if j == k0 else (exprs.get(id(q)) or self.leaf(q))
                        for j, q in enumerate(m.inputs)]
                e = _peephole(m.op.opcode, args) or Expr.op(m.op.opcode, *args)
            exprs[id(m)] = e
            if id(m) in outside_used:
                self.outs.append(m)
                self.specs.append(_reduction_spec(m, r) if id(m) in reduced else None)

    def new_input(self, q):
        j = len(self.inputs)
        self.inputs.append(q)
        if q.dtype != self.dtype:
            self.force = True
        return Expr.input(j)

    def leaf(self, q):
        """The expression of an outside step ``q``: a constant when it is a real scalar or an
        array of one value, else a kernel input."""
        e = self.exprs.get(id(q))
        if e is not None:
            return e
        if q.kind == "const":
            v = q.value
            if type(v) is float or type(v) is int or type(v) is bool or (
                    np.ndim(v) == 0 and np.asarray(v).dtype.kind in "biuf"):
                e = self.exprs[id(q)] = Expr.const(v)
                return e
            if _splat(v):   # a folded broadcast of one value (a gradient seed)
                e = self.exprs[id(q)] = Expr.const(v.flat[0])
                return e
        e = self.exprs[id(q)] = self.new_input(q)
        return e

    def power_exponent(self, q):
        """The exponent of a ``power`` member.  NumPy takes its fast paths (``sqrt`` for 0.5,
        ...) for an exponent of stride 0 -- one element or a zero-stride broadcast -- and ``pow``
        for any other array, even one holding 0.5 everywhere: a constant of the first kind is a
        kernel constant, rounded to the kernel dtype as NumPy casts it (a float32
        ``x ** 0.5000000001`` is ``sqrt``), which the compiler rewrites; any other array is an
        input, computed with ``pow``."""
        q0 = root(q)
        if q0.kind == "const":
            v = q0.value
            if isinstance(v, np.ndarray) and v.size != 1 and not (
                    v.size and all(st == 0 for st in v.strides)):
                e = self.exprs.get(id(q))
                return e if e is not None and e.kind == "input" else self.new_input(q)
            v = np.asarray(v).reshape(-1)[:1].astype(self.dtype)[0]
            return Expr.const(v)
        return self.exprs.get(id(q)) or self.leaf(q)


def _reduction_spec(m, r):
    """``(kind, axes, keepdims)`` of the reduced output ``m`` of region ``r``."""
    kind = "sum" if m.op.unbroadcast else m.op.reduction
    axes = None if r.red[0] == tuple(range(len(r.shape))) else r.red[0]
    return kind, axes, r.red[1]


def _outside_uses(order, outputs, fused_ids) -> set:
    """Ids of the members read outside their region: by another step or as a plan output."""
    used = set()
    for p in order:
        rp = fused_ids.get(id(p))
        for q in p.inputs:
            rq = fused_ids.get(id(q))
            if rq is not None and rq is not rp:
                used.add(id(q))
    for o in outputs:
        if o is not None:
            used.add(id(o))
    return used


def emit(ir, ctx, order, regions, live, plan_holds: bool) -> None:
    """Replace the regions ``live`` (of ``regions``, grown over the plan's live steps ``order``)
    by kernel calls and re-sort the plan ``ir``; ``plan_holds``: its kernels stay on one thread
    next to threaded BLAS."""
    fused_ids = {id(m): r for r in live for m in r.members}
    outside_used = _outside_uses(order, ir.outputs, fused_ids)
    new_nodes: list = []
    bool_src: dict = {}         # a cast back to bool -> the kernel output it casts
    n_ops = 0
    for k, r in enumerate(live):
        r.members.sort(key=lambda m: regions.pos[id(m)])
        rx = RegionExprs(r, regions.reduced, outside_used)
        if not rx.outs:
            continue            # nothing outside reads it: its members go
        shapes = [np.shape(q.value) if q.weak else q.shape for q in rx.inputs]   # weak: ()
        if any(not known(sh) for sh in shapes):
            for m in r.members:
                fused_ids.pop(id(m), None)
            continue            # stays plain steps
        _fix_iteration_space(k, r, rx, shapes, new_nodes)
        n_ops += _emit_kernel(ctx, k, r, rx, plan_holds, new_nodes, bool_src)
    # a comparison computed by one kernel and read by another: pass the 0/1 floats on directly
    # (the reading kernel, which had a bool input, always runs with an explicit dtype)
    for c, _ in new_nodes:
        if c.kind == "call":
            c.inputs = [bool_src.get(id(resolve(q)), q) for q in c.inputs]
    rebuild(ir, fused_ids, new_nodes)
    ctx.note("fuse", f"{len(new_nodes) and sum(1 for c, t in new_nodes if c.kind == 'call')} "
                     f"kernel(s) replacing {n_ops} op(s)")


def _fix_iteration_space(k, r, rx, shapes, new_nodes) -> None:
    """When the broadcasts inside region ``r`` span a larger space than its inputs, a
    zero-stride input of the region's shape sets the kernel's iteration space."""
    try:
        bshape = np.broadcast_shapes(*shapes) if shapes else ()
    except ValueError:
        bshape = None
    if bshape != r.shape:
        dummy = PNode("const", None, None, (), None, r.shape, r.dtype,
                      value=np.broadcast_to(np.zeros((), r.dtype), r.shape),
                      name=f"fused_{k}_shape")
        new_nodes.append((dummy, []))
        rx.inputs.append(dummy)


def _emit_kernel(ctx, k, r, rx, plan_holds, new_nodes, bool_src) -> int:
    """Compile region ``r``'s kernel and add its ``call`` step (and ``proj``/cast steps) to
    ``new_nodes``; every member is replaced by what now computes it.  Returns its op count."""
    kname = f"fused_{k}"
    settings, held = kernel_settings(r, plan_holds)
    specs = rx.specs
    kern = compile_kernel([rx.exprs[id(m)] for m in rx.outs],
                          reduce=specs if any(s is not None for s in specs) else None,
                          nin=len(rx.inputs), name=kname,
                          superinstructions=SUPERINSTRUCTIONS not in ctx.disable, **settings)
    ops = [m.op.name for m in r.members if not m.op.broadcasting]
    call = PNode("call", None, None, rx.inputs, None, rx.outs[0].shape, rx.outs[0].dtype,
                 name=kname)
    call.fresh = True
    call.n_outputs = len(rx.outs)
    call.note = f"{len(ops)} op(s): {' '.join(ops)}"
    if held:
        call.note += ", one thread (the plan runs threaded BLAS)"
    fk = _broadcast_entry(kern, r, rx, call)
    targets = _targets(call, fk, r, rx, kname)
    new_nodes.append((call, targets))
    for m, t in zip(rx.outs, targets):
        if m.dtype == _BOOL:   # comparisons are 0/1 floats in the kernel
            c = PNode("op", None, F.astype.op, [t], {"dtype": _BOOL}, m.shape, _BOOL,
                      name=m.name)
            bool_src[id(c)] = t
            new_nodes.append((c, []))
            if t is call:
                call.dtype = r.dtype
            m.repl = c
        else:
            if t is call:
                call.name = m.name if len(r.members) == 1 else kname
            m.repl = t
    for m in r.members:
        if m.repl is None:
            m.repl = call       # dead inside the kernel; nobody outside reads it
    ctx.note("fuse", kern.describe)
    return len(ops)


def _broadcast_entry(kern, r, rx, call):
    """The kernel as the plan calls it: through the VM's C broadcast path when its inputs
    broadcast in a way that path takes (noted on ``call``), else the kernel itself."""
    bc = bcast_modes([kernel_shape(q) for q in rx.inputs],
                     r.shape) if len(r.shape) and kern.elementwise else None
    if bc is None or set(bc[1]) == {"F"}:
        return kern
    call.note += f", broadcast {bc[1]} over rows of {bc[0]}"
    return kern.broadcast_call(r.shape, bc[0], bc[1])


def _targets(call, fk, r, rx, kname) -> list:
    """What reads the kernel's outputs: the call itself (one output) or one ``proj`` step per
    output; sets ``call.fn``."""
    dt = r.dtype
    if len(rx.outs) == 1:
        call.fn = fk if not rx.force else _Forced(fk, dt)
        return [call]
    projs = []
    for j, m in enumerate(rx.outs):
        pj = PNode("proj", None, None, [call], None, m.shape,
                   dt if m.dtype == _BOOL else m.dtype, name=f"{kname}:{j}")
        pj.index = j
        pj.fresh = True
        projs.append(pj)
    call.fn = _Multi(fk, projs, dt, rx.force)
    call.shape = None
    call.dtype = None
    return projs


class _Forced:
    """A kernel called with an explicit dtype (some input is bool/int or of a narrower float)."""
    __slots__ = ("k", "dt", "name")

    def __init__(self, k, dt):
        self.k, self.dt, self.name = k, dt, k.name

    @property
    def elementwise(self) -> bool:
        return self.k.elementwise

    def __call__(self, *ins, out=None):
        return self.k(*ins, out=out, dtype=self.dt)


class _Multi:
    """A multi-output kernel; ``bind(buffers)`` (called by the executor once buffers exist)
    returns the callable writing the outputs that have a planned buffer into it."""

    def __init__(self, k, projs, dt, force):
        self.k, self.projs, self.dt, self.force = k, projs, dt, force
        self.name = k.name

    def bind(self, buffers):
        k = self.k
        dt = self.dt if self.force else None
        bufs = [buffers[q.buf] if q.buf >= 0 else None for q in self.projs]
        if all(b is None for b in bufs):
            return k if dt is None else _Forced(k, dt)
        shapes = [tuple(q.shape) for q in self.projs]
        kdt = self.dt
        empty = np.empty

        def run(*ins):
            outs = [b if b is not None else empty(s, kdt) for b, s in zip(bufs, shapes)]
            return k(*ins, out=outs, dtype=dt)
        run.name = k.name
        return run

    def __call__(self, *ins):
        return self.k(*ins, dtype=self.dt if self.force else None)


def rebuild(ir, fused_ids, new_nodes):
    """New order: drop members, add calls/projs/casts, re-sort topologically (projs right after
    their call, so the buffer planner sees the kernel's outputs written where they appear)."""
    nodes = [p for p in ir.order if id(p) not in fused_ids]
    after_call = {}
    for c, targets in new_nodes:
        nodes.append(c)
        if c.kind == "call":
            projs = [t for t in targets if t.kind == "proj"]
            after_call[id(c)] = projs
            nodes.extend(projs)
    index = {id(p): i for i, p in enumerate(nodes)}
    src, dst = [], []
    for j, p in enumerate(nodes):
        ins = p.inputs
        for k in range(len(ins)):
            q = ins[k]
            if q.repl is not None:
                q = ins[k] = resolve(q)
            i = index.get(id(q))
            if i is not None:
                src.append(i)
                dst.append(j)
    order = toposort(len(nodes), np.asarray(src, np.int64), np.asarray(dst, np.int64))
    out = []
    for i in order.tolist():
        p = nodes[i]
        if p.kind == "proj" and id(p.inputs[0]) in after_call:
            continue
        out.append(p)
        projs = after_call.get(id(p))
        if projs:
            out.extend(projs)
    ir.order = out
    ir.outputs = [None if o is None else resolve(o) for o in ir.outputs]
