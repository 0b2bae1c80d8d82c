"""``fastgraph.scipy.special``: the differentiable counterparts of SciPy's special functions
whose declarations export them here (``erf erfc expit logit gammaln digamma polygamma logsumexp
xlogy``).

Each accepts NumPy values, Tensors or graph Nodes, like every fastgraph operation.
"""
from .._core import namespace as _namespace
from .. import ops as _ops  # noqa: F401  (the declarations)

globals().update(_namespace("scipy.special"))
__all__ = sorted(_namespace("scipy.special"))
