"""The complex op table: one line per case of an operation on complex128 values.

Each :class:`ComplexCase` names the operation, the ``fg`` function, its arguments (shape and
domain), and ``peer(m)``: the same computation written with a NumPy-like module ``m``, so that
``peer(numpy)`` is the reference for values and ``peer(autograd.numpy)`` gives HIPS autograd's
gradients, whose convention fastgraph follows (the gradient of a real ``f(x + iy)`` is
``df/dx - i df/dy``).  ``torch`` is PyTorch's equivalent or None: PyTorch's gradient of a real
function is the conjugate of autograd's.  ``autograd``: HIPS autograd has
VJPs for the peer (it has none for ``float_power``, ``positive`` and ``cumprod``).
``tests/test_complex_table.py`` runs the table:
values, gradients against central finite differences on the real and imaginary parts, against
autograd and PyTorch, second derivatives, static graphs against eager, ``fg.function``.

Domains keep inputs away from branch cuts, zeros and singularities:

========  ==========================================================================
cplx      standard normal real and imaginary parts
cpos      real part in (0.8, 2), imaginary part in (-1, 1): off the negative real axis
csmall    |z| < 0.6 (arcsin, arctanh: away from the cuts at +-1)
cmat      well-conditioned complex matrices (normal * 0.3 + 2 I)
chpd      Hermitian positive definite: ``z z^H / n + I``
real      standard normal, real (mixed real and complex operands)
========  ==========================================================================
"""
from __future__ import annotations

import dataclasses
import importlib
import zlib
from typing import Callable, Optional

import numpy as np

import fastgraph as fg

__all__ = ["ComplexCase", "CASES", "DOMAINS", "make_inputs", "rng_for"]


@dataclasses.dataclass(frozen=True)
class ComplexCase:
    name: str                        # unique pytest id
    op: str                          # the operation exercised
    fn: Callable                     # fg function of the arguments
    args: tuple                      # ((shape, domain), ...)
    peer: Callable                   # peer(m): the computation with module m (numpy, autograd)
    torch: Optional[Callable] = None  # PyTorch's equivalent on torch tensors
    order2: bool = False             # also check second derivatives
    real_out: bool = False           # the result is real (abs, angle, real, imag)
    autograd: bool = True            # HIPS autograd differentiates the peer

    def __repr__(self) -> str:
        return f"ComplexCase({self.name!r})"

    @property
    def ref(self):
        return self.peer(np)


def _cplx(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _cpos(rng, shape):
    return rng.uniform(0.8, 2.0, shape) + 1j * rng.uniform(-1.0, 1.0, shape)


def _csmall(rng, shape):
    return rng.uniform(0.05, 0.6, shape) * np.exp(1j * rng.uniform(-np.pi, np.pi, shape))


def _cmat(rng, shape):
    return _cplx(rng, shape) * 0.3 + 2.0 * np.eye(shape[-1])


def _chpd(rng, shape):
    z = _cplx(rng, shape)
    return z @ np.conj(np.swapaxes(z, -1, -2)) / shape[-1] + np.eye(shape[-1])


def _real(rng, shape):
    return rng.standard_normal(shape)


DOMAINS = {"cplx": _cplx, "cpos": _cpos, "csmall": _csmall, "cmat": _cmat, "chpd": _chpd,
           "real": _real}


def rng_for(case, seed: int = 0) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(case.name.encode()), seed])


def make_inputs(case, rng=None) -> list:
    rng = rng_for(case) if rng is None else rng
    return [np.asarray(DOMAINS[d](rng, s)) for s, d in case.args]


CASES: list[ComplexCase] = []


def case(name, fn, args, peer, op=None, **kw):
    CASES.append(ComplexCase(name, op or name, fn, tuple((tuple(s), d) for s, d in args), peer,
                             **kw))


def _t():
    import torch
    return torch


# elementwise, one operand: (name, domain, peer, torch, second order)
UNARY = [
    ("negative", "cplx", lambda m: m.negative, lambda x: -x, False),
    ("exp", "cplx", lambda m: m.exp, lambda x: _t().exp(x), True),
    ("expm1", "csmall", lambda m: m.expm1, lambda x: _t().expm1(x), False),
    ("log", "cpos", lambda m: m.log, lambda x: _t().log(x), True),
    ("log1p", "cpos", lambda m: m.log1p, lambda x: _t().log1p(x), False),
    ("log10", "cpos", lambda m: m.log10, lambda x: _t().log10(x), False),
    ("log2", "cpos", lambda m: m.log2, lambda x: _t().log2(x), False),
    ("exp2", "cplx", lambda m: m.exp2, None, False),
    ("sqrt", "cpos", lambda m: m.sqrt, lambda x: _t().sqrt(x), False),
    ("square", "cplx", lambda m: m.square, lambda x: _t().square(x), False),
    ("reciprocal", "cpos", lambda m: m.reciprocal, lambda x: _t().reciprocal(x), False),
    ("sin", "cplx", lambda m: m.sin, lambda x: _t().sin(x), True),
    ("cos", "cplx", lambda m: m.cos, lambda x: _t().cos(x), False),
    ("tan", "csmall", lambda m: m.tan, lambda x: _t().tan(x), False),
    ("tanh", "csmall", lambda m: m.tanh, lambda x: _t().tanh(x), True),
    ("sinh", "cplx", lambda m: m.sinh, lambda x: _t().sinh(x), False),
    ("cosh", "cplx", lambda m: m.cosh, lambda x: _t().cosh(x), False),
    ("arctan", "csmall", lambda m: m.arctan, lambda x: _t().atan(x), False),
    ("arcsin", "csmall", lambda m: m.arcsin, lambda x: _t().asin(x), False),
    ("arccos", "csmall", lambda m: m.arccos, lambda x: _t().acos(x), False),
    ("arcsinh", "csmall", lambda m: m.arcsinh, lambda x: _t().asinh(x), False),
    ("arccosh", "cpos", lambda m: m.arccosh, None, False),
    ("arctanh", "csmall", lambda m: m.arctanh, lambda x: _t().atanh(x), False),
    ("conj", "cplx", lambda m: m.conj, lambda x: _t().conj(x), False),
]
for _name, _dom, _peer, _tor, _o2 in UNARY:
    _fg = getattr(fg, _name)
    case(_name, _fg, [((3, 4), _dom)], _peer, torch=_tor, order2=_o2)
    case(_name + "_0d", _fg, [((), _dom)], _peer, op=_name)

# non-holomorphic, real results
case("abs", fg.abs, [((3, 4), "cpos")], lambda m: m.abs, torch=lambda x: _t().abs(x),
     order2=True, real_out=True)
case("real", fg.real, [((3, 4), "cplx")], lambda m: m.real, torch=lambda x: _t().real(x),
     real_out=True)
case("imag", fg.imag, [((3, 4), "cplx")], lambda m: m.imag, torch=lambda x: _t().imag(x),
     real_out=True)
case("angle", fg.angle, [((3, 4), "cpos")], lambda m: m.angle, torch=lambda x: _t().angle(x),
     order2=True, real_out=True)
case("angle_deg", lambda x: fg.angle(x, deg=True), [((3, 4), "cpos")],
     lambda m: (lambda x: m.angle(x) * (180 / np.pi)), op="angle", real_out=True)
case("abs_squared", lambda x: fg.abs(x) ** 2, [((5,), "cplx")], lambda m: (lambda x: m.abs(x) ** 2),
     op="abs", order2=True, real_out=True)
case("real_if_close", fg.real_if_close, [((3, 4), "cplx")], lambda m: m.real_if_close,
     op="real_if_close")

# two operands, complex and mixed with real
for _name, _sym in (("add", "+"), ("subtract", "-"), ("multiply", "*"), ("divide", "/")):
    _fgf = getattr(fg, _name)
    case(_name, _fgf, [((3, 4), "cpos"), ((3, 4), "cpos")], lambda m, n=_name: getattr(m, n),
         torch=lambda x, y, n=_name: getattr(_t(), n)(x, y), order2=_name == "multiply")
    case(_name + "_real_bcast", _fgf, [((3, 4), "cpos"), ((4,), "real")],
         lambda m, n=_name: getattr(m, n), op=_name)
case("power", fg.power, [((3, 4), "cpos"), ((3, 4), "cpos")], lambda m: m.power,
     torch=lambda x, y: _t().pow(x, y))
case("power_scalar", lambda x: x ** 3, [((3, 4), "cplx")], lambda m: (lambda x: x ** 3),
     op="power", order2=True)
case("float_power", fg.float_power, [((3, 4), "cpos"), ((3, 4), "cpos")],
     lambda m: m.float_power, autograd=False)
case("positive", fg.positive, [((3, 4), "cplx")], lambda m: m.positive, autograd=False)
case("where", lambda x, y: fg.where(np.arange(12).reshape(3, 4) % 2 == 0, x, y),
     [((3, 4), "cplx"), ((3, 4), "cplx")],
     lambda m: (lambda x, y: m.where(np.arange(12).reshape(3, 4) % 2 == 0, x, y)))

# reductions
for _name in ("sum", "mean", "prod"):
    case(_name, lambda x, n=_name: getattr(fg, n)(x, axis=1), [((3, 4), "cpos")],
         lambda m, n=_name: (lambda x: getattr(m, n)(x, axis=1)),
         torch=lambda x, n=_name: getattr(_t(), n)(x, 1), op=_name, order2=_name == "prod")
    case(_name + "_all", getattr(fg, _name), [((3, 4), "cpos")],
         lambda m, n=_name: getattr(m, n), op=_name)
case("var", lambda x: fg.var(x, axis=0), [((4, 3), "cplx")],
     lambda m: (lambda x: m.var(x, axis=0)), torch=lambda x: _t().var(x, 0, correction=0),
     real_out=True, order2=True)
case("std", lambda x: fg.std(x, ddof=1), [((5,), "cplx")], lambda m: (lambda x: m.std(x, ddof=1)),
     torch=lambda x: _t().std(x), real_out=True)
case("cumprod", lambda x: fg.cumprod(x, axis=1), [((3, 4), "cpos")],
     lambda m: (lambda x: m.cumprod(x, axis=1)), torch=lambda x: _t().cumprod(x, 1), autograd=False)
case("cumsum", lambda x: fg.cumsum(x, axis=1), [((3, 4), "cplx")],
     lambda m: (lambda x: m.cumsum(x, axis=1)), torch=lambda x: _t().cumsum(x, 1))

# shapes and indexing (linear)
case("transpose", lambda x: fg.transpose(x) * 1.0, [((3, 4), "cplx")],
     lambda m: (lambda x: m.transpose(x) * 1.0))
case("reshape", lambda x: fg.reshape(x, (2, 6)), [((3, 4), "cplx")],
     lambda m: (lambda x: m.reshape(x, (2, 6))))
case("getitem", lambda x: x[1:, ::2], [((3, 4), "cplx")], lambda m: (lambda x: x[1:, ::2]))
case("concatenate", lambda x, y: fg.concatenate([x, y], axis=0),
     [((2, 3), "cplx"), ((1, 3), "cplx")],
     lambda m: (lambda x, y: m.concatenate([x, y], axis=0)))
case("stack", lambda x, y: fg.stack([x, y]), [((3,), "cplx"), ((3,), "cplx")],
     lambda m: (lambda x, y: m.stack([x, y])))
case("broadcast_to", lambda x: fg.broadcast_to(x, (2, 3)), [((3,), "cplx")],
     lambda m: (lambda x: x * np.ones((2, 3))))
case("astype", lambda x: fg.astype(x, np.complex128) * x, [((3,), "real")],
     lambda m: (lambda x: (x + 0j) * x))

# products and linear algebra
case("matmul", fg.matmul, [((3, 4), "cplx"), ((4, 2), "cplx")], lambda m: m.matmul,
     torch=lambda a, b: _t().matmul(a, b), order2=True)
case("matmul_vec", fg.matmul, [((3, 4), "cplx"), ((4,), "cplx")], lambda m: m.matmul,
     op="matmul")
case("matmul_real_complex", fg.matmul, [((3, 4), "real"), ((4, 2), "cplx")], lambda m: m.matmul,
     op="matmul")
case("einsum", lambda a, b: fg.einsum("ij,jk->ik", a, b), [((2, 3), "cplx"), ((3, 2), "cplx")],
     lambda m: (lambda a, b: m.einsum("ij,jk->ik", a, b)))
case("tensordot", lambda a, b: fg.tensordot(a, b, 1), [((2, 3), "cplx"), ((3, 2), "cplx")],
     lambda m: (lambda a, b: m.tensordot(a, b, 1)))
case("inner", fg.inner, [((2, 3), "cplx"), ((4, 3), "cplx")], lambda m: m.inner)
case("linalg.inv", fg.linalg.inv, [((3, 3), "cmat")], lambda m: m.linalg.inv, op="inv",
     torch=lambda a: _t().linalg.inv(a))
case("linalg.det", fg.linalg.det, [((3, 3), "cmat")], lambda m: m.linalg.det, op="det",
     torch=lambda a: _t().linalg.det(a))
case("linalg.solve", fg.linalg.solve, [((3, 3), "cmat"), ((3, 2), "cplx")],
     lambda m: m.linalg.solve, op="solve", torch=lambda a, b: _t().linalg.solve(a, b))
case("linalg.eigvals", fg.linalg.eigvals, [((4, 4), "cplx")],
     lambda m: (lambda a: m.linalg.eig(a)[0]), op="eig", torch=lambda a: _t().linalg.eigvals(a),
     order2=True)
case("linalg.eigvals_real", fg.linalg.eigvals, [((4, 4), "real")],
     lambda m: (lambda a: m.linalg.eig(a)[0]), op="eig", torch=lambda a: _t().linalg.eigvals(a))
# the eigenvectors' phases are LAPACK's choice: |v|^2 does not depend on them
case("linalg.eig_vectors", lambda a: fg.abs(fg.linalg.eig(a)[1]) ** 2, [((4, 4), "cplx")],
     lambda m: (lambda a: m.abs(m.linalg.eig(a)[1]) ** 2), op="eig",
     torch=lambda a: _t().abs(_t().linalg.eig(a)[1]) ** 2, real_out=True)
case("linalg.eig_vectors_real", lambda a: fg.abs(fg.linalg.eig(a)[1]) ** 2, [((3, 3), "real")],
     lambda m: (lambda a: m.abs(m.linalg.eig(a)[1]) ** 2), op="eig",
     torch=lambda a: _t().abs(_t().linalg.eig(a)[1]) ** 2, real_out=True)

# Hermitian and positive definite inputs: eigh and cholesky read one triangle, so the cases
# feed herm(a) = (a + a^H) / 2 and the Hermitian gradient is the derivative in every entry
def _herm(m):
    return lambda a: (a + m.conj(m.swapaxes(a, -1, -2))) * 0.5


def _th(a):
    return (a + a.mH) * 0.5


# norms: real results
for _name, _args, _shape, _ag, _o2 in (
        ("norm", (), (3, 4), True, True),                      # Frobenius of the whole array
        ("norm_vector", (None, 1), (3, 4), True, False),
        ("norm_ord3", (3, 0), (3, 4), True, False),
        ("norm_ord1", (1, 1), (3, 4), False, False),            # (autograd: ord > 1 only)
        ("norm_inf", (np.inf, 1), (3, 4), False, False),
        ("norm_fro", ("fro",), (3, 4), True, False),
        ("norm_nuc", ("nuc",), (4, 3), True, False),
        ("norm_spectral", (2,), (3, 4), False, False),
        ("norm_spectral_min", (-2,), (4, 4), False, False),
        ("norm_matrix_ord1", (1,), (3, 4), False, False),
        ("norm_matrix_inf", (np.inf, (1, 0)), (3, 4), False, False)):
    case("linalg." + _name, lambda x, a=_args: fg.linalg.norm(x, *a), [(_shape, "cplx")],
         lambda m, a=_args: (lambda x: m.linalg.norm(x, *a)), op="norm",
         torch=lambda x, a=_args: _t().linalg.norm(x, *a), autograd=_ag, order2=_o2,
         real_out=True)

# eigh: functions of the eigenvalues and of projectors, which do not depend on the
# eigenvectors' phases (LAPACK's choice)
case("linalg.eigh_values", lambda a: fg.linalg.eigh(_herm(fg)(a))[0], [((4, 4), "cplx")],
     lambda m: (lambda a: m.linalg.eigh(_herm(m)(a))[0]), op="eigh",
     torch=lambda a: _t().linalg.eigh(_th(a))[0], real_out=True, order2=True)


def _eigh_function(m):
    """``V diag(w^3) V^H``: a matrix function of a Hermitian matrix."""
    def f(a):
        w, v = m.linalg.eigh(_herm(m)(a))
        return m.matmul(v * w[..., None, :] ** 3, m.conj(m.swapaxes(v, -1, -2)))
    return f


case("linalg.eigh_function", _eigh_function(fg), [((4, 4), "cplx")], _eigh_function,
     op="eigh", torch=lambda a: _eigh_function(_t())(a))
case("linalg.eigh_vectors", lambda a: fg.abs(fg.linalg.eigh(_herm(fg)(a), UPLO="U")[1]) ** 2,
     [((3, 3), "cplx")], lambda m: (lambda a: m.abs(m.linalg.eigh(_herm(m)(a), "U")[1]) ** 2),
     op="eigh", torch=lambda a: _t().abs(_t().linalg.eigh(_th(a), UPLO="U")[1]) ** 2,
     real_out=True)
# (autograd has no eigvalsh rule: its peer is eigh's eigenvalues)
case("linalg.eigvalsh", lambda a: fg.linalg.eigvalsh(_herm(fg)(a)), [((4, 4), "cplx")],
     lambda m: (lambda a: (m.linalg.eigvalsh if m is np else
                           (lambda h: m.linalg.eigh(h)[0]))(_herm(m)(a))), op="eigvalsh",
     torch=lambda a: _t().linalg.eigvalsh(_th(a)), real_out=True)


# svd: the singular values and U diag(f(S)) Vh (the singular vectors' joint phases cancel)
def _svd_function(m):
    def f(a):
        u, s, vh = m.linalg.svd(a, full_matrices=False)
        return m.matmul(u * s[..., None, :] ** 2, vh)
    return f


case("linalg.svdvals", lambda a: fg.linalg.svd(a, compute_uv=False), [((4, 3), "cplx")],
     lambda m: (lambda a: m.linalg.svd(a, compute_uv=False)), op="svd",
     torch=lambda a: _t().linalg.svdvals(a), real_out=True, order2=True)
for _shape in ((4, 4), (5, 3), (3, 5)):
    case(f"linalg.svd_{_shape[0]}x{_shape[1]}", _svd_function(fg), [(_shape, "cplx")],
         _svd_function, op="svd",
         torch=lambda a: (lambda u, s, vh: (u * s[..., None, :] ** 2) @ vh)(
             *_t().linalg.svd(a, full_matrices=False)))

# cholesky: autograd's rule is for real matrices only (it differs from finite differences on
# complex ones), so the peers are finite differences and PyTorch
case("linalg.cholesky", lambda a: fg.linalg.cholesky(_herm(fg)(a)), [((4, 4), "chpd")],
     lambda m: (lambda a: m.linalg.cholesky(_herm(m)(a))), op="cholesky",
     torch=lambda a: _t().linalg.cholesky(_th(a)), autograd=False)
case("linalg.cholesky_upper", lambda a: fg.linalg.cholesky(_herm(fg)(a), upper=True),
     [((3, 3), "chpd")], lambda m: (lambda a: m.linalg.cholesky(_herm(m)(a), upper=True)),
     op="cholesky", torch=lambda a: _t().linalg.cholesky(_th(a), upper=True), autograd=False)

# slogdet: log|det| and the sign det / |det|, which moves with a complex matrix (autograd
# differentiates log|det| only)
case("linalg.slogdet", lambda a: fg.linalg.slogdet(a)[1], [((3, 3), "cmat")],
     lambda m: (lambda a: m.linalg.slogdet(a)[1]), op="slogdet",
     torch=lambda a: _t().linalg.slogdet(a)[1], real_out=True, order2=True)
case("linalg.slogdet_sign", lambda a: fg.linalg.slogdet(a)[0], [((3, 3), "cmat")],
     lambda m: (lambda a: m.linalg.slogdet(a)[0]), op="slogdet",
     torch=lambda a: _t().linalg.slogdet(a)[0], autograd=False)


# qr: unique with R's diagonal real (LAPACK's), so any function of Q and R has a gradient;
# autograd has no qr rule
def _qr_function(m):
    def f(a):
        q, r = m.linalg.qr(a)
        return m.matmul(q * m.abs(m.diagonal(r, 0, -2, -1))[..., None, :], r * r)
    return f


for _shape in ((4, 4), (5, 3), (3, 5)):
    case(f"linalg.qr_{_shape[0]}x{_shape[1]}", _qr_function(fg), [(_shape, "cplx")],
         _qr_function, op="qr", torch=lambda a: _qr_function(_t())(a), autograd=False)

# sign: NumPy 2's z / |z| (not piecewise constant on complex values)
case("sign", fg.sign, [((3, 4), "cplx")], lambda m: m.sign, torch=lambda x: _t().sgn(x),
     autograd=False)

# batches and keepdims
case("linalg.eigh_batched", lambda a: fg.linalg.eigh(_herm(fg)(a))[0], [((2, 3, 3), "cplx")],
     lambda m: (lambda a: m.linalg.eigh(_herm(m)(a))[0]), op="eigh",
     torch=lambda a: _t().linalg.eigh(_th(a))[0], real_out=True)
case("linalg.svd_batched", _svd_function(fg), [((2, 4, 3), "cplx")], _svd_function, op="svd")
case("linalg.cholesky_batched", lambda a: fg.linalg.cholesky(_herm(fg)(a)), [((2, 3, 3), "chpd")],
     lambda m: (lambda a: m.linalg.cholesky(_herm(m)(a))), op="cholesky",
     torch=lambda a: _t().linalg.cholesky(_th(a)), autograd=False)
case("linalg.norm_keepdims", lambda x: fg.linalg.norm(x, axis=(0, 2), keepdims=True),
     [((2, 3, 4), "cplx")], lambda m: (lambda x: m.linalg.norm(x, axis=(0, 2), keepdims=True)),
     op="norm", torch=lambda x: _t().linalg.norm(x, dim=(0, 2), keepdim=True), real_out=True,
     autograd=False)   # (autograd's rule expands keepdims=True results once more)

# pseudo-inverse, least squares, condition numbers, powers (the pseudo-inverse's gradient at
# constant rank, the conjugate transposes of the real formula in PyTorch's convention)
for _shape in ((4, 3), (3, 4)):
    case(f"linalg.pinv_{_shape[0]}x{_shape[1]}", fg.linalg.pinv, [(_shape, "cplx")],
         lambda m: m.linalg.pinv, op="pinv", torch=lambda a: _t().linalg.pinv(a),
         autograd=False, order2=_shape == (4, 3))   # (autograd's rule transposes without conjugating)
case("linalg.lstsq_x", lambda a, b: fg.linalg.lstsq(a, b)[0], [((5, 3), "cplx"), ((5, 2), "cplx")],
     lambda m: (lambda a, b: m.linalg.lstsq(a, b)[0]), op="lstsq",
     torch=lambda a, b: _t().linalg.pinv(a) @ b, autograd=False, order2=True)
case("linalg.lstsq_vector", lambda a, b: fg.linalg.lstsq(a, b)[0],
     [((4, 2), "cplx"), ((4,), "cplx")],
     lambda m: (lambda a, b: m.linalg.lstsq(a, b)[0]), op="lstsq", autograd=False)
case("linalg.lstsq_residuals", lambda a, b: fg.linalg.lstsq(a, b)[1],
     [((5, 3), "cplx"), ((5, 2), "cplx")], lambda m: (lambda a, b: m.linalg.lstsq(a, b)[1]),
     op="lstsq", real_out=True, autograd=False)
case("linalg.lstsq_s", lambda a, b: fg.linalg.lstsq(a, b)[3],
     [((5, 3), "cplx"), ((5, 2), "cplx")], lambda m: (lambda a, b: m.linalg.lstsq(a, b)[3]),
     op="lstsq", real_out=True, autograd=False)
for _p in (None, -2, "fro", 1, np.inf):
    case(f"linalg.cond_{_p}", lambda a, p=_p: fg.linalg.cond(a, p), [((3, 3), "cmat")],
         lambda m, p=_p: (lambda a: m.linalg.cond(a, p)), op="cond",
         torch=(lambda a, p=_p: _t().linalg.cond(a, p)) if _p in (None, -2) else None,
         real_out=True, autograd=False,   # (PyTorch's backward of the other orders fails)
         order2=_p in (None, "fro"))
for _n in (3, -2):
    case(f"linalg.matrix_power_{_n}", lambda a, n=_n: fg.linalg.matrix_power(a, n),
         [((3, 3), "cmat")], lambda m, n=_n: (lambda a: m.linalg.matrix_power(a, n)),
         op="matrix_power", torch=lambda a, n=_n: _t().linalg.matrix_power(a, n), autograd=False)
case("linalg.multi_dot", lambda a, b, c: fg.linalg.multi_dot([a, b, c]),
     [((2, 3), "cplx"), ((3, 4), "cplx"), ((4,), "cplx")],
     lambda m: (lambda a, b, c: m.linalg.multi_dot([a, b, c])), op="multi_dot",
     autograd=False, torch=lambda a, b, c: _t().linalg.multi_dot([a, b, c]))


def _scipy_module(sub: str) -> Callable:
    """``m -> scipy.<sub>`` for NumPy's reference, ``autograd.scipy.<sub>`` for autograd's."""
    return lambda m: importlib.import_module(("scipy." if m is np else "autograd.scipy.") + sub)


def _fastgraph_scipy(sub: str) -> Callable:
    """``() -> fastgraph.scipy.<sub>``, imported when a row runs."""
    return lambda: importlib.import_module("fastgraph.scipy." + sub)


_sp, _fsl = _scipy_module("linalg"), _fastgraph_scipy("linalg")
_signal, _fsig = _scipy_module("signal"), _fastgraph_scipy("signal")
_special, _fsp = _scipy_module("special"), _fastgraph_scipy("special")


# scipy.linalg (fastgraph.scipy.linalg): SciPy's own functions for values; autograd's
# autograd.scipy.linalg where it has the rule
for _trans in (0, 1, 2):
    for _lower in (False, True):
        case(f"scipy.solve_triangular_{_trans}{'_lower' if _lower else ''}",
             lambda a, b, t=_trans, lo=_lower: _fsl().solve_triangular(a, b, trans=t, lower=lo),
             [((3, 3), "cmat"), ((3, 2), "cplx")],
             lambda m, t=_trans, lo=_lower: (lambda a, b: _sp(m).solve_triangular(
                 a, b, trans=t, lower=lo)), op="solve_triangular", autograd=False,
             order2=_trans == 2 and not _lower)
case("scipy.solve_triangular_vector", lambda a, b: _fsl().solve_triangular(a, b, lower=True),
     [((3, 3), "cmat"), ((3,), "cplx")],
     lambda m: (lambda a, b: _sp(m).solve_triangular(a, b, lower=True)), op="solve_triangular",
     torch=lambda a, b: _t().linalg.solve_triangular(_t().tril(a), b[:, None], upper=False)[:, 0])
for _lower in (False, True):
    case(f"scipy.cholesky{'_lower' if _lower else ''}",
         lambda a, lo=_lower: _fsl().cholesky(_herm(fg)(a), lower=lo), [((3, 3), "chpd")],
         lambda m, lo=_lower: (lambda a: _sp(m).cholesky(_herm(m)(a), lower=lo)),
         op="scipy_cholesky", autograd=False, order2=_lower,
         torch=lambda a, lo=_lower: _t().linalg.cholesky(_th(a), upper=not lo))
    case(f"scipy.cho_factor{'_lower' if _lower else ''}",
         lambda a, lo=_lower: _fsl().cho_factor(_herm(fg)(a), lower=lo)[0], [((3, 3), "chpd")],
         lambda m, lo=_lower: (lambda a: _sp(m).cho_factor(_herm(m)(a), lower=lo)[0]),
         op="cho_factor", autograd=False)
    case(f"scipy.cho_solve{'_lower' if _lower else ''}",
         lambda c, b, lo=_lower: _fsl().cho_solve((c, lo), b), [((3, 3), "cmat"), ((3, 2), "cplx")],
         lambda m, lo=_lower: (lambda c, b: _sp(m).cho_solve((c, lo), b)), op="cho_solve",
         autograd=False, order2=not _lower)
case("scipy.cho_solve_vector", lambda c, b: _fsl().cho_solve((c, True), b),
     [((3, 3), "cmat"), ((3,), "cplx")],
     lambda m: (lambda c, b: _sp(m).cho_solve((c, True), b)), op="cho_solve", autograd=False,
     torch=lambda c, b: _t().cholesky_solve(b[:, None], _t().tril(c), upper=False)[:, 0])
case("scipy.lu_factor", lambda a: _fsl().lu_factor(a)[0], [((3, 3), "cmat")],
     lambda m: (lambda a: _sp(m).lu_factor(a)[0]), op="lu_factor", autograd=False)
for _trans in (0, 1, 2):
    case(f"scipy.lu_solve_{_trans}",
         lambda a, b, t=_trans: _fsl().lu_solve(_fsl().lu_factor(a), b, trans=t),
         [((3, 3), "cplx"), ((3, 2), "cplx")],
         lambda m, t=_trans: (lambda a, b: _sp(m).lu_solve(_sp(m).lu_factor(a), b, trans=t)),
         op="lu_solve", autograd=False, order2=_trans == 2)
case("scipy.expm", lambda a: _fsl().expm(a * 0.5), [((3, 3), "cplx")],
     lambda m: (lambda a: _sp(m).expm(a * 0.5)), op="expm", autograd=False, order2=True,
     torch=lambda a: _t().linalg.matrix_exp(a * 0.5))
case("scipy.sqrtm", lambda a: _fsl().sqrtm(a), [((3, 3), "cmat")],
     lambda m: (lambda a: _sp(m).sqrtm(a)), op="sqrtm", order2=True,
     autograd=False)   # (autograd's rule keeps the real part)
case("scipy.solve_sylvester", lambda a, b, q: _fsl().solve_sylvester(a, b, q),
     [((3, 3), "cmat"), ((2, 2), "cmat"), ((3, 2), "cplx")],
     lambda m: (lambda a, b, q: _sp(m).solve_sylvester(a, b, q)), op="solve_sylvester",
     order2=True)
case("scipy.solve_banded", lambda ab, b: _fsl().solve_banded((1, 1), ab + 3.0, b),
     [((3, 4), "cplx"), ((4, 2), "cplx")],
     lambda m: (lambda ab, b: _sp(m).solve_banded((1, 1), ab + 3.0, b)), op="solve_banded",
     autograd=False, order2=True)
case("scipy.block_diag", lambda a, b: _fsl().block_diag(a, b), [((2, 2), "cplx"), ((3,), "cplx")],
     lambda m: (lambda a, b: _sp(m).block_diag(a, b)), op="block_diag", autograd=False)
case("scipy.det", lambda a: _fsl().det(a), [((3, 3), "cmat")],
     lambda m: (lambda a: _sp(m).det(a)), op="scipy_det", autograd=False,
     torch=lambda a: _t().linalg.det(a))
case("scipy.inv", lambda a: _fsl().inv(a), [((3, 3), "cmat")],
     lambda m: (lambda a: _sp(m).inv(a)), op="scipy_inv", autograd=False,
     torch=lambda a: _t().linalg.inv(a))
case("scipy.inv_pos", lambda a: _fsl().inv(_herm(fg)(a), assume_a="pos"), [((3, 3), "chpd")],
     lambda m: (lambda a: _sp(m).inv(_herm(m)(a), assume_a="pos")), op="scipy_inv",
     autograd=False, torch=lambda a: _t().linalg.inv(_th(a)), order2=True)


# scipy.signal.convolve: bilinear, so its VJPs (convolutions with the other operand flipped)
# hold as they are
for _mode in ("full", "valid", "same"):
    case(f"scipy.signal.convolve_{_mode}", lambda a, b, md=_mode: _fsig().convolve(a, b, md),
         [((6,), "cplx"), ((3,), "cplx")],
         lambda m, md=_mode: (lambda a, b: _signal(m).convolve(a, b, mode=md)),
         op="signal_convolve", order2=_mode == "full")
case("scipy.signal.convolve_2d", lambda a, b: _fsig().convolve(a, b),
     [((3, 4), "cplx"), ((2, 2), "real")],
     lambda m: (lambda a, b: _signal(m).convolve(a, b)), op="signal_convolve",
     autograd=False)   # (autograd's convolve leaves an imaginary part on the real operand)
case("scipy.signal.convolve_axes",
     lambda a, b: _fsig().convolve(a, b, axes=([1], [1]), dot_axes=([0], [0]), mode="valid"),
     [((2, 5), "cplx"), ((2, 3), "cplx")],
     lambda m: (lambda a, b: sum(m.convolve(a[i], b[i], "valid") for i in range(2))),
     op="signal_convolve", autograd=False)


# scipy.special: the holomorphic functions whose derivative SciPy evaluates on complex values
for _name, _domain in (("gamma", "cpos"), ("rgamma", "cpos"), ("erf", "cplx"), ("erfc", "cplx"),
                       ("ndtr", "cplx"), ("log_ndtr", "cpos")):
    case(f"scipy.special.{_name}", lambda x, n=_name: getattr(_fsp(), n)(x), [((3, 2), _domain)],
         lambda m, n=_name: getattr(_special(m), n), op=_name,
         autograd=_name not in ("ndtr", "log_ndtr"),   # (autograd has no ndtr rules)
         order2=_name in ("erf", "erfc"))

# logsumexp, softmax, log_softmax: holomorphic (shifted by a constant, which cancels)
for _axis in (None, 1, (0, 1)):
    for _name in ("logsumexp", "softmax", "log_softmax"):
        case(f"scipy.special.{_name}_{_axis}",
             lambda x, n=_name, a=_axis: getattr(_fsp(), n)(x, axis=a), [((2, 3), "cplx")],
             lambda m, n=_name, a=_axis: (lambda x: getattr(_special(m), n)(x, axis=a)),
             op=_name, autograd=False, order2=_axis == 1)
case("logsumexp", lambda x: fg.logsumexp(x, axis=0), [((3, 2), "cplx")],
     lambda m: (lambda x: _special(m).logsumexp(x, axis=0)),
     torch=lambda x: _t().logsumexp(x, 0))
case("softmax", lambda x: fg.softmax(x), [((2, 3), "cplx")],
     lambda m: (lambda x: _special(m).softmax(x, axis=-1)), autograd=False, order2=True)
case("scipy.inv_her", lambda a: _fsl().inv(_herm(fg)(a), assume_a="her", lower=True),
     [((3, 3), "cmat")],
     lambda m: (lambda a: _sp(m).inv(_herm(m)(a), assume_a="her", lower=True)),
     op="scipy_inv", autograd=False)
case("scipy.inv_sym", lambda a: _fsl().inv((a + fg.transpose(a)) * 0.5, assume_a="sym"),
     [((3, 3), "cmat")],
     lambda m: (lambda a: _sp(m).inv((a + m.transpose(a)) * 0.5, assume_a="sym")),
     op="scipy_inv", autograd=False)
case("scipy.inv_lower_triangular", lambda a: _fsl().inv(a, assume_a="lower triangular"),
     [((3, 3), "cmat")], lambda m: (lambda a: _sp(m).inv(a, assume_a="lower triangular")),
     op="scipy_inv", autograd=False)
