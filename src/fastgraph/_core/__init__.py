"""The core layer: what every engine shares, importing none of them.

* :mod:`.dispatch` (compiled): :class:`OpDef` and :func:`apply`, the dispatcher every operation
  goes through, with the engines' registration (the eager recorder at C level, other kinds by
  :func:`register_kind`);
* :mod:`.registry`: :func:`defop`, :data:`REGISTRY`, :data:`ZERO`;
* :mod:`.tree`: the pytree rules (nested lists, tuples and dicts of values);
* :mod:`.shapes`: static shape rules and axis checks;
* :mod:`.config`: the thread count and the floating-point error policy;
* :mod:`.errors`: errors raised by every layer.

It sits on ``fastgraph.kernels`` (compiled loops over arrays) and under everything else.
"""
from . import config  # first: it sets OpenMP's wait policy before a compiled module loads it
from .dispatch import OpDef, apply, holds_graph_value, is_tensor, register_kind, set_pack
from .registry import REGISTRY, ZERO, defop

__all__ = ["OpDef", "REGISTRY", "ZERO", "apply", "defop", "holds_graph_value", "is_tensor",
           "register_kind", "set_pack"]
