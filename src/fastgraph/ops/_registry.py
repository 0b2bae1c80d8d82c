"""The op registry: every operation is declared once, here and in the sibling modules.

An :class:`OpDef` holds everything the three engines need:

* ``forward(*arrays, **attrs)``: the NumPy computation;
* ``vjps``: one rule per differentiable input, ``vjp(g, ans, *inputs, **attrs)``, written with
  ``fastgraph`` operations, so the same rule runs on NumPy arrays (plain eager backward), on
  ``Tensor``s (``create_graph=True``) and on graph ``Node``s (``fg.gradients``).  A rule may return
  a gradient of the output's broadcast shape: the engines sum it back to the input's shape.
  ``None`` marks an input that carries no gradient (labels, masks); :data:`ZERO` marks an input
  whose gradient is identically zero (``floor``, ``sign``);
* ``shape(shapes, **attrs)``: the static shape rule (``None`` for unknown dimensions);
* ``opcode``: the fused-kernel opcode name for elementwise ops.

Public functions are made by :func:`apply`, which dispatches on argument kinds: NumPy in, NumPy out;
any ``Tensor`` -> recorded on the eager tape; any ``Node`` -> a node in the static graph.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["OpDef", "REGISTRY", "ZERO", "defop", "apply", "register_kind"]


class _Zero:
    """Sentinel VJP: the gradient with respect to this input is identically zero."""

    def __repr__(self) -> str:
        return "ZERO"


ZERO = _Zero()


class OpDef:
    """One operation: name, NumPy forward, VJP rules, static shape rule, fused opcode."""

    __slots__ = ("name", "forward", "vjps", "shape", "elementwise", "opcode",
                 "differentiable", "variadic", "n_outputs")

    def __init__(self, name: str, forward: Callable, vjps: Sequence, shape: Callable | None,
                 elementwise: bool, opcode: str | None, differentiable: bool, variadic: bool):
        self.name = name
        self.forward = forward
        self.vjps = tuple(vjps)
        self.shape = shape
        self.elementwise = elementwise
        self.opcode = opcode
        self.differentiable = differentiable
        self.variadic = variadic

    def __repr__(self) -> str:
        return f"OpDef({self.name!r})"


REGISTRY: dict[str, OpDef] = {}


def defop(name: str, forward: Callable, *vjps, shape: Callable | None = None,
          elementwise: bool = False, opcode: str | None = None,
          differentiable: bool = True, variadic: bool = False) -> OpDef:
    """Declare an operation once; returns its :class:`OpDef`.

    ``variadic`` ops take their array inputs as one sequence (``concatenate``, ``stack``).
    ``differentiable=False`` ops (comparisons) produce results that never require grad.
    """
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is declared twice")
    if elementwise and opcode is None:
        opcode = name
    op = OpDef(name, forward, vjps, shape, elementwise, opcode, differentiable, variadic)
    REGISTRY[name] = op
    return op


# Engines register the classes they own and the function that applies an op to them.
# Checked in order: the static Node kind first, so mixing Node and Tensor reaches the static
# engine, which raises a clear TypeError.
_KINDS: list[tuple[type, Callable]] = []
_KIND_TYPES: dict[type, Callable] = {}


def register_kind(cls: type, applier: Callable, priority: int) -> None:
    """Route ops whose arguments include ``cls`` instances to ``applier(op, args, attrs)``."""
    _KINDS.append((priority, cls, applier))  # type: ignore[arg-type]
    _KINDS.sort(key=lambda t: -t[0])  # type: ignore[index]
    _KIND_TYPES.clear()
    for _, c, a in _KINDS:  # type: ignore[misc]
        _KIND_TYPES[c] = a


def apply(op: OpDef, args: tuple, attrs: dict[str, Any]) -> Any:
    """Run ``op`` on ``args``: NumPy for plain values, else the engine of the richest kind."""
    best = None
    best_rank = -1
    kinds = _KIND_TYPES
    for a in args:
        applier = kinds.get(type(a))
        if applier is not None:
            if best is None:
                best = applier
            elif applier is not best:
                best = _richest(args)
                break
    if best is None:
        if attrs:
            return op.forward(*args, **attrs)
        return op.forward(*args)
    return best(op, args, attrs)


def _richest(args: tuple) -> Callable:
    present = {type(a) for a in args}
    for _, cls, applier in _KINDS:  # type: ignore[misc]
        if cls in present:
            return applier
    raise AssertionError("unreachable")
