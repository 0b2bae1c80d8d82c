"""``fastgraph.scipy.special``: ``erf erfc expit logit gammaln digamma polygamma logsumexp xlogy``.

Each accepts NumPy values, Tensors or graph Nodes, like every fastgraph operation.
"""
from ..ops import digamma, erf, erfc, gammaln, logit, logsumexp, polygamma, xlogy
from ..ops import sigmoid as expit

__all__ = ["erf", "erfc", "expit", "logit", "gammaln", "digamma", "polygamma", "logsumexp",
           "xlogy"]
