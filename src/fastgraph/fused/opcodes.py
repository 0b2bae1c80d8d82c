"""The opcodes of the fused-kernel VM, as the Python compiler sees them.

The list itself is C: one X-macro row per op in ``kernels/include/fg_opcodes.h``, from which the
VM takes its enum and its arities.  This module reads the same rows from the compiled VM
(:func:`fastgraph.kernels.vm.opcode_rows`), so the numbers the compiler writes and the numbers
the VM reads come from one list and cannot drift apart.  Only the NumPy reference of each op
(``ref``, which the tests compare the VM with) is Python, keyed by name below.

``eval`` says how the VM evaluates the op on a block (chosen with ``fastgraph.bench.fused_vm``;
see ``docs/fusion.md``):

``"c"``      a tight C loop over the block (the compiler vectorises arithmetic; libm for the rest);
``"vec"``    fastgraph's own branch-free polynomial kernels (exp, expm1-based tanh, ...) which
             the C compiler vectorises; accurate to a few ulp;
``"ufunc"``  NumPy's own inner loop for the op (``ufunc`` names it), called per block without the
             GIL through the function pointer in the ufunc's loop table.

``ufunc`` names the ufunc (NumPy's, or SciPy's by its dotted path) whose ``d->d`` / ``f->f``
(``dd->d`` / ``ff->f``) inner loop computes exactly what the unfused op does; the VM resolves
those loops once, at import.  ``ulp`` is the most ulp the default evaluation may differ from the
unfused op, per dtype (docs/fusion.md's table; tests/test_fused_accuracy.py holds it).  A kernel can be compiled with a
forced strategy (``compile_kernel(..., strategy="libm" | "ufunc" | "vec")``) for benchmarks.
``cost`` is the work of one element in ``add``s (see :func:`work_units`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import scipy.special as _special

from ..kernels import vm as _vm

__all__ = ["OpCode", "OPCODES", "BY_NAME", "BY_CODE", "REFS", "opcode", "REDUCTIONS",
           "work_units"]


@dataclass(frozen=True)
class OpCode:
    name: str                    # fastgraph / NumPy op name
    arity: int                   # number of operands (1, 2 or 3)
    code: int                    # opcode number written into register programs
    eval: str                    # "c" | "vec" | "ufunc": default evaluation strategy
    ufunc: Optional[str]         # NumPy ufunc whose inner loop can evaluate it, if any
    ref: Callable                # NumPy reference (the tests compare the VM with it)
    cost: int = 1                # work per element, in adds
    ulp: dict = None             # {"float32": n, "float64": n}: the most ulp the default
    #                              evaluation differs from the unfused op (0: the same bits)
    doc: str = ""


def _softplus(x):
    x = np.asarray(x)
    return np.logaddexp(np.zeros((), x.dtype), x)


def _relu(x):
    x = np.asarray(x)
    return np.maximum(x, np.zeros((), x.dtype))


def _cmp(f):
    def ref(a, b):
        a, b = np.asarray(a), np.asarray(b)
        return f(a, b).astype(np.result_type(a, b))
    return ref


def _where(c, a, b):
    c, a, b = np.asarray(c), np.asarray(a), np.asarray(b)
    return np.where(c != 0, a, b).astype(np.result_type(a, b), copy=False)


#: the NumPy reference of each opcode, by name
REFS: dict[str, Callable] = {
    "copy": lambda x: np.array(x, copy=True),
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "power": np.power,
    "negative": np.negative,
    "abs": np.abs,
    "square": np.square,
    "reciprocal": lambda x: np.reciprocal(np.asarray(x)),
    "maximum": np.maximum,
    "minimum": np.minimum,
    "sign": np.sign,
    "floor": np.floor,
    "ceil": np.ceil,
    "sqrt": np.sqrt,
    "relu": _relu,
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "arctan": np.arctan,
    "sigmoid": _special.expit,      # what fg.sigmoid, fg.softplus and fg.erf compute unfused
    "softplus": _softplus,
    "erf": _special.erf,
    "less": _cmp(np.less),
    "less_equal": _cmp(np.less_equal),
    "greater": _cmp(np.greater),
    "greater_equal": _cmp(np.greater_equal),
    "equal": _cmp(np.equal),
    "not_equal": _cmp(np.not_equal),
    "where": _where,
    "clip": lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    "fma": lambda a, b, c: np.add(np.multiply(a, b), c),
    "nfma": lambda a, b, c: np.subtract(c, np.multiply(a, b)),
    "mul_greater": lambda a, b, c: np.multiply(a, _cmp(np.greater)(b, c)),
    "select": _where,
    "tanh_grad": lambda t, g: np.multiply(g, np.subtract(1, np.square(t))),
    "sigmoid_grad": lambda s, g: np.multiply(np.multiply(g, s), np.subtract(1, s)),
    "mul_mul": lambda a, b, c: np.multiply(np.multiply(a, b), c),
    "tanh_fma": lambda a, b, c: np.tanh(np.add(np.multiply(a, b), c)),
}

OPCODES: tuple[OpCode, ...] = tuple(
    OpCode(name, arity, code, ev, uf, REFS.get(name), cost,
           {"float32": ulp[0], "float64": ulp[1]}, doc)
    for name, arity, code, ev, uf, cost, ulp, doc in _vm.opcode_rows()
)
BY_NAME: dict[str, OpCode] = {op.name: op for op in OPCODES}
BY_CODE: dict[int, OpCode] = {op.code: op for op in OPCODES}
MAX_OPCODE = max(BY_CODE)

# Trailing reductions a kernel can apply to its outputs.
REDUCTIONS = ("sum", "mean", "max", "min")


def work_units(name: str) -> int:
    """Estimated cost of op ``name`` per element, relative to one ``add`` (its row's ``cost``:
    a vectorised tanh/exp ~6, a libm call or NumPy loop like tan ~10).  The fuse pass uses it
    to decide when a kernel is heavy enough per element to be worth several threads on fewer
    elements.

    >>> work_units("add"), work_units("tanh")
    (1, 6)
    """
    return opcode(name).cost


def opcode(name: str) -> OpCode:
    """The table entry for ``name``; a ``KeyError`` naming the known ops otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(
            f"unknown fused opcode {name!r}; known: {', '.join(sorted(BY_NAME))}"
        ) from None
