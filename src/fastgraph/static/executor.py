"""The executor: a compiled plan as a flat list of steps over preallocated buffers.

Small plans become one generated Python function (locals for values, constants and functions
bound as globals; a few hundred ns per step less than a loop); large plans run a tight loop over
step tuples (generating code costs ~20 us per line).  Either way a run reads the feeds and the
variables, computes every step, *then* commits all variable updates (all-or-nothing), and returns
the fetched values -- copies where a value could alias a feed, a variable, a constant or a buffer.
"""
from __future__ import annotations

import operator
import threading

import numpy as np

from .._core.config import fp_errors_may_raise
from .._core.random_state import running_over
from .dot import plan_to_dot
from .errors import FailedPreconditionError, InvalidArgumentError
from .passes.buffers import is_fresh_step, live_order, ufunc_of
from .plan import known

__all__ = ["Plan", "UNINIT", "CODEGEN_MAX_STEPS"]

CODEGEN_MAX_STEPS = 300


class _Uninit:
    def __repr__(self):
        return "<uninitialized>"


UNINIT = _Uninit()
_NATIVE = {np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_)}
_VIEW_KINDS = ("feed", "var", "const")


def _to_native(v):
    t = type(v)
    if t is float or t is int or t is bool:
        return v
    return v.item()


def _to_scalar(v):
    return v[()] if type(v) is np.ndarray else v


def _copy(v):
    return np.array(v) if isinstance(v, np.ndarray) else v


def _generic_out(v):
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return v.item() if v.dtype in _NATIVE else v[()]
        return v
    if isinstance(v, np.generic):
        return v.item() if v.dtype in _NATIVE else v
    return v


def _generic_out_copy(v):
    return _generic_out(_copy(v))


def _numpy_scalar(v):
    """A 0-d value as a NumPy scalar (Python numbers from inlined 0-d arithmetic included)."""
    t = type(v)
    if t is np.ndarray:
        return v[()]
    if t is float:
        return np.float64(v)
    if t is bool:
        return np.bool_(v)
    if t is int:
        return np.int64(v)
    return v


def _generic_out_numpy(v):
    return _numpy_scalar(v) if not isinstance(v, np.ndarray) or v.ndim == 0 else v


def _generic_out_numpy_copy(v):
    return _generic_out_numpy(_copy(v))


def may_alias_storage(p) -> bool:
    """Whether step ``p``'s value may be (a view of) an array the plan or its caller holds: a
    feed, a variable, a constant, a planned buffer, or whatever a non-fresh step returns."""
    return p.kind in _VIEW_KINDS or p.kind == "assign" or (
        p.kind in ("op", "call", "proj") and not is_fresh_step(p)) or p.buf >= 0


def _out_converter(p, native: bool = True):
    """How to hand ``p``'s value to the user: a ``Session`` gives 0-d float64/int64/bool
    results as Python numbers (``native``), ``fg.function`` as NumPy scalars, as NumPy, eager
    mode and ``jax.jit`` do (so a result fed back into the function keeps its dtype)."""
    may_alias = may_alias_storage(p)
    if not native:
        if known(p.shape) and len(p.shape) == 0 and p.dtype is not None:
            return _numpy_scalar
        return _generic_out_numpy_copy if may_alias else _generic_out_numpy
    if known(p.shape) and len(p.shape) == 0 and p.dtype is not None:
        return _to_native if p.dtype in _NATIVE else _to_scalar
    return _generic_out_copy if may_alias else _generic_out


def _commit_converter(p, fetched=()):
    """How to store ``p``'s value in the variable store: a copy whenever the array may be held
    elsewhere (a feed, a constant, a buffer, a result handed to the caller), so the store's
    arrays are private -- the ``inplace`` pass overwrites them."""
    if p.kind in _VIEW_KINDS or p.kind == "assign" or (
            p.kind in ("op", "call", "proj") and not is_fresh_step(p)) or p.buf >= 0 or (
            id(p) in fetched):
        return _copy
    return None


# 0-d float steps whose Python operator is exactly NumPy's scalar arithmetic (operands are
# NumPy scalars or weak Python scalars), emitted inline by the code generator
#: an op's Python operator (its ``operator`` field) -> the expression a 0-d step is inlined as
_INLINE = {operator.add: "{0} + {1}", operator.sub: "{0} - {1}", operator.mul: "{0} * {1}",
           operator.truediv: "{0} / {1}", operator.neg: "-{0}"}


def _scalar_step(p) -> bool:
    if p.buf >= 0 or p.attrs or p.shape != () or p.dtype is None or p.dtype.kind != "f":
        return False
    strong = False
    for q in p.inputs:
        if q.shape != () or q.dtype is None or q.dtype.kind != "f":
            return False
        if not q.weak:
            strong = True
    return strong   # at least one NumPy scalar operand, so the result is a NumPy scalar


class Plan:
    """One compiled (fetches, feed signature): ``run(feed_values, store) -> list``.

    Runs take turns: a plan that reads or writes variables holds ``state_lock`` (the lock of
    the store it runs over, shared by every plan of a Session) for the whole run, so updates
    from any plans of one Session are atomic read-modify-writes and a run never reads a
    variable that another run is half-way through updating in place; any other plan holds a
    lock of its own (its runs share its buffers)."""

    def __init__(self, ir, ctx, graph, native_scalars: bool = True, state_lock=None,
                 raw_outputs: bool = False):
        self.native_scalars = native_scalars
        # raw_outputs: the fetched values as the steps left them, no copy, no conversion (a
        # loop body's plan, whose runner copies what it keeps: see ``output_may_alias``)
        self.raw_outputs = raw_outputs
        self.ir = ir
        self.ctx = ctx
        order = live_order(ir)
        self.order = order
        for p in order:
            if p.kind == "placeholder":
                shape = "<unknown>" if p.shape is None else tuple(p.shape)
                raise InvalidArgumentError(
                    f"You must feed a value for placeholder {p.name!r} with dtype {p.dtype} and "
                    f"shape {shape}", p.node)
        specs = getattr(ir, "buffer_specs", [])
        self.buffers = [np.empty(s, d) for s, d in specs]
        for p in order:     # fused multi-output kernels write their outputs' planned buffers
            if p.kind == "call" and hasattr(p.fn, "bind"):
                p.fn = p.fn.bind(self.buffers)
        # each variable is committed once: of several assigns to it in one run, the one built
        # last wins (build order, not the plan's topological order, which fetch order changes)
        self.commits = {}
        for p in order:
            if p.kind == "assign":
                cur = self.commits.get(p.var_index)
                if cur is None or _built_id(p) > _built_id(cur):
                    self.commits[p.var_index] = p
        self.var_reads = sorted({p.var_index for p in order if p.kind == "var"})
        self.max_var = max([p.var_index for p in order if p.kind in ("var", "assign")],
                           default=-1)
        self.n_steps = sum(1 for p in order if p.kind not in ("const",))
        self.outputs = ir.outputs
        self.output_may_alias = [o is not None and may_alias_storage(o) for o in ir.outputs]
        self.graph = graph
        self._uninit_names = {p.var_index: p.name for p in order if p.kind == "var"}
        # NumPy raises a floating-point error (under np.errstate(...="raise") or warnings
        # turned into errors) only after writing out=: a plan with an in-place NumPy step then
        # writes every in-place update into a fresh array instead, so an error leaves the
        # variables (and donated arguments) as they were.  Fused kernels never raise.
        self._guard_inplace = any(p.inplace is not None and p.kind == "op" for p in order)
        touches_state = any(p.kind in ("var", "assign") or p.inplace is not None for p in order)
        self._lock = state_lock if touches_state and state_lock is not None \
            else threading.Lock()
        if len(order) <= CODEGEN_MAX_STEPS:
            self.run = self._codegen()
        else:
            self.run = self._loop()
        if _large_allocations(order):
            self.run = _with_cached_allocator(self.run)
        if any(p.kind == "op" and p.op.stateful for p in order):
            self.run = _with_random_streams(self.run)

    def _uninit(self, idx):
        raise FailedPreconditionError(
            f"Attempting to use uninitialized value {self._uninit_names[idx]!r} (run its "
            f"initializer, e.g. fg.global_variables_initializer(), first)",
            None)

    # ---- generated code ----------------------------------------------------------------------
    def _codegen(self):
        ns = {"U": UNINIT, "_uninit": self._uninit, "_strict": fp_errors_may_raise}
        names = {}
        lines = ["def _plan_run(F, S):"]
        if self._guard_inplace:
            lines.append("    T = _strict()")
        k = 0
        for p in self.order:
            k += 1
            kind = p.kind
            if kind == "const":
                nm = f"c{k}"
                ns[nm] = p.value
                names[id(p)] = nm
                continue
            nm = f"v{k}"
            names[id(p)] = nm
            if kind == "feed":
                lines.append(f"    {nm} = F[{p.index}]")
            elif kind == "var":
                lines.append(f"    {nm} = S[{p.var_index}]")
                lines.append(f"    if {nm} is U: _uninit({p.var_index})")
            elif kind == "op" and p.op.operator in _INLINE and _scalar_step(p):
                args = [names[id(q)] for q in p.inputs]
                lines.append(f"    {nm} = {_INLINE[p.op.operator].format(*args)}")
            elif kind in ("op", "call"):
                fn = f"f{k}"
                ns[fn] = p.fn if kind == "call" else (ufunc_of(p) if p.buf >= 0
                                                      else p.op.forward)
                args = [names[id(q)] for q in p.inputs]
                if p.attrs:
                    for j, (a, val) in enumerate(p.attrs.items()):
                        an = f"a{k}_{j}"
                        ns[an] = val
                        args.append(f"{a}={an}")
                if p.buf >= 0:
                    ns[f"b{p.buf}"] = self.buffers[p.buf]
                    args.append(f"out=b{p.buf}")
                elif p.inplace is not None:
                    v = names[id(p.inplace)]
                    args.append(f"out=(None if T else {v})" if self._guard_inplace
                                else f"out={v}")
                lines.append(f"    {nm} = {fn}({', '.join(args)})")
            elif kind == "proj":
                lines.append(f"    {nm} = {names[id(p.inputs[0])]}[{p.index}]")
            elif kind == "assign":
                lines.append(f"    {nm} = {names[id(p.inputs[0])]}")
            elif kind == "group":
                lines.append(f"    {nm} = None")
            else:
                raise AssertionError(kind)
        fetched = self._fetched()
        for idx, p in self.commits.items():
            conv = _commit_converter(p.inputs[0], fetched)
            src = names[id(p)]
            if conv is not None:
                ns[f"cc{idx}"] = conv
                src = f"cc{idx}({src})"
            lines.append(f"    S[{idx}] = {src}")
        outs = []
        for j, o in enumerate(self.outputs):
            if o is None or o.kind == "group" or (o.kind == "assign" and o.node.is_operation):
                outs.append("None")
                continue
            if self.raw_outputs:
                outs.append(names[id(o)])
                continue
            ns[f"o{j}"] = _out_converter(o, self.native_scalars)
            outs.append(f"o{j}({names[id(o)]})")
        lines.append(f"    return [{', '.join(outs)}]")
        # one run at a time (see the class docstring; NumPy and BLAS release the GIL mid-run)
        ns["L"] = self._lock
        lines = [lines[0], "    with L:"] + ["    " + line for line in lines[1:]]
        self.source = "\n".join(lines)
        exec(compile(self.source, "<fastgraph plan>", "exec"), ns)
        return ns["_plan_run"]

    # ---- loop executor ---------------------------------------------------------------------
    def _loop(self):
        slot = {}
        template = []
        feeds = []
        reads = []
        steps = []
        for p in self.order:
            s = slot[id(p)] = len(template)
            kind = p.kind
            if kind == "const":
                template.append(p.value)
                continue
            template.append(None)
            if kind == "feed":
                feeds.append((p.index, s))
            elif kind == "var":
                reads.append((p.var_index, s))
            elif kind in ("op", "call"):
                kw = dict(p.attrs) if p.attrs else {}
                if p.buf >= 0:
                    kw["out"] = self.buffers[p.buf]
                f = p.fn if kind == "call" else (ufunc_of(p) if p.buf >= 0 else p.op.forward)
                ins = tuple(slot[id(q)] for q in p.inputs)
                if p.inplace is not None:   # out= the variable's array, read at run time
                    steps.append((f, ins, s, kw, -1 - slot[id(p.inplace)]))
                else:
                    steps.append((f, ins, s, kw, len(ins)))
            elif kind == "proj":
                steps.append((_proj(p.index), (slot[id(p.inputs[0])],), s, {}, 1))
            elif kind == "assign":
                steps.append((_ident, (slot[id(p.inputs[0])],), s, {}, 1))
        fetched = self._fetched()
        commits = [(idx, slot[id(p)], _commit_converter(p.inputs[0], fetched))
                   for idx, p in self.commits.items()]
        outs = []
        for o in self.outputs:
            if o is None or o.kind == "group" or (o.kind == "assign" and o.node.is_operation):
                outs.append((-1, None))
            else:
                outs.append((slot[id(o)], _ident if self.raw_outputs
                             else _out_converter(o, self.native_scalars)))
        uninit = self._uninit
        lock = self._lock     # one run at a time (see the class docstring)

        def run(F, S):
            with lock:
                return unlocked_run(F, S)

        guard = self._guard_inplace

        def unlocked_run(F, S):
            strict = guard and fp_errors_may_raise()
            R = template[:]
            for k, s in feeds:
                R[s] = F[k]
            for idx, s in reads:
                v = S[idx]
                if v is UNINIT:
                    uninit(idx)
                R[s] = v
            # n: the number of inputs, or -1 - the slot of the array an in-place step writes
            for f, ins, o, kw, n in steps:
                if n == 2:
                    R[o] = f(R[ins[0]], R[ins[1]], **kw)
                elif n == 1:
                    R[o] = f(R[ins[0]], **kw)
                elif n < 0:
                    R[o] = f(*[R[i] for i in ins], out=None if strict else R[-1 - n], **kw)
                else:
                    R[o] = f(*[R[i] for i in ins], **kw)
            for idx, s, conv in commits:
                S[idx] = R[s] if conv is None else conv(R[s])
            return [None if s < 0 else conv(R[s]) for s, conv in outs]

        return run

    def _fetched(self) -> set:
        return {id(o) for o in self.outputs if o is not None}

    # ---- explain ---------------------------------------------------------------------------
    def explain_dot(self) -> str:
        """The plan's steps as Graphviz DOT text (fused kernels as boxes)."""
        return plan_to_dot(self)

    def explain(self) -> str:
        lines = []
        for name, entries in self.ctx.log.items():
            lines.append(f"[{name}]")
            lines.extend("  " + (e() if callable(e) else e) for e in entries)
        lines.append(f"[plan] {self.n_steps} step(s), "
                     f"{'generated code' if len(self.order) <= CODEGEN_MAX_STEPS else 'loop'}")
        n_projs: dict = {}     # multi-output calls: how many outputs the plan reads
        for p in self.order:
            if p.kind == "proj":
                n_projs[id(p.inputs[0])] = n_projs.get(id(p.inputs[0]), 0) + 1
        for p in self.order:
            shape = "?" if p.shape is None else tuple(p.shape)
            ins = ", ".join(q.name for q in p.inputs)
            if p.kind == "const":
                desc = f"const {_short(p.value)}" + (" (folded)" if p.note == "folded" else "")
            elif p.kind in ("op",):
                desc = f"{p.op.name}({ins})"
            elif p.kind == "call":
                fname = getattr(p.fn, "name", None) or getattr(p.fn, "__name__", "call")
                desc = f"{fname}({ins})" + (f" [{p.note}]" if p.note else "")
            elif p.kind == "assign":
                desc = f"assign {p.node.value.name} <- {p.inputs[0].name}"
            else:
                desc = f"{p.kind}({ins})" if ins else p.kind
            buf = f" -> buffer {p.buf}" if p.buf >= 0 else (
                f" -> in place into {p.inplace.name}" if p.inplace is not None else "")
            if p.shape is None and p.dtype is None and id(p) in n_projs:
                lines.append(f"  {p.name} = {desc}  {n_projs[id(p)]} output(s), read below")
            else:
                lines.append(f"  {p.name} = {desc}  shape={shape} dtype={p.dtype}{buf}")
        for p in self.order:    # a control-flow step's bodies: each a plan of its own
            if p.kind == "op" and p.attrs:
                for v in p.attrs.values():
                    for body in (v if isinstance(v, tuple) else (v,)):
                        if hasattr(body, "explain_lines"):
                            lines.extend(body.explain_lines())
        if self.buffers:
            lines.append("[buffers]")
            for i, b in enumerate(self.buffers):
                lines.append(f"  buffer {i}: shape={b.shape} dtype={b.dtype}")
        return "\n".join(lines)


#: plans whose steps may allocate arrays of at least this many bytes run with the caching allocator
LARGE_BYTES = 1 << 20


def _large_allocations(order) -> bool:
    for p in order:
        if p.kind == "call" and p.n_outputs > 1:
            continue            # its projections carry the outputs' shapes
        if p.kind in ("op", "call", "proj") and p.buf < 0:
            if not known(p.shape):
                return True
            n = 1
            for d in p.shape:
                n *= d
            if n * (p.dtype.itemsize if p.dtype is not None else 8) >= LARGE_BYTES:
                return True
    return False


def _built_id(p) -> int:
    """When ``p``'s graph node was built (its index in the graph)."""
    return -1 if p.node is None else p.node.id


def _with_cached_allocator(run):
    """Run the plan with :mod:`fastgraph.kernels.alloc`'s caching handler installed: arrays it creates
    (results handed to the caller included) take and return already-mapped large blocks, so a
    steady state has no page faults.  Without the extension the plan runs as it is."""
    try:
        from ..kernels.alloc import enter, exit as leave
    except ImportError:  # pragma: no cover - extension not built
        return run

    def cached_run(F, S):
        tok = enter()
        try:
            return run(F, S)
        finally:
            leave(tok)
    return cached_run


def _with_random_streams(run):
    """Run the plan with its store as the one random draws take their generators from
    (:mod:`fastgraph._core.random_state`): each Session draws its own sequences."""
    def random_run(F, S):
        with running_over(S):
            return run(F, S)
    return random_run


def _short(v):
    s = np.array2string(np.asarray(v), threshold=6)
    return s if len(s) < 60 else s[:57] + "..."


def _ident(v):
    return v


def _proj(k):
    def f(v):
        return v[k]
    return f
