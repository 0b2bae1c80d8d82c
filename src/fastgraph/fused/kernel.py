"""Compiler from an elementwise expression DAG to a register program, and :class:`FusedKernel`.

>>> from fastgraph.fused import Expr, compile_kernel
>>> x, y = Expr.input(0), Expr.input(1)
>>> t = Expr.op("tanh", Expr.op("multiply", x, y))
>>> k = compile_kernel(outputs=[t, Expr.op("exp", x)])
>>> out1, out2 = k(a, b)                      # doctest: +SKIP

The compiler hash-conses the DAG (common subexpressions become one instruction), applies a few
peepholes (``add(multiply(a, b), c)`` -> ``fma``, ``subtract(c, multiply(a, b))`` -> ``nfma``,
``multiply(a, greater(b, c))`` -> ``mul_greater``, ``power(x, c)`` -> ``square``/``sqrt``/
``reciprocal``/``copy`` for the exponents NumPy special-cases), allocates
block-length registers with a linear scan (a register is reused once its value is dead; a result
never shares a register with its own operands), and hands the program to the Cython VM in
:mod:`fastgraph.kernels.vm`.  The VM is described in ``docs/fusion.md``.
"""
from __future__ import annotations

import operator
import os
from typing import Optional, Sequence

import numpy as np

from . import opcodes as _op

__all__ = ["Expr", "compile_kernel", "FusedKernel", "BroadcastCall", "DEFAULT_BLOCK",
           "DEFAULT_THRESHOLD"]

#: elements per block (per register); 1024 float64 = 8 KiB, so a dozen live registers stay in L2.
DEFAULT_BLOCK = 1024
#: below this many elements a kernel runs on one thread (no OpenMP fork/join).
DEFAULT_THRESHOLD = 32768

_BY_NAME = _op.BY_NAME

# how the general path turns an input into an operand: as it is, cast, or copied (C order)
_SAME, _CAST, _COPY = 0, 1, 2
#: geometries kept per kernel (one per operand signature; a plan sees one)
_GEO_CACHE = 16
_MISS = object()


class _Geometry:
    """What ``FusedKernel.__call__``'s general path derives from the operands' shapes, strides
    and dtypes alone (see ``_geometry_key``), kept so a repeated call skips it."""
    __slots__ = ("dt", "f64", "conv", "shape", "red_shape", "out_shapes", "red_out", "cin",
                 "cout", "cshape", "R", "red_codes", "no_defer", "same")

    def __init__(self, dt, conv, shape, red_shape, red_out, cin, cout, cshape, R, red_codes,
                 same):
        self.dt, self.conv, self.shape, self.red_shape = dt, conv, shape, red_shape
        self.f64 = dt == np.float64
        self.out_shapes = [red_shape if r else shape for r in red_out]
        self.red_out, self.cin, self.cout, self.cshape = red_out, cin, cout, cshape
        self.R, self.same = R, same
        # (Program.run takes these as C int arrays: made once here, not per call)
        self.red_codes = np.array(red_codes, dtype=np.intc)
        self.no_defer = np.zeros(len(red_out), dtype=np.intc)


def _geometry_key(inputs, out, dtype):
    """The operand signature a cached geometry is valid for: every input an ndarray or a NumPy
    scalar (as the 0-d array it becomes), every output an ndarray, by shape, strides and dtype
    (``None``: not cacheable -- Python scalars, which promote weakly, lists, other types)."""
    for x in inputs:
        if type(x) is not np.ndarray and not isinstance(x, np.generic):
            return None
    if out is None:
        outsig = None
    else:
        outs = (out,) if type(out) is np.ndarray else out
        if type(outs) not in (tuple, list):
            return None
        for o in outs:
            if type(o) is not np.ndarray:
                return None
        outsig = tuple([(o.shape, o.strides, o.dtype) for o in outs])
    return (dtype, tuple([(x.shape, x.strides if type(x) is np.ndarray else (), x.dtype)
                          for x in inputs]), outsig)
_MODES = {"c": 0, "vec": 1, "ufunc": 2}
_STRATEGIES = ("auto", "libm", "vec", "ufunc")
_RED_CODES = {None: 0, "sum": 1, "mean": 2, "max": 3, "min": 4}
_NPY_MAXDIMS = 64


def _vm():
    from ..kernels import vm  # compiled extension (required; no Python fallback)
    return vm


_NT_FN = None


def _nt_fn():
    """The default-thread-count function, looked up once (``fastgraph.get_num_threads`` when
    the package provides it, else ``os.cpu_count``). Importing it on every call cost ~3 us."""
    global _NT_FN
    f = _NT_FN
    if f is None:
        try:
            from fastgraph._core.config import get_num_threads as f
        except ImportError:
            def f():
                return os.cpu_count() or 1
        _NT_FN = f
    return f


def default_num_threads() -> int:
    """``fastgraph.get_num_threads()`` when the package provides it, else ``os.cpu_count()``."""
    return int((_NT_FN or _nt_fn())())


def _thread_count(num_threads) -> int:
    """``num_threads`` as an int: an integer (Python or NumPy; not a bool) or a TypeError naming
    it -- ``int()`` would take ``2.5`` or ``"2"`` silently."""
    if type(num_threads) is bool or not isinstance(num_threads, (int, np.integer)):
        raise TypeError(f"num_threads must be an integer or None, got {num_threads!r} "
                        f"({type(num_threads).__name__})")
    return int(num_threads)


def _threads(num_threads) -> int:
    if num_threads is None:
        nt = default_num_threads()
    else:
        nt = num_threads if type(num_threads) is int else _thread_count(num_threads)
        if nt < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    # more threads than this only adds scratch memory and fork/join cost
    return min(nt, _MAX_THREADS)


_MAX_THREADS = max(64, 4 * (os.cpu_count() or 1))

#: the most inputs a kernel takes.  Each input owns a block register (8 KiB per thread at the
#: default block) and the VM numbers registers with C ints; a kernel's ``nin`` also sizes lists
#: at compile time, so ``Expr.input(10**9)`` would otherwise exhaust memory.  65536 inputs are
#: already 512 MiB of registers per thread -- far beyond any fused region.
MAX_INPUTS = 1 << 16


# ------------------------------------------------------------------------------------------------
# expressions
# ------------------------------------------------------------------------------------------------
class Expr:
    """A node of an elementwise expression DAG: an input (by position), a constant, or an op.

    Build with :meth:`input`, :meth:`const`, :meth:`op` (or the arithmetic operators). Python
    numbers given where an ``Expr`` is expected become constants.
    """

    __slots__ = ("kind", "name", "args", "index", "value")
    __array_ufunc__ = None     # np.float64(2) * expr -> Expr.__rmul__, not an object array

    def __init__(self, kind, name=None, args=(), index=None, value=None):
        self.kind = kind          # "input" | "const" | "op"
        self.name = name          # opcode name for ops
        self.args = tuple(args)
        self.index = index        # input position
        self.value = value        # constant value (float)

    @staticmethod
    def input(index: int) -> "Expr":
        try:
            index = operator.index(index)       # (int() would truncate 2.5 to input 2)
        except TypeError:
            raise TypeError(f"input index must be an integer, got {index!r}") from None
        if not 0 <= index < MAX_INPUTS:
            raise ValueError(f"input index must be in [0, {MAX_INPUTS}), got {index} "
                             f"(a kernel takes at most MAX_INPUTS = {MAX_INPUTS} inputs)")
        return Expr("input", index=index)

    @staticmethod
    def const(value) -> "Expr":
        v = np.asarray(value)
        if v.ndim != 0 or v.dtype.kind not in "biuf":
            raise TypeError(f"a fused-kernel constant must be a real scalar, got {value!r}")
        return Expr("const", value=float(v))

    @staticmethod
    def op(name: str, *args) -> "Expr":
        # the fuse pass makes one of these per fused op (10,000 for bench_compile's graph):
        # known names and Expr operands take the short way
        spec = _BY_NAME.get(name) or _op.opcode(name)   # opcode() raises, naming the known ops
        if len(args) != spec.arity:
            raise TypeError(f"fused op {name!r} takes {spec.arity} operand(s), got {len(args)}")
        return Expr("op", name, tuple([a if type(a) is Expr else _as_expr(a) for a in args]))

    # conveniences
    def __add__(self, o): return Expr.op("add", self, o)
    def __radd__(self, o): return Expr.op("add", o, self)
    def __sub__(self, o): return Expr.op("subtract", self, o)
    def __rsub__(self, o): return Expr.op("subtract", o, self)
    def __mul__(self, o): return Expr.op("multiply", self, o)
    def __rmul__(self, o): return Expr.op("multiply", o, self)
    def __truediv__(self, o): return Expr.op("divide", self, o)
    def __rtruediv__(self, o): return Expr.op("divide", o, self)
    def __pow__(self, o): return Expr.op("power", self, o)
    def __neg__(self): return Expr.op("negative", self)

    def __repr__(self):
        if self.kind == "input":
            return f"in{self.index}"
        if self.kind == "const":
            return repr(self.value)
        return f"{self.name}({', '.join(map(repr, self.args))})"


def _broadcast_shapes(shapes):
    """NumPy broadcasting of shapes (any rank up to 64); ``None`` when they do not broadcast."""
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        pad = nd - len(s)
        for j, n in enumerate(s):
            o = out[pad + j]
            if n != o:
                if o == 1:
                    out[pad + j] = n
                elif n != 1:
                    return None
    return tuple(out)


def _as_expr(a) -> Expr:
    if isinstance(a, Expr):
        return a
    if isinstance(a, (int, float, np.integer, np.floating, bool, np.bool_)):
        return Expr.const(a)
    raise TypeError(f"expected an Expr or a real number, got {type(a).__name__}")


# ------------------------------------------------------------------------------------------------
# compiler
# ------------------------------------------------------------------------------------------------
class _Node:
    """Hash-consed node used while compiling."""
    __slots__ = ("cid", "kind", "name", "args", "index", "value", "uses")

    def __init__(self, cid, kind, name, args, index, value):
        self.cid, self.kind, self.name, self.args = cid, kind, name, args
        self.index, self.value, self.uses = index, value, 0


#: ``power(x, c)`` for the constant exponents NumPy's power loop special-cases.  NumPy 2's
#: float power loop, given an exponent of stride 0 (a scalar, as a plan passes a constant), runs
#: ``-1 -> 1/x``, ``0 -> 1``, ``0.5 -> sqrt(x)``, ``1 -> x``, ``2 -> x*x`` instead of ``pow``;
#: these differ from ``pow`` in the last bit of ~1 element in 1000 and at special values
#: (``sqrt(-inf)`` is NaN where ``pow(-inf, 0.5)`` is inf; ``sqrt(-0.0)`` is -0.0).  The kernel
#: computes the same ops, so it gives NumPy's bits.  (``0`` needs no rewrite: ``pow(x, 0)`` is 1
#: for every x, NaN included.)  Keys compare as floats: ``-0.0``/``0`` and ``2``/``2.0`` hit.
_POWER_FAST = {-1.0: "reciprocal", 0.5: "sqrt", 1.0: "copy", 2.0: "square"}


def _canonicalise(outputs: Sequence[Expr]):
    """Iterative post-order walk with hash-consing. Returns (nodes in topo order, output nodes).

    An op is finished when its operands are: a chain (the usual shape) is walked once, and a
    node whose operands are pending is revisited after them (no recursion, any depth)."""
    table: dict = {}
    nodes: list[_Node] = []
    canon: dict[int, _Node] = {}   # id(Expr) -> node
    get = canon.get

    # (one step per expression of a 10,000-op kernel: the lookups and keys are spelt out)
    for root in outputs:
        stack = [root]
        while stack:
            e = stack[-1]
            eid = id(e)
            if eid in canon:
                stack.pop()
                continue
            kind = e.kind
            if kind == "op":
                eargs = e.args
                args = [get(id(a)) for a in eargs]
                if None in args:
                    pending = [a for a, n in zip(eargs, args) if n is None]
                    pending.reverse()
                    stack.extend(pending)
                    continue
                name = e.name
                if name == "power" and args[1].kind == "const":
                    fast = _POWER_FAST.get(args[1].value)
                    if fast is not None:
                        name, args = fast, args[:1]
                if len(args) == 1:
                    key = (name, args[0].cid)
                elif len(args) == 2:
                    key = (name, args[0].cid, args[1].cid)
                else:
                    key = (name, *[a.cid for a in args])
                n = table.get(key)
                if n is None:
                    n = table[key] = _Node(len(nodes), "op", name, tuple(args), None, None)
                    nodes.append(n)
            else:
                if kind == "input":
                    key = ("in", e.index)
                else:   # the key tells -0.0 from 0.0 and gives every NaN one key
                    key = ("c", float(e.value).hex())
                n = table.get(key)
                if n is None:
                    n = table[key] = _Node(len(nodes), kind, None, (), e.index, e.value)
                    nodes.append(n)
            canon[eid] = n
            stack.pop()
    return nodes, [canon[id(e)] for e in outputs]


def _fuse_pairs(nodes, outs):
    """add(multiply(a, b), c) -> fma(a, b, c) and subtract(c, multiply(a, b)) -> nfma(a, b, c)
    when the product has no other use, multiply(a, greater(b, c)) -> mul_greater(a, b, c) when
    the mask has none (relu's gradient): one pass instead of two, the same roundings."""
    used = {}
    for n in nodes:
        for a in n.args:
            used[a.cid] = used.get(a.cid, 0) + 1
    out_ids = {o.cid for o in outs}

    def single_use(m, name):
        """``m`` is op ``name`` and only its one consumer reads it (not an output)."""
        return (m.kind == "op" and m.name == name and used.get(m.cid, 0) == 1
                and m.cid not in out_ids)

    for n in nodes:
        if n.kind != "op":
            continue
        if n.name == "add":
            for i in (0, 1):
                m = n.args[i]
                if single_use(m, "multiply"):
                    n.name = "fma"
                    n.args = (m.args[0], m.args[1], n.args[1 - i])
                    used[m.cid] = 0
                    break
        elif n.name == "subtract" and single_use(n.args[1], "multiply"):
            m = n.args[1]
            n.name = "nfma"
            n.args = (m.args[0], m.args[1], n.args[0])
            used[m.cid] = 0
        elif n.name == "multiply":
            for i in (0, 1):
                m = n.args[i]
                if single_use(m, "greater"):
                    n.name = "mul_greater"
                    n.args = (n.args[1 - i], m.args[0], m.args[1])
                    used[m.cid] = 0
                    break
    # drop nodes nobody needs any more (the folded multiplies)
    live = set(o.cid for o in outs)
    for n in reversed(nodes):
        if n.cid in live:
            for a in n.args:
                live.add(a.cid)
    return [n for n in nodes if n.cid in live]


def _normalise_reduce(reduce, nout):
    """-> list (per output) of None or (kind, axes or None, keepdims)."""
    def one(spec):
        if spec is None:
            return None
        if isinstance(spec, str):
            spec = (spec, None)
        if not isinstance(spec, (tuple, list)) or not 1 <= len(spec) <= 3:
            raise ValueError(f"reduce spec must be (kind, axes[, keepdims]), got {spec!r}")
        kind = spec[0]
        axes = spec[1] if len(spec) > 1 else None
        keep = bool(spec[2]) if len(spec) > 2 else False
        if kind not in _op.REDUCTIONS:
            raise ValueError(f"unknown reduction {kind!r}; expected one of {_op.REDUCTIONS}")
        if axes is not None:
            if isinstance(axes, (int, np.integer)):
                axes = (int(axes),)
            axes = tuple(int(a) for a in axes)
        return (kind, axes, keep)

    if reduce is None:
        return [None] * nout
    if isinstance(reduce, list):
        if len(reduce) != nout:
            raise ValueError(f"reduce has {len(reduce)} entries for {nout} outputs")
        specs = [one(s) for s in reduce]
    else:
        specs = [one(reduce)] * nout
    shapes = {(s[1], s[2]) for s in specs if s is not None}
    if len(shapes) > 1:
        raise ValueError("all reduced outputs of one kernel must reduce the same axes "
                         f"with the same keepdims, got {sorted(shapes, key=repr)}")
    return specs


def compile_kernel(outputs, reduce=None, *, nin: Optional[int] = None, strategy: str = "auto",
                   block: int = DEFAULT_BLOCK, threshold: int = DEFAULT_THRESHOLD,
                   stream_min: Optional[int] = None,
                   name: Optional[str] = None) -> "FusedKernel":
    """Compile expressions into one fused kernel with one or more outputs.

    ``outputs``: an ``Expr`` or a sequence of them.  ``reduce``: ``None``; ``(kind, axes)`` or
    ``(kind, axes, keepdims)`` applied to every output (``kind`` in ``sum mean max min``,
    ``axes`` ``None`` for all axes, an int or a tuple); or a list with one such spec (or ``None``
    for an elementwise output) per output — reduced outputs must share axes and keepdims.
    ``nin``: number of inputs the kernel takes (default: highest input index + 1).
    ``strategy``: how transcendentals run — ``"auto"`` (the table's choice), ``"libm"`` (plain C
    loops), ``"vec"`` (fastgraph's vectorised kernels where they exist), ``"ufunc"`` (NumPy's inner
    loops where they exist).  ``block``: elements per block; ``threshold``: below this many
    elements the kernel runs on one thread.  ``stream_min``: contiguous outputs with at least
    this many elements are written with non-temporal stores (``None``: never).
    """
    if isinstance(outputs, Expr):
        outputs = [outputs]
    outputs = [_as_expr(o) for o in outputs]
    if not outputs:
        raise ValueError("compile_kernel needs at least one output")
    if strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}")
    block = int(block)
    vm = _vm()
    if block < 16 or block > vm.MAX_BLOCK:
        raise ValueError(f"block must be in 16..{vm.MAX_BLOCK}, got {block}")
    specs = _normalise_reduce(reduce, len(outputs))

    nodes, outs = _canonicalise(outputs)
    nodes = _fuse_pairs(nodes, outs)
    max_in = max((n.index for n in nodes if n.kind == "input"), default=-1)
    if nin is None:
        nin = max_in + 1
    else:
        try:
            nin = operator.index(nin)
        except TypeError:
            raise TypeError(f"nin must be an integer, got {nin!r}") from None
        if nin <= max_in:
            raise ValueError(f"nin={nin} but the expressions read input {max_in}")
        if nin > MAX_INPUTS:
            raise ValueError(f"nin={nin} exceeds MAX_INPUTS = {MAX_INPUTS}")

    # --- register allocation -----------------------------------------------------------------
    nregs = 0
    free: list[int] = []
    reg: dict[int, int] = {}
    in_reg = [-1] * nin
    const_reg, const_val = [], []
    pinned: set[int] = set()          # registers never reused

    def fresh():
        nonlocal nregs
        nregs += 1
        return nregs - 1

    for n in nodes:
        if n.kind == "input":
            reg[n.cid] = in_reg[n.index] = fresh()
            pinned.add(reg[n.cid])
        elif n.kind == "const":
            reg[n.cid] = fresh()
            pinned.add(reg[n.cid])
            const_reg.append(reg[n.cid])
            const_val.append(n.value)

    last_use: dict[int, int] = {}
    ops = [n for n in nodes if n.kind == "op"]
    for i, n in enumerate(ops):
        for a in n.args:
            last_use[a.cid] = i
    # an op output that is also a kernel output keeps its register (written to memory)
    out_owner: dict[int, int] = {}
    for k, o in enumerate(outs):
        if o.kind == "op" and o.cid not in out_owner:
            out_owner[o.cid] = k

    code: list[tuple] = []
    listing: list[tuple] = []
    modes: dict = {}              # op name -> (opcode, evaluation mode), looked up once per name
    for i, n in enumerate(ops):
        if n.cid in out_owner:
            # a fresh register: it may point straight into the output array, which should not
            # also serve as scratch for earlier temporaries
            dst = fresh()
            pinned.add(dst)
        else:
            dst = free.pop() if free else fresh()
        reg[n.cid] = dst
        cm = modes.get(n.name)
        if cm is None:
            spec = _op.BY_NAME[n.name]
            cm = modes[n.name] = (spec.code, _mode_for(spec, strategy, vm))
        opc, mode = cm
        args = n.args
        src = [reg[a.cid] for a in args]
        code.append((opc, mode, dst, *src, *_PAD[len(src)]))
        listing.append((n.name, mode, dst, src))
        for j, a in enumerate(args):
            if last_use[a.cid] == i and (j == 0 or a not in args[:j]):
                r = reg[a.cid]
                if r not in pinned:
                    free.append(r)
        if last_use.get(n.cid) is None and dst not in pinned:
            free.append(dst)  # dead result (cannot happen for live nodes; defensive)

    out_reg = []
    copy = _op.BY_NAME["copy"]
    for k, o in enumerate(outs):
        if o.kind == "op" and out_owner[o.cid] == k:
            out_reg.append(reg[o.cid])
        else:  # an input, a constant, or a value already owned by another output
            dst = fresh()
            pinned.add(dst)
            code.append((copy.code, 0, dst, reg[o.cid], -1, -1))
            listing.append(("copy", 0, dst, [reg[o.cid]]))
            out_reg.append(dst)

    prog = vm.Program(np.array(code, dtype=np.intc).reshape(-1, 6), nregs, in_reg, out_reg,
                      const_reg, np.array(const_val, dtype=np.float64))
    return FusedKernel(prog, nin, len(outs), specs, block, threshold, strategy,
                       dict(nregs=nregs, in_reg=in_reg, out_reg=out_reg,
                            consts=dict(zip(const_reg, const_val)), listing=listing),
                       name or "fused", stream_min)


_PAD = ((-1, -1, -1), (-1, -1), (-1,), ())   # unused source slots of a 6-field instruction


def _mode_for(spec, strategy, vm):
    if strategy == "libm":
        return 0
    if strategy == "vec":
        return 1 if vm.vm_has_vec(spec.name) else 0
    if strategy == "ufunc":
        return 2 if (spec.ufunc is not None or spec.name in ("sigmoid", "softplus")) else 0
    if spec.eval == "vec" and not vm.vm_has_vec(spec.name):
        return 0
    return _MODES[spec.eval]


# ------------------------------------------------------------------------------------------------
# the callable kernel
# ------------------------------------------------------------------------------------------------
class FusedKernel:
    """A compiled fused elementwise kernel. Call it like a function of its inputs.

    ``k(*inputs, out=None, num_threads=None, dtype=None)`` returns the output array (one output)
    or a tuple of arrays (several outputs).  Inputs broadcast like NumPy; the kernel dtype is
    float32 when every input is float32 (or ``dtype=`` says so), else float64 (NumPy promotion,
    integers and bools become float64).  ``out=`` takes preallocated arrays (one per output, exact
    shape and dtype, writeable): nothing is allocated then.  A reduced output with all axes
    reduced and ``keepdims=False`` is a 0-d array.

    ``k.call_flat(inputs, outs, num_threads=None)`` is the **lean entry point** for callers that
    validated their operands once (a compiled plan): ``inputs`` a tuple/list of ``nin``
    ndarrays, ``outs`` a tuple/list of ``nout`` ndarrays, all C-contiguous, aligned, native byte
    order, one dtype (float64 or float32, that of ``outs[0]``), each exactly ``outs[0].size``
    elements (shapes are not compared; nothing broadcasts), outputs writeable and disjoint from
    each other; an output may *be* an input (same data pointer: in place) but not partially
    overlap one.  It converts, broadcasts and allocates nothing and returns ``None``; a violated
    contract raises ``TypeError``/``ValueError`` (cheap C checks, never a silent fallback).
    Elementwise kernels only (a kernel with a reduction raises ``TypeError``).  Per-thread
    register scratch is cached on the kernel; concurrent calls from several Python threads are
    safe (a second concurrent call uses its own scratch).
    """

    def __init__(self, prog, nin, nout, specs, block, threshold, strategy, info, name,
                 stream_min=None):
        self._prog = prog
        self.nin = nin
        self.nout = nout
        self.reduce = specs
        self.block = block
        self.threshold = threshold
        self.strategy = strategy
        self._info = info
        self.name = name
        red = [s for s in specs if s is not None]
        self._red_axes = red[0][1] if red else None
        self._keepdims = red[0][2] if red else False
        self._has_red = bool(red)
        self._stream = -1 if stream_min is None else int(stream_min)
        prog.configure(block, threshold, self._stream, _nt_fn(), _MAX_THREADS)
        # C-level fast path of __call__ (elementwise kernels only; None -> general path)
        self._fast = prog.fast_call if not self._has_red else None
        # iteration geometry of the general path, per operand signature (see _run_cached)
        self._geo = {}
        #: ``call_flat(inputs, outs, num_threads=None)``: the lean entry point for pre-validated
        #: operands (see the class docstring); a bound C method, no Python frame in between.
        self.call_flat = prog.run_contiguous if not self._has_red else self._no_flat
        #: elementwise (no reduction): an output may be one of the inputs (in place)
        self.elementwise = not self._has_red

    @property
    def nregs(self) -> int:
        return self._info["nregs"]

    def describe(self) -> str:
        """A readable listing of the register program."""
        mode_name = {0: "", 1: "  [vec]", 2: "  [numpy loop]"}
        inf = self._info
        lines = [f"fused kernel {self.name!r}: {self.nin} input(s), {self.nout} output(s), "
                 f"{len(inf['listing'])} instruction(s), {inf['nregs']} block registers "
                 f"(block={self.block}, strategy={self.strategy})"]
        for i, r in enumerate(inf["in_reg"]):
            lines.append(f"  r{r:<3} <- in{i}" if r >= 0 else f"  (in{i} unused)")
        for r, v in inf["consts"].items():
            lines.append(f"  r{r:<3} <- const {v!r}")
        for name, mode, dst, srcs in inf["listing"]:
            args = ", ".join(f"r{s}" for s in srcs)
            lines.append(f"  r{dst:<3} = {name}({args}){mode_name[mode]}")
        for k, r in enumerate(inf["out_reg"]):
            spec = self.reduce[k]
            red = "" if spec is None else (
                f"  ({spec[0]} over {'all axes' if spec[1] is None else 'axes ' + str(spec[1])}"
                f"{', keepdims' if spec[2] else ''})")
            lines.append(f"  out{k} <- r{r}{red}")
        return "\n".join(lines)

    __str__ = describe

    def __repr__(self):
        return f"<FusedKernel {self.name!r}: {self.nin} in, {self.nout} out, {self.nregs} regs>"

    # -- calling --------------------------------------------------------------------------------
    def _no_flat(self, inputs, outs, num_threads=None):
        raise TypeError(f"fused kernel {self.name!r} has a reduction; call_flat takes "
                        "elementwise kernels only (call the kernel instead)")

    def __call__(self, *inputs, out=None, num_threads=None, dtype=None):
        # the C fast path computes in the inputs' own (common) dtype: fine when none is forced,
        # or when the forced one is already theirs
        if self._fast is not None and (dtype is None or (
                inputs and type(inputs[0]) is np.ndarray and inputs[0].dtype == dtype)):
            res = self._fast(inputs, out, num_threads)
            if res is not None:
                return res
        if len(inputs) != self.nin:
            raise TypeError(f"fused kernel {self.name!r} takes {self.nin} input(s), "
                            f"got {len(inputs)}")
        conv = _weak_scalars(self, inputs, dtype)
        if conv is not None:
            return self(*conv, out=out, num_threads=num_threads, dtype=dtype)
        key = _geometry_key(inputs, out, dtype)
        if key is not None:
            geo = self._geo.get(key)
            if geo is not None:
                res = self._run_cached(geo, inputs, out, num_threads)
                if res is not _MISS:
                    return res
        dt = self._dtype(inputs, dtype)
        arrs = []
        conv = []
        for i, x in enumerate(inputs):
            a = np.asarray(x)
            if a.dtype.kind not in "biuf":
                raise TypeError(f"fused kernel input {i} has unsupported dtype {a.dtype} "
                                "(need bool, integer or floating)")
            if a.ndim > _NPY_MAXDIMS:
                raise ValueError(f"input {i} has too many dimensions ({a.ndim})")
            kind = _SAME if a.dtype == dt else _CAST
            a = np.asarray(a, dtype=dt)
            if not a.flags.aligned or any(s % dt.itemsize for s in a.strides):
                if not a.flags.aligned:
                    key = None          # (the data pointer, not the signature, asked for it)
                a = np.array(a, dtype=dt, order="C", copy=True)
                kind = _COPY
            arrs.append(a)
            conv.append(kind)
        shape = _broadcast_shapes([a.shape for a in arrs])
        if shape is None:
            raise ValueError(
                f"fused kernel {self.name!r}: input shapes "
                f"{', '.join(str(a.shape) for a in arrs)} cannot be broadcast together")
        nd = len(shape)

        # reduction geometry
        if self._has_red:
            axes = self._red_axes
            if axes is None:
                raxes = tuple(range(nd))
            else:
                raxes = []
                for ax in axes:
                    if not -nd <= ax < nd:
                        raise ValueError(f"reduction axis {ax} is out of bounds for the "
                                         f"broadcast shape {shape}")
                    raxes.append(ax % nd)
                if len(set(raxes)) != len(raxes):
                    raise ValueError(f"repeated axis in reduction axes {axes}")
                raxes = tuple(sorted(raxes))
            kept = tuple(d for d in range(nd) if d not in raxes)
            red_shape = tuple(1 if d in raxes else shape[d] for d in range(nd)) \
                if self._keepdims else tuple(shape[d] for d in kept)
            perm = kept + raxes
            R = int(np.prod([shape[d] for d in raxes], dtype=np.int64))
        else:
            perm = tuple(range(nd))
            red_shape = None
            R = 0

        outs = self._outputs(out, shape, red_shape, dt)

        N = int(np.prod(shape, dtype=np.int64))
        if N == 0 or (self._has_red and R == 0):
            return self._empty(outs)

        # element strides in iteration order (perm), 0 for broadcast dims
        it_shape = [shape[d] for d in perm]

        def strides_of(a):
            pad = nd - a.ndim
            st = []
            for d in perm:
                if d < pad or a.shape[d - pad] == 1:
                    st.append(0)
                else:
                    st.append(a.strides[d - pad] // dt.itemsize)
            return st

        defer = [0] * self.nout
        copied = False
        # aliasing between outputs and inputs
        for k, o in enumerate(outs):
            for i, a in enumerate(arrs):
                if np.may_share_memory(o, a):
                    same = (self.reduce[k] is None and o.shape == shape
                            and a.__array_interface__["data"][0] == o.__array_interface__["data"][0]
                            and strides_of(a) == strides_of(o))
                    if same:
                        defer[k] = 1
                    else:
                        arrs[i] = a = a.copy()
                        copied = True
        in_st = [strides_of(a) for a in arrs]
        out_st = [strides_of(o) if self.reduce[k] is None else [0] * nd
                  for k, o in enumerate(outs)]

        # collapse: drop size-1 dims, merge dims that are contiguous for every operand
        # (merging never changes flat C order, so reduction rows of length R stay intact)
        keep = [j for j in range(nd) if it_shape[j] != 1]
        cshape = [it_shape[j] for j in keep]
        cin = [[s[j] for j in keep] for s in in_st]
        cout = [[s[j] for j in keep] for s in out_st]
        red_out = [self.reduce[k] is not None for k in range(self.nout)]
        j = len(cshape) - 1
        while j > 0:
            ok = all(s[j - 1] == s[j] * cshape[j] for s in cin) and all(
                s[j - 1] == s[j] * cshape[j] for k, s in enumerate(cout) if not red_out[k])
            if ok:
                cshape[j - 1] *= cshape[j]
                del cshape[j]
                for s in cin + cout:
                    s[j - 1] = s[j]      # the merged dim steps like the inner one
                    del s[j]
            j -= 1
        if not cshape:
            cshape = [1]
            cin = [[0] for _ in cin]
            cout = [[0] for _ in cout]

        nt = _threads(num_threads)
        red_codes = [_RED_CODES[s[0]] if s is not None else 0 for s in self.reduce]
        geo = _Geometry(
            dt, conv, shape, red_shape, red_out,
            np.array(cin, dtype=np.int64).reshape(len(arrs), len(cshape)),
            np.array(cout, dtype=np.int64).reshape(self.nout, len(cshape)),
            np.array(cshape, dtype=np.int64), R if self._has_red else 0, red_codes,
            [[self.reduce[k] is None and o.shape == shape and strides_of(a) == strides_of(o)
              for a in arrs] for k, o in enumerate(outs)])
        if key is not None and not copied:
            if len(self._geo) >= _GEO_CACHE:
                self._geo.clear()
            self._geo[key] = geo
        self._prog.run(
            dt == np.float64, arrs, geo.cin,
            [o.reshape(-1) if red_out[k] else o for k, o in enumerate(outs)],
            geo.cout, geo.cshape, geo.R, red_codes, defer, nt, self.block, self.threshold,
            self._stream)
        return outs[0] if self.nout == 1 else tuple(outs)

    def _run_cached(self, geo, inputs, out, num_threads):
        """``__call__`` on operands whose shapes, strides and dtypes were seen before: the
        iteration geometry (broadcasting, reduction rows, collapsed strides) is reused and only
        what depends on the data is redone -- conversions, outputs, aliasing.  ``_MISS`` sends
        the call down the full path (an operand misaligned or overlapping an output)."""
        dt = geo.dt
        arrs = []
        for i, a in enumerate(inputs):
            if type(a) is not np.ndarray:
                a = np.asarray(a)           # a NumPy scalar: its 0-d array
            kind = geo.conv[i]
            if kind == _COPY:
                a = np.array(a, dtype=dt, order="C", copy=True)
            else:
                if kind == _CAST:
                    a = np.asarray(a, dtype=dt)
                if not a.flags.aligned:
                    return _MISS
            arrs.append(a)
        defer = geo.no_defer
        if out is None:
            outs = [np.empty(s, dtype=dt) for s in geo.out_shapes]
        else:
            # (the signature fixed their number, shapes, strides and dtypes; the first call
            # with it checked them)
            outs = [out] if type(out) is np.ndarray else list(out)
            for k, o in enumerate(outs):
                if not o.flags.writeable:
                    return _MISS            # the full path raises the error
                for i, a in enumerate(arrs):
                    if np.may_share_memory(o, a):
                        if not (geo.same[k][i] and a.__array_interface__["data"][0]
                                == o.__array_interface__["data"][0]):
                            return _MISS
                        if defer is geo.no_defer:
                            defer = geo.no_defer.copy()
                        defer[k] = 1
        red_out = geo.red_out
        self._prog.run(
            geo.f64, arrs, geo.cin,
            [o.reshape(-1) if red_out[k] else o for k, o in enumerate(outs)],
            geo.cout, geo.cshape, geo.R, geo.red_codes, defer, _threads(num_threads),
            self.block, self.threshold, self._stream)
        return outs[0] if self.nout == 1 else tuple(outs)

    def broadcast_call(self, shape, cols: int, modes: str) -> "BroadcastCall":
        """A callable for operands whose broadcasting the caller knows in advance (a compiled
        plan): the iteration space ``shape`` seen as ``(rows, cols)`` in C order, and per input
        ``modes[i]``: ``"F"`` the full space, ``"S"`` a scalar, ``"R"`` a row of ``cols``
        elements repeated on every row (a bias), ``"C"`` one element per row (a ``keepdims``
        reduction).  It runs the VM's C fast path (~1 us of overhead, where the general path's
        Python broadcasting costs ~50 us) and falls back to ``__call__`` on anything else
        (another dtype, a non-contiguous operand, other sizes).  Elementwise kernels only."""
        if self._has_red:
            raise TypeError(f"fused kernel {self.name!r} has a reduction")
        modes = str(modes)
        if len(modes) != self.nin or set(modes) - set("FSRC"):
            raise ValueError(f"modes must be one of F/S/R/C per input, got {modes!r}")
        return BroadcastCall(self, tuple(int(d) for d in shape), int(cols), modes.encode())

    def _dtype(self, inputs, dtype):
        if dtype is not None:
            dt = np.dtype(dtype)
            if dt not in (np.float32, np.float64):
                raise TypeError(f"fused kernels run in float32 or float64, not {dt}")
            return dt
        if not inputs:
            return np.dtype(np.float64)
        try:
            rt = np.result_type(*[x if isinstance(x, (bool, int, float, np.ndarray, np.generic))
                                  else np.asarray(x) for x in inputs])
        except TypeError as e:
            raise TypeError(f"fused kernel {self.name!r}: cannot promote input dtypes: {e}") from None
        if rt.kind == "f" and rt.itemsize <= 4:
            return np.dtype(np.float32)
        if rt.kind in "biuf":
            return np.dtype(np.float64)
        raise TypeError(f"fused kernel {self.name!r}: inputs promote to {rt}, "
                        "need a real dtype")

    def _outputs(self, out, shape, red_shape, dt):
        shapes = [shape if s is None else red_shape for s in self.reduce]
        if out is None:
            return [np.empty(s, dtype=dt) for s in shapes]
        if isinstance(out, np.ndarray):
            out = [out]
        out = list(out)
        if len(out) != self.nout:
            raise ValueError(f"fused kernel {self.name!r}: out= has {len(out)} array(s), "
                             f"the kernel has {self.nout} output(s)")
        for k, (o, s) in enumerate(zip(out, shapes)):
            if not isinstance(o, np.ndarray):
                raise TypeError(f"out[{k}] must be a numpy.ndarray, got {type(o).__name__}")
            if o.dtype != dt:
                raise TypeError(f"out[{k}] has dtype {o.dtype}, the kernel computes {dt}")
            if o.shape != tuple(s):
                raise ValueError(f"out[{k}] has shape {o.shape}, expected {tuple(s)}")
            if not o.flags.writeable:
                raise ValueError(f"out[{k}] is read-only")
            if self.reduce[k] is not None and not o.flags.c_contiguous:
                raise ValueError(f"out[{k}] (a reduced output) must be C-contiguous")
            if any(st == 0 for st, n in zip(o.strides, o.shape) if n > 1):
                raise ValueError(f"out[{k}] has zero strides {o.strides}: several elements "
                                 "share memory (a broadcast view cannot be written)")
            if any(st % dt.itemsize for st in o.strides):
                raise ValueError(f"out[{k}] has strides {o.strides} that are not multiples of "
                                 f"the itemsize {dt.itemsize}")
            if not o.flags.aligned:
                addr = o.__array_interface__["data"][0]
                raise ValueError(f"out[{k}] is misaligned: its data pointer {addr:#x} is not a "
                                 f"multiple of {dt.alignment} ({dt} alignment)")
        for k in range(self.nout):
            for m in range(k):
                if out[k].size and out[m].size and np.may_share_memory(out[k], out[m]):
                    raise ValueError(f"out[{k}] and out[{m}] overlap")
        return out

    def _empty(self, outs):
        for k, o in enumerate(outs):
            spec = self.reduce[k]
            if spec is None or o.size == 0:
                continue
            kind = spec[0]
            if kind == "sum":
                o[...] = 0
            elif kind == "mean":
                o[...] = np.nan
            else:
                raise ValueError(f"zero-size array to reduction operation {kind} "
                                 "which has no identity")
        return outs[0] if self.nout == 1 else tuple(outs)


_PY_NUMBERS = (float, int, bool)
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _weak_scalars(k, inputs, dtype):
    """``inputs`` with Python numbers made NumPy scalars of the kernel's dtype, or ``None``
    when there are none (or one does not convert).  A kernel computes a Python number as
    NumPy 2 does -- weak, cast to the other operands' dtype -- so the value is the same; the
    C paths and the geometry cache take NumPy scalars only, and ``fg.function`` feeds Python
    scalar arguments as they are (~70 us on the general path, ~1 us more than a NumPy scalar
    after this).  (Spelt out for speed: dtype identity tests instead of ``np.result_type``.)"""
    py = False
    f32 = True
    f64 = False
    for x in inputs:
        if type(x) in _PY_NUMBERS:
            py = True
        else:
            d = getattr(x, "dtype", None)
            if d is _F64:
                f64 = True
            elif d is not _F32:
                f32 = False
    if not py:
        return None
    if dtype is None and f64:
        dt = _F64               # (anything else promotes with it to float64 or fails later)
    elif dtype is None and f32:
        dt = _F32
    else:
        dt = k._dtype(inputs, dtype)
    try:
        return tuple([dt.type(x) if type(x) in _PY_NUMBERS else x for x in inputs])
    except (OverflowError, ValueError):
        return None


class BroadcastCall:
    """``FusedKernel.broadcast_call``'s result: ``f(*inputs, out=None, dtype=None)``."""
    __slots__ = ("k", "shape", "cols", "modes", "name", "_c")
    elementwise = True

    def __init__(self, k, shape, cols, modes):
        self.k, self.shape, self.cols, self.modes, self.name = k, shape, cols, modes, k.name
        self._c = k._prog.bcast_call

    def __call__(self, *inputs, out=None, dtype=None):
        # the C path takes NumPy scalars in scalar slots itself (a plan feeds 0-d values, such
        # as a learning rate, as NumPy scalars); anything it declines takes the general path
        if dtype is None or (inputs and type(inputs[0]) is np.ndarray
                             and inputs[0].dtype == dtype):
            res = self._c(inputs, out, self.shape, self.cols, self.modes, None)
            if res is not None:
                return res
            conv = _weak_scalars(self.k, inputs, dtype)
            if conv is not None:
                return self(*conv, out=out, dtype=dtype)
        return self.k(*inputs, out=out, dtype=dtype)
