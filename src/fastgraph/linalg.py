"""``fg.linalg``: differentiable ``inv solve det slogdet norm`` (batched, NumPy semantics),
the ops whose declarations export them here; NumPy's other ``linalg`` functions (``eigh``,
``svd``...) are NumPy's own, not differentiable, so drop-in scripts keep working."""
from ._core import namespace as _namespace
from . import ops as _ops  # noqa: F401  (the declarations)

globals().update(_namespace("linalg"))
__all__ = sorted(_namespace("linalg"))


def __getattr__(name: str):
    import numpy.linalg
    return getattr(numpy.linalg, name)
