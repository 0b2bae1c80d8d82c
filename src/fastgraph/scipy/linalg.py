"""``fastgraph.scipy.linalg``: SciPy's ``scipy.linalg`` with gradients, SciPy's argument names
and semantics (``cholesky cho_factor cho_solve solve_triangular lu_factor lu_solve sqrtm expm
solve_sylvester solve_banded block_diag det inv``), from the declarations that export them here.

    >>> import fastgraph.scipy.linalg as spla
    >>> L = spla.cholesky(fg.tensor([[4.0, 2.0], [2.0, 3.0]], requires_grad=True), lower=True)

Each accepts NumPy values, Tensors or graph Nodes, like every fastgraph operation; any other
name is SciPy's own (not differentiable).
"""
from .._core import namespace as _namespace
from .. import ops as _ops  # noqa: F401  (the declarations)

globals().update(_namespace("scipy.linalg"))
__all__ = sorted(_namespace("scipy.linalg"))


def __getattr__(name: str):
    import scipy.linalg
    return getattr(scipy.linalg, name)
