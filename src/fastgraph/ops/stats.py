"""SciPy's distributions with gradients (``fastgraph.scipy.stats.<family>``): the methods HIPS
autograd offers (``pdf logpdf cdf logcdf sf logsf``, ``pmf logpmf`` for ``poisson``,
``entropy`` where it has a closed form), with SciPy's argument names, defaults and
broadcasting, differentiable in the data and in every parameter SciPy's special functions can
differentiate in.

Each family is a few compositions of fastgraph ops (no new op): declared once here with
:func:`family`, exported to namespace ``scipy.stats.<family>``; ``fastgraph.scipy.stats``
makes each namespace a module (``import fastgraph.scipy.stats.norm as norm``).  Outside a
distribution's support the densities are SciPy's (``0``, ``-inf``) with a zero gradient.  Not
differentiable (``NotImplementedError``, from the special function): ``gamma.cdf``'s and
``chi2.cdf``'s shape, ``beta.cdf``'s ``a``/``b``, ``t.cdf``'s ``df``; ``poisson``'s ``k`` carries
no gradient (an integer).  Anything else (``rvs``, ``ppf``, ``fit``, frozen distributions) is
SciPy's own.
"""
from __future__ import annotations

import math

import numpy as np

from .._core import defun, namespace as _namespace

from .. import ops as F

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)
_NEG_INF = -np.inf


def family(name: str, **methods) -> None:
    """Declare the methods of distribution ``name``: exported as ``scipy.stats.<name>.<m>``."""
    for method, fn in methods.items():
        fn.__name__ = fn.__qualname__ = method
        defun(fn, name=f"stats_{name}_{method}", exports=((f"scipy.stats.{name}", method),))


def _symmetric_family(name: str, logpdf, cdf, entropy) -> None:
    """Declare a location-scale distribution symmetric about ``loc`` from its ``logpdf`` and
    ``cdf``: ``pdf = exp(logpdf)``, ``logcdf = log(cdf)`` and, by the symmetry,
    ``sf(x) = cdf(-x)`` about ``-loc`` (no ``1 - cdf`` cancellation in the right tail)."""
    family(name,
           logpdf=logpdf,
           pdf=lambda x, loc=0.0, scale=1.0: F.exp(logpdf(x, loc, scale)),
           cdf=cdf,
           logcdf=lambda x, loc=0.0, scale=1.0: F.log(cdf(x, loc, scale)),
           sf=lambda x, loc=0.0, scale=1.0: cdf(-x, -loc, scale),
           logsf=lambda x, loc=0.0, scale=1.0: F.log(cdf(-x, -loc, scale)),
           entropy=entropy)


def _inside(cond, value, outside):
    """``value`` where ``cond`` holds, ``outside`` elsewhere (a constant: no gradient there)."""
    return F.where(cond, value, outside)


def _log(v):
    # a Python number's log stays a Python float: float32 data stay float32
    return math.log(v) if isinstance(v, (int, float)) else F.log(v)


def _std(x, loc, scale):
    return (x - loc) / scale


# ---- norm ---------------------------------------------------------------------------------------
def _norm_logpdf(x, loc=0.0, scale=1.0):
    y = _std(x, loc, scale)
    return -0.5 * y * y - _log(scale) - 0.5 * _LOG_2PI


family("norm",
       logpdf=_norm_logpdf,
       pdf=lambda x, loc=0.0, scale=1.0: F.exp(_norm_logpdf(x, loc, scale)),
       cdf=lambda x, loc=0.0, scale=1.0: F.ndtr(_std(x, loc, scale)),
       logcdf=lambda x, loc=0.0, scale=1.0: F.log_ndtr(_std(x, loc, scale)),
       sf=lambda x, loc=0.0, scale=1.0: F.ndtr(-_std(x, loc, scale)),
       logsf=lambda x, loc=0.0, scale=1.0: F.log_ndtr(-_std(x, loc, scale)),
       entropy=lambda loc=0.0, scale=1.0: 0.5 * (_LOG_2PI + 1.0) + _log(scale) + loc * 0.0)


# ---- t --------------------------------------------------------------------------------------------
def _t_logpdf(x, df, loc=0.0, scale=1.0):
    y = _std(x, loc, scale)
    return (F.gammaln((df + 1) * 0.5) - F.gammaln(df * 0.5) - 0.5 * F.log(df * math.pi)
            - (df + 1) * 0.5 * F.log1p(y * y / df) - _log(scale))


def _t_cdf(x, df, loc=0.0, scale=1.0):
    # P(T <= y) = 1 - I_{df/(df+y^2)}(df/2, 1/2) / 2 for y >= 0, by symmetry below
    y = _std(x, loc, scale)
    tail = 0.5 * F.betainc(df * 0.5, 0.5, df / (df + y * y))
    return F.where(F.greater(y, 0), 1 - tail, tail)


family("t",
       logpdf=_t_logpdf,
       pdf=lambda x, df, loc=0.0, scale=1.0: F.exp(_t_logpdf(x, df, loc, scale)),
       cdf=_t_cdf,
       logcdf=lambda x, df, loc=0.0, scale=1.0: F.log(_t_cdf(x, df, loc, scale)),
       sf=lambda x, df, loc=0.0, scale=1.0: _t_cdf(-x, df, -loc, scale),
       logsf=lambda x, df, loc=0.0, scale=1.0: F.log(_t_cdf(-x, df, -loc, scale)))


# ---- gamma, chi2 --------------------------------------------------------------------------------
def _gamma_logpdf(x, a, loc=0.0, scale=1.0):
    y = _std(x, loc, scale)
    pos = F.greater(y, 0)
    ys = F.where(pos, y, 1.0)
    return _inside(pos, F.xlogy(a - 1, ys) - ys - F.gammaln(a) - _log(scale), _NEG_INF)


def _gamma_cdf(x, a, loc=0.0, scale=1.0):
    return F.gammainc(a, F.maximum(_std(x, loc, scale), 0.0))


def _gamma_sf(x, a, loc=0.0, scale=1.0):
    return F.gammaincc(a, F.maximum(_std(x, loc, scale), 0.0))


family("gamma",
       logpdf=_gamma_logpdf,
       pdf=lambda x, a, loc=0.0, scale=1.0: F.exp(_gamma_logpdf(x, a, loc, scale)),
       cdf=_gamma_cdf,
       logcdf=lambda x, a, loc=0.0, scale=1.0: F.log(_gamma_cdf(x, a, loc, scale)),
       sf=_gamma_sf,
       logsf=lambda x, a, loc=0.0, scale=1.0: F.log(_gamma_sf(x, a, loc, scale)),
       entropy=lambda a, loc=0.0, scale=1.0: (a + F.gammaln(a) + (1 - a) * F.digamma(a)
                                              + _log(scale) + loc * 0.0))

family("chi2",
       logpdf=lambda x, df, loc=0.0, scale=1.0: _gamma_logpdf(x, df * 0.5, loc, scale * 2.0),
       pdf=lambda x, df, loc=0.0, scale=1.0: F.exp(_gamma_logpdf(x, df * 0.5, loc, scale * 2.0)),
       cdf=lambda x, df, loc=0.0, scale=1.0: _gamma_cdf(x, df * 0.5, loc, scale * 2.0),
       logcdf=lambda x, df, loc=0.0, scale=1.0: F.log(_gamma_cdf(x, df * 0.5, loc, scale * 2.0)),
       sf=lambda x, df, loc=0.0, scale=1.0: _gamma_sf(x, df * 0.5, loc, scale * 2.0),
       logsf=lambda x, df, loc=0.0, scale=1.0: F.log(_gamma_sf(x, df * 0.5, loc, scale * 2.0)))


# ---- beta -------------------------------------------------------------------------------------------
def _beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    y = _std(x, loc, scale)
    inside = F.logical_and(F.greater(y, 0), F.less(y, 1))
    ys = F.where(inside, y, 0.5)
    return _inside(inside, F.xlogy(a - 1, ys) + F.xlog1py(b - 1, -ys) - F.betaln(a, b)
                   - _log(scale), _NEG_INF)


def _beta_cdf(x, a, b, loc=0.0, scale=1.0):
    return F.betainc(a, b, F.clip(_std(x, loc, scale), 0.0, 1.0))


family("beta",
       logpdf=_beta_logpdf,
       pdf=lambda x, a, b, loc=0.0, scale=1.0: F.exp(_beta_logpdf(x, a, b, loc, scale)),
       cdf=_beta_cdf,
       logcdf=lambda x, a, b, loc=0.0, scale=1.0: F.log(_beta_cdf(x, a, b, loc, scale)),
       sf=lambda x, a, b, loc=0.0, scale=1.0: 1 - _beta_cdf(x, a, b, loc, scale),
       logsf=lambda x, a, b, loc=0.0, scale=1.0: F.log1p(-_beta_cdf(x, a, b, loc, scale)),
       entropy=lambda a, b, loc=0.0, scale=1.0: (
           F.betaln(a, b) - (a - 1) * F.digamma(a) - (b - 1) * F.digamma(b)
           + (a + b - 2) * F.digamma(a + b) + _log(scale) + loc * 0.0))


# ---- poisson ------------------------------------------------------------------------------------------
def _poisson_logpmf(k, mu, loc=0):
    k = k - loc
    valid = F.logical_and(F.equal(F.floor(k), k), F.greater_equal(k, 0))
    ks = F.where(valid, k, 0)
    return _inside(valid, F.xlogy(ks, mu) - F.gammaln(ks + 1) - mu, _NEG_INF)


def _poisson_cdf(k, mu, loc=0):
    k = F.floor(k - loc)
    valid = F.greater_equal(k, 0)
    return _inside(valid, F.gammaincc(F.where(valid, k, 0) + 1, mu), 0.0)


family("poisson",
       logpmf=_poisson_logpmf,
       pmf=lambda k, mu, loc=0: F.exp(_poisson_logpmf(k, mu, loc)),
       cdf=_poisson_cdf,
       logcdf=lambda k, mu, loc=0: F.log(_poisson_cdf(k, mu, loc)),
       sf=lambda k, mu, loc=0: 1 - _poisson_cdf(k, mu, loc),
       logsf=lambda k, mu, loc=0: F.log1p(-_poisson_cdf(k, mu, loc)))


# ---- expon, laplace, logistic, uniform, cauchy ----------------------------------------------------------
def _expon_logpdf(x, loc=0.0, scale=1.0):
    y = _std(x, loc, scale)
    return _inside(F.greater_equal(y, 0), -y - _log(scale), _NEG_INF)


def _expon_cdf(x, loc=0.0, scale=1.0):
    return -F.expm1(-F.maximum(_std(x, loc, scale), 0.0))


def _expon_logsf(x, loc=0.0, scale=1.0):
    return -F.maximum(_std(x, loc, scale), 0.0)


family("expon",
       logpdf=_expon_logpdf,
       pdf=lambda x, loc=0.0, scale=1.0: F.exp(_expon_logpdf(x, loc, scale)),
       cdf=_expon_cdf,
       logcdf=lambda x, loc=0.0, scale=1.0: F.log(_expon_cdf(x, loc, scale)),
       sf=lambda x, loc=0.0, scale=1.0: F.exp(_expon_logsf(x, loc, scale)),
       logsf=_expon_logsf,
       entropy=lambda loc=0.0, scale=1.0: 1.0 + _log(scale) + loc * 0.0)


def _laplace_logpdf(x, loc=0.0, scale=1.0):
    return -F.abs(_std(x, loc, scale)) - _log(2.0 * scale)


def _laplace_cdf(x, loc=0.0, scale=1.0):
    y = _std(x, loc, scale)
    return F.where(F.less(y, 0), 0.5 * F.exp(F.minimum(y, 0.0)),
                   1 - 0.5 * F.exp(-F.maximum(y, 0.0)))


_symmetric_family("laplace", _laplace_logpdf, _laplace_cdf,
                  entropy=lambda loc=0.0, scale=1.0: _log(2.0 * math.e * scale) + loc * 0.0)


def _logistic_logpdf(x, loc=0.0, scale=1.0):
    y = _std(x, loc, scale)
    return -y - 2.0 * F.softplus(-y) - _log(scale)


family("logistic",
       logpdf=_logistic_logpdf,
       pdf=lambda x, loc=0.0, scale=1.0: F.exp(_logistic_logpdf(x, loc, scale)),
       cdf=lambda x, loc=0.0, scale=1.0: F.sigmoid(_std(x, loc, scale)),
       logcdf=lambda x, loc=0.0, scale=1.0: -F.softplus(-_std(x, loc, scale)),
       sf=lambda x, loc=0.0, scale=1.0: F.sigmoid(-_std(x, loc, scale)),
       logsf=lambda x, loc=0.0, scale=1.0: -F.softplus(_std(x, loc, scale)),
       entropy=lambda loc=0.0, scale=1.0: 2.0 + _log(scale) + loc * 0.0)


def _uniform_inside(x, loc, scale):
    y = _std(x, loc, scale)
    return y, F.logical_and(F.greater_equal(y, 0), F.less_equal(y, 1))


def _uniform_logpdf(x, loc=0.0, scale=1.0):
    y, inside = _uniform_inside(x, loc, scale)
    return _inside(inside, -_log(scale) + y * 0.0, _NEG_INF)


def _uniform_cdf(x, loc=0.0, scale=1.0):
    return F.clip(_std(x, loc, scale), 0.0, 1.0)


family("uniform",
       logpdf=_uniform_logpdf,
       pdf=lambda x, loc=0.0, scale=1.0: F.exp(_uniform_logpdf(x, loc, scale)),
       cdf=_uniform_cdf,
       logcdf=lambda x, loc=0.0, scale=1.0: F.log(_uniform_cdf(x, loc, scale)),
       sf=lambda x, loc=0.0, scale=1.0: 1 - _uniform_cdf(x, loc, scale),
       logsf=lambda x, loc=0.0, scale=1.0: F.log1p(-_uniform_cdf(x, loc, scale)),
       entropy=lambda loc=0.0, scale=1.0: _log(scale) + loc * 0.0)


def _cauchy_logpdf(x, loc=0.0, scale=1.0):
    y = _std(x, loc, scale)
    return -_LOG_PI - _log(scale) - F.log1p(y * y)


def _cauchy_cdf(x, loc=0.0, scale=1.0):
    return 0.5 + F.arctan(_std(x, loc, scale)) / math.pi


_symmetric_family("cauchy", _cauchy_logpdf, _cauchy_cdf,
                  entropy=lambda loc=0.0, scale=1.0: (math.log(4.0 * math.pi) + _log(scale)
                                                      + loc * 0.0))


# ---- multivariate_normal, dirichlet -----------------------------------------------------------------------
def _ndim(x) -> int:
    return F.shape._known_ndim(x, "multivariate_normal")


def _dims(x) -> tuple:
    return tuple(F.shape._shape_of(x))


def _known_last(x, what: str) -> int:
    n = _dims(x)[-1]
    if n is None:
        raise ValueError(f"{what}: the length of the last axis must be known")
    return n


def _mvn_cov(cov, d):
    """SciPy's forms of ``cov``: a scalar (times the identity), the diagonal, or the matrix."""
    if _ndim(cov) == 0:
        return cov * np.eye(d)
    if _ndim(cov) == 1:
        return F.diag(cov)
    return cov


def _mvn_dimension(x, mean, cov) -> int:
    for v in (cov, mean):
        if v is not None and _ndim(v) >= 1:
            return _known_last(v, "multivariate_normal")
    return _known_last(x, "multivariate_normal") if _ndim(x) else 1


def _mvn_logpdf(x, mean=None, cov=1, allow_singular=False):
    if allow_singular:
        raise NotImplementedError("multivariate_normal: allow_singular=True (a pseudo-"
                                  "determinant) is not differentiable here; use SciPy's")
    d = _mvn_dimension(x, mean, cov)
    chol = _namespace("linalg")["cholesky"](_mvn_cov(cov, d))
    diff = x if mean is None else x - mean
    if d == 1 and (_ndim(diff) == 0 or _dims(diff)[-1] != 1):
        diff = F.expand_dims(diff, -1)   # SciPy: scalars or 1-D x of a 1-D distribution
    lead = _dims(diff)[:-1]
    # L z = diff^T for every row of diff at once; the Mahalanobis terms are |z|^2
    z = _namespace("scipy.linalg")["solve_triangular"](
        chol, F.swapaxes(F.reshape(diff, (-1, d)), 0, 1), lower=True)
    out = (-0.5 * F.sum(z * z, axis=0) - F.sum(F.log(F.diagonal(chol)))
           - 0.5 * d * _LOG_2PI)
    return F.reshape(out, lead)


def _mvn_entropy(mean=None, cov=1):
    d = 1
    for v in (cov, mean):
        if v is not None and _ndim(v) >= 1:
            d = _known_last(v, "multivariate_normal")
            break
    chol = _namespace("linalg")["cholesky"](_mvn_cov(cov, d))
    return 0.5 * d * (1.0 + _LOG_2PI) + F.sum(F.log(F.diagonal(chol)))


family("multivariate_normal",
       logpdf=_mvn_logpdf,
       pdf=lambda x, mean=None, cov=1, allow_singular=False: F.exp(
           _mvn_logpdf(x, mean, cov, allow_singular)),
       entropy=_mvn_entropy)


def _dirichlet_logpdf(x, alpha):
    # SciPy's layout: the components along x's first axis (x is (k,) or (k, n))
    extra = _ndim(x) - 1
    a = F.reshape(alpha, _dims(alpha) + (1,) * extra) if extra else alpha
    log_b = F.sum(F.gammaln(alpha)) - F.gammaln(F.sum(alpha))
    return F.sum(F.xlogy(a - 1, x), axis=0) - log_b


family("dirichlet",
       logpdf=_dirichlet_logpdf,
       pdf=lambda x, alpha: F.exp(_dirichlet_logpdf(x, alpha)),
       entropy=lambda alpha: (F.sum(F.gammaln(alpha)) - F.gammaln(F.sum(alpha))
                              + (F.sum(alpha) - _known_last(alpha, "dirichlet"))
                              * F.digamma(F.sum(alpha))
                              - F.sum((alpha - 1) * F.digamma(alpha))))
