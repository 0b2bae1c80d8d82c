"""``fastgraph.scipy.stats``: SciPy's distributions with gradients, one module per family
(``norm t gamma beta chi2 poisson expon laplace logistic uniform cauchy multivariate_normal
dirichlet``), made from the declarations that export to ``scipy.stats.<family>``
(``ops/stats.py``), so every form a user writes works:

    >>> import fastgraph.scipy.stats.norm as norm
    >>> from fastgraph.scipy.stats import multivariate_normal as mvn
    >>> norm.logpdf(fg.tensor(0.3, requires_grad=True), loc=0.0, scale=2.0)  # doctest: +SKIP

Each module's methods (``pdf logpdf cdf logcdf sf logsf``, ``pmf logpmf``, ``entropy``) accept
NumPy values, Tensors or graph Nodes and are differentiable in the data and the parameters;
any other attribute (``rvs``, ``ppf``, ``fit``, ...) is SciPy's own, as is any other name of
this package.
"""
from __future__ import annotations

import sys
import types

from ..._core import API, namespace as _namespace
from ... import ops as _ops  # noqa: F401  (the declarations)

_PREFIX = "scipy.stats."


def _families() -> list[str]:
    names = set()
    for api in API.values():
        for e in api.exports:
            ns = e[0] if isinstance(e, tuple) else e
            if ns.startswith(_PREFIX):
                names.add(ns[len(_PREFIX):])
    return sorted(names)


def _scipy_attr(family: str):
    def __getattr__(name: str):
        import scipy.stats
        return getattr(getattr(scipy.stats, family), name)
    return __getattr__


def _module(family: str) -> types.ModuleType:
    full = f"{__name__}.{family}"
    mod = sys.modules.get(full)
    if mod is None:
        mod = types.ModuleType(full, f"``scipy.stats.{family}`` with gradients: "
                                     f"{', '.join(sorted(_namespace(_PREFIX + family)))}; any "
                                     f"other attribute is SciPy's own.")
        mod.__dict__.update(_namespace(_PREFIX + family))
        mod.__all__ = sorted(_namespace(_PREFIX + family))
        mod.__getattr__ = _scipy_attr(family)
        mod.__package__ = __name__
        sys.modules[full] = mod
    return mod


__all__ = _families()
globals().update({f: _module(f) for f in __all__})


def __getattr__(name: str):
    import scipy.stats
    return getattr(scipy.stats, name)
