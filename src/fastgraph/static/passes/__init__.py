"""The pass pipeline: an ordered list of ``(name, fn)``; each ``fn(ir, ctx)`` lives in its own
module and can be switched off by name (``fg.Session(disable=("fold",))``).

A ``fuse`` pass (module ``fuse.py`` here, defining ``fuse(ir, ctx)``) is picked up automatically
and runs between ``blas`` and ``lower``: it replaces groups of elementwise ``op`` steps by
``call`` steps (see :mod:`fastgraph.static.plan`).
"""
from __future__ import annotations

import importlib

from .prune import prune
from .fold import fold
from .simplify import simplify
from .merge import merge
from .blas import blas
from .lower import lower
from .inplace import inplace
from .buffers import buffers

PIPELINE: list = [("prune", prune), ("fold", fold), ("simplify", simplify), ("merge", merge),
                  ("blas", blas)]

try:  # the next issue's pass slots in here when its module exists
    _fuse = importlib.import_module(__name__ + ".fuse")
    PIPELINE.append(("fuse", _fuse.fuse))
except ModuleNotFoundError as _e:  # pragma: no cover - depends on the checkout
    if _e.name != __name__ + ".fuse":
        raise

PIPELINE.append(("lower", lower))
PIPELINE.append(("inplace", inplace))
PIPELINE.append(("buffers", buffers))

PASS_NAMES = tuple(name for name, _ in PIPELINE)

__all__ = ["PIPELINE", "PASS_NAMES"]
