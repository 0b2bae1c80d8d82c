"""``fuse``: groups of elementwise steps become one fused kernel (:mod:`fastgraph.fused`).

Regions are grown greedily in topological order, in time linear in the graph size:

* a *member* is an ``op`` step whose op is elementwise with a VM opcode (arithmetic,
  transcendentals, comparisons, ``where``, ``clip``), or a broadcast that the kernel's own
  broadcasting makes free (``broadcast_like``/``broadcast_to``), with a known shape; every
  elementwise member of a region has the region's shape (its iteration space) and computes in the
  region's dtype (float32 or float64; comparisons are 0/1 inside the kernel);
* a trailing reduction (``sum``/``mean``/``max``/``min`` over all or some axes, and ``sum_to_like``
  when it is one) of a member joins the region as a *reduced output*, so ``sum(f(x))`` never
  materialises ``f(x)``; all reduced outputs of a region share axes and keepdims;
* outputs: every member used outside the region, fetched, or committed to a variable;
* **convexity**: no path may leave a region and come back.  Each region gets an id (regions made
  later get larger ids; merged regions keep the smallest); ``dep[n]`` is the largest id of a region
  that ``n`` depends on.  A node may join (or merge) regions only if every outside input it (or
  they) read has ``dep`` below the smallest id involved.  Conservative (it can refuse a legal
  fusion, never allows a cycle) and O(1) per edge with union-find.

Each region worth it (see :func:`_worth`) becomes one ``call`` step running a ``FusedKernel``
compiled here, once; its outputs are read through ``proj`` steps (a single-output region's call is
the value itself).  Fused steps are *fresh* (never views), so the buffer planner writes
intermediates into planned buffers (``out=``) and fetched values are handed out uncopied.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ... import ops as F
from ..plan import PNode, known, resolve, users_of

#: force fusion of every candidate region (tests compare fused and unfused plans on tiny inputs)
ALWAYS = False

# cost model, microseconds (measured on the 2-core development VM, see docs/fusion.md): a plain
# NumPy step costs STEP + n * ELEM_NUMPY per op; a fused kernel CALL + n * ELEM_VM per op
STEP_US = 0.8
CALL_US = 1.5  # the VM's C fast path (was ~9 us before it existed)
# a kernel with a broadcast input takes the VM's general path, ~50 us more (float32 (128, 256) +
# (256,): 64 us fused vs 25 us for two NumPy ufuncs) -- unless every input is the full shape, a
# scalar, a row repeated on every row (a bias) or one value per row (see _bcast_modes): those
# take the VM's C broadcast path at CALL_US (bias + relu, float32 (128, 256): 11 us fused vs
# 26 us for NumPy's add and maximum)
BROADCAST_CALL_US = 50.0
# per element and op, per byte of the dtype (float32 (128, 256), 1 thread: two NumPy ufuncs 25 us,
# the same two ops fused 9.5 us)
ELEM_NUMPY_US = 0.1e-3
ELEM_VM_US = 0.04e-3

_F = (np.dtype(np.float32), np.dtype(np.float64))
_BOOL = np.dtype(np.bool_)


class _Region:
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


def _find(r):
    root = r
    while root.parent is not None:
        root = root.parent
    while r.parent is not None:      # path compression
        nxt = r.parent
        r.parent = root
        r = nxt
    return root


def _vm_ops():
    from ...fused.opcodes import BY_NAME
    return BY_NAME


def _compute_dtype(p, vm):
    """The float dtype member ``p`` computes in, or ``None`` when ``p`` cannot be fused."""
    if p.kind != "op" or p.attrs and not p.op.broadcasting:
        return None
    op = p.op
    if not known(p.shape):
        return None
    if op.broadcasting:
        return p.dtype if p.dtype in _F and p.inputs[0].dtype == p.dtype else None
    if not op.elementwise or op.opcode not in vm:
        return None
    if op.stride0_operand is not None and not _power_exponent_ok(p.inputs[op.stride0_operand]):
        return None
    if op.compares:
        dts = [q.dtype for q in p.inputs if not _weak(q)]
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


def _weak(q) -> bool:
    return q.weak or _weak_feed(q)


def _root(q):
    """``q`` seen through the broadcasts the kernel makes free (what a kernel reads)."""
    while q.kind == "op" and q.op.broadcasting:
        q = q.inputs[0]
    return q


def _power_exponent_ok(q) -> bool:
    """Whether ``power(x, q)`` computes NumPy's bits in a kernel.  NumPy's float power loop
    special-cases an exponent of stride 0 (``sqrt`` for 0.5, ``x*x`` for 2, ``1/x`` for -1:
    ``_POWER_FAST`` in ``fused/compiler.py``), which a plan's ``np.power`` step sees for any
    exponent of one element, or broadcast from one.  A constant exponent is fine (the compiler
    rewrites the special values, see ``_power_exponent``); a computed or fed one of a single
    element is not (its value is known only at run time, and the VM calls the loop with
    stride-1 registers): that ``power`` stays a NumPy step."""
    q = _root(q)
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


def _reduce_spec(p, x_shape):
    """``(kind, axes, keepdims)`` of a reduction step over a member of shape ``x_shape``."""
    kind = p.op.reduction
    nd = len(x_shape)
    if kind is not None:
        a = p.attrs or {}
        axis = a.get("axis")
        keep = bool(a.get("keepdims", False))
        if set(a) - {"axis", "keepdims"}:
            return None
        if axis is None:
            axes = tuple(range(nd))
        else:
            axs = axis if isinstance(axis, tuple) else (axis,)
            try:
                axes = tuple(sorted({int(ax) % nd for ax in axs})) if nd else None
            except ZeroDivisionError:
                return None
            if axes is None or len(axes) != len(axs):
                return None
        if not axes or not _trailing(axes, nd):
            return None
        return kind, axes, keep
    if p.op.unbroadcast:
        ts = p.shape
        lead = nd - len(ts)
        if lead < 0:
            return None
        axes = list(range(lead))
        ones = [lead + j for j, n in enumerate(ts) if n == 1 and x_shape[lead + j] != 1]
        if lead and ones:
            return None
        if any(n != 1 and n != x_shape[lead + j] for j, n in enumerate(ts)):
            return None
        axes = tuple(axes) if lead else tuple(ones)
        if not axes or not _trailing(axes, nd):
            return None
        return "sum", axes, not lead
    return None


def _trailing(axes, nd) -> bool:
    """Whether ``axes`` are the innermost ones. The VM reduces those along contiguous rows; over
    leading axes (a bias gradient summing a batch) it gathers with strides and loses to NumPy
    (measured: float32 (128, 256) summed over axis 0, 213 us fused vs 18 us for NumPy)."""
    return tuple(axes) == tuple(range(nd - len(axes), nd))


_SOURCES = ("const", "feed", "var")


def _sinks(order, outputs, vm) -> set:
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
    cmps = [p for p in order if p.kind == "op" and (
        p.op.compares or (not p.op.broadcasting and p.inputs
                              and all(q.kind in _SOURCES for q in p.inputs)))]
    if not cmps:
        return set()        # the common case: no users map to build
    users = users_of(order)
    out_ids = {id(o) for o in outputs if o is not None}
    sinks = set()
    for p in cmps:
        if id(p) in out_ids:
            continue
        us = users.get(id(p), ())
        if len(us) != 1 or _compute_dtype(p, vm) is None:
            continue
        u = us[0]
        if (u.kind == "op" and not u.op.broadcasting and not u.op.compares
                and _compute_dtype(u, vm) == _compute_dtype(p, vm)
                and tuple(u.shape) == tuple(p.shape)):
            sinks.add(id(p))
    return sinks


def _kernel_shape(q):
    """The shape ``q`` has as a kernel operand (a scalar constant is a kernel constant: ``()``)."""
    return np.shape(q.value) if q.kind == "const" else q.shape


def _bcast_modes(shapes, shape):
    """``(cols, modes)`` for the VM's C broadcast path (``FusedKernel.broadcast_call``) when
    every operand shape is the full ``shape`` (``F``), one element (``S``), its trailing dims
    repeated on every row (``R``) or its leading dims with one value per row (``C``), all rows of
    one length ``cols``; ``None`` otherwise (or for an unknown shape)."""
    nd = len(shape)
    n = prod(shape)
    cols = None
    modes = []
    for s in shapes:
        if s is None or None in s or len(s) > nd:
            return None
        s = tuple(s)
        size = prod(s)
        if size == n:
            modes.append("F")
            continue
        if size == 1:
            modes.append("S")
            continue
        pad = (1,) * (nd - len(s)) + s
        c = None
        k = 0
        while k < nd and pad[k] == 1:
            k += 1
        if pad[k:] == tuple(shape[k:]):
            c, m = prod(shape[k:]), "R"
        else:
            k = nd
            while k > 0 and pad[k - 1] == 1:
                k -= 1
            if pad[:k] == tuple(shape[:k]):
                c, m = prod(shape[k:]), "C"
        if c is None or (cols is not None and c != cols):
            return None
        cols = c
        modes.append(m)
    return (cols if cols is not None else (shape[-1] if nd else 1)), "".join(modes)


def _worth(reg) -> bool:
    if reg.nops == 0:
        return False
    if ALWAYS:
        return True
    shape = reg.shape
    if len(shape) == 0:
        return False          # 0-d: the plan's inline scalar path is faster
    n = prod(shape)
    if n == 0:
        return False
    k = reg.nops
    if k == 1 and reg.red is None:
        # one op: a ufunc with out= is as good, unless the VM's own kernel is much faster
        op = next(m for m in reg.members if not m.op.broadcasting).op
        if op.cheap or not op.fuse_alone:
            return False
    members = {id(m) for m in reg.members}
    outside = {}        # id -> step: each outside input once (a constant read 1000s of times)
    broadcast = False
    for m in reg.members:
        for q in m.inputs:
            if q.repl is not None:
                q = resolve(q)
            if id(q) not in members and id(q) not in outside:
                outside[id(q)] = q
                if q.shape is not None and tuple(q.shape) != shape:
                    broadcast = True
    broadcast = broadcast and _bcast_modes([_kernel_shape(q) for q in outside.values()],
                                           shape) is None
    size = np.dtype(reg.dtype).itemsize if reg.dtype is not None else 8
    saved = k * STEP_US + n * k * size * ELEM_NUMPY_US
    cost = (BROADCAST_CALL_US if broadcast else CALL_US) + n * k * size * ELEM_VM_US
    return saved > cost


#: elements x work units (``fused.opcodes.work_units``: one ``add`` = 1, a vectorised tanh = 6)
#: above which a kernel is worth several threads even on a short array: ~1 ms of work, so the
#: OpenMP fork/join (microseconds; more when the machine is oversubscribed) is noise.
PARALLEL_WORK = 1 << 20
#: kernels on fewer elements than this run on one thread unless they are heavy per element
PARALLEL_MIN = 1 << 18


def _work(reg) -> int:
    """Estimated work per element of a region, in ``add``-equivalents."""
    from ...fused.opcodes import BY_NAME, work_units
    return sum(work_units(m.op.opcode) for m in reg.members if m.op.opcode in BY_NAME)


def _geometry(n: int, work: int) -> dict:
    """Block size and single-thread threshold of a region of ``n`` elements doing ``work``
    add-equivalents per element.  The VM's defaults (1024-element blocks, one thread
    below 32k elements) suit short programs; a long program on a short array (bench_compile: 10,000
    ops on 1,000 elements) has enough work per element to split into a few smaller blocks and use
    the threads.  Blocks never depend on the thread count, so results do not either."""
    from ...fused import DEFAULT_BLOCK
    if n >= PARALLEL_MIN:
        return {}
    if n < 256 or n * work < PARALLEL_WORK:
        # one thread: no OpenMP fork/join, and no spinning OpenMP workers left to compete with
        # the BLAS threads of a following matmul (that costs milliseconds on 2 shared cores)
        return {"threshold": PARALLEL_MIN}
    block = max(128, ((-(-n // 4)) + 63) // 64 * 64)
    return {"block": min(block, DEFAULT_BLOCK), "threshold": n}


#: small, light regions (at most this many elements and this much work in add-equivalents)
#: evaluate transcendentals with NumPy's own inner loops (the VM's "ufunc" strategy): there the
#: VM's vectorised versions save next to nothing, and the fused plan then computes exactly what
#: the unfused one does (softmax's exp in a cross-entropy gradient, float32 (128, 10)).  A long
#: program on a short array keeps the vectorised kernels: NumPy's float64 tanh is ~10x slower
#: here (bench_compile, 10,000 ops on 1,000 elements: 28 ms with NumPy's loops, 7 ms without).
EXACT_MAX = 4096
EXACT_WORK = 1 << 16


def _strategy(n: int, work: int) -> dict:
    if n > EXACT_MAX or n * work > EXACT_WORK:
        return {}
    return {"strategy": "ufunc"}


#: ops whose NumPy forward runs BLAS or LAPACK (OpenBLAS's threaded routines; ``np.einsum``
#: without ``optimize=`` does not): their declarations' ``blas`` field
BLAS_OPS = frozenset(name for name, op in F.REGISTRY.items() if op.blas is not None)
#: OpenBLAS computes a product of up to this many multiply-adds (M*N*K) on the calling thread;
#: larger ones go to its own worker threads
BLAS_THREADED_MNK = 1 << 18
#: fused kernels of a plan that runs threaded BLAS stay on one thread (``_runs_threaded_blas``)
#: unless they have more work than this (elements x work units: 2M elements of tanh * sigmoid):
#: a worker that waits out a spinning BLAS thread's time slice (milliseconds) still pays for
#: itself on such kernels, and on many cores each of them does.  The flag is a switch for
#: benchmarks and tests.
BLAS_PLANS_ONE_THREAD = True
BLAS_HOLD_WORK = 1 << 25
_ONE_THREAD = 1 << 62           # a single-thread threshold no kernel reaches


def _matmul_mnk(p):
    """Multiply-adds of a ``matmul`` step, or ``None`` when a shape is unknown."""
    a, b = p.inputs
    if not (known(a.shape) and known(b.shape) and known(p.shape)) or not a.shape:
        return None
    return prod(p.shape) * int(a.shape[-1])


def _runs_threaded_blas(order) -> bool:
    """Does the plan call BLAS/LAPACK on products big enough for OpenBLAS's own threads?

    After each such call those threads keep spinning for ~0.1 s, waiting for more work, and an
    OpenMP team started meanwhile gets no more than the one core the plan runs on: measured on 2
    cores, a plan ``tanh(a @ b) * sigmoid(c) + 0.5 * c`` ran its kernel no faster on 2 threads
    than on 1 from 0.26M to 16.8M elements (1.48 against 0.81 ms at 0.26M; 58.4 against 56.1 ms
    at 16.8M), while the same kernel took half the time on 2 threads once OpenBLAS's threads had
    gone to sleep.  So such plans keep their kernels on one thread (``BLAS_PLANS_ONE_THREAD``),
    up to ``BLAS_HOLD_WORK``: from 4.2M elements on, 1 and 2 threads came out even."""
    for p in order:
        if p.kind == "call" and getattr(p.fn, "threaded_blas", False):
            return True     # the ``blas`` pass's calls
        if p.kind != "op" or p.op.blas is None:
            continue
        if p.op.blas == "product":
            mnk = _matmul_mnk(p)
            if mnk is not None and mnk <= BLAS_THREADED_MNK:
                continue
        return True
    return False


def _kernel_settings(reg, blas: bool = False) -> tuple[dict, bool]:
    """``compile_kernel`` settings for a region (geometry and transcendental strategy), and
    whether ``blas`` (the plan runs threaded BLAS) kept a kernel that would use the threads on
    one thread -- same blocks, so the same results."""
    from ...fused import DEFAULT_THRESHOLD
    n = prod(reg.shape)
    work = _work(reg)
    geometry = _geometry(n, work)
    held = (blas and n >= geometry.get("threshold", DEFAULT_THRESHOLD)
            and n * work < BLAS_HOLD_WORK)
    if held:
        geometry["threshold"] = _ONE_THREAD
    return {**geometry, **_strategy(n, work)}, held


def fuse(ir, ctx) -> None:
    from ...fused import Expr, compile_kernel
    from ..plan import live_order
    vm = _vm_ops()
    order = live_order(ir)      # dead nodes (left by simplify) must not join regions
    blas = BLAS_PLANS_ONE_THREAD and _runs_threaded_blas(order)
    pos = {id(p): i for i, p in enumerate(order)}
    region_of: dict = {}        # id(PNode) -> _Region (member), via _find
    is_red: set = set()         # ids of reduced-output members
    dep: dict = {}              # id(PNode) -> dep (the largest region id it depends on)
    regions: list = []
    next_id = 0
    sinks = _sinks(order, ir.outputs, vm)
    dep_get = dep.get
    region_get = region_of.get

    # This loop runs once per step (10,000 times for bench_compile's graph), so the common
    # cases are spelt out: one candidate region, inputs of the region's own dtype.
    for p in order:
        ins = p.inputs
        d = -1
        for q in ins:
            e = dep_get(id(q), -1)
            if e > d:
                d = e
        if sinks and id(p) in sinks:    # joins its consumer's region (below), or a plain op
            dep[id(p)] = d
            continue
        dt = _compute_dtype(p, vm) if p.kind == "op" else None
        joined = None
        sunk = [q for q in ins if id(q) in sinks and _compute_dtype(q, vm) == dt] if sinks else ()
        if sunk:                # read through: the consumer takes the comparison's inputs
            ins = [x for q in ins for x in (q.inputs if q in sunk else (q,))]
        if dt is not None:
            broadcast = p.op.broadcasting
            shape = tuple(p.shape)
            used_ins = ins[:1] if broadcast else ins
            cand = []
            for q in used_ins:
                r = region_get(id(q))
                if r is None or id(q) in is_red:
                    continue
                r = _find(r)
                if r.shape == shape and r.dtype == dt and r not in cand:
                    cand.append(r)
            inputs_ok = True
            for q in used_ins:
                if not (_input_ok(q, dt) or (id(q) in region_of and id(q) not in is_red)):
                    inputs_ok = False
                    break
            if inputs_ok:
                for group in ([cand] if len(cand) <= 1 else [cand] + [[c] for c in cand]):
                    if not group:
                        break
                    if len(group) == 1:
                        lo = group[0].id
                        ok = group[0].ext < lo
                    else:
                        lo = min([c.id for c in group])
                        ok = all([c.ext < lo for c in group])
                        reds = {c.red for c in group if c.red is not None}
                        if len(reds) > 1:       # one reduction geometry per kernel
                            ok = False
                    ext = -1
                    if ok:
                        for q in used_ins:
                            r = region_get(id(q))
                            if r is not None:
                                r = _find(r)
                                if r in group and id(q) not in is_red:
                                    continue
                            if not _input_ok(q, dt):
                                ok = False
                                break
                            e = dep_get(id(q), -1)
                            if r is not None and r.id > e:
                                e = r.id
                            if e >= lo:
                                ok = False
                                break
                            if e > ext:
                                ext = e
                    if ok:
                        root = group[0]
                        for c in group[1:]:
                            c.parent = root
                            root.members.extend(c.members)
                            root.nops += c.nops
                            if c.red is not None:
                                root.red = c.red
                            c.members = []
                        root.id = lo
                        for c in group:
                            if c.ext > ext:
                                ext = c.ext
                        root.ext = ext
                        joined = root
                        break
                if joined is None and all([_input_ok(q, dt) for q in used_ins]):
                    ext = -1
                    for q in used_ins:
                        e = dep_get(id(q), -1)
                        if e > ext:
                            ext = e
                    joined = _Region(next_id, shape, dt)
                    next_id += 1
                    joined.ext = ext
                    regions.append(joined)
            if joined is not None:
                for q in sunk:
                    joined.members.append(q)
                    joined.nops += 1
                    region_of[id(q)] = joined
                joined.members.append(p)
                if not broadcast:
                    joined.nops += 1
                region_of[id(p)] = joined
        elif p.kind == "op" and p.inputs and (p.op.reduction or p.op.unbroadcast):
            # a trailing reduction of a member joins its region as a reduced output
            x = p.inputs[0]
            r = region_get(id(x))
            if r is not None and id(x) not in is_red:
                r = _find(r)
                spec = _reduce_spec(p, r.shape) if tuple(x.shape) == r.shape else None
                ok = (spec is not None and p.dtype == r.dtype and known(p.shape)
                      and (r.red is None or r.red == spec[1:]))
                if ok and p.op.unbroadcast:
                    q = p.inputs[1]
                    ok = id(q) not in pos or (dep_get(id(q), -1) < r.id and id(q) not in region_of)
                if ok:
                    r.red = spec[1:]
                    r.members.append(p)
                    r.nops += 1
                    region_of[id(p)] = r
                    is_red.add(id(p))
                    joined = r
        if joined is not None and joined.id > d:
            d = joined.id
        dep[id(p)] = d

    live = [_find(r) for r in regions if r.parent is None and r.members]
    live = [r for r in live if _worth(r)]
    if not live:
        ctx.note("fuse", "0 kernel(s)")
        return
    fused_ids = {}
    for r in live:
        for m in r.members:
            fused_ids[id(m)] = r
    # uses outside each region
    outside_used = set()
    for p in order:
        rp = fused_ids.get(id(p))
        for q in p.inputs:
            rq = fused_ids.get(id(q))
            if rq is not None and rq is not rp:
                outside_used.add(id(q))
    for o in ir.outputs:
        if o is not None:
            outside_used.add(id(o))

    new_nodes = []
    bool_src: dict = {}
    n_ops_total = 0
    for k, r in enumerate(live):
        members = r.members
        members.sort(key=lambda m: pos[id(m)])
        exprs: dict = {}
        inputs: list = []
        force = False

        def new_input(q):
            nonlocal force
            j = len(inputs)
            inputs.append(q)
            if q.dtype != r.dtype:
                force = True
            return Expr.input(j)

        def power_exponent(q):
            """The exponent of a ``power`` member.  NumPy takes its fast paths (``sqrt`` for
            0.5, ...) for an exponent of stride 0 -- one element or a zero-stride broadcast --
            and ``pow`` for any other array, even one holding 0.5 everywhere: a constant of the
            first kind is a kernel constant, rounded to the kernel dtype as NumPy casts it (a
            float32 ``x ** 0.5000000001`` is ``sqrt``), which the compiler rewrites; any other
            array is an input, computed with ``pow``."""
            q0 = _root(q)
            if q0.kind == "const":
                v = q0.value
                if isinstance(v, np.ndarray) and v.size != 1 and not (
                        v.size and all(st == 0 for st in v.strides)):
                    e = exprs.get(id(q))
                    return e if e is not None and e.kind == "input" else new_input(q)
                v = np.asarray(v).reshape(-1)[:1].astype(r.dtype)[0]
                return Expr.const(v)
            return exprs.get(id(q)) or leaf(q)

        def leaf(q):
            e = exprs.get(id(q))
            if e is not None:
                return e
            if q.kind == "const":
                v = q.value
                if type(v) is float or type(v) is int or type(v) is bool or (
                        np.ndim(v) == 0 and np.asarray(v).dtype.kind in "biuf"):
                    e = exprs[id(q)] = Expr.const(v)
                    return e
                if _splat(v):   # a folded broadcast of one value (a gradient seed)
                    e = exprs[id(q)] = Expr.const(v.flat[0])
                    return e
            e = exprs[id(q)] = new_input(q)
            return e

        outs = []
        specs = []
        for m in members:
            if m.op.broadcasting or id(m) in is_red:
                e = leaf(m.inputs[0])
            else:
                # most operands are earlier members: their expression is already made (an
                # exponent NumPy's loop special-cases, power's, is read as a constant if it is)
                k0 = m.op.stride0_operand
                args = [power_exponent(q) if j == k0 else (exprs.get(id(q)) or leaf(q))
                        for j, q in enumerate(m.inputs)]
                opcode = m.op.opcode
                e = _peephole(opcode, args) or Expr.op(opcode, *args)
            exprs[id(m)] = e
            if id(m) in outside_used:
                outs.append(m)
                if id(m) in is_red:
                    kind = "sum" if m.op.unbroadcast else m.op.reduction
                    axes = None if r.red[0] == tuple(range(len(r.shape))) else r.red[0]
                    specs.append((kind, axes, r.red[1]))
                else:
                    specs.append(None)
        if not outs:
            continue
        shapes = [np.shape(q.value) if q.weak else q.shape for q in inputs]   # (weak feeds: ())
        if any(not known(sh) for sh in shapes):
            for m in members:
                fused_ids.pop(id(m), None)
            continue
        try:
            bshape = np.broadcast_shapes(*shapes) if shapes else ()
        except ValueError:
            bshape = None
        if bshape != r.shape:
            # the broadcasts inside span a larger space than the inputs: a zero-stride input
            # of the region's shape sets the kernel's iteration space
            dummy = PNode("const", None, None, (), None, r.shape, r.dtype,
                          value=np.broadcast_to(np.zeros((), r.dtype), r.shape),
                          name=f"fused_{k}_shape")
            new_nodes.append((dummy, []))
            inputs.append(dummy)
        kname = f"fused_{k}"
        settings, held = _kernel_settings(r, blas)
        kern = compile_kernel([exprs[id(m)] for m in outs],
                              reduce=specs if any(s is not None for s in specs) else None,
                              nin=len(inputs), name=kname, **settings)
        ops = [m.op.name for m in members if not m.op.broadcasting]
        n_ops_total += len(ops)
        dt = r.dtype
        call = PNode("call", None, None, inputs, None, outs[0].shape, outs[0].dtype,
                     name=kname)
        call.fresh = True
        call.n_outputs = len(outs)
        call.note = f"{len(ops)} op(s): {' '.join(ops)}"
        if held:
            call.note += ", one thread (the plan runs threaded BLAS)"
        bc = _bcast_modes([_kernel_shape(q) for q in inputs],
                          r.shape) if len(r.shape) and kern.elementwise else None
        fk = kern
        if bc is not None and set(bc[1]) != {"F"}:
            fk = kern.broadcast_call(r.shape, bc[0], bc[1])
            call.note += f", broadcast {bc[1]} over rows of {bc[0]}"
        if len(outs) == 1:
            call.fn = fk if not force else _Forced(fk, dt)
            targets = [call]
        else:
            projs = []
            for j, m in enumerate(outs):
                pj = PNode("proj", None, None, [call], None, m.shape,
                           dt if m.dtype == _BOOL else m.dtype, name=f"{kname}:{j}")
                pj.index = j
                pj.fresh = True
                projs.append(pj)
            call.fn = _Multi(fk, projs, dt, force)
            call.shape = None
            call.dtype = None
            targets = projs
        new_nodes.append((call, targets))
        for m, t in zip(outs, targets):
            if m.dtype == _BOOL:   # comparisons are 0/1 floats in the kernel
                c = PNode("op", None, F.astype.op, [t], {"dtype": _BOOL}, m.shape,
                          _BOOL, name=m.name)
                t2 = c
                bool_src[id(c)] = t
                new_nodes.append((c, []))
                if t is call:
                    call.dtype = dt
            else:
                t2 = t
                if t is call:
                    call.name = m.name if len(members) == 1 else kname
            m.repl = t2
        for m in members:
            if m.repl is None:
                m.repl = call       # dead inside the kernel; nobody outside reads it
        ctx.note("fuse", kern.describe)
    # a comparison computed by one kernel and read by another: pass the 0/1 floats on directly
    # (the reading kernel, which had a bool input, always runs with an explicit dtype)
    for c, _ in new_nodes:
        if c.kind == "call":
            c.inputs = [bool_src.get(id(resolve(q)), q) for q in c.inputs]
    _rebuild(ir, fused_ids, new_nodes)
    ctx.note("fuse", f"{len(new_nodes) and sum(1 for c, t in new_nodes if c.kind == 'call')} "
                     f"kernel(s) replacing {n_ops_total} op(s)")


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


def _rebuild(ir, fused_ids, new_nodes):
    """New order: drop members, add calls/projs/casts, re-sort topologically (projs right after
    their call, so the buffer planner sees the kernel's outputs written where they appear)."""
    from ..._core.toposort import toposort
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
