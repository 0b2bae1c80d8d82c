"""Fused elementwise kernels: compile a DAG of elementwise ops into one register program and run it
on the block-interpreting VM in :mod:`fastgraph.kernels.vm` (multi-threaded, float32/float64
native, several outputs, optional trailing reduction).  See ``docs/fusion.md``.

* :mod:`.opcodes`: the VM's opcodes as the compiler sees them (read from the VM);
* :mod:`.compiler`: :class:`Expr` and :func:`compile_kernel`;
* :mod:`.runtime`: :class:`FusedKernel`, what a compiled kernel is when called.

>>> import numpy as np
>>> from fastgraph.fused import Expr, compile_kernel
>>> x, y = Expr.input(0), Expr.input(1)
>>> k = compile_kernel([Expr.op("tanh", x * y), Expr.op("exp", x)])
>>> out1, out2 = k(np.zeros(3), np.ones(3))
>>> out2
array([1., 1., 1.])
"""
from .opcodes import OPCODES, BY_NAME, BY_CODE, OpCode, REDUCTIONS, opcode
from .compiler import Expr, compile_kernel
from .runtime import FusedKernel, DEFAULT_BLOCK, DEFAULT_THRESHOLD

__all__ = ["Expr", "FusedKernel", "compile_kernel", "OPCODES", "BY_NAME", "BY_CODE", "OpCode",
           "REDUCTIONS", "opcode", "DEFAULT_BLOCK", "DEFAULT_THRESHOLD"]
