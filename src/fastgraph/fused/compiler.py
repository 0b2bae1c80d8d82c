"""The compiler from an elementwise expression DAG to a register program for the VM.

>>> import numpy as np
>>> from fastgraph.fused import Expr, compile_kernel
>>> x, y = Expr.input(0), Expr.input(1)
>>> t = Expr.op("tanh", Expr.op("multiply", x, y))
>>> k = compile_kernel(outputs=[t, Expr.op("exp", x)])
>>> out1, out2 = k(np.ones(3), np.ones(3))

The compiler hash-conses the DAG (common subexpressions become one instruction), applies a few
peepholes (``add(multiply(a, b), c)`` -> ``fma``, ``subtract(c, multiply(a, b))`` -> ``nfma``,
``multiply(a, greater(b, c))`` -> ``mul_greater``, ``power(x, c)`` -> ``square``/``sqrt``/
``reciprocal``/``copy`` for the exponents NumPy special-cases), then the superinstruction
peephole (``multiply(multiply(a, b), c)`` -> ``mul_mul``, ``tanh(fma(a, b, c))`` -> ``tanh_fma``:
one pass over a block instead of two; ``superinstructions=False`` switches it off), allocates
block-length registers with a linear scan (a register is reused once its value is dead; a result
never shares a register with its own operands), and hands the program to the VM
(:mod:`fastgraph.kernels.vm`) as a :class:`~fastgraph.fused.runtime.FusedKernel`.  See
``docs/fusion.md``.
"""
from __future__ import annotations

import operator
from typing import Optional, Sequence

import numpy as np

from ..kernels import vm as _vm
from . import opcodes as _op
from .runtime import DEFAULT_BLOCK, DEFAULT_THRESHOLD, FusedKernel

__all__ = ["Expr", "compile_kernel", "MAX_INPUTS"]

_BY_NAME = _op.BY_NAME
_MODES = {"c": 0, "vec": 1, "ufunc": 2}
_STRATEGIES = ("auto", "libm", "vec", "ufunc")

#: the most inputs a kernel takes.  Each input owns a block register (8 KiB per thread at the
#: default block) and the VM numbers registers with C ints; a kernel's ``nin`` also sizes lists
#: at compile time, so ``Expr.input(10**9)`` would otherwise exhaust memory.  65536 inputs are
#: already 512 MiB of registers per thread -- far beyond any fused region.
MAX_INPUTS = 1 << 16


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


def _as_expr(a) -> Expr:
    if isinstance(a, Expr):
        return a
    if isinstance(a, (int, float, np.integer, np.floating, bool, np.bool_)):
        return Expr.const(a)
    raise TypeError(f"expected an Expr or a real number, got {type(a).__name__}")


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


def _uses(nodes, outs):
    """Each node's use count (a dict by ``cid``, which a fold updates) and the test
    ``single_use(m, name)``: ``m`` is op ``name`` and only its one consumer reads it (it is not
    an output)."""
    used = {}
    for n in nodes:
        for a in n.args:
            used[a.cid] = used.get(a.cid, 0) + 1
    out_ids = {o.cid for o in outs}

    def single_use(m, name):
        return (m.kind == "op" and m.name == name and used.get(m.cid, 0) == 1
                and m.cid not in out_ids)

    return used, single_use


def _fuse_pairs(nodes, outs):
    """add(multiply(a, b), c) -> fma(a, b, c) and subtract(c, multiply(a, b)) -> nfma(a, b, c)
    when the product has no other use, multiply(a, greater(b, c)) -> mul_greater(a, b, c) when
    the mask has none (relu's gradient): one pass instead of two, the same roundings."""
    used, single_use = _uses(nodes, outs)
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
    return _live(nodes, outs)      # without the folded multiplies


#: the name of the superinstruction peephole (:func:`_superinstructions`): ``compile_kernel(...,
#: superinstructions=False)`` and a plan's ``disable=("superinstructions",)`` switch it off
SUPERINSTRUCTIONS = "superinstructions"


def _superinstructions(nodes, outs, strategy):
    """Two instructions that are one pass over a block: ``multiply(multiply(a, b), c)`` ->
    ``mul_mul(a, b, c)`` (``0.5 * x * x``) and ``tanh(fma(a, b, c))`` -> ``tanh_fma(a, b, c)``
    (``tanh(a * b + c)``), when the inner result has no other use.  The same operations in the
    same order: the same bits as the two instructions, but for which operand's payload a NaN
    result carries (``tanh_fma`` only where tanh runs as the vec loop, whose tanh it computes).
    Run after :func:`_fuse_pairs`, so that an ``fma`` takes the product first."""
    used, single_use = _uses(nodes, outs)
    tanh_vec = _mode_for(_BY_NAME["tanh"], strategy, _vm) == _MODES["vec"]
    changed = False
    for n in nodes:
        if n.kind != "op":
            continue
        if n.name == "multiply":
            for i in (0, 1):
                m = n.args[i]
                if single_use(m, "multiply"):
                    n.name = "mul_mul"      # (a * b) * c = c * (a * b): IEEE products commute
                    n.args = (m.args[0], m.args[1], n.args[1 - i])
                    used[m.cid] = 0
                    changed = True
                    break
        elif n.name == "tanh" and tanh_vec and single_use(n.args[0], "fma"):
            m = n.args[0]
            n.name = "tanh_fma"
            n.args = m.args
            used[m.cid] = 0
            changed = True
    return _live(nodes, outs) if changed else nodes


def _live(nodes, outs):
    """``nodes`` without those no output needs any more (operands folded into their reader)."""
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
                   stream_min: Optional[int] = None, superinstructions: bool = True,
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
    ``superinstructions``: fold pairs of instructions into the VM's one-pass superinstructions
    (``mul_mul``, ``tanh_fma``; the same results, NaN payloads aside).
    """
    if isinstance(outputs, Expr):
        outputs = [outputs]
    outputs = [_as_expr(o) for o in outputs]
    if not outputs:
        raise ValueError("compile_kernel needs at least one output")
    if strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}")
    block = int(block)
    if block < 16 or block > _vm.MAX_BLOCK:
        raise ValueError(f"block must be in 16..{_vm.MAX_BLOCK}, got {block}")
    specs = _normalise_reduce(reduce, len(outputs))

    nodes, outs = _canonicalise(outputs)
    nodes = _fuse_pairs(nodes, outs)
    if superinstructions:
        nodes = _superinstructions(nodes, outs, strategy)
    nin = _input_count(nodes, nin)
    regs = _Registers(nodes, nin)
    code, listing = regs.emit([n for n in nodes if n.kind == "op"], outs, strategy)
    prog = _vm.Program(np.array(code, dtype=np.intc).reshape(-1, 6), regs.n, regs.inputs,
                      regs.outputs, regs.const_reg, np.array(regs.const_val, dtype=np.float64))
    return FusedKernel(prog, nin, len(outs), specs, block, threshold, strategy,
                       dict(nregs=regs.n, in_reg=regs.inputs, out_reg=regs.outputs,
                            consts=dict(zip(regs.const_reg, regs.const_val)), listing=listing),
                       name or "fused", stream_min)


def _input_count(nodes, nin) -> int:
    """The number of inputs: ``nin`` checked against the inputs the expressions read, or one
    more than the highest of them."""
    max_in = max((n.index for n in nodes if n.kind == "input"), default=-1)
    if nin is None:
        return max_in + 1
    try:
        nin = operator.index(nin)
    except TypeError:
        raise TypeError(f"nin must be an integer, got {nin!r}") from None
    if nin <= max_in:
        raise ValueError(f"nin={nin} but the expressions read input {max_in}")
    if nin > MAX_INPUTS:
        raise ValueError(f"nin={nin} exceeds MAX_INPUTS = {MAX_INPUTS}")
    return nin


class _Registers:
    """Linear-scan allocation of block-length registers.  Inputs and constants own a register
    each (``pinned``: never reused); a temporary's register is reused once its value is dead;
    a result never shares a register with its own operands."""

    def __init__(self, nodes, nin):
        self.n = 0
        self.free: list[int] = []
        self.reg: dict[int, int] = {}           # node id -> register
        self.pinned: set[int] = set()
        self.inputs = [-1] * nin
        self.const_reg, self.const_val = [], []
        self.outputs: list[int] = []
        for n in nodes:
            if n.kind == "input":
                self.reg[n.cid] = self.inputs[n.index] = self.fresh(pinned=True)
            elif n.kind == "const":
                self.reg[n.cid] = self.fresh(pinned=True)
                self.const_reg.append(self.reg[n.cid])
                self.const_val.append(n.value)

    def fresh(self, pinned=False) -> int:
        r = self.n
        self.n += 1
        if pinned:
            self.pinned.add(r)
        return r

    def emit(self, ops, outs, strategy):
        """The program's rows ``(opcode, mode, dst, a, b, c)`` and its listing, for ``ops`` in
        order and the kernel outputs ``outs``; sets ``self.outputs``."""
        last_use: dict[int, int] = {}
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
        modes: dict = {}          # op name -> (opcode, evaluation mode), looked up once per name
        reg, free, pinned = self.reg, self.free, self.pinned
        for i, n in enumerate(ops):
            # an output's register may point straight into the output array, which should not
            # also serve as scratch for earlier temporaries: a fresh one
            dst = self.fresh(pinned=True) if n.cid in out_owner else (
                free.pop() if free else self.fresh())
            reg[n.cid] = dst
            cm = modes.get(n.name)
            if cm is None:
                spec = _op.BY_NAME[n.name]
                cm = modes[n.name] = (spec.code, _mode_for(spec, strategy, _vm))
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
        copy = _op.BY_NAME["copy"]
        for k, o in enumerate(outs):
            if o.kind == "op" and out_owner[o.cid] == k:
                self.outputs.append(reg[o.cid])
            else:  # an input, a constant, or a value already owned by another output
                dst = self.fresh(pinned=True)
                code.append((copy.code, 0, dst, reg[o.cid], -1, -1))
                listing.append(("copy", 0, dst, [reg[o.cid]]))
                self.outputs.append(dst)
        return code, listing


_PAD = ((-1, -1, -1), (-1, -1), (-1,), ())   # unused source slots of a 6-field instruction


def _mode_for(spec, strategy, vm):
    if strategy == "libm":
        return 0
    if strategy == "vec":
        return 1 if vm.vm_has_vec(spec.name) else 0
    if strategy == "ufunc":
        return 2 if spec.ufunc is not None else 0
    if spec.eval == "vec" and not vm.vm_has_vec(spec.name):
        return 0
    return _MODES[spec.eval]


