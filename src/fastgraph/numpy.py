"""``import fastgraph.numpy as np``: a drop-in NumPy namespace.

Every fastgraph operation is available under its NumPy name and is differentiable; any other name
(constants, ``linspace``, ``random``, dtypes, ...) is NumPy's own, unchanged, so existing scripts
keep working after changing only their import line.
"""
from __future__ import annotations

import numpy as _np

from . import ops as _ops
from .ops import *  # noqa: F401,F403  (the vocabulary, under NumPy names)
from .ops import abs, max, min, sum  # noqa: F401  (shadow the builtins on purpose)
from . import linalg  # noqa: F401

absolute = _ops.abs
amax = _ops.max
amin = _ops.min
true_divide = _ops.divide

__all__ = list(_ops.PUBLIC) + ["absolute", "amax", "amin", "true_divide", "linalg"]


def __getattr__(name: str):
    # everything fastgraph does not define is NumPy's
    return getattr(_np, name)


def __dir__():
    return sorted(set(globals()) | set(dir(_np)))
