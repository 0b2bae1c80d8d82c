"""``name=``: TensorFlow's functions name the node they make; the engine of each kind of value
says how (:func:`register_namer`).  Values without names (eager Tensors, NumPy values) come
back unchanged, as TensorFlow's eager mode ignores ``name`` too.

    >>> y = named(fg.reduce_sum(x), "loss")     # a graph node called "loss"
"""
from __future__ import annotations

from typing import Callable

__all__ = ["register_namer", "named"]

_NAMERS: dict = {}


def register_namer(cls: type, namer: Callable) -> None:
    """``namer(value, name)`` gives values of type ``cls`` the name ``name``."""
    _NAMERS[cls] = namer


def named(value, name):
    """``value`` called ``name`` (``name=None``: unchanged)."""
    if name is None:
        return value
    namer = _NAMERS.get(type(value))
    return value if namer is None else namer(value, name)
