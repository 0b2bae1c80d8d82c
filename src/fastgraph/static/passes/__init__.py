"""The pass pipeline: an ordered list of ``(name, fn)``; each ``fn(ir, ctx)`` lives in its own
module (``fuse``, the largest, in a package of its own) and can be switched off by name
(``fg.Session(disable=("fold",))``).
"""
from __future__ import annotations

from .prune import prune
from .fold import fold
from .simplify import simplify
from .merge import merge
from .blas import blas
from .fuse import fuse as _fuse   # (the name ``fuse`` stays the package: fuse.cost, ...)
from .lower import lower
from .inplace import inplace
from .buffers import buffers
from ...fused.compiler import SUPERINSTRUCTIONS

PIPELINE: list = [("prune", prune), ("fold", fold), ("simplify", simplify), ("merge", merge),
                  ("blas", blas), ("fuse", _fuse), ("lower", lower), ("inplace", inplace),
                  ("buffers", buffers)]

#: what ``disable=`` takes: the passes, and the sub-passes that can be switched off by name
#: (the fused-kernel compiler's superinstruction peephole, run by ``fuse``)
PASS_NAMES = tuple(name for name, _ in PIPELINE) + (SUPERINSTRUCTIONS,)

__all__ = ["PIPELINE", "PASS_NAMES"]
