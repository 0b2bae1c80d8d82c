"""The distributions' op table: one line per method of each ``fastgraph.scipy.stats`` family,
run by ``tests/test_special_table.py`` beside the special functions.

Each case calls ``<family>.<method>(data, *parameters)`` with SciPy's positional order
(``x, shape parameters..., loc, scale``), parameters shaped to broadcast against the data; the
reference is ``scipy.stats``'s method and the peer ``torch.distributions`` where it has the
family and the method (``log_prob``, ``cdf``, ``entropy``).  Data stay inside the support and
away from its edges (finite differences).
"""
from __future__ import annotations

import numpy as np
import scipy.stats as ss

import fastgraph.scipy.stats as fst
from linalg_table import LinalgCase, fsym, nsym

__all__ = ["CASES", "STATS_FUNCTIONS"]

CASES: list[LinalgCase] = []


def _t():
    import torch
    return torch


def _td():
    import torch.distributions as td
    return td


def _unit01(rng, shape):
    return rng.uniform(0.15, 0.85, shape)


def _counts(rng, shape):
    return rng.integers(0, 6, shape).astype(np.float64)


def _renormalised(x):
    # (SciPy checks that x sums to 1 within float64's rounding)
    x = x.astype(np.float64)
    return x / x.sum(0)


def _spd(rng, shape):
    a = rng.standard_normal(shape)
    return a @ a.T / shape[0] + np.eye(shape[0])


def _simplex_columns(rng, shape):
    return rng.dirichlet(np.full(shape[0], 3.0), size=shape[1]).T


X = (3, 4)
# family: (data domain, [(parameter shape, domain), ...], torch distribution or None, methods)
_CONTINUOUS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
FAMILIES = {
    "norm": ("real", [((4,), "real"), ((3, 1), "pos")], lambda l, s: _td().Normal(l, s),
             _CONTINUOUS + ("entropy",)),
    "t": ("real", [((4,), "gt1"), ((3, 1), "real"), ((), "pos")],
          lambda df, l, s: _td().StudentT(df, l, s), _CONTINUOUS),
    "gamma": ("pos", [((4,), "gt1"), ((), lambda r, s: np.asarray(-0.3)), ((3, 1), "pos")],
              None, _CONTINUOUS + ("entropy",)),
    "chi2": ("pos", [((4,), "gt1")], lambda df: _td().Chi2(df), _CONTINUOUS),
    "beta": (_unit01, [((4,), "gt1"), ((3, 1), "gt1")], lambda a, b: _td().Beta(a, b),
             _CONTINUOUS + ("entropy",)),
    "expon": ("pos", [((), lambda r, s: np.asarray(0.2)), ((4,), "pos")], None,
              _CONTINUOUS + ("entropy",)),
    "laplace": ("away", [((4,), lambda r, s: r.uniform(-0.2, 0.2, s)), ((3, 1), "pos")],
                lambda l, s: _td().Laplace(l, s), _CONTINUOUS + ("entropy",)),
    "logistic": ("real", [((4,), "real"), ((3, 1), "pos")], None, _CONTINUOUS + ("entropy",)),
    "uniform": (lambda r, s: r.uniform(0.1, 0.9, s), [((4,), lambda r, s: r.uniform(-0.5, 0.0, s)),
                                                       ((3, 1), lambda r, s: r.uniform(1.0, 2.0, s))],
                lambda l, s: _td().Uniform(l, l + s, validate_args=False), _CONTINUOUS + ("entropy",)),
    "cauchy": ("real", [((4,), "real"), ((3, 1), "pos")], lambda l, s: _td().Cauchy(l, s),
               _CONTINUOUS + ("entropy",)),
}

# the parameters each method may differentiate (not the shape of gamma's/chi2's/beta's cdf)
_NO_SHAPE_GRAD = {("gamma", m) for m in ("cdf", "logcdf", "sf", "logsf")} | \
    {("chi2", m) for m in ("cdf", "logcdf", "sf", "logsf")} | \
    {("beta", m) for m in ("cdf", "logcdf", "sf", "logsf")} | \
    {("t", m) for m in ("cdf", "logcdf", "sf", "logsf")}
_SHAPES = {"gamma": 1, "chi2": 1, "beta": 2, "t": 1}
_TORCH_METHOD = {"logpdf": lambda d, x: d.log_prob(x), "pdf": lambda d, x: d.log_prob(x).exp(),
                 "cdf": lambda d, x: d.cdf(x), "entropy": lambda d: d.entropy()}
#: the families whose torch distribution has a cdf
_TORCH_CDF = {"norm", "laplace", "uniform", "cauchy"}


#: the cases checked to second order (the rest share their compositions' building blocks)
SECOND_ORDER = {"norm_logpdf", "t_logpdf", "gamma_logpdf", "beta_logpdf", "poisson_logpmf",
                "norm_logcdf", "multivariate_normal_logpdf", "dirichlet_logpdf"}


def _add(name, op, fn, args, ref, torch=None, **kw):
    args = tuple((tuple(s), d) for s, d in args)
    kw["order2"] = name in SECOND_ORDER
    diff = kw.pop("diff", tuple(range(len(args))))
    CASES.append(LinalgCase(name, op, fn, args, ref, torch, tuple(diff), **kw))


def _method_case(family, method, data, params, dist):
    ours = getattr(getattr(fst, family), method)
    theirs = getattr(getattr(ss, family), method)
    n_shape = _SHAPES.get(family, 0)
    torch = None
    if dist is not None and method in _TORCH_METHOD and (method != "cdf"
                                                         or family in _TORCH_CDF):
        if method == "entropy":
            torch = lambda *ps: _TORCH_METHOD[method](dist(*ps))  # noqa: E731
        else:
            torch = lambda x, *ps: _TORCH_METHOD[method](dist(*ps), x)  # noqa: E731
    if method == "entropy":
        diff = tuple(range(len(params)))
        _add(f"{family}_{method}", f"{family}.{method}", ours, params, theirs, torch, diff=diff)
        return
    diff = tuple(i for i in range(len(params) + 1)
                 if not ((family, method) in _NO_SHAPE_GRAD and 1 <= i <= n_shape))
    # a shift that torch's distribution has no argument for (gamma's, expon's loc)
    if family in ("gamma", "expon"):
        torch = None
    _add(f"{family}_{method}", f"{family}.{method}", ours, [(X, data)] + list(params), theirs,
         torch, diff=diff)


for _family, (_data, _params, _dist, _methods) in FAMILIES.items():
    for _method in _methods:
        _method_case(_family, _method, _data, _params, _dist)

# poisson: k carries no gradient
for _method in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"):
    _add(f"poisson_{_method}", f"poisson.{_method}", getattr(fst.poisson, _method),
         [(X, _counts), ((4,), "pos")], getattr(ss.poisson, _method),
         (lambda k, mu: _td().Poisson(mu).log_prob(k)) if _method == "logpmf" else None,
         diff=(1,))

# multivariate_normal: batched data, the mean and the covariance
_add("multivariate_normal_logpdf", "multivariate_normal.logpdf",
     lambda x, m, c: fst.multivariate_normal.logpdf(x, m, fsym(c)),
     [((5, 3), "real"), ((3,), "real"), ((3, 3), _spd)],
     lambda x, m, c: ss.multivariate_normal.logpdf(x, m, nsym(c)),
     lambda x, m, c: _td().MultivariateNormal(m, covariance_matrix=(c + c.mT) / 2).log_prob(x))
_add("multivariate_normal_logpdf_1d", "multivariate_normal.logpdf",
     lambda x, m, c: fst.multivariate_normal.logpdf(x, m, fsym(c)),
     [((3,), "real"), ((3,), "real"), ((3, 3), _spd)],
     lambda x, m, c: ss.multivariate_normal.logpdf(x, m, nsym(c)))
_add("multivariate_normal_pdf_diag", "multivariate_normal.pdf",
     lambda x, m, c: fst.multivariate_normal.pdf(x, m, c),
     [((4, 2), "real"), ((2,), "real"), ((2,), "pos")], ss.multivariate_normal.pdf)
_add("multivariate_normal_entropy", "multivariate_normal.entropy",
     lambda m, c: fst.multivariate_normal.entropy(m, fsym(c)), [((3,), "real"), ((3, 3), _spd)],
     lambda m, c: ss.multivariate_normal.entropy(m, nsym(c)),
     lambda m, c: _td().MultivariateNormal(m, covariance_matrix=(c + c.mT) / 2).entropy(),
     diff=(1,))

# dirichlet: SciPy's layout (components along the first axis)
_add("dirichlet_logpdf", "dirichlet.logpdf", fst.dirichlet.logpdf,
     [((3, 4), _simplex_columns), ((3,), "gt1")], ss.dirichlet.logpdf, diff=(1,))
_add("dirichlet_logpdf_1d", "dirichlet.logpdf", fst.dirichlet.logpdf,
     [((3,), lambda r, s: _simplex_columns(r, (3, 1))[:, 0]), ((3,), "gt1")],
     lambda x, a: ss.dirichlet.logpdf(_renormalised(x), a),
     lambda x, a: _td().Dirichlet(a).log_prob(x), diff=(1,))
_add("dirichlet_pdf", "dirichlet.pdf", fst.dirichlet.pdf,
     [((3, 2), _simplex_columns), ((3,), "gt1")], ss.dirichlet.pdf, diff=(1,))
_add("dirichlet_entropy", "dirichlet.entropy", fst.dirichlet.entropy, [((4,), "gt1")],
     ss.dirichlet.entropy, lambda a: _td().Dirichlet(a).entropy())

#: every family.method ``fastgraph.scipy.stats`` must offer
STATS_FUNCTIONS = tuple(f"{f}.{m}" for f, (_, _, _, ms) in FAMILIES.items() for m in ms) + \
    tuple(f"poisson.{m}" for m in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")) + \
    ("multivariate_normal.logpdf", "multivariate_normal.pdf", "multivariate_normal.entropy",
     "dirichlet.logpdf", "dirichlet.pdf", "dirichlet.entropy")
