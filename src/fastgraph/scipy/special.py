"""``fastgraph.scipy.special``: SciPy's special functions with gradients, SciPy's names,
argument order and semantics, from the declarations that export them here (``ops/special.py``
and the elementwise ops): ``gamma gammaln gammasgn rgamma digamma psi polygamma multigammaln
gammainc gammaincc beta betaln betainc erf erfc erfinv erfcinv expit logit logsumexp xlogy
xlog1py j0 j1 jn y0 y1 yn i0 i1 iv ive entr ndtr log_ndtr ndtri softmax log_softmax``.

    >>> import fastgraph.scipy.special as sps
    >>> sps.gammaln(fg.tensor([0.5, 3.0], requires_grad=True))  # doctest: +SKIP

Each accepts NumPy values, Tensors or graph Nodes, like every fastgraph operation.  Integer
orders (``jn``'s and ``yn``'s ``n``, ``multigammaln``'s ``d``) carry no gradient; asking for a
gradient SciPy cannot give (``gammainc``'s ``a``, ``betainc``'s ``a``/``b``, ``iv``'s ``v``)
raises ``NotImplementedError``.  Any other name is SciPy's own (not differentiable).
"""
from .._core import namespace as _namespace
from .. import ops as _ops  # noqa: F401  (the declarations)

globals().update(_namespace("scipy.special"))
__all__ = sorted(_namespace("scipy.special"))


def __getattr__(name: str):
    import scipy.special
    return getattr(scipy.special, name)
