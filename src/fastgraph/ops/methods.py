"""Operators and method forms shared by the eager ``Tensor`` and the graph ``Node``, generated
from the declarations (their ``methods`` and ``operators``), so both kinds answer ``x + y``,
``x @ w``, ``x.sum(axis=0)``, ``x.exp()``... with the same fastgraph operation.  (``Tensor`` also
has the hottest operators compiled in its base class; those come first in its method resolution
order.)
"""
from __future__ import annotations

from .. import ops  # noqa: F401  (every declaration made before the methods are read)
from .._core import method_forms

__all__ = ["OpMethods"]


class OpMethods:
    """Mixin: Python operators and NumPy-named method forms of the fastgraph operations."""

    __slots__ = ()

    def __pos__(self):
        return self


for _name, _member in method_forms().items():
    setattr(OpMethods, _name, _member)
del _name, _member
