"""The linear-algebra op table: one line per case, for ``fg.linalg`` (``numpy.linalg``) and
``fastgraph.scipy.linalg`` (``scipy.linalg``); ``tests/test_linalg_table.py`` runs it.

Each :class:`LinalgCase` is an :class:`optable.OpCase` (``fn`` on fastgraph values, ``ref`` the
NumPy/SciPy reference on arrays, ``torch`` the PyTorch equivalent) with one more peer,
``autograd`` (HIPS autograd, on ``autograd.numpy`` arrays), for the functions PyTorch lacks.

Eigen- and singular vectors are defined up to sign (and, for repeated values, rotation), so
cases use functions of them that do not depend on that choice (``V f(w) V^T``, ``U f(S) Vh``,
projectors).  ``cholesky``/``eigh`` read one triangle: their cases feed ``sym(a)`` so that the
symmetric gradient is the derivative with respect to every entry.

Domains (besides optable's):

========  ===========================================================================
spd       symmetric positive definite: ``x x^T / n + I``
tri       well-conditioned triangular parts: ``0.3 * normal + 2 I`` (both triangles filled)
banded    LAPACK band storage with a dominant main diagonal (``l + u + 1`` rows)
small     ``0.3 * normal`` (expm, matrix_power: moderate norms)
========  ===========================================================================
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import numpy as np
import scipy.linalg as sla

import fastgraph as fg
import fastgraph.scipy.linalg as spla
from optable import OpCase

__all__ = ["LinalgCase", "CASES", "CASES_BY_NAME", "FUNCTIONS"]


@dataclasses.dataclass(frozen=True)
class LinalgCase(OpCase):
    autograd: Optional[Callable] = None   # HIPS autograd equivalent on autograd.numpy arrays


def _spd(rng, shape):
    n = shape[-1]
    x = rng.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) / n + np.eye(n)


def _tri(rng, shape):
    return rng.standard_normal(shape) * 0.3 + 2.0 * np.eye(shape[-1])


def _small(rng, shape):
    return rng.standard_normal(shape) * 0.3


def _banded(l, u):
    def dom(rng, shape):
        ab = rng.standard_normal(shape) * 0.3
        ab[..., u, :] += 3.0
        return ab
    return dom


# ---- the three libraries' spellings -------------------------------------------------------------
def _t():
    import torch
    return torch


def _ag():
    import autograd.numpy as anp
    return anp


def fsym(a):
    return (a + fg.swapaxes(a, -1, -2)) * 0.5


def nsym(a):
    return (a + np.swapaxes(a, -1, -2)) * 0.5


def tsym(a):
    return (a + a.mT) * 0.5


def fT(x):
    return fg.swapaxes(x, -1, -2)


def _eig_fn(f_w):
    """A matrix function ``V f(w) V^T`` of a symmetric matrix's eigendecomposition."""
    return lambda w, v, mt, mul: mul(v * f_w(w)[..., None, :], mt(v))


CASES: list[LinalgCase] = []


def case(name, op, fn, args, ref, torch=None, autograd=None, **kw):
    args = tuple((tuple(s), d) for s, d in args)
    diff = kw.pop("diff", tuple(i for i, (_, d) in enumerate(args)
                                if not (isinstance(d, str) and d.startswith("labels"))))
    CASES.append(LinalgCase(name, op, fn, args, ref, torch, tuple(diff), autograd=autograd,
                            **kw))


# ---- numpy.linalg -------------------------------------------------------------------------------
for _shape, _sfx in (((3, 3), ""), ((2, 3, 3), "_batched")):
    case(f"cholesky{_sfx}", "cholesky", lambda a: fg.linalg.cholesky(fsym(a)), [(_shape, _spd)],
         lambda a: np.linalg.cholesky(nsym(a)), lambda a: _t().linalg.cholesky(tsym(a)))
case("cholesky_upper", "cholesky", lambda a: fg.linalg.cholesky(fsym(a), upper=True),
     [((4, 4), _spd)], lambda a: np.linalg.cholesky(nsym(a), upper=True),
     lambda a: _t().linalg.cholesky(tsym(a), upper=True))

case("eigh_values", "eigh", lambda a: fg.linalg.eigh(fsym(a))[0], [((4, 4), "real")],
     lambda a: np.linalg.eigh(nsym(a))[0], lambda a: _t().linalg.eigh(tsym(a))[0])
case("eigh_upper_values", "eigh", lambda a: fg.linalg.eigh(fsym(a), UPLO="U").eigenvalues,
     [((3, 3), "real")], lambda a: np.linalg.eigh(nsym(a), "U")[0],
     lambda a: _t().linalg.eigh(tsym(a), UPLO="U")[0])
_expfun = _eig_fn(lambda w: w ** 3)
case("eigh_matrix_function", "eigh",
     lambda a: _expfun(*fg.linalg.eigh(fsym(a)), fT, fg.matmul), [((2, 3, 3), "real")],
     lambda a: _expfun(*np.linalg.eigh(nsym(a)), lambda x: np.swapaxes(x, -1, -2), np.matmul),
     lambda a: _expfun(*_t().linalg.eigh(tsym(a)), lambda x: x.mT, _t().matmul))
case("eigvalsh", "eigvalsh", lambda a: fg.linalg.eigvalsh(fsym(a)), [((2, 3, 3), "real")],
     lambda a: np.linalg.eigvalsh(nsym(a)), lambda a: _t().linalg.eigvalsh(tsym(a)))


def _usv(f):
    """``U f(S) Vh`` (reduced): independent of the singular vectors' signs."""
    def fn(r, mul):
        return mul(r[0] * f(r[1])[..., None, :], r[2])
    return fn


_us3v = _usv(lambda s: s ** 3)
for _shape, _sfx in (((4, 3), "_tall"), ((2, 3, 4), "_wide_batched")):
    case(f"svd_values{_sfx}", "svd", lambda a: fg.linalg.svd(a)[1], [(_shape, "real")],
         lambda a: np.linalg.svd(a)[1], lambda a: _t().linalg.svdvals(a))
    case(f"svd_matrix_function{_sfx}", "svd",
         lambda a: _us3v(fg.linalg.svd(a, full_matrices=False), fg.matmul), [(_shape, "real")],
         lambda a: _us3v(np.linalg.svd(a, full_matrices=False), np.matmul),
         lambda a: _us3v(_t().linalg.svd(a, full_matrices=False), _t().matmul))
case("svd_projector_tall", "svd",
     lambda a: (lambda u: fg.matmul(u, fT(u)))(fg.linalg.svd(a, full_matrices=False)[0]),
     [((5, 3), "real")],
     lambda a: (lambda u: u @ u.T)(np.linalg.svd(a, full_matrices=False)[0]),
     lambda a: (lambda u: u @ u.mT)(_t().linalg.svd(a, full_matrices=False)[0]))
case("svd_full_matrices", "svd",
     lambda a: (lambda r: fg.matmul(r.U[:, :3] * r.S, r.Vh[:3]))(fg.linalg.svd(a)),
     [((5, 3), "real")],
     lambda a: (lambda r: (r[0][:, :3] * r[1]) @ r[2][:3])(np.linalg.svd(a)),
     lambda a: (lambda r: (r[0][:, :3] * r[1]) @ r[2][:3])(_t().linalg.svd(a)))
case("svdvals", "svdvals", fg.linalg.svdvals, [((2, 4, 3), "real")], np.linalg.svdvals,
     lambda a: _t().linalg.svdvals(a))

for _shape, _sfx in (((4, 3), "_tall"), ((3, 4), "_wide"), ((2, 3, 3), "_batched")):
    case(f"qr{_sfx}", "qr", lambda a: list(fg.linalg.qr(a)), [(_shape, "real")],
         lambda a: list(np.linalg.qr(a)), lambda a: list(_t().linalg.qr(a)))
case("qr_complete_wide", "qr", lambda a: list(fg.linalg.qr(a, "complete")), [((2, 3), "real")],
     lambda a: list(np.linalg.qr(a, "complete")),
     lambda a: list(_t().linalg.qr(a, mode="complete")))
case("qr_r", "qr", lambda a: fg.linalg.qr(a, "r"), [((4, 3), "real")],
     lambda a: np.linalg.qr(a, "r"), lambda a: _t().linalg.qr(a)[1])

for _shape, _sfx in (((4, 3), "_tall"), ((3, 4), "_wide"), ((2, 3, 3), "_batched")):
    case(f"pinv{_sfx}", "pinv", fg.linalg.pinv, [(_shape, "real")], np.linalg.pinv,
         lambda a: _t().linalg.pinv(a))

case("lstsq_matrix", "lstsq", lambda a, b: [fg.linalg.lstsq(a, b)[i] for i in (0, 1, 3)],
     [((5, 3), "real"), ((5, 2), "real")],
     lambda a, b: [np.linalg.lstsq(a, b)[i] for i in (0, 1, 3)], None)
case("lstsq_vector", "lstsq", lambda a, b: fg.linalg.lstsq(a, b)[0],
     [((5, 3), "real"), ((5,), "real")], lambda a, b: np.linalg.lstsq(a, b)[0],
     lambda a, b: _t().linalg.lstsq(a, b[:, None], driver="gelsd").solution[:, 0])
case("lstsq_underdetermined", "lstsq", lambda a, b: list(fg.linalg.lstsq(a, b)[::3]),
     [((2, 4), "real"), ((2, 3), "real")], lambda a, b: list(np.linalg.lstsq(a, b)[::3]), None)

for _n in (3, 6, -2):
    case(f"matrix_power_{_n}".replace("-", "m"), "matrix_power",
         (lambda n: lambda a: fg.linalg.matrix_power(a, n))(_n), [((2, 3, 3), _small if _n > 0
                                                                  else "mat")],
         (lambda n: lambda a: np.linalg.matrix_power(a, n))(_n),
         (lambda n: lambda a: _t().linalg.matrix_power(a, n))(_n))
case("matrix_power_0", "matrix_power", lambda a: fg.linalg.matrix_power(a, 0),
     [((3, 3), "real")], lambda a: np.linalg.matrix_power(a, 0),
     lambda a: _t().linalg.matrix_power(a, 0), zero_grad=True)

def _tcond(p):
    # (torch.linalg.cond's backward for these p fails in torch 2.13: its own composition)
    if p in (None, 2, -2, "nuc"):
        return lambda a: _t().linalg.cond(a, p)
    return lambda a: (_t().linalg.matrix_norm(a, p) *
                      _t().linalg.matrix_norm(_t().linalg.inv(a), p))


for _p in (None, -2, "fro", 1, np.inf, "nuc"):
    case(f"cond_{_p}", "cond", (lambda p: lambda a: fg.linalg.cond(a, p))(_p),
         [((2, 3, 3), "mat")], (lambda p: lambda a: np.linalg.cond(a, p))(_p), _tcond(_p),
         tol=10.0)

for _ord, _axis, _kd, _shape in ((2, None, False, (4, 3)), (-2, None, False, (3, 4)),
                                 ("nuc", None, True, (4, 3)), (2, (2, 0), False, (3, 2, 4)),
                                 ("nuc", (-1, -2), True, (2, 3, 4)), (-2, (0, 1), False,
                                                                      (3, 3, 2))):
    case(f"norm_{_ord}_{_axis}_{_kd}".replace(" ", "").replace("-", "m"), "norm",
         (lambda o, ax, kd: lambda x: fg.linalg.norm(x, o, ax, kd))(_ord, _axis, _kd),
         [(_shape, "real")],
         (lambda o, ax, kd: lambda x: np.linalg.norm(x, o, ax, kd))(_ord, _axis, _kd),
         (lambda o, ax, kd: lambda x: _t().linalg.matrix_norm(
             x, o, (-2, -1) if ax is None else ax, kd))(_ord, _axis, _kd))

case("multi_dot_3", "multi_dot", lambda a, b, c: fg.linalg.multi_dot([a, b, c]),
     [((2, 4), "real"), ((4, 3), "real"), ((3, 5), "real")],
     lambda a, b, c: np.linalg.multi_dot([a, b, c]),
     lambda a, b, c: _t().linalg.multi_dot([a, b, c]))
case("multi_dot_4_vectors", "multi_dot",
     lambda a, b, c, d: fg.linalg.multi_dot([a, b, c, d]),
     [((4,), "real"), ((4, 2), "real"), ((2, 5), "real"), ((5,), "real")],
     lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]),
     lambda a, b, c, d: _t().linalg.multi_dot([a, b, c, d]))

case("solve_broadcast_a", "solve", fg.linalg.solve, [((3, 3), "mat"), ((2, 3, 2), "real")],
     np.linalg.solve, lambda a, b: _t().linalg.solve(a, b))
case("solve_broadcast_both", "solve", fg.linalg.solve,
     [((2, 1, 3, 3), "mat"), ((1, 2, 3, 2), "real")], np.linalg.solve,
     lambda a, b: _t().linalg.solve(a, b))


# ---- scipy.linalg -------------------------------------------------------------------------------
def _ttri(a, lower, unit=False):
    t = _t()
    m = a.tril() if lower else a.triu()
    if unit:
        m = m - t.diag_embed(t.diagonal(m, dim1=-2, dim2=-1)) + t.eye(a.shape[-1],
                                                                       dtype=a.dtype)
    return m


def _tsolve_tri(a, b, trans=0, lower=False, unit=False):
    t = _t()
    m = _ttri(a, lower, unit)
    if trans:
        m = m.mT
    vec = b.ndim == 1
    x = t.linalg.solve_triangular(m, b[:, None] if vec else b, upper=(not lower) != bool(trans),
                                  unitriangular=unit)
    return x[..., 0] if vec else x


for _kw, _sb, _sfx in (({"lower": True}, (3, 2), "lower"), ({}, (3,), "upper_vector"),
                       ({"lower": True, "trans": "T"}, (3, 2), "lower_trans"),
                       ({"trans": 1, "unit_diagonal": True}, (3,), "upper_trans_unit"),
                       ({"lower": True, "unit_diagonal": True}, (3, 2), "lower_unit")):
    case(f"solve_triangular_{_sfx}", "solve_triangular",
         (lambda kw: lambda a, b: spla.solve_triangular(a, b, **kw))(_kw),
         [((3, 3), _tri), (_sb, "real")],
         (lambda kw: lambda a, b: sla.solve_triangular(a, b, **kw))(_kw),
         (lambda kw: lambda a, b: _tsolve_tri(a, b, {"T": 1}.get(kw.get("trans"),
                                                                  kw.get("trans", 0)),
                                              kw.get("lower", False),
                                              kw.get("unit_diagonal", False)))(_kw))
case("solve_triangular_batched", "solve_triangular",
     lambda a, b: spla.solve_triangular(a, b, lower=True), [((2, 3, 3), _tri), ((3, 2), "real")],
     lambda a, b: sla.solve_triangular(a, b, lower=True),
     lambda a, b: _t().linalg.solve_triangular(a.tril(), b.expand(2, 3, 2), upper=False))

for _lower in (False, True):
    case(f"scipy_cholesky_{'lower' if _lower else 'upper'}", "scipy.cholesky",
         (lambda lo: lambda a: spla.cholesky(fsym(a), lower=lo))(_lower), [((2, 3, 3), _spd)],
         (lambda lo: lambda a: sla.cholesky(nsym(a), lower=lo))(_lower),
         (lambda lo: lambda a: _t().linalg.cholesky(tsym(a), upper=not lo))(_lower))
    case(f"cho_solve_{'lower' if _lower else 'upper'}", "cho_solve",
         (lambda lo: lambda a, b: spla.cho_solve(spla.cho_factor(fsym(a), lower=lo), b))(_lower),
         [((4, 4), _spd), ((4, 2) if _lower else (4,), "real")],
         (lambda lo: lambda a, b: sla.cho_solve(sla.cho_factor(nsym(a), lower=lo), b))(_lower),
         (lambda lo: lambda a, b: (lambda x: x[:, 0] if b.ndim == 1 else x)(
             _t().cholesky_solve(b[:, None] if b.ndim == 1 else b,
                                 _t().linalg.cholesky(tsym(a), upper=not lo), upper=not lo)))(
             _lower))
case("cho_factor_matrix", "cho_factor", lambda a: spla.cho_factor(fsym(a), lower=True)[0],
     [((3, 3), _spd)], lambda a: sla.cho_factor(nsym(a), lower=True)[0], None)
case("cho_solve_batched", "cho_solve",
     lambda a, b: spla.cho_solve(spla.cho_factor(fsym(a)), b),
     [((2, 3, 3), _spd), ((3, 2), "real")],
     lambda a, b: sla.cho_solve(sla.cho_factor(nsym(a)), b),
     lambda a, b: _t().cholesky_solve(b.expand(2, 3, 2),
                                      _t().linalg.cholesky(tsym(a), upper=True), upper=True))

case("lu_factor", "lu_factor", lambda a: spla.lu_factor(a)[0], [((2, 4, 4), "real")],
     lambda a: sla.lu_factor(a)[0], lambda a: _t().linalg.lu_factor(a)[0])
for _trans, _sb in ((0, (4, 2)), (1, (4,))):
    case(f"lu_solve_trans{_trans}", "lu_solve",
         (lambda tr: lambda a, b: spla.lu_solve(spla.lu_factor(a), b, trans=tr))(_trans),
         [((4, 4), "real"), (_sb, "real")],
         (lambda tr: lambda a, b: sla.lu_solve(sla.lu_factor(a), b, trans=tr))(_trans),
         (lambda tr: lambda a, b: (lambda x: x[:, 0] if b.ndim == 1 else x)(
             _t().linalg.lu_solve(*_t().linalg.lu_factor(a), b[:, None] if b.ndim == 1 else b,
                                  adjoint=bool(tr))))(_trans))
case("lu_solve_batched", "lu_solve", lambda a, b: spla.lu_solve(spla.lu_factor(a), b),
     [((2, 3, 3), "real"), ((2, 3, 2), "real")],
     lambda a, b: sla.lu_solve(sla.lu_factor(a), b),
     lambda a, b: _t().linalg.lu_solve(*_t().linalg.lu_factor(a), b))

case("sqrtm", "sqrtm", spla.sqrtm, [((3, 3), "mat")], sla.sqrtm, None,
     autograd=lambda a: __import__("autograd.scipy.linalg", fromlist=["x"]).sqrtm(a))
case("sqrtm_batched", "sqrtm", spla.sqrtm, [((2, 3, 3), _spd)], sla.sqrtm, None)
case("expm", "expm", spla.expm, [((3, 3), "real")], sla.expm,
     lambda a: _t().linalg.matrix_exp(a))
case("expm_batched", "expm", spla.expm, [((2, 3, 3), _small)], sla.expm,
     lambda a: _t().linalg.matrix_exp(a))
case("solve_sylvester", "solve_sylvester", spla.solve_sylvester,
     [((3, 3), "mat"), ((2, 2), "mat"), ((3, 2), "real")], sla.solve_sylvester, None,
     autograd=lambda a, b, q: __import__("autograd.scipy.linalg", fromlist=["x"])
     .solve_sylvester(a, b, q))
# (HIPS autograd's solve_banded gradient is right for a vector b with l=1, u=2; with a matrix b
# or no off-diagonals its shapes are wrong, so only the first case compares with it)
for _lu, _sb in (((1, 2), (5,)), ((2, 1), (5, 2)), ((0, 0), (4,))):
    _n = _sb[0]
    case(f"solve_banded_{_lu[0]}_{_lu[1]}", "solve_banded",
         (lambda lu: lambda ab, b: spla.solve_banded(lu, ab, b))(_lu),
         [((_lu[0] + _lu[1] + 1, _n), _banded(*_lu)), (_sb, "real")],
         (lambda lu: lambda ab, b: sla.solve_banded(lu, ab, b))(_lu), None,
         autograd=(lambda lu: lambda ab, b: __import__("autograd.scipy.linalg", fromlist=["x"])
                   .solve_banded(lu, ab, b))(_lu) if _lu == (1, 2) else None)
case("block_diag", "block_diag", lambda a, b, c: spla.block_diag(a, b, c),
     [((2, 3), "real"), ((2,), "real"), ((), "real")], sla.block_diag,
     lambda a, b, c: _t().block_diag(a, b, c))
case("scipy_det", "scipy.det", spla.det, [((2, 3, 3), "matneg")], sla.det,
     lambda a: _t().linalg.det(a))
case("scipy_inv", "scipy.inv", spla.inv, [((2, 3, 3), "mat")], sla.inv,
     lambda a: _t().linalg.inv(a))


CASES_BY_NAME = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES), "case names must be unique"

#: every function this table must cover
FUNCTIONS = (
    "cholesky eigh eigvalsh svd svdvals qr pinv lstsq matrix_power cond norm multi_dot solve "
    "scipy.cholesky cho_factor cho_solve solve_triangular lu_factor lu_solve sqrtm expm "
    "solve_sylvester solve_banded block_diag scipy.det scipy.inv").split()
