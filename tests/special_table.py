"""The special-function op table: one line per case, for ``fastgraph.scipy.special``;
``tests/test_special_table.py`` runs it.

Each case is a :class:`linalg_table.LinalgCase` (``fn`` on fastgraph values, ``ref`` SciPy's
function on arrays, ``torch`` the ``torch.special`` equivalent, ``autograd`` HIPS autograd's
``autograd.scipy.special`` for what PyTorch lacks or cannot differentiate).  Integer orders
(``jn``'s ``n``) are ``labels`` arguments: not differentiated.

Domains (besides optable's): ``erfc_range`` uniform(0.2, 1.8) (``erfcinv``), ``negb``
-uniform(0.5, 2) (weights whose sum is negative), ``gt2`` uniform(2.2, 4) (``multigammaln``
of dimension 4).
"""
from __future__ import annotations

import numpy as np
import scipy.special as sps

import fastgraph.scipy.special as fgs
from linalg_table import LinalgCase

__all__ = ["CASES", "FUNCTIONS", "KEEP_FLOAT32"]

#: functions whose float32 values stay float32 where SciPy's are float64 (polygamma's and
#: multigammaln's forwards are not single ufunc loops)
KEEP_FLOAT32 = {"polygamma", "multigammaln"}

#: every function ``fastgraph.scipy.special`` must offer (the table covers each)
FUNCTIONS = ("gamma gammaln gammasgn rgamma digamma psi polygamma multigammaln gammainc "
             "gammaincc beta betaln betainc erf erfc erfinv erfcinv expit logit logsumexp xlogy "
             "xlog1py j0 j1 jn y0 y1 yn i0 i1 iv ive entr log_ndtr ndtr ndtri softmax "
             "log_softmax").split()

CASES: list[LinalgCase] = []


def _t():
    import torch
    return torch


def _ags():
    import autograd.scipy.special as ags
    return ags


def _erfc_range(rng, shape):
    return rng.uniform(0.2, 1.8, shape)


def _negb(rng, shape):
    return -rng.uniform(0.5, 2.0, shape)


def _gt2(rng, shape):
    return rng.uniform(2.2, 4.0, shape)


def case(name, fn, args, ref, torch=None, autograd=None, op=None, **kw):
    args = tuple((tuple(s), d) for s, d in args)
    diff = kw.pop("diff", tuple(i for i, (_, d) in enumerate(args)
                                if not (isinstance(d, str) and d.startswith("labels"))))
    CASES.append(LinalgCase(name, op or name, fn, args, ref,
                            torch, tuple(diff), autograd=autograd, **kw))


def unary(name, domain, torch=None, autograd=None, shape=(3, 4), **kw):
    """A one-argument function of the same name in SciPy, fastgraph (and the peer)."""
    case(name, getattr(fgs, name), [(shape, domain)], getattr(sps, name), torch, autograd,
         op=name, **kw)


S = (3, 4)
# ---- gamma and relatives -----------------------------------------------------------------------
unary("gamma", "frac", autograd=lambda x: _ags().gamma(x))
unary("gammaln", "pos", lambda x: _t().special.gammaln(x))
unary("gammasgn", "frac", zero_grad=True, order2=False)
unary("rgamma", "frac", autograd=lambda x: _ags().rgamma(x))
unary("digamma", "pos", lambda x: _t().special.digamma(x))
unary("psi", "pos", lambda x: _t().special.psi(x))
case("polygamma_2", lambda x: fgs.polygamma(2, x), [(S, "pos")], lambda x: sps.polygamma(2, x),
     lambda x: _t().special.polygamma(2, x), op="polygamma")
case("multigammaln_4", lambda a: fgs.multigammaln(a, 4), [((5,), _gt2)],
     lambda a: sps.multigammaln(a, 4), lambda a: _t().special.multigammaln(a, 4),
     op="multigammaln")
case("multigammaln_1", lambda a: fgs.multigammaln(a, 1), [((), "pos")],
     lambda a: sps.multigammaln(a, 1), op="multigammaln", autograd=None)
case("gammainc", lambda a, x: fgs.gammainc(a, x), [(S, "pos"), ((4,), "pos")], sps.gammainc,
     lambda a, x: _t().special.gammainc(a, x), diff=(1,), op="gammainc")
case("gammaincc", lambda a, x: fgs.gammaincc(a, x), [((3, 1), "pos"), (S, "pos")],
     sps.gammaincc, lambda a, x: _t().special.gammaincc(a, x), diff=(1,), op="gammaincc")
case("beta", fgs.beta, [(S, "pos"), ((4,), "pos")], sps.beta,
     autograd=lambda a, b: _ags().beta(a, b), op="beta")
case("betaln", fgs.betaln, [((2, 1, 4), "pos"), ((3, 1), "pos")], sps.betaln,
     autograd=lambda a, b: _ags().betaln(a, b), op="betaln")
case("betainc", fgs.betainc, [(S, "pos"), (S, "pos"), ((4,), "prob")], sps.betainc,
     autograd=lambda a, b, x: _ags().betainc(a, b, x), diff=(2,), op="betainc")

# ---- error function, normal distribution -------------------------------------------------------
unary("erf", "real", lambda x: _t().special.erf(x))
unary("erfc", "real", lambda x: _t().special.erfc(x))
unary("erfinv", "unit", lambda x: _t().special.erfinv(x))
unary("erfcinv", _erfc_range, autograd=lambda x: _ags().erfcinv(x))
unary("ndtr", "real", lambda x: _t().special.ndtr(x))
unary("log_ndtr", "real", lambda x: _t().special.log_ndtr(x))
case("log_ndtr_tail", fgs.log_ndtr, [((4,), lambda rng, s: -rng.uniform(10, 30, s))],
     sps.log_ndtr, lambda x: _t().special.log_ndtr(x), op="log_ndtr")
unary("ndtri", "prob", lambda x: _t().special.ndtri(x))
unary("expit", "real", lambda x: _t().special.expit(x))
unary("logit", "prob", lambda x: _t().special.logit(x))

# ---- logs ------------------------------------------------------------------------------------------
case("xlogy", fgs.xlogy, [(S, "real"), ((4,), "pos")], sps.xlogy,
     lambda x, y: _t().special.xlogy(x, y), op="xlogy")
case("xlog1py", fgs.xlog1py, [((3, 1), "real"), (S, "pos")], sps.xlog1py,
     lambda x, y: _t().special.xlog1py(x, y), op="xlog1py")
unary("entr", "pos", lambda x: _t().special.entr(x))

# ---- Bessel functions (torch.special's have no derivatives: HIPS autograd is the peer) -------------
unary("j0", "real", autograd=lambda x: _ags().j0(x))
unary("j1", "real", autograd=lambda x: _ags().j1(x))
case("jn", fgs.jn, [((4,), "labels:4"), (S, "real")], sps.jn,
     autograd=lambda n, x: _ags().jn(n, x), op="jn")
case("jn_const", lambda x: fgs.jn(3, x), [(S, "pos")], lambda x: sps.jn(3, x),
     autograd=lambda x: _ags().jn(3, x), op="jn")
unary("y0", "pos", autograd=lambda x: _ags().y0(x))
unary("y1", "pos", autograd=lambda x: _ags().y1(x))
case("yn", lambda x: fgs.yn(2, x), [(S, "gt1")], lambda x: sps.yn(2, x),
     autograd=lambda x: _ags().yn(2, x), op="yn")
unary("i0", "real", lambda x: _t().special.i0(x))
unary("i1", "real", lambda x: _t().special.i1(x))
case("iv", lambda x: fgs.iv(1.5, x), [(S, "pos")], lambda x: sps.iv(1.5, x),
     autograd=lambda x: _ags().iv(1.5, x), op="iv")
case("ive", lambda x: fgs.ive(2.0, x), [(S, "real")], lambda x: sps.ive(2.0, x),
     autograd=lambda x: _ags().ive(2.0, x), op="ive")

# ---- logsumexp, softmax ----------------------------------------------------------------------------
case("logsumexp", fgs.logsumexp, [(S, "real")], sps.logsumexp,
     lambda x: _t().logsumexp(x, dim=(0, 1)), op="logsumexp")
case("logsumexp_axis_keepdims", lambda x: fgs.logsumexp(x, axis=1, keepdims=True),
     [(S, "real")], lambda x: sps.logsumexp(x, axis=1, keepdims=True),
     lambda x: _t().logsumexp(x, 1, keepdim=True), op="logsumexp")
case("logsumexp_b", lambda a, b: fgs.logsumexp(a, axis=-1, b=b), [((2, 3, 4), "real"),
                                                                   ((4,), "pos")],
     lambda a, b: sps.logsumexp(a, axis=-1, b=b),
     lambda a, b: _t().logsumexp(a + _t().log(b), -1), op="logsumexp")
case("logsumexp_b_tuple_axis", lambda a, b: fgs.logsumexp(a, axis=(0, 2), b=b),
     [((2, 3, 4), "real"), ((3, 1), "pos")], lambda a, b: sps.logsumexp(a, axis=(0, 2), b=b),
     op="logsumexp")
case("logsumexp_sign", lambda a, b: fgs.logsumexp(a, axis=0, b=b, return_sign=True),
     [(S, "real"), (S, _negb)], lambda a, b: sps.logsumexp(a, axis=0, b=b, return_sign=True),
     op="logsumexp")
case("logsumexp_sign_no_b", lambda a: fgs.logsumexp(a, axis=1, return_sign=True),
     [(S, "real")], lambda a: sps.logsumexp(a, axis=1, return_sign=True), op="logsumexp")
case("softmax", fgs.softmax, [(S, "real")], sps.softmax, op="softmax")
case("softmax_axis", lambda x: fgs.softmax(x, axis=0), [(S, "real")],
     lambda x: sps.softmax(x, axis=0), lambda x: _t().softmax(x, 0), op="softmax")
case("softmax_tuple_axis", lambda x: fgs.softmax(x, axis=(0, 2)), [((2, 3, 2), "real")],
     lambda x: sps.softmax(x, axis=(0, 2)), op="softmax")
case("log_softmax", fgs.log_softmax, [(S, "real")], sps.log_softmax, op="log_softmax")
case("log_softmax_axis", lambda x: fgs.log_softmax(x, axis=1), [(S, "real")],
     lambda x: sps.log_softmax(x, axis=1), lambda x: _t().log_softmax(x, 1), op="log_softmax")

CASES_BY_NAME = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES), "duplicate case names"
