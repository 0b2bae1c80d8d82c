"""The op registry: every operation is declared once, by :func:`defop`, in ``fastgraph.ops``.

An :class:`OpDef` holds everything the engines need:

* ``forward(*arrays, **attrs)``: the NumPy computation;
* ``vjps``: one rule per differentiable input, ``vjp(g, ans, *inputs, **attrs)``, written with
  ``fastgraph`` operations, so the same rule runs on NumPy arrays (plain eager backward), on
  ``Tensor``s (``create_graph=True``) and on graph ``Node``s (``fg.gradients``).  A rule may return
  a gradient of the output's broadcast shape: the engines sum it back to the input's shape.
  ``None`` marks an input that carries no gradient (labels, masks); :data:`ZERO` marks an input
  whose gradient is identically zero (``floor``, ``sign``);
* ``shape(shapes, **attrs)``: the static shape rule (``None`` for unknown dimensions);
* ``opcode``: the fused-kernel opcode name for elementwise ops.

Public functions call :func:`~fastgraph._core.dispatch.apply`, which dispatches on argument kinds:
NumPy in, NumPy out; any ``Tensor`` -> recorded on the eager tape; any ``Node`` -> a node in the
static graph.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .dispatch import OpDef

__all__ = ["OpDef", "REGISTRY", "ZERO", "defop"]


class _Zero:
    """Sentinel VJP: the gradient with respect to this input is identically zero."""

    def __repr__(self) -> str:
        return "ZERO"


ZERO = _Zero()

REGISTRY: dict[str, OpDef] = {}


def defop(name: str, forward: Callable, *vjps, shape: Callable | None = None,
          elementwise: bool = False, opcode: str | None = None,
          differentiable: bool = True, variadic: bool = False,
          operator: Callable | None = None, scalar_math: Callable | None = None,
          kernel=None) -> OpDef:
    """Declare an operation once; returns its :class:`OpDef`.

    ``variadic`` ops take their array inputs as one sequence (``concatenate``, ``stack``).
    ``differentiable=False`` ops (comparisons) produce results that never require grad.
    ``operator``/``scalar_math``: optional fast paths with identical results (see ``OpDef``).
    ``kernel``: the compiled elementwise kernel the tape may call on small float arrays instead
    of ``forward`` (``OpDef.set_kernel``); a NumPy-ufunc ``forward`` is its own kernel.
    """
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is declared twice")
    if elementwise and opcode is None:
        opcode = name
    op = OpDef(name, forward, vjps, shape, elementwise, opcode, differentiable, variadic,
               operator, scalar_math)
    if kernel is None and _is_numpy_ufunc(forward):
        kernel = forward
    if kernel is not None:
        op.set_kernel(kernel)
    REGISTRY[name] = op
    return op


def _is_numpy_ufunc(f) -> bool:
    """A ufunc of NumPy's own namespace (SciPy's special functions are ufuncs too, but report
    errors their own way: they keep going through the ufunc machinery)."""
    return isinstance(f, np.ufunc) and getattr(np, f.__name__, None) is f
