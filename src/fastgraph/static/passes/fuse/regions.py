"""Region growing: which steps of a plan can share one fused kernel.

Regions are grown greedily in topological order, in time linear in the plan's size:

* a *member* is an ``op`` step of a known shape whose op is elementwise with a VM opcode, or a
  broadcast that the kernel's own broadcasting makes free (``OpDef.broadcasting``); every
  elementwise member of a region has the region's shape (its iteration space) and computes in
  the region's dtype (float32 or float64; comparisons are 0/1 inside the kernel);
* a trailing reduction (``OpDef.reduction`` over trailing axes, or ``OpDef.unbroadcast`` when it
  is one) of a member joins the region as a *reduced output*, so ``sum(f(x))`` never
  materialises ``f(x)``; all reduced outputs of a region share axes and keepdims;
* **convexity**: no path may leave a region and come back.  Each region gets an id (regions made
  later get larger ids; merged regions keep the smallest); ``dep[n]`` is the largest id of a
  region that ``n`` depends on.  A step may join (or merge) regions only if every outside input
  it (or they) read has ``dep`` below the smallest id involved.  Conservative (it can refuse a
  legal fusion, never allows a cycle) and O(1) per edge with union-find.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ....fused.opcodes import BY_NAME as _OPCODES
from ...plan import known, users_of

__all__ = ["Region", "Regions", "grow", "find"]

_F = (np.dtype(np.float32), np.dtype(np.float64))
_BOOL = np.dtype(np.bool_)
_SOURCES = ("const", "feed", "var")


class Region:
    """A set of steps one kernel will compute (the root of a union-find tree of regions)."""
    __slots__ = ("id", "parent", "shape", "dtype", "ext", "red", "members", "nops")

    def __init__(self, rid, shape, dtype):
        self.id = rid
        self.parent = None
        self.shape = shape
        self.dtype = dtype
        self.ext = -1            # max dep of the outside inputs of the members
        self.red = None          # (axes, keepdims) of the reduced outputs
        self.members = []
        self.nops = 0


def find(r):
    """The root region of ``r`` (with path compression)."""
    root = r
    while root.parent is not None:
        root = root.parent
    while r.parent is not None:
        nxt = r.parent
        r.parent = root
        r = nxt
    return root


def compute_dtype(p):
    """The float dtype member ``p`` computes in, or ``None`` when ``p`` cannot be fused."""
    if p.kind != "op" or p.attrs and not p.op.broadcasting:
        return None
    op = p.op
    if not known(p.shape):
        return None
    if op.broadcasting:
        return p.dtype if p.dtype in _F and p.inputs[0].dtype == p.dtype else None
    if not op.elementwise or op.opcode not in _OPCODES:
        return None
    if op.stride0_operand is not None and not _power_exponent_ok(p.inputs[op.stride0_operand]):
        return None
    if op.compares:
        dts = [q.dtype for q in p.inputs if not weak(q)]
        if not dts or any(d is None for d in dts):
            return None
        dt = np.result_type(*dts)
        return dt if dt in _F else None
    return p.dtype if p.dtype in _F else None


def _weak_feed(q) -> bool:
    """A feed of a weak placeholder: a Python scalar argument of ``fg.function``, fed as it is
    (NumPy casts it to the other operands' dtype; a kernel does the same, see
    ``fused.runtime._weak_scalars``).  Lowering gives feeds no ``weak`` flag of their own."""
    return q.kind == "feed" and q.node is not None and q.node.weak and \
        q.node.kind == "placeholder"


def weak(q) -> bool:
    """Is ``q`` a weak scalar (a Python number, as NumPy 2 promotes it)?"""
    return q.weak or _weak_feed(q)


def root(q):
    """``q`` seen through the broadcasts the kernel makes free (what a kernel reads)."""
    while q.kind == "op" and q.op.broadcasting:
        q = q.inputs[0]
    return q


def _power_exponent_ok(q) -> bool:
    """Whether ``power(x, q)`` computes NumPy's bits in a kernel.  NumPy's float power loop
    special-cases an exponent of stride 0 (``sqrt`` for 0.5, ``x*x`` for 2, ``1/x`` for -1:
    ``_POWER_FAST`` in ``fused/compiler.py``), which a plan's ``np.power`` step sees for any
    exponent of one element, or broadcast from one.  A constant exponent is fine (the compiler
    rewrites the special values, see ``emit``); a computed or fed one of a single element is not
    (its value is known only at run time, and the VM calls the loop with stride-1 registers):
    that ``power`` stays a NumPy step."""
    q = root(q)
    if q.kind == "const":
        return True
    return known(q.shape) and prod(q.shape) != 1


def _input_ok(q, dt) -> bool:
    """Can an outside value ``q`` be a kernel input (or constant) of a ``dt`` kernel exactly?"""
    if q.weak or _weak_feed(q):
        return True
    d = q.dtype
    if d is None:
        return False
    if d == dt or d == _BOOL:
        return True
    return dt == _F[1] and d.kind in "iuf"      # exact promotion to float64, as NumPy does


def reduce_spec(p, x_shape):
    """``(kind, axes, keepdims)`` of a reduction step over a member of shape ``x_shape``, or
    ``None`` when the kernel cannot compute it."""
    kind = p.op.reduction
    nd = len(x_shape)
    if kind is not None:
        a = p.attrs or {}
        if set(a) - {"axis", "keepdims"}:
            return None
        axes = _normalised_axes(a.get("axis"), nd)
        if not axes or not _trailing(axes, nd):
            return None
        return kind, axes, bool(a.get("keepdims", False))
    if p.op.unbroadcast:
        return _unbroadcast_spec(p.shape, x_shape)
    return None


def _normalised_axes(axis, nd):
    """``axis`` (``None``, an int or a tuple) as sorted non-negative axes; ``None`` when they
    repeat or there are none to reduce."""
    if axis is None:
        return tuple(range(nd))
    axs = axis if isinstance(axis, tuple) else (axis,)
    if not nd:
        return None
    axes = tuple(sorted({int(ax) % nd for ax in axs}))
    return axes if len(axes) == len(axs) else None


def _unbroadcast_spec(ts, x_shape):
    """``sum_to_like`` from ``x_shape`` to ``ts`` as a reduction: over the leading axes, or over
    length-1 axes with keepdims (one or the other, not both)."""
    nd = len(x_shape)
    lead = nd - len(ts)
    if lead < 0:
        return None
    ones = [lead + j for j, n in enumerate(ts) if n == 1 and x_shape[lead + j] != 1]
    if lead and ones:
        return None
    if any(n != 1 and n != x_shape[lead + j] for j, n in enumerate(ts)):
        return None
    axes = tuple(range(lead)) if lead else tuple(ones)
    if not axes or not _trailing(axes, nd):
        return None
    return "sum", axes, not lead


def _trailing(axes, nd) -> bool:
    """Whether ``axes`` are the innermost ones. The VM reduces those along contiguous rows; over
    leading axes (a bias gradient summing a batch) it gathers with strides and loses to NumPy
    (measured: float32 (128, 256) summed over axis 0, 213 us fused vs 18 us for NumPy)."""
    return tuple(axes) == tuple(range(nd - len(axes), nd))


def sinks(order, outputs) -> set:
    """Ids of steps computed where they are used, each read by exactly one elementwise op of its
    shape and dtype, which it joins the region of:

    * comparisons: ReLU's gradient mask ``greater(relu(x), 0)``, read by the backward
      ``multiply``, joins that op's region rather than the region of its inputs.  Computed in the
      forward kernel it would leave it as a 0/1 output plus a cast to bool (two extra passes);
      recomputed in the backward kernel it costs one compare on data read anyway;
    * elementwise ops of constants, feeds and variables only (an optimizer's ``beta1 * m``): they
      depend on no region, so they come first in the order and the convexity rule keeps them
      out of their consumer's region (which depends on later ones): left alone each would be
      one more pass over the slot variable, into a buffer, and the update could not be
      written into the variable in place."""
    cands = [p for p in order if p.kind == "op" and (
        p.op.compares or (not p.op.broadcasting and p.inputs
                          and all(q.kind in _SOURCES for q in p.inputs)))]
    if not cands:
        return set()        # the common case: no users map to build
    users = users_of(order)
    out_ids = {id(o) for o in outputs if o is not None}
    found = set()
    for p in cands:
        if id(p) in out_ids:
            continue
        us = users.get(id(p), ())
        if len(us) != 1 or compute_dtype(p) is None:
            continue
        u = us[0]
        if (u.kind == "op" and not u.op.broadcasting and not u.op.compares
                and compute_dtype(u) == compute_dtype(p) and u.shape is not None
                and tuple(u.shape) == tuple(p.shape)):
            found.add(id(p))
    return found


class Regions:
    """The regions of one plan as they grow, step by step (:meth:`add`, in topological order):
    ``region_of`` maps a member's id to its region (through :func:`find`), ``reduced`` holds the
    ids of reduced outputs, ``dep`` the largest region id each step depends on."""

    def __init__(self, order, outputs):
        self.pos = {id(p): i for i, p in enumerate(order)}
        self.region_of: dict = {}
        self.reduced: set = set()
        self.dep: dict = {}
        self.all: list = []
        self.sinks = sinks(order, outputs)

    def live(self) -> list:
        """The regions left after merging, each with members."""
        return [find(r) for r in self.all if r.parent is None and r.members]

    def add(self, p) -> None:
        """Place step ``p``: into a region (joined, merged or new) or none, and record its dep.
        (Runs once per step, 10,000 times for a 10,000-op chain: the common cases first.)"""
        dep_get = self.dep.get
        d = -1
        for q in p.inputs:
            e = dep_get(id(q), -1)
            if e > d:
                d = e
        sinks_ = self.sinks
        if sinks_ and id(p) in sinks_:      # joins its consumer's region (below), or none
            self.dep[id(p)] = d
            return
        joined = None
        dt = compute_dtype(p) if p.kind == "op" else None
        if dt is not None:
            joined = self._add_elementwise(p, dt)
        elif p.kind == "op" and p.inputs and (p.op.reduction or p.op.unbroadcast):
            joined = self._add_reduction(p)
        if joined is not None and joined.id > d:
            d = joined.id
        self.dep[id(p)] = d

    def _add_elementwise(self, p, dt):
        ins = p.inputs
        sunk = [q for q in ins if id(q) in self.sinks and compute_dtype(q) == dt] \
            if self.sinks else ()
        if sunk:                # read through: the consumer takes the comparison's inputs
            ins = [x for q in ins for x in (q.inputs if q in sunk else (q,))]
        broadcast = p.op.broadcasting
        used = ins[:1] if broadcast else ins
        joined = self._join(tuple(p.shape), dt, used)
        if joined is None:
            return None
        for q in sunk:
            joined.members.append(q)
            joined.nops += 1
            self.region_of[id(q)] = joined
        joined.members.append(p)
        if not broadcast:
            joined.nops += 1
        self.region_of[id(p)] = joined
        return joined

    def _join(self, shape, dt, used):
        """The region a step of ``shape`` and ``dt`` reading ``used`` joins: the regions of its
        inputs merged, one of them alone, or a new one; ``None`` when an input cannot be read."""
        region_get, reduced = self.region_of.get, self.reduced
        cand = []
        for q in used:
            r = region_get(id(q))
            if r is None or id(q) in reduced:
                continue
            r = find(r)
            if r.shape == shape and r.dtype == dt and r not in cand:
                cand.append(r)
        for q in used:
            if not (_input_ok(q, dt) or (id(q) in self.region_of and id(q) not in reduced)):
                return None
        for group in ([cand] if len(cand) <= 1 else [cand] + [[c] for c in cand]):
            if not group:
                break
            root_ = self._merge(group, dt, used)
            if root_ is not None:
                return root_
        if not all([_input_ok(q, dt) for q in used]):
            return None
        dep_get = self.dep.get
        r = Region(len(self.all), shape, dt)
        r.ext = max([dep_get(id(q), -1) for q in used], default=-1)
        self.all.append(r)
        return r

    def _merge(self, group, dt, used):
        """``group``'s regions merged into one (its first), when the convexity rule allows a step
        reading ``used`` to join them all; else ``None``."""
        if len(group) == 1:
            lo = group[0].id
            if not group[0].ext < lo:
                return None
        else:
            lo = min([c.id for c in group])
            if not all([c.ext < lo for c in group]):
                return None
            if len({c.red for c in group if c.red is not None}) > 1:
                return None         # one reduction geometry per kernel
        ext = self._outside_dep(group, dt, used, lo)
        if ext is None:
            return None
        root_ = group[0]
        for c in group[1:]:
            c.parent = root_
            root_.members.extend(c.members)
            root_.nops += c.nops
            if c.red is not None:
                root_.red = c.red
            c.members = []
        root_.id = lo
        root_.ext = max([ext] + [c.ext for c in group])
        return root_

    def _outside_dep(self, group, dt, used, lo):
        """The largest dep among the inputs in ``used`` from outside ``group``, or ``None`` when
        one cannot be a kernel input or depends on a region not below ``lo``."""
        region_get, dep_get = self.region_of.get, self.dep.get
        ext = -1
        for q in used:
            r = region_get(id(q))
            if r is not None:
                r = find(r)
                if r in group and id(q) not in self.reduced:
                    continue
            if not _input_ok(q, dt):
                return None
            e = dep_get(id(q), -1)
            if r is not None and r.id > e:
                e = r.id
            if e >= lo:
                return None
            if e > ext:
                ext = e
        return ext

    def _add_reduction(self, p):
        """A trailing reduction of a member joins its region as a reduced output."""
        x = p.inputs[0]
        r = self.region_of.get(id(x))
        if r is None or id(x) in self.reduced:
            return None
        r = find(r)
        spec = reduce_spec(p, r.shape) if tuple(x.shape) == r.shape else None
        if not (spec is not None and p.dtype == r.dtype and known(p.shape)
                and (r.red is None or r.red == spec[1:])):
            return None
        if p.op.unbroadcast:        # the shape operand must not depend on the region
            q = p.inputs[1]
            if not (id(q) not in self.pos or (self.dep.get(id(q), -1) < r.id
                                              and id(q) not in self.region_of)):
                return None
        r.red = spec[1:]
        r.members.append(p)
        r.nops += 1
        self.region_of[id(p)] = r
        self.reduced.add(id(p))
        return r


def grow(order, outputs) -> Regions:
    """The regions of the plan steps ``order`` (topological) whose results ``outputs`` leave it."""
    regions = Regions(order, outputs)
    for p in order:
        regions.add(p)
    return regions
