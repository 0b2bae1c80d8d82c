"""THE opcode table of the fused-kernel virtual machine.

Every operation the VM can run is declared here exactly once: its name (the fastgraph / NumPy op
name), its arity, its opcode number, how it is evaluated, and a NumPy reference implementation.

* The Python compiler (:mod:`fastgraph.fused.kernel`) emits these opcode numbers.
* The Cython VM (:mod:`fastgraph._fused`) imports this module when it is initialised and builds
  its dispatch table *from it*, by name: it refuses to import if the table names an operation the
  VM cannot run, or if the VM implements an operation the table does not list.  So the numbers the
  compiler writes and the numbers the VM reads come from the same list and cannot drift apart
  (``tests/test_fused_vm.py::test_opcode_table_matches_vm`` checks it as well).

``eval`` says how the VM evaluates the op on a block (chosen with ``benchmarks/bench_fused_vm.py``,
numbers in ``docs/fused.md``):

``"c"``      a tight C loop over the block (the compiler vectorises arithmetic; libm for the rest);
``"vec"``    fastgraph's own branch-free polynomial kernels (exp, expm1-based tanh, ...) which
             the C compiler vectorises; accurate to a few ulp;
``"ufunc"``  NumPy's own inner loop for the op (``ufunc`` names it), called per block without the
             GIL through the function pointer in the ufunc's loop table.

``ufunc`` names the NumPy ufunc whose ``d->d`` / ``f->f`` (``dd->d`` / ``ff->f``) inner loop can
evaluate the op; the VM resolves those loops once, at import.  A kernel can be compiled with a
forced strategy (``compile_kernel(..., strategy="libm" | "ufunc" | "vec")``) for benchmarks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

__all__ = ["OpCode", "OPCODES", "BY_NAME", "BY_CODE", "opcode", "REDUCTIONS", "work_units"]


@dataclass(frozen=True)
class OpCode:
    name: str                    # fastgraph / NumPy op name
    arity: int                   # number of operands (1, 2 or 3)
    code: int                    # opcode number written into register programs
    eval: str                    # "c" | "vec" | "ufunc": default evaluation strategy
    ufunc: Optional[str]         # NumPy ufunc whose inner loop can evaluate it, if any
    ref: Callable                # NumPy reference (used by tests and by constant folding)
    doc: str = ""


def _sigmoid(x):
    x = np.asarray(x)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


def _softplus(x):
    x = np.asarray(x)
    return (np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)).astype(x.dtype, copy=False)


def _relu(x):
    x = np.asarray(x)
    return np.maximum(x, np.zeros((), x.dtype))


def _erf(x):
    try:
        from scipy.special import erf
        return erf(x)
    except ImportError:  # pragma: no cover
        x = np.asarray(x)
        return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _cmp(f):
    def ref(a, b):
        a, b = np.asarray(a), np.asarray(b)
        return f(a, b).astype(np.result_type(a, b))
    return ref


def _where(c, a, b):
    c, a, b = np.asarray(c), np.asarray(a), np.asarray(b)
    return np.where(c != 0, a, b).astype(np.result_type(a, b), copy=False)


# (name, arity, eval, ufunc, reference, doc) -- the opcode number is the position in this list + 1
# (0 is never a valid opcode).  Append new ops at the end; do not reorder.
_TABLE = [
    # data movement
    ("copy",          1, "c",     None,         lambda x: np.array(x, copy=True), "d = a"),
    # arithmetic (tight C loops)
    ("add",           2, "c",     "add",        np.add, "d = a + b"),
    ("subtract",      2, "c",     "subtract",   np.subtract, "d = a - b"),
    ("multiply",      2, "c",     "multiply",   np.multiply, "d = a * b"),
    ("divide",        2, "c",     "divide",     np.divide, "d = a / b"),
    # NumPy's own power loop: its float32 loop calls powf, whose results differ in the last bit
    # from pow computed in double and rounded (the VM's "c" loop) on ~1 element in 1000, and
    # where NumPy's loop uses SVML (AVX-512 builds) the float64 results differ from libm's too.
    # (Its stride-0 fast paths for scalar exponents are the compiler's peephole, _POWER_FAST.)
    ("power",         2, "ufunc", "power",      np.power, "d = a ** b (NumPy's power loop)"),
    ("negative",      1, "c",     "negative",   np.negative, "d = -a"),
    ("abs",           1, "c",     "absolute",   np.abs, "d = |a|"),
    ("square",        1, "c",     "square",     np.square, "d = a * a"),
    ("reciprocal",    1, "c",     "reciprocal", lambda x: np.reciprocal(np.asarray(x)), "d = 1 / a"),
    ("maximum",       2, "c",     "maximum",    np.maximum, "NaN-propagating max"),
    ("minimum",       2, "c",     "minimum",    np.minimum, "NaN-propagating min"),
    ("sign",          1, "c",     "sign",       np.sign, "-1, 0, +1 (NaN stays NaN)"),
    ("floor",         1, "ufunc", "floor",      np.floor, ""),
    ("ceil",          1, "ufunc", "ceil",       np.ceil, ""),
    ("sqrt",          1, "ufunc", "sqrt",       np.sqrt, ""),
    ("relu",          1, "c",     None,         _relu, "maximum(a, 0)"),
    # transcendentals
    ("exp",           1, "vec",   "exp",        np.exp, ""),
    ("expm1",         1, "vec",   "expm1",      np.expm1, ""),
    ("log",           1, "vec",   "log",        np.log, ""),
    ("log1p",         1, "vec",   "log1p",      np.log1p, ""),
    ("sin",           1, "ufunc", "sin",        np.sin, ""),
    ("cos",           1, "ufunc", "cos",        np.cos, ""),
    ("tan",           1, "c",     "tan",        np.tan, ""),
    ("tanh",          1, "vec",   "tanh",       np.tanh, ""),
    ("sinh",          1, "ufunc", "sinh",       np.sinh, ""),
    ("cosh",          1, "ufunc", "cosh",       np.cosh, ""),
    ("arctan",        1, "ufunc", "arctan",     np.arctan, ""),
    ("sigmoid",       1, "vec",   None,         _sigmoid, "stable: e=exp(-|a|); a>=0 ? 1/(1+e) : e/(1+e)"),
    ("softplus",      1, "vec",   None,         _softplus, "log1p(exp(-|a|)) + max(a, 0)"),
    ("erf",           1, "c",     None,         _erf, "libm erf"),
    # comparisons: 0/1 in the kernel's float dtype
    ("less",          2, "c",     None,         _cmp(np.less), "a < b"),
    ("less_equal",    2, "c",     None,         _cmp(np.less_equal), "a <= b"),
    ("greater",       2, "c",     None,         _cmp(np.greater), "a > b"),
    ("greater_equal", 2, "c",     None,         _cmp(np.greater_equal), "a >= b"),
    ("equal",         2, "c",     None,         _cmp(np.equal), "a == b"),
    ("not_equal",     2, "c",     None,         _cmp(np.not_equal), "a != b"),
    # ternary
    ("where",         3, "c",     None,         _where, "a != 0 ? b : c"),
    ("clip",          3, "c",     None,         lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
     "minimum(maximum(a, b), c) (np.clip)"),
    # VJP building blocks
    ("fma",           3, "c",     None,         lambda a, b, c: np.add(np.multiply(a, b), c),
     "a * b + c (two roundings, like NumPy)"),
    ("nfma",          3, "c",     None,         lambda a, b, c: np.subtract(c, np.multiply(a, b)),
     "c - a * b (two roundings, like NumPy): an SGD update's p - lr * g in one pass"),
    ("mul_greater",   3, "c",     None,         lambda a, b, c: np.multiply(a, _cmp(np.greater)(b, c)),
     "a * (b > c): relu's gradient g * (x > 0) in one pass"),
    ("select",        3, "c",     None,         _where, "alias of where: a != 0 ? b : c"),
    ("tanh_grad",     2, "c",     None,         lambda t, g: np.multiply(g, np.subtract(1, np.square(t))),
     "b * (1 - a*a): gradient through tanh given its output a"),
    ("sigmoid_grad",  2, "c",     None,         lambda s, g: np.multiply(np.multiply(g, s), np.subtract(1, s)),
     "b * a * (1 - a): gradient through sigmoid given its output a"),
]

OPCODES: tuple[OpCode, ...] = tuple(
    OpCode(name, arity, i + 1, ev, uf, ref, doc)
    for i, (name, arity, ev, uf, ref, doc) in enumerate(_TABLE)
)
BY_NAME: dict[str, OpCode] = {op.name: op for op in OPCODES}
BY_CODE: dict[int, OpCode] = {op.code: op for op in OPCODES}
assert len(BY_NAME) == len(OPCODES) and len(BY_CODE) == len(OPCODES)
MAX_OPCODE = max(BY_CODE)

# Trailing reductions a kernel can apply to its outputs.
REDUCTIONS = ("sum", "mean", "max", "min")


# Relative cost of one element of an op, in units of one ``add`` (an estimate from
# ``benchmarks/bench_fused_vm.py`` on AVX2: a vectorised tanh/exp costs ~5-6 adds, a libm call
# or NumPy loop like sin ~10).  Only used to decide when a kernel is heavy enough per element to
# be worth several threads on fewer elements.
_COST_BY_EVAL = {"c": 1, "vec": 6, "ufunc": 10}
_COST_EXCEPTIONS = {"copy": 1, "divide": 2, "reciprocal": 2, "power": 12, "tan": 10, "erf": 10,
                    "sigmoid": 7, "softplus": 12, "floor": 1, "ceil": 1, "sqrt": 2}


def work_units(name: str) -> int:
    """Estimated cost of ``name`` per element, relative to one ``add`` (see ``_COST_BY_EVAL``)."""
    cost = _COST_EXCEPTIONS.get(name)
    return cost if cost is not None else _COST_BY_EVAL[opcode(name).eval]


def opcode(name: str) -> OpCode:
    """The table entry for ``name``; a ``KeyError`` naming the known ops otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(
            f"unknown fused opcode {name!r}; known: {', '.join(sorted(BY_NAME))}"
        ) from None
