"""The core layer: what every engine shares, importing none of them.

* :mod:`.dispatch` (compiled): :class:`OpDef` and :func:`apply`, the dispatcher every operation
  goes through, with the engines' registration (the eager recorder at C level, other kinds by
  :func:`register_kind`);
* :mod:`.registry`: :func:`defop` and :func:`defun` (one declaration per op: every fact about it
  is a field), :data:`REGISTRY`, :data:`API`, :data:`ZERO`, and what is generated from them
  (namespaces, NumPy protocol tables, method forms);
* :mod:`.tree`: the pytree rules (nested lists, tuples and dicts of values);
* :mod:`.shapes`: static shape rules and axis checks;
* :mod:`.config`: the thread count and the floating-point error policy;
* :mod:`.errors`: errors raised by every layer;
* :mod:`.toposort`: the compiled topological sort's checked entry point.

It sits on ``fastgraph.kernels`` (compiled loops over arrays) and under everything else.  (The
package is ``_core`` because NumPy has an ``np.core``, and every top-level name of fastgraph that
NumPy also has means what it means to NumPy.)
"""
from . import config  # first: it sets OpenMP's wait policy before a compiled module loads it
from .dispatch import OpDef, apply, holds_graph_value, is_tensor, register_kind, set_pack
from .registry import (ANS, API, G, LOSSES, NN, REGISTRY, TF, TOP, TOP_TF, X0, X1, X2, X3, ZERO,
                       Api, Kernel, Slot, defop, defun, method_forms, namespace, numpy_routes,
                       operator_ops)

__all__ = ["OpDef", "Api", "REGISTRY", "API", "ZERO", "TOP", "TF", "TOP_TF", "NN", "LOSSES",
           "apply", "defop", "defun",
           "holds_graph_value", "is_tensor", "register_kind", "set_pack", "namespace",
           "numpy_routes", "method_forms", "operator_ops", "G", "ANS", "X0", "X1", "X2", "X3",
           "Kernel", "Slot"]
