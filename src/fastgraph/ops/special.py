"""SciPy's special functions with gradients (``fastgraph.scipy.special``), beside the ones
declared with the other elementwise ops (``erf erfc expit logit gammaln digamma psi polygamma
xlogy``).

Each forward is SciPy's own ufunc (values, dtypes, ``nan``/``inf`` and broadcasting are SciPy's);
each VJP is written with fastgraph ops, so gradients of any order work.  Arguments without a
gradient:

* the integer orders ``n`` of ``jn`` and ``yn`` and the dimension ``d`` of ``multigammaln``
  carry none (they are not continuous parameters);
* ``gammainc``/``gammaincc``'s ``a``, ``betainc``'s ``a`` and ``b`` and the real order ``v`` of
  ``iv``/``ive`` have derivatives that SciPy cannot compute (nor HIPS autograd): asking for one
  raises ``NotImplementedError`` naming the argument, rather than returning zero.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as _sp

from .._core import ZERO, apply, defop, defun
from .._core import shapes as _shapes
from .reductions import _canon_axis, _canon_keepdims

from .. import ops as F

SCIPY = ("scipy.special",)
_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LOG_PI = math.log(math.pi)


def _no_gradient(op: str, arg: str, why: str):
    """The rule of an argument whose derivative SciPy does not provide: it raises."""
    def rule(g, ans, *inputs, **attrs):
        raise NotImplementedError(
            f"{op}: no gradient with respect to {arg} ({why}); treat {arg} as a constant "
            f"(a NumPy value, or a Tensor that does not require grad)")
    rule.__name__ = f"{op}_no_gradient_{arg}"
    return rule


# ---- gamma and relatives --------------------------------------------------------------------
gamma = defop("gamma", _sp.gamma, lambda g, ans, x: g * ans * F.digamma(x), elementwise=True,
              complex_vjps=True, exports=SCIPY)
gammasgn = defop("gammasgn", _sp.gammasgn, ZERO, elementwise=True, exports=SCIPY)
# 1 / gamma(x): d = -digamma(x) / gamma(x) = -digamma(x) * rgamma(x)
rgamma = defop("rgamma", _sp.rgamma, lambda g, ans, x: -g * ans * F.digamma(x),
               elementwise=True, complex_vjps=True, exports=SCIPY)


# d/dx P(a, x) = x^(a-1) e^(-x) / Gamma(a), in logs so that large a does not overflow
def _gammainc_density(a, x):
    return F.exp(F.xlogy(a - 1, x) - x - F.gammaln(a))


_GAMMAINC_A = "SciPy has no derivative of the incomplete gamma function in its shape"
gammainc = defop("gammainc", _sp.gammainc, _no_gradient("gammainc", "a", _GAMMAINC_A),
                 lambda g, ans, a, x: g * _gammainc_density(a, x), elementwise=True,
                 exports=SCIPY)
gammaincc = defop("gammaincc", _sp.gammaincc, _no_gradient("gammaincc", "a", _GAMMAINC_A),
                  lambda g, ans, a, x: -g * _gammainc_density(a, x), elementwise=True,
                  exports=SCIPY)


def _beta_vjp(g, ans, a, b):
    return g * ans * (F.digamma(a) - F.digamma(a + b))


def _betaln_vjp(g, ans, a, b):
    return g * (F.digamma(a) - F.digamma(a + b))


beta = defop("beta", _sp.beta, _beta_vjp, lambda g, ans, a, b: _beta_vjp(g, ans, b, a),
             elementwise=True, exports=SCIPY)
betaln = defop("betaln", _sp.betaln, _betaln_vjp,
               lambda g, ans, a, b: _betaln_vjp(g, ans, b, a), elementwise=True, exports=SCIPY)

_BETAINC_AB = "SciPy has no derivative of the regularised incomplete beta function in a or b"
# d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b)
betainc = defop("betainc", _sp.betainc, _no_gradient("betainc", "a", _BETAINC_AB),
                _no_gradient("betainc", "b", _BETAINC_AB),
                lambda g, ans, a, b, x: g * F.exp(F.xlogy(a - 1, x) + F.xlog1py(b - 1, -x)
                                                  - F.betaln(a, b)),
                elementwise=True, exports=SCIPY)


def _multigammaln_forward(a, d):
    a = np.asarray(a)
    out = _sp.multigammaln(a, d)
    return out.astype(a.dtype, copy=False) if a.dtype.kind == "f" else out


def _multigammaln_vjp(g, ans, a, d):
    total = F.digamma(a)
    for j in range(2, d + 1):
        total = total + F.digamma(a - 0.5 * (j - 1))
    return g * total


def multigammaln(a, d: int):
    """The log of the multivariate gamma function of dimension ``d`` (SciPy's
    ``multigammaln``: ``d (d-1)/4 log(pi) + sum_j gammaln(a - (j-1)/2)``), differentiable in
    ``a``; SciPy's ``ValueError`` where ``a <= (d-1)/2``.

        >>> fastgraph.scipy.special.multigammaln(fg.tensor(3.0), 2)  # doctest: +SKIP
    """
    d = _shapes.as_int(d, "multigammaln", "d")
    if d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d}")
    return apply(multigammaln.op, (a,), {"d": d})


multigammaln = defop("multigammaln", _multigammaln_forward, _multigammaln_vjp,
                     function=multigammaln,
                     shape=lambda shapes, **_: tuple(shapes[0]), exports=SCIPY)

# ---- error function inverses, normal distribution -------------------------------------------
erfinv = defop("erfinv", _sp.erfinv, lambda g, ans, x: g * (_SQRT_PI / 2) * F.exp(ans * ans),
               elementwise=True, exports=SCIPY)
erfcinv = defop("erfcinv", _sp.erfcinv,
                lambda g, ans, x: -g * (_SQRT_PI / 2) * F.exp(ans * ans), elementwise=True,
                exports=SCIPY)
ndtr = defop("ndtr", _sp.ndtr, lambda g, ans, x: g * F.exp(-0.5 * x * x) / _SQRT_2PI,
             elementwise=True, complex_vjps=True, exports=SCIPY)
# d log Phi(x) = phi(x) / Phi(x) = exp(-x^2/2 - log Phi(x)) / sqrt(2 pi): finite far in the tail
log_ndtr = defop("log_ndtr", _sp.log_ndtr,
                 lambda g, ans, x: g * F.exp(-0.5 * x * x - ans) / _SQRT_2PI, elementwise=True,
                 complex_vjps=True, exports=SCIPY)
ndtri = defop("ndtri", _sp.ndtri, lambda g, ans, x: g * _SQRT_2PI * F.exp(0.5 * ans * ans),
              elementwise=True, exports=SCIPY)

# ---- logs -------------------------------------------------------------------------------------
xlog1py = defop("xlog1py", _sp.xlog1py, lambda g, ans, x, y: g * F.log1p(y),
                lambda g, ans, x, y: g * x / (1 + y), elementwise=True, exports=SCIPY)
# -x log x; its derivative -(1 + log x) is +inf at 0 (as HIPS autograd's)
entr = defop("entr", _sp.entr, lambda g, ans, x: -g * (1 + F.log(x)), elementwise=True,
             exports=SCIPY)

# ---- Bessel functions ---------------------------------------------------------------------------
_ORDER = "the real order; SciPy has no derivative of the Bessel functions in it"
j0 = defop("j0", _sp.j0, lambda g, ans, x: -g * F.j1(x), elementwise=True, exports=SCIPY)
j1 = defop("j1", _sp.j1, lambda g, ans, x: g * (F.j0(x) - F.jn(2, x)) * 0.5, elementwise=True,
           exports=SCIPY)
jn = defop("jn", _sp.jn, None, lambda g, ans, n, x: g * (F.jn(n - 1, x) - F.jn(n + 1, x)) * 0.5,
           elementwise=True, exports=SCIPY)
y0 = defop("y0", _sp.y0, lambda g, ans, x: -g * F.y1(x), elementwise=True, exports=SCIPY)
y1 = defop("y1", _sp.y1, lambda g, ans, x: g * (F.y0(x) - F.yn(2, x)) * 0.5, elementwise=True,
           exports=SCIPY)
yn = defop("yn", _sp.yn, None, lambda g, ans, n, x: g * (F.yn(n - 1, x) - F.yn(n + 1, x)) * 0.5,
           elementwise=True, exports=SCIPY)
i0 = defop("i0", _sp.i0, lambda g, ans, x: g * F.i1(x), elementwise=True,
           exports=SCIPY)
i1 = defop("i1", _sp.i1, lambda g, ans, x: g * (F.i0(x) + F.iv(2, x)) * 0.5, elementwise=True,
           exports=SCIPY)
iv = defop("iv", _sp.iv, _no_gradient("iv", "v", _ORDER),
           lambda g, ans, v, x: g * (F.iv(v - 1, x) + F.iv(v + 1, x)) * 0.5, elementwise=True,
           exports=SCIPY)
# ive = iv(v, x) e^-|x|: (ive(v-1) + ive(v+1)) / 2 - sign(x) ive(v)  (finite at x = 0)
ive = defop("ive", _sp.ive, _no_gradient("ive", "v", _ORDER),
            lambda g, ans, v, x: g * ((F.ive(v - 1, x) + F.ive(v + 1, x)) * 0.5
                                      - F.sign(x) * ans), elementwise=True, exports=SCIPY)


# ---- logsumexp with weights and signs, softmax over any axes --------------------------------------
def _scipy_function(f):
    """``f`` registered as ``scipy.special.<its name>`` (a composition: ``scipy_<name>`` in the
    registry, apart from the fastgraph function of that name)."""
    return defun(f, name=f"scipy_{f.__name__}", exports=(("scipy.special", f.__name__),))


def _one_axis(axis) -> bool:
    # one axis: the fastgraph op's own row kernel; None or a tuple compose logsumexp
    return type(axis) is int or isinstance(axis, np.integer)


def _ndim(x) -> int:
    return F.shape._known_ndim(x, "logsumexp")


def _restore(v, ndim, axis, keepdims):
    if keepdims or axis is None:
        return v
    return F.expand_dims(v, _shapes.normalize_axis(axis, ndim))


def _weighted_forward(a, b, axis=None, keepdims=False, return_sign=False):
    if return_sign:
        return _sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)[0]
    return _sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims)


def _sign_forward(a, b, axis=None, keepdims=False):
    return _sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)[1]


def _weighted_terms(ans, a, b, axis, keepdims):
    # exp(a - log|s|) and sign(s), s = sum(b exp(a)): d log|s| / d a_i = b_i exp(a_i) / s
    ndim = max(_ndim(a), _ndim(b))
    e = F.exp(a - _restore(ans, ndim, axis, keepdims))
    sign = F.sign(F.sum(b * e, axis=axis, keepdims=True))
    return sign, e, ndim


def _weighted_vjp_a(g, ans, a, b, axis, keepdims, return_sign=False):
    sign, e, ndim = _weighted_terms(ans, a, b, axis, keepdims)
    return _restore(g, ndim, axis, keepdims) * sign * b * e


def _weighted_vjp_b(g, ans, a, b, axis, keepdims, return_sign=False):
    sign, e, ndim = _weighted_terms(ans, a, b, axis, keepdims)
    return _restore(g, ndim, axis, keepdims) * sign * e


def _weighted_shape(name):
    def rule(shapes, axis=None, keepdims=False, **_):
        return _shapes.reduce([_shapes.broadcast(name, shapes[0], shapes[1])], axis, keepdims,
                              op=name)
    return rule


_logsumexp_weighted = defop("logsumexp_weighted", _weighted_forward, _weighted_vjp_a,
                            _weighted_vjp_b, shape=_weighted_shape("logsumexp"))
_logsumexp_sign = defop("logsumexp_sign", _sign_forward, None, None,
                        shape=_weighted_shape("logsumexp"))


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False):
    """SciPy's ``logsumexp``: ``log(sum(b * exp(a)))`` over ``axis`` (None, int or tuple),
    stable for large ``a``, differentiable in ``a`` and in the weights ``b`` (which broadcast
    against ``a`` and may be negative or zero).  ``return_sign=True`` returns
    ``(log|s|, sign(s))`` (the sign carries no gradient); without it a negative sum is
    ``nan``, as SciPy's.

        >>> fastgraph.scipy.special.logsumexp(fg.tensor([1.0, 2.0]), b=[1.0, -0.5],
        ...                                    return_sign=True)  # doctest: +SKIP
    """
    axis = _canon_axis(axis, "logsumexp")
    keepdims = _canon_keepdims(keepdims, "logsumexp")
    if b is None and not return_sign:
        return F.logsumexp(a, axis=axis, keepdims=keepdims)
    if b is None:
        b = 1.0
    attrs = {"axis": axis, "keepdims": keepdims}
    value = apply(_logsumexp_weighted.op, (a, b), dict(attrs, return_sign=bool(return_sign)))
    if not return_sign:
        return value
    return value, apply(_logsumexp_sign.op, (a, b), attrs)


logsumexp = _scipy_function(logsumexp)


def softmax(x, axis=None):
    """SciPy's ``softmax``: ``exp(x - logsumexp(x, axis))`` over ``axis`` (default: the whole
    array; an int or a tuple), differentiable.

        >>> fastgraph.scipy.special.softmax(fg.tensor([1.0, 2.0]))  # doctest: +SKIP
    """
    return F.softmax(x, axis=int(axis)) if _one_axis(axis) else F.exp(log_softmax(x, axis))


softmax = _scipy_function(softmax)


def log_softmax(x, axis=None):
    """SciPy's ``log_softmax``: ``x - logsumexp(x, axis)`` over ``axis`` (default: the whole
    array; an int or a tuple), differentiable.

        >>> fastgraph.scipy.special.log_softmax(fg.tensor([1.0, 2.0]))  # doctest: +SKIP
    """
    if _one_axis(axis):
        return F.log_softmax(x, axis=int(axis))
    return x - F.logsumexp(x, axis=_canon_axis(axis, "log_softmax"), keepdims=True)


log_softmax = _scipy_function(log_softmax)
