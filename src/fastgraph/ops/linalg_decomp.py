"""``fg.linalg`` decompositions and the functions built on them, NumPy's ``numpy.linalg``:
``cholesky eigh eigvalsh eig eigvals svd svdvals qr pinv lstsq matrix_power cond
multi_dot`` (``inv solve det slogdet norm`` are in ``linalg.py``), batched over leading axes as
NumPy's are.

Each VJP is written with fastgraph ops, so gradients of any order work.  Where a derivative does
not exist the rule takes a documented value instead of dividing by zero (docs/decisions.md,
"Linear algebra at degenerate inputs"):

* ``eigh``: pairs of eigenvalues equal to within ``n * eps * max|w|`` contribute nothing to the
  eigenvector part of the gradient (the gradient of any function that is invariant under
  rotations within a repeated eigenspace, such as a function of the eigenvalues or of the
  projector onto the eigenspace, is then exact and finite);
* ``svd``: likewise for pairs of equal singular values, and ``1/s`` is taken as 0 for singular
  values below ``max(m, n) * eps * s_max``;
* ``cholesky`` and ``eigh`` read one triangle of their input, as NumPy does; their gradient is
  the symmetric one (the derivative along symmetric perturbations), as in PyTorch, JAX and HIPS
  autograd's ``cholesky``.

A decomposition with several results is one op whose value packs them into one array (one
LAPACK call); the results are views of it (:func:`eigh`, :func:`svd`, :func:`qr`,
:func:`lstsq`).  On plain NumPy values every function is NumPy's own.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._core import apply, defop, defun, holds_graph_value, is_tensor
from .._core import shapes as _shapes
from . import _linalg_numeric as _N

from .. import ops as F

LINALG = ("linalg",)


# ---- helpers ----------------------------------------------------------------------------------
def _shape(x) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _ndim(x) -> int:
    return F.shape._known_ndim(x, "linalg")


def _mT(x):
    return F.swapaxes(x, -1, -2)


def _sym(x):
    return (x + _mT(x)) * 0.5


def _is_complex(x) -> bool:
    return F.elementwise._is_complex(x)


def _cj(x):
    """The complex conjugate of a complex value, a real one unchanged (no step added)."""
    return F.conj(x) if _is_complex(x) else x


def _herm(x):
    """The Hermitian part ``(x + x^H) / 2`` (``sym`` for real values)."""
    return (x + _cj(_mT(x))) * 0.5 if _is_complex(x) else _sym(x)


def _real_part(x):
    """The real part of a complex value packed with complex results (eigenvalues of a Hermitian
    matrix, singular values), as NumPy returns it; a real value unchanged."""
    return F.real(x) if _is_complex(x) else x


def _col(v):
    return F.expand_dims(v, -1)


def _row(v):
    return F.expand_dims(v, -2)


def _plain(*xs) -> bool:
    """No Tensor or Node among the arguments: NumPy's own function answers."""
    return not holds_graph_value(xs)


def _operand(x, op: str):
    x = F.shape._as_operand(x)
    if F.shape._known_ndim(x, op) < 2:
        raise np.linalg.LinAlgError(
            f"{op}: {F.shape._known_ndim(x, op)}-dimensional array given. Array must be at "
            f"least two-dimensional")
    return x


def _square_rule(name):
    def rule(shapes, **_):
        s = tuple(shapes[0])
        if len(s) < 2 or (s[-1] is not None and s[-2] is not None and s[-1] != s[-2]):
            raise ValueError(f"{name}: last 2 dimensions of the array must be square, got shape "
                             f"{s}")
        return s
    return rule


def _matrix_rule(name):
    def rule(shapes):
        s = tuple(shapes[0])
        if len(s) < 2:
            raise ValueError(f"{name}: expected a (batch of) matrices, got shape {s}")
        return s
    return rule


def _known(d, name, what="the matrix dimensions"):
    if d is None:
        raise ValueError(f"{name}: {what} must be known to build it in a graph (only batch "
                         f"dimensions may be unknown)")
    return d


def _diag_embed(v, like):
    """Zeros shaped like the (batch of) square matrices ``like`` with ``v`` on the diagonal."""
    nd = _ndim(like)
    return F.shape._undiagonal(v, like, 0, nd - 2, nd - 1)


def _degenerate_forward(w, scale_dim, sums=False):
    w = np.asarray(w)
    n = scale_dim if scale_dim else w.shape[-1]
    eps = np.finfo(w.dtype if w.dtype.kind == "f" else np.float64).eps
    scale = np.max(np.abs(w), axis=-1, keepdims=True)[..., None] if w.shape[-1] else 0.0
    d = w[..., None, :] + w[..., :, None] if sums else w[..., None, :] - w[..., :, None]
    return np.abs(d) <= n * eps * scale


def _degenerate_shape(shapes, scale_dim, sums=False):
    s = tuple(shapes[0])
    return s[:-1] + (s[-1], s[-1])


_degenerate = defop("linalg_degenerate_pairs", _degenerate_forward, None,
                    shape=_degenerate_shape, differentiable=False,
                    doc="Pairs ``(i, j)`` with ``|w_i - w_j| <= n * eps * max|w|`` (the "
                        "diagonal too): equal eigen- or singular values (``sums``: "
                        "``|w_i + w_j|``, two zero singular values).")


def _inverse_gaps(w, scale_dim=0, sums=False):
    """``1 / (w_j - w_i)`` for ``(i, j)``, 0 on the diagonal and between equal values;
    ``sums``: ``1 / (w_j + w_i)`` (singular values), 0 where both are zero."""
    if sums:
        d = _row(w) + _col(w)
        same = apply(_degenerate.op, (w,), {"scale_dim": scale_dim, "sums": True})
    else:
        d = _row(w) - _col(w)
        same = apply(_degenerate.op, (w,), {"scale_dim": scale_dim})
    return F.where(same, 0.0, 1.0 / F.where(same, 1.0, d))


def _small_forward(s, scale_dim):
    s = np.asarray(s)
    eps = np.finfo(s.dtype if s.dtype.kind == "f" else np.float64).eps
    top = np.max(s, axis=-1, keepdims=True) if s.shape[-1] else 0.0
    return s <= scale_dim * eps * top


_small = defop("linalg_small_values", _small_forward, None,
               shape=lambda shapes, **_: tuple(shapes[0]), differentiable=False,
               doc="Singular values below ``max(m, n) * eps * s_max`` (taken as zero).")


def _safe_reciprocal(s, scale_dim):
    small = apply(_small.op, (s,), {"scale_dim": scale_dim})
    return F.where(small, 0.0, 1.0 / F.where(small, 1.0, s))


# ---- cholesky ---------------------------------------------------------------------------------
def _phi(x):
    """The lower triangle with the diagonal halved."""
    return F.tril(x) - _diag_embed(F.diagonal(x, 0, -2, -1) * 0.5, x)


def _cholesky_grad_vjp_l(h, ans, L, X):
    # G = sym(S), S = L^-T Phi(L^T tril(X)) L^-1:  d<H, G>/dL = tril(X Phi(Q)^T - 2 G H L^-T),
    # Q = L^-1 sym(H) L^-T (H L^-T = (L^-1 H)^T)
    L = F.tril(L)
    hs = _sym(h)
    y = F.solve_triangular(L, hs, lower=True)                       # L^-1 H
    q = F.solve_triangular(L, _mT(y), lower=True)                   # L^-1 H L^-T
    return F.tril(F.matmul(F.tril(X), _mT(_phi(q))) - 2.0 * F.matmul(ans, _mT(y)))


def _cholesky_grad_vjp_x(h, ans, L, X):
    # linear in X: the adjoint is the Cholesky factor's forward derivative, L Phi(L^-1 H L^-T)
    L = F.tril(L)
    y = F.solve_triangular(L, _sym(h), lower=True)
    q = F.solve_triangular(L, _mT(y), lower=True)
    return F.matmul(L, _phi(q))


def cholesky_grad(L, X):
    """The symmetric gradient with respect to ``A`` of ``sum(X * cholesky(A))``, from the lower
    factor ``L`` (only the lower triangles of ``L`` and ``X`` are read): Cholesky's VJP, blocked
    so that it costs about what the factorisation does (triangular solves and products, no
    inverse).

        >>> L = np.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]))
        >>> fg.ops.cholesky_grad(L, np.tril(np.ones((2, 2))))  # doctest: +SKIP
    """
    return apply(cholesky_grad.op, (L, X), None)


cholesky_grad = defop("cholesky_grad", _N.cholesky_grad, _cholesky_grad_vjp_l,
                      _cholesky_grad_vjp_x, function=cholesky_grad, blas="lapack",
                      shape=lambda shapes, **_: _shapes.broadcast("cholesky_grad", *shapes))


def _cholesky_complex_vjp(L, gL):
    # autograd's convention: herm(L^-T Phi(L^T gL) conj(L)^-1), the conjugate of PyTorch's
    # L^-H Phi(L^H gL) L^-1 (Phi reads L^T gL's lower triangle, which reads gL's only).  Written
    # with complex-differentiable ops (solve, not the triangular solves), to any order.
    y = F.solve(_mT(L), _phi(F.matmul(_mT(L), F.tril(gL))))
    return _herm(_mT(F.solve(F.conj(_mT(L)), _mT(y))))


def _cholesky_vjp(g, ans, a, upper):
    if _is_complex(ans):
        # upper: U = L^H, so L = U^H and its cotangent is g^H
        return _cholesky_complex_vjp(F.conj(_mT(ans)), F.conj(_mT(g))) if upper else \
            _cholesky_complex_vjp(ans, g)
    if upper:
        return F.cholesky_grad(_mT(ans), _mT(g))
    return F.cholesky_grad(ans, g)


def cholesky(a, /, *, upper=False):
    """The Cholesky factor of a (batch of) symmetric positive-definite matrices, NumPy's
    ``np.linalg.cholesky`` (``upper=True``: ``U`` with ``a = U^H U``); only the lower triangle
    of ``a`` is read.  The gradient is the symmetric one (Hermitian for complex matrices, in
    HIPS autograd's convention).

        >>> a = fg.tensor([[4.0, 2.0], [2.0, 3.0]], requires_grad=True)
        >>> fg.linalg.cholesky(a).sum().backward()
    """
    a = _operand(a, "cholesky")
    return apply(cholesky.op, (a,), {"upper": bool(upper)})


cholesky = defop("cholesky", _N.cholesky, _cholesky_vjp,
                 shape=_square_rule("cholesky"), function=cholesky, blas="lapack",
                 exports=LINALG, complex_vjps=True)


# ---- eigh, eigvalsh -------------------------------------------------------------------------
class EighResult(NamedTuple):
    """What ``eigh`` returns, NumPy's ``EighResult``: ascending ``eigenvalues`` and the
    orthonormal ``eigenvectors`` (columns)."""
    eigenvalues: Any
    eigenvectors: Any


def _eigh_forward(a, UPLO):
    w, v = np.linalg.eigh(a, UPLO)
    out = np.empty(v.shape[:-2] + (v.shape[-1] + 1, v.shape[-1]), dtype=v.dtype)
    out[..., 0, :] = w
    out[..., 1:, :] = v
    return out


def _eigh_shape(shapes, UPLO):
    s = _square_rule("eigh")(shapes)
    n = s[-1]
    return s[:-2] + (None if n is None else n + 1, n)


def _eigh_vjp(g, ans, a, UPLO):
    w, v = ans[..., 0, :], ans[..., 1:, :]
    gw, gv = g[..., 0, :], g[..., 1:, :]
    inner = _inverse_gaps(_real_part(w)) * F.matmul(_mT(v), gv) + _diag_embed(_real_part(gw), v)
    # complex (Hermitian) matrices: conj(V) (...) V^T and the Hermitian part, autograd's
    # convention (the conjugate of PyTorch's V (...) V^H); the eigenvectors' phases are
    # LAPACK's choice, and the imaginary diagonal of V^T gV, which only a function that depends
    # on them has, is dropped with the rest of the diagonal
    return _herm(F.matmul(_cj(v), F.matmul(inner, _mT(v))))


def _uplo(UPLO, op):
    if UPLO not in ("L", "U"):
        raise ValueError(f"{op}: UPLO argument must be 'L' or 'U', got {UPLO!r}")
    return UPLO


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of a (batch of) symmetric matrices, NumPy's
    ``np.linalg.eigh``: ``EighResult(eigenvalues, eigenvectors)``; only the ``UPLO`` triangle is
    read.  The gradient is the symmetric one; equal eigenvalues (to ``n * eps * max|w|``) add
    nothing to the eigenvector part, so gradients of functions invariant under rotations of a
    repeated eigenspace are finite and exact.  A complex (Hermitian) matrix has real
    eigenvalues, as in NumPy, and the Hermitian gradient in HIPS autograd's convention; its
    eigenvectors' phases are LAPACK's choice, so only functions that do not depend on them
    (of the eigenvalues, of ``V f(w) V^H``, of ``|v|``) have a gradient that means something.

        >>> w, v = fg.linalg.eigh(fg.tensor([[2.0, 1.0], [1.0, 2.0]], requires_grad=True))
    """
    UPLO = _uplo(UPLO, "eigh")
    if _plain(a):
        return np.linalg.eigh(a, UPLO)
    a = _operand(a, "eigh")
    packed = apply(eigh.op, (a,), {"UPLO": UPLO})
    return EighResult(_real_part(packed[..., 0, :]), packed[..., 1:, :])


# the op's value packs the eigenvalues (row 0) and the eigenvectors (rows 1...) in one array
eigh = defop("eigh", _eigh_forward, _eigh_vjp, shape=_eigh_shape, function=eigh,
             blas="lapack", exports=LINALG, complex_vjps=True)
_eigh = eigh


def _eigvalsh_vjp(g, ans, a, UPLO):
    v = apply(_eigh.op, (a,), {"UPLO": UPLO})[..., 1:, :]
    return F.matmul(_cj(v) * _row(g), _mT(v))


def _eigvalsh_shape(shapes, UPLO):
    return _square_rule("eigvalsh")(shapes)[:-1]


def eigvalsh(a, UPLO="L"):
    """The eigenvalues (ascending) of a (batch of) symmetric matrices, NumPy's
    ``np.linalg.eigvalsh``; gradient ``V diag(g) V^T``.

        >>> fg.linalg.eigvalsh(fg.tensor([[2.0, 1.0], [1.0, 2.0]]))
        tensor([1., 3.])
    """
    UPLO = _uplo(UPLO, "eigvalsh")
    a = _operand(a, "eigvalsh")
    return apply(eigvalsh.op, (a,), {"UPLO": UPLO})


eigvalsh = defop("eigvalsh", lambda a, UPLO: np.linalg.eigvalsh(a, UPLO), _eigvalsh_vjp,
                 shape=_eigvalsh_shape, function=eigvalsh, blas="lapack", exports=LINALG,
                 complex_vjps=True)


# ---- eig, eigvals: general square matrices, complex results ------------------------------------
class EigResult(NamedTuple):
    """What ``eig`` returns, NumPy's ``EigResult``: the ``eigenvalues`` and the unit-norm
    ``eigenvectors`` (columns), complex unless NumPy's are real."""
    eigenvalues: Any
    eigenvectors: Any


def _eig_forward(a):
    w, v = np.linalg.eig(a)
    dtype = np.result_type(w.dtype, np.complex64)
    out = np.empty(v.shape[:-2] + (v.shape[-1] + 1, v.shape[-1]), dtype=dtype)
    out[..., 0, :] = w
    out[..., 1:, :] = v
    return out


def _eig_vjp(g, ans, a):
    # HIPS autograd's rule: A = U diag(e) U^-1, so for the holomorphic part
    # dA-bar = U^-T (diag(ge) + F o (U^T gU)) U^T with F_ij = 1 / (e_j - e_i); NumPy's eigenvectors
    # have unit norm, which removes the component along each u_k of Re(u_k^H du_k) (the term
    # with conj(U)).  Equal eigenvalues (to n * eps * max|e|) get F = 0, as eigh's do.
    e, u = ans[..., 0, :], ans[..., 1:, :]
    ge, gu = g[..., 0, :], g[..., 1:, :]
    f = _inverse_gaps(e)
    ut = _mT(u)
    utgu = F.matmul(ut, gu)
    norm_part = F.matmul(F.matmul(ut, F.conj(u)), _diag_embed(F.real(F.diagonal(utgu, 0, -2, -1)),
                                                             u))
    inner = _diag_embed(ge, u) + f * utgu - f * norm_part
    # U^-T M U^T as a solve: a defective matrix (dependent eigenvectors) has no derivative, and
    # the solve then raises LinAlgError
    return F.solve(ut, F.matmul(inner, ut))


def _eig_shape(shapes):
    s = _square_rule("eig")(shapes)
    n = s[-1]
    return s[:-2] + (None if n is None else n + 1, n)


#: whether the installed NumPy's ``eig`` gives real results for a real matrix whose eigenvalues
#: are all real (NumPy up to 2.4 does; from 2.5 its results are always complex)
NUMPY_EIG_REAL_WHEN_REAL = np.linalg.eigvals(np.eye(1)).dtype.kind == "f"


def _numpy_dtype_parts(packed, a):
    """The eigenvalues and eigenvectors of the packed value, in the installed NumPy's dtype:
    real when the input is real, every eigenvalue is, and that NumPy makes them real (eager
    values only: a graph's dtype is fixed when it is built, so graphs keep them complex)."""
    w, v = packed[..., 0, :], packed[..., 1:, :]
    if NUMPY_EIG_REAL_WHEN_REAL and is_tensor(packed) and np.dtype(a.dtype).kind != "c" \
            and not np.any(w._ndarray.imag):
        return F.real(w), F.real(v)
    return w, v


def eig(a):
    """Eigenvalues and unit-norm eigenvectors of a (batch of) square matrices, NumPy's
    ``np.linalg.eig``: ``EigResult(eigenvalues, eigenvectors)``, complex (for a real matrix
    with real eigenvalues real where the installed NumPy makes them so, up to NumPy 2.4;
    always complex in graphs).  Differentiable in HIPS
    autograd's convention for complex values: the eigenvectors' phases are LAPACK's choice, so
    only functions that do not depend on them (of the eigenvalues, of ``|v|``, of projectors)
    have a gradient that means something.  Equal eigenvalues (to ``n * eps * max|w|``) add
    nothing to the eigenvector part of the gradient; a defective matrix raises
    ``LinAlgError`` when its gradient is asked for.

        >>> w, v = fg.linalg.eig(fg.tensor([[0.0, 1.0], [-2.0, -3.0]], requires_grad=True))
    """
    if _plain(a):
        return np.linalg.eig(a)
    a = _operand(a, "eig")
    return EigResult(*_numpy_dtype_parts(apply(eig.op, (a,), None), a))


# the op's value packs the eigenvalues (row 0) and the eigenvectors (rows 1...) in one array
eig = defop("eig", _eig_forward, _eig_vjp, shape=_eig_shape, function=eig, blas="lapack",
            complex_vjps=True, exports=LINALG)


def eigvals(a):
    """The eigenvalues of a (batch of) square matrices, NumPy's ``np.linalg.eigvals`` (complex
    unless the installed NumPy's are real; always complex in graphs), differentiable as
    :func:`eig`'s.

        >>> fg.linalg.eigvals(fg.tensor([[0.0, 1.0], [-2.0, -3.0]])).real
        tensor([-1., -2.])
    """
    if _plain(a):
        return np.linalg.eigvals(a)
    a = _operand(a, "eigvals")
    return _numpy_dtype_parts(apply(eig.op, (a,), None), a)[0]


eigvals = defun(eigvals, exports=LINALG)


# ---- svd, svdvals ---------------------------------------------------------------------------
class SVDResult(NamedTuple):
    """What ``svd`` returns, NumPy's ``SVDResult``: ``U``, the singular values ``S``
    (descending) and ``Vh``."""
    U: Any
    S: Any
    Vh: Any


def _svd_dims(m, n, full_matrices):
    """(k, U's columns, Vh's rows, packed rows, packed columns)."""
    k = min(m, n)
    p, q = (m, n) if full_matrices else (k, k)
    return k, p, q, m + 1 + q, max(p, n)


def _svd_forward(a, full_matrices, hermitian):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices, hermitian=hermitian)
    m, n = u.shape[-2], vh.shape[-1]
    k, p, q, rows, cols = _svd_dims(m, n, full_matrices)
    out = np.zeros(u.shape[:-2] + (rows, cols), dtype=u.dtype)
    out[..., :m, :p] = u
    out[..., m, :k] = s
    out[..., m + 1:, :n] = vh
    return out


def _svd_shape(shapes, full_matrices, hermitian):
    s = _matrix_rule("svd")(shapes)
    m, n = s[-2:]
    if m is None or n is None:
        return s[:-2] + (None, None)
    return s[:-2] + _svd_dims(m, n, full_matrices)[3:]


def _svd_parts(packed, m, n):
    """``(U, S, Vh)`` narrowed to ``k = min(m, n)`` singular triplets."""
    k = min(m, n)
    return packed[..., :m, :k], packed[..., m, :k], packed[..., m + 1:m + 1 + k, :n]


def _svd_backward(u, s, vh, gu, gs, gvh, m, n):
    """The reduced SVD's VJP (``u`` m x k, ``vh`` k x n): Townsend's formula with equal singular
    values' pairs and ``1/s`` of zero singular values taken as 0.  Complex matrices: HIPS
    autograd's form (``conj(U) (...) conj(Vh)``, the conjugate of PyTorch's), with the terms
    of the imaginary diagonals of ``U^T gU`` and ``V^T gV``; the singular vectors' phases are
    LAPACK's choice, so only functions that do not depend on them (of ``U diag(f(S)) Vh``, of
    ``S``) have a gradient that means something."""
    k = min(m, n)
    big = max(m, n)
    cu, cvh = _cj(u), _cj(vh)
    j = F.matmul(_mT(u), gu)                                  # U^T gU
    kk = F.matmul(vh, _mT(gvh))                                # V^T gV (real values)
    kc = _cj(kk)                                               # V^T gV, V = Vh^H, gV = gVh^H
    x, y = j - _cj(_mT(j)), kc - _cj(_mT(kc))
    # (X_ij s_j + s_i Y_ij) / (s_j^2 - s_i^2), split so that only the 1 / (s_j - s_i) part
    # is dropped for equal singular values: (X + Y) / 2(s_j - s_i) + (X - Y) / 2(s_j + s_i)
    minus = _inverse_gaps(s, big)
    plus = _inverse_gaps(s, big, sums=True)
    inner = ((x + y) * minus + (x - y) * plus) * 0.5 + _diag_embed(gs, j)
    # (complex values: X and Y have imaginary diagonals, and the (X - Y) / 2(s_i + s_i) term
    # on the diagonal is autograd's i Im(U^T gU)_ii / s_i for functions that do not depend on
    # the singular vectors' phases, for which Im(U^T gU)_ii = -Im(V^T gV)_ii)
    ga = F.matmul(cu, F.matmul(inner, cvh))
    sinv = _safe_reciprocal(s, big) if m > k or n > k else None
    if m > k:   # (I - U U^T) gU S^-1 V^T
        ga = ga + F.matmul((gu - F.matmul(cu, j)) * _row(sinv), cvh)
    if n > k:   # U S^-1 gV^T (I - V V^T)
        ga = ga + F.matmul(cu * _row(sinv), gvh - F.matmul(_mT(kk), cvh))
    return ga


def _svd_vjp(g, ans, a, full_matrices, hermitian):
    m, n = _shape(a)[-2:]
    u, s, vh = _svd_parts(ans, m, n)
    gu, gs, gvh = _svd_parts(g, m, n)
    return _svd_backward(u, _real_part(s), vh, gu, _real_part(gs), gvh, m, n)


def _svdvals_vjp(g, ans, a, hermitian):
    m, n = _shape(a)[-2:]
    packed = apply(_svd.op, (a,), {"full_matrices": False, "hermitian": hermitian})
    u, _, vh = _svd_parts(packed, m, n)
    return F.matmul(_cj(u) * _row(g), _cj(vh))


def _svdvals_shape(shapes, hermitian):
    s = _matrix_rule("svdvals")(shapes)
    m, n = s[-2:]
    return s[:-2] + (None if m is None or n is None else min(m, n),)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition, NumPy's ``np.linalg.svd``: ``SVDResult(U, S, Vh)`` or, with
    ``compute_uv=False``, ``S`` alone; batched.  With ``full_matrices=True`` the gradient
    ignores the columns of ``U`` and rows of ``Vh`` past ``min(m, n)`` (any orthonormal
    completion is valid: PyTorch's choice); equal singular values (and ``1/s`` of zero ones)
    add nothing, so gradients of functions that do not depend on the choice of singular
    vectors within a repeated singular value are finite and exact.  Complex matrices: real
    ``S``, as in NumPy, and HIPS autograd's convention; the singular vectors' phases are
    LAPACK's choice, so only functions that do not depend on them (of ``S``, of
    ``U f(S) Vh``) have a gradient that means something.

        >>> fg.linalg.svd(fg.tensor([[3.0, 0.0], [0.0, 2.0]]), compute_uv=False)
        tensor([3., 2.])
    """
    if _plain(a):
        return np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                             hermitian=hermitian)
    a = _operand(a, "svd")
    hermitian = bool(hermitian)
    if not compute_uv:
        return apply(_svdvals.op, (a,), {"hermitian": hermitian})
    m, n = (_known(d, "svd") for d in _shape(a)[-2:])
    full_matrices = bool(full_matrices)
    packed = apply(svd.op, (a,), {"full_matrices": full_matrices, "hermitian": hermitian})
    k, p, q, _, _ = _svd_dims(m, n, full_matrices)
    return SVDResult(packed[..., :m, :p], _real_part(packed[..., m, :k]),
                     packed[..., m + 1:, :n])


# the op's value packs U, S and Vh in one array (rows: U, then S, then Vh)
svd = defop("svd", _svd_forward, _svd_vjp, shape=_svd_shape, function=svd, blas="lapack",
            exports=LINALG, complex_vjps=True)
_svd = svd


def svdvals(x, /, hermitian=False):
    """The singular values (descending) of a (batch of) matrices, NumPy's
    ``np.linalg.svdvals`` (``svd(x, compute_uv=False)``); gradient ``U diag(g) Vh``.

        >>> fg.linalg.svdvals(fg.tensor([[0.0, 2.0], [1.0, 0.0]]))
        tensor([2., 1.])
    """
    if _plain(x):
        return np.linalg.svd(x, compute_uv=False, hermitian=hermitian)
    return apply(svdvals.op, (_operand(x, "svdvals"),), {"hermitian": bool(hermitian)})


svdvals = defop("svdvals", lambda a, hermitian: np.linalg.svd(a, compute_uv=False,
                                                               hermitian=hermitian),
                _svdvals_vjp, shape=_svdvals_shape, function=svdvals, blas="lapack",
                exports=LINALG, complex_vjps=True)
_svdvals = svdvals


# ---- qr -------------------------------------------------------------------------------------
class QRResult(NamedTuple):
    """What ``qr`` returns, NumPy's ``QRResult``: ``Q`` (orthonormal columns) and upper
    triangular ``R``."""
    Q: Any
    R: Any


def _qr_dims(m, n, mode):
    k = min(m, n)
    qc, rr = (m, m) if mode == "complete" else (k, k)
    return qc, rr, m + rr, max(qc, n)


def _qr_forward(a, mode):
    q, r = np.linalg.qr(a, mode)
    m, n = q.shape[-2], r.shape[-1]
    qc, rr, rows, cols = _qr_dims(m, n, mode)
    out = np.zeros(q.shape[:-2] + (rows, cols), dtype=q.dtype)
    out[..., :m, :qc] = q
    out[..., m:, :n] = r
    return out


def _qr_shape(shapes, mode):
    s = _matrix_rule("qr")(shapes)
    m, n = s[-2:]
    if m is None or n is None:
        return s[:-2] + (None, None)
    return s[:-2] + _qr_dims(m, n, mode)[2:]


def _qr_backward_tall(q, r, gq, gr):
    """A = QR with ``m >= n`` (Q m x n, R n x n): gA = (gQ + Q copyltu(M)) R^-T,
    M = R gR^T - gQ^T Q, copyltu(M) the symmetric matrix with M's lower triangle.  Complex
    matrices (R's diagonal real, as LAPACK's): M conjugated, conj(Q) in front, and copyltu
    Hermitian with the real part of M's diagonal (the conjugate of PyTorch's rule)."""
    cq = _cj(q)
    mm = _cj(F.matmul(r, _mT(gr)) - F.matmul(_mT(gq), q))
    low = F.tril(mm, -1)
    sym = low + _cj(_mT(low)) + _diag_embed(_real_part(F.diagonal(mm, 0, -2, -1)), mm)
    b = gq + F.matmul(cq, sym)
    # B R^-T = (R^-1 B^T)^T
    return _mT(F.solve_triangular(r, _mT(b), lower=False))


def _qr_vjp(g, ans, a, mode):
    m, n = _shape(a)[-2:]
    k = min(m, n)
    if mode == "complete" and m > n:
        raise NotImplementedError(
            "qr: the gradient of mode='complete' with more rows than columns is not defined "
            "(the last m - n columns of Q are an arbitrary basis); use mode='reduced'")
    q, r = ans[..., :m, :k], ans[..., m:m + k, :n]
    gq, gr = g[..., :m, :k], g[..., m:m + k, :n]
    if m >= n:
        return _qr_backward_tall(q, r, gq, gr)
    # wide: A = [X | Y] with X = Q R1 (square) and Y = Q R2
    r1, r2 = r[..., :, :m], r[..., :, m:]
    gr1, gr2 = gr[..., :, :m], gr[..., :, m:]
    y = a[..., :, m:]
    gx = _qr_backward_tall(q, r1, gq + _cj(F.matmul(y, _mT(gr2))), gr1)
    return F.concatenate([gx, F.matmul(_cj(q), gr2)], axis=-1)


def qr(a, mode="reduced"):
    """QR decomposition, NumPy's ``np.linalg.qr``: ``QRResult(Q, R)`` for ``mode='reduced'`` and
    ``'complete'``, ``R`` alone for ``'r'``, NumPy's ``(h, tau)`` for ``'raw'`` (plain arrays
    only: not differentiable).  The gradient needs ``R``'s diagonal non-zero (full rank);
    ``'complete'`` with more rows than columns has none (the extra columns of ``Q`` are
    arbitrary), as in PyTorch.  Complex matrices: LAPACK's ``R`` has a real diagonal, and the
    gradient is in HIPS autograd's convention.

        >>> q, r = fg.linalg.qr(fg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    """
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"qr: unrecognized mode {mode!r}")
    if _plain(a):
        return np.linalg.qr(a, mode)
    if mode == "raw":
        raise NotImplementedError("qr: mode='raw' (Householder reflectors) is not "
                                  "differentiable; use mode='reduced', or call NumPy's qr on "
                                  "the array's values")
    a = _operand(a, "qr")
    m, n = (_known(d, "qr") for d in _shape(a)[-2:])
    k = min(m, n)
    packed = apply(qr.op, (a,), {"mode": "complete" if mode == "complete" else "reduced"})
    qc, rr, _, _ = _qr_dims(m, n, mode)
    r = packed[..., m:, :n]
    if mode == "r":
        return r
    return QRResult(packed[..., :m, :qc], r)


# the op's value packs Q and R in one array (rows: Q, then R)
qr = defop("qr", _qr_forward, _qr_vjp, shape=_qr_shape, function=qr, blas="lapack",
           exports=LINALG, complex_vjps=True)


# ---- pinv -----------------------------------------------------------------------------------
_NOVALUE = np._NoValue


def _pinv_vjp(g, ans, a, rcond, hermitian):
    # d(A+) = -A+ dA A+ + A+ A+^H dA^H (I - A A+) + (I - A+ A) dA^H A+^H A+  (at constant rank).
    # Complex values: the transposes are conjugate transposes in the conjugate convention
    # (PyTorch's); autograd's VJP is its conjugate, taken at conj(g)
    cx = _is_complex(ans) or _is_complex(g)
    if cx:
        g = F.conj(g)
    p, pt = ans, _cj(_mT(ans))
    gt = _cj(_mT(g))
    t1 = -F.matmul(pt, F.matmul(g, pt))
    c = F.matmul(F.matmul(gt, p), pt)                              # G^H A+ A+^H  (m x n)
    t2 = c - F.matmul(a, F.matmul(p, c))                           # (I - A A+) G^H A+ A+^H
    d = F.matmul(gt, F.matmul(p, a))                               # G^H A+ A   (m x n)
    t3 = F.matmul(pt, F.matmul(p, gt - d))                         # A+^H A+ G^H (I - A+ A)
    out = t1 + t2 + t3
    return F.conj(out) if cx else out


def _pinv_shape(shapes, rcond, hermitian):
    s = _matrix_rule("pinv")(shapes)
    return s[:-2] + (s[-1], s[-2])


def _pinv_rcond(a, rcond, rtol):
    if rcond is None:
        if rtol is _NOVALUE:
            return 1e-15
        if rtol is None:
            m, n = (_known(d, "pinv") for d in _shape(a)[-2:])
            return max(m, n) * np.finfo(np.result_type(a.dtype, np.float32)).eps
        return rtol
    if rtol is not _NOVALUE:
        raise ValueError("pinv: `rtol` and `rcond` can't be both set.")
    return rcond


def pinv(a, rcond=None, hermitian=False, *, rtol=_NOVALUE):
    """The Moore-Penrose pseudo-inverse, NumPy's ``np.linalg.pinv`` (same cutoffs); batched.
    The gradient is that of the pseudo-inverse at constant rank (Golub and Pereyra), the rank
    given by the cutoff.

        >>> fg.linalg.pinv(fg.tensor([[1.0, 2.0], [2.0, 4.0]]))  # doctest: +SKIP
    """
    if _plain(a):
        return np.linalg.pinv(a, rcond, hermitian, rtol=rtol)
    a = _operand(a, "pinv")
    rc = _pinv_rcond(a, rcond, rtol)
    rc = float(rc) if np.ndim(rc) == 0 else np.array(rc)
    if isinstance(rc, np.ndarray):
        rc.flags.writeable = False
    return apply(pinv.op, (a,), {"rcond": rc, "hermitian": bool(hermitian)})


pinv = defop("pinv", lambda a, rcond, hermitian: np.linalg.pinv(a, rcond, hermitian),
             _pinv_vjp, shape=_pinv_shape, function=pinv, blas="lapack", exports=LINALG,
             complex_vjps=True)
_pinv = pinv


# ---- lstsq ----------------------------------------------------------------------------------
def _lstsq_forward(a, b, rcond):
    x, res, rank, s = np.linalg.lstsq(a, b, rcond)
    return np.concatenate([x.ravel(), s.astype(x.dtype), np.array([rank], dtype=x.dtype),
                           res.astype(x.dtype)])


def _lstsq_layout(a, b):
    m, n = _shape(a)[-2:]
    k = 1 if len(_shape(b)) == 1 else _shape(b)[-1]
    nk = n * k
    return m, n, k, nk, nk + min(m, n)


def _residual_cotangent(g, start, k):
    """The cotangent of the residuals: ``g[start:start + k]``, or zeros when NumPy returned no
    residuals (rank < n or m <= n: then ``g`` ends at ``start``)."""
    padded = F.concatenate([g, np.zeros(k, dtype=g.dtype)], axis=0)
    return padded[start:start + k]


def _lstsq_grads(g, ans, a, b, rcond):
    m, n, k, nk, ns = _lstsq_layout(a, b)
    vec = len(_shape(b)) == 1
    x = ans[:nk] if vec else F.reshape(ans[:nk], (n, k))
    gx = g[:nk] if vec else F.reshape(g[:nk], (n, k))
    gs = _real_part(g[nk:ns])
    gres = _real_part(_residual_cotangent(g, ns + 1, k))
    cut = np.finfo(np.result_type(ans.dtype, np.float32)).eps * max(m, n) \
        if rcond is None else rcond
    p = apply(_pinv.op, (a,), {"rcond": float(cut), "hermitian": False})
    # x = A+ b at constant rank; residuals |b - A x|^2 (at the minimum: d/dx = 0)
    gx2 = _col(gx) if vec else gx
    bb = _col(b) if vec else b
    r = bb - F.matmul(a, _col(x) if vec else x)
    wres = _row(gres) * _cj(r) * 2.0                        # d res_j / d r_j = 2 conj(r_j)
    gb = F.matmul(_mT(p), gx2) + wres
    ga = _pinv_vjp(F.matmul(gx2, _mT(bb)), p, a, cut, False) \
        - F.matmul(wres, _mT(_col(x) if vec else x)) \
        + _svdvals_vjp(gs, None, a, False)
    return ga, (F.squeeze(gb, -1) if vec else gb)


def _lstsq_shape(shapes, rcond):
    a, b = (tuple(s) for s in shapes)
    if len(a) != 2 or len(b) not in (1, 2):
        raise ValueError(f"lstsq: a must be 2-D and b 1- or 2-D, got shapes {a} and {b}")
    if a[0] is not None and b[0] is not None and a[0] != b[0]:
        raise ValueError(f"lstsq: incompatible dimensions (shapes {a} and {b})")
    return (None,)


def lstsq(a, b, rcond=None):
    """Least-squares solution of ``a @ x = b``, NumPy's ``np.linalg.lstsq``:
    ``(x, residuals, rank, s)``, ``a`` 2-D.  ``x``, ``residuals`` and ``s`` are differentiable
    (``x`` as ``pinv(a) @ b`` at constant rank, the rank given by ``rcond``); ``rank`` is an
    integer.

        >>> x, res, rank, s = fg.linalg.lstsq(fg.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]),
        ...                                   fg.tensor([1.0, 2.0, 2.0]))
    """
    if _plain(a, b):
        return np.linalg.lstsq(a, b, rcond)
    a = F.shape._as_operand(a)
    b = F.shape._as_operand(b)
    if len(_shape(a)) != 2:
        raise np.linalg.LinAlgError(f"lstsq: {len(_shape(a))}-dimensional array given. Array "
                                    f"must be two-dimensional")
    m, n = (_known(d, "lstsq") for d in _shape(a))
    k = 1 if len(_shape(b)) == 1 else _known(_shape(b)[-1], "lstsq", "b's columns")
    rc = None if rcond is None else float(rcond)
    packed = apply(lstsq.op, (a, b), {"rcond": rc})
    _, _, _, nk, ns = _lstsq_layout(a, b)
    x = packed[:nk] if len(_shape(b)) == 1 else F.reshape(packed[:nk], (n, k))
    rank = F.astype(_real_part(packed[ns]), np.int32)
    # complex a or b: NumPy's residuals and singular values are real
    return x, _real_part(packed[ns + 1:]), rank, _real_part(packed[nk:ns])


# the op's value packs the solution, the singular values, the rank and the residuals in one
# vector
lstsq = defop("lstsq", _lstsq_forward,
              lambda g, ans, a, b, rcond: _lstsq_grads(g, ans, a, b, rcond)[0],
              lambda g, ans, a, b, rcond: _lstsq_grads(g, ans, a, b, rcond)[1],
              shape=_lstsq_shape, function=lstsq, blas="lapack", exports=LINALG,
              complex_vjps=True)


# ---- matrix_power ---------------------------------------------------------------------------
def _identity_like_forward(a):
    a = np.asarray(a)
    out = np.empty_like(a)
    out[...] = np.eye(a.shape[-2], dtype=a.dtype)
    return out


_identity_like = defop("linalg_identity_like", _identity_like_forward, F.ZERO,
                       shape=_square_rule("matrix_power"), complex_vjps=True,
                       doc="Identity matrices shaped like ``a`` (a constant: zero gradient).")


def matrix_power(a, n):
    """``a`` to the integer power ``n`` (batched), NumPy's ``np.linalg.matrix_power``: the same
    products in the same order (binary decomposition), ``inv`` first for negative ``n``, the
    identity (zero gradient) for 0.

        >>> fg.linalg.matrix_power(fg.tensor([[1.0, 1.0], [0.0, 1.0]]), 3)
        tensor([[1., 3.],
                [0., 1.]])
    """
    if _plain(a):
        return np.linalg.matrix_power(a, n)
    a = _operand(a, "matrix_power")
    _square_rule("matrix_power")([_shape(a)])
    n = _shapes.as_int(n, "matrix_power", "exponent")
    if n == 0:
        return apply(_identity_like.op, (a,), None)
    if n < 0:
        a = F.inv(a)
        n = abs(n)
    if n == 1:
        return F.copy(a)
    if n == 2:
        return F.matmul(a, a)
    if n == 3:
        return F.matmul(F.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else F.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else F.matmul(result, z)
    return result


matrix_power = defun(matrix_power, exports=LINALG)


# ---- cond -----------------------------------------------------------------------------------
def _cond_vjp(g, ans, x, p):
    nd = _ndim(x)
    gk = F.expand_dims(g, (-1, -2))
    if p in (None, 2, -2):
        m, n = _shape(x)[-2:]
        packed = apply(_svd.op, (x,), {"full_matrices": False, "hermitian": False})
        u, s, vh = _svd_parts(packed, m, n)
        s = _real_part(s)
        hi, lo = s[..., 0], s[..., -1]
        # d s_i = Re(u_i^H dA v_i): the gradient conj(u_i vh_i)
        uv_hi = _cj(F.matmul(_col(u[..., :, 0]), _row(vh[..., 0, :])))
        uv_lo = _cj(F.matmul(_col(u[..., :, -1]), _row(vh[..., -1, :])))
        hi, lo = F.expand_dims(hi, (-1, -2)), F.expand_dims(lo, (-1, -2))
        if p == -2:   # lo / hi
            return gk * (uv_lo / hi - uv_hi * lo / (hi * hi))
        return gk * (uv_hi / lo - uv_lo * hi / (lo * lo))
    # norm(x, p) * norm(inv(x), p)
    axis = (nd - 2, nd - 1)
    xi = F.inv(x)
    attrs = {"ord": p, "axis": axis, "keepdims": False}
    n1 = F.norm(x, p, axis=axis)
    n2 = F.norm(xi, p, axis=axis)
    norm_vjp = F.norm.op.vjps[0]
    d1 = norm_vjp(g * n2, n1, x, **attrs)
    d2 = norm_vjp(g * n1, n2, xi, **attrs)
    return d1 + F.inv.op.vjps[0](d2, xi, x)


def _cond_shape(shapes, p):
    s = _matrix_rule("cond")(shapes)
    if p not in (None, 2, -2):
        _square_rule("cond")(shapes)
    return s[:-2]


def cond(x, p=None):
    """The condition number, NumPy's ``np.linalg.cond`` (its own function: the same values,
    ``inf`` for singular matrices); batched.  Gradient through the extreme singular values
    (``p`` None, 2, -2) or ``norm(x, p) * norm(inv(x), p)``.

        >>> fg.linalg.cond(fg.tensor([[2.0, 0.0], [0.0, 1.0]]))
        tensor(2.)
    """
    if _plain(x):
        return np.linalg.cond(x, p)
    x = _operand(x, "cond")
    p = F.linalg._norm_ord(p)
    if p not in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
        raise ValueError(f"cond: invalid norm order {p!r}")
    return apply(cond.op, (x,), {"p": p})


cond = defop("cond", lambda x, p: np.linalg.cond(x, p), _cond_vjp, shape=_cond_shape,
             function=cond, blas="lapack", exports=LINALG, complex_vjps=True)


# ---- multi_dot ------------------------------------------------------------------------------
def _chain_order(dims):
    """NumPy's matrix-chain order: ``s[i][j]`` splits ``A_i..A_j`` (cost ties keep the first
    split)."""
    n = len(dims) - 1
    m = np.zeros((n, n), dtype=np.float64)
    s = np.empty((n, n), dtype=np.intp)
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            m[i, j] = np.inf
            for k in range(i, j):
                q = m[i, k] + m[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1]
                if q < m[i, j]:
                    m[i, j] = q
                    s[i, j] = k
    return s


def _chain(arrays, s, i, j):
    if i == j:
        return arrays[i]
    return F.dot(_chain(arrays, s, i, s[i, j]), _chain(arrays, s, s[i, j] + 1, j))


def multi_dot(arrays, *, out=None):
    """The product of two or more matrices in the cheapest order, NumPy's
    ``np.linalg.multi_dot`` (its order, the same products); the first and last may be vectors.

        >>> fg.linalg.multi_dot([fg.ones((2, 3)), fg.ones((3, 4)), fg.ones(4)])
        tensor([12., 12.])
    """
    arrays = list(arrays)
    if _plain(*arrays):
        return np.linalg.multi_dot(arrays, out=out)
    if out is not None:
        raise TypeError("multi_dot: out= is not supported for Tensors or Nodes")
    n = len(arrays)
    if n < 2:
        raise ValueError("multi_dot: Expecting at least two arrays.")
    arrays = [F.shape._as_operand(a) for a in arrays]
    if n == 2:
        return F.dot(arrays[0], arrays[1])
    ndim_first, ndim_last = _ndim(arrays[0]), _ndim(arrays[-1])
    if ndim_first == 1:
        arrays[0] = F.atleast_2d(arrays[0])
    if ndim_last == 1:
        arrays[-1] = F.transpose(F.atleast_2d(arrays[-1]))
    for a in arrays:
        if _ndim(a) != 2:
            raise np.linalg.LinAlgError(f"multi_dot: {_ndim(a)}-dimensional array given. Array "
                                        f"must be two-dimensional")
    if n == 3:
        a, b, c = arrays
        a0, a1 = (_known(d, "multi_dot") for d in _shape(a))
        b1, c1 = (_known(d, "multi_dot") for d in _shape(c))
        cost1 = a0 * b1 * (a1 + c1)
        cost2 = a1 * c1 * (a0 + b1)
        result = F.dot(F.dot(a, b), c) if cost1 < cost2 else F.dot(a, F.dot(b, c))
    else:
        dims = [_known(_shape(a)[0], "multi_dot") for a in arrays] + \
            [_known(_shape(arrays[-1])[1], "multi_dot")]
        result = _chain(arrays, _chain_order(dims), 0, n - 1)
    if ndim_first == 1 and ndim_last == 1:
        return result[0, 0]
    if ndim_first == 1 or ndim_last == 1:
        return F.ravel(result)
    return result


multi_dot = defun(multi_dot, exports=LINALG)


# ---- the spectral matrix norms' gradient (norm is declared in linalg.py) ----------------------
def _spectral_norm_vjp(gk, x, ord, row, col):
    """``norm``'s VJP for ord=2, -2 and 'nuc' over the axes ``(row, col)``: ``gk`` has the
    reduced axes kept.  Ties between extreme singular values split the gradient evenly; 'nuc'
    takes the singular vectors of the non-zero singular values."""
    y = F.moveaxis(x, (row, col), (-2, -1))
    m, n = (_known(d, "norm") for d in _shape(y)[-2:])
    packed = apply(_svd.op, (y,), {"full_matrices": False, "hermitian": False})
    u, s, vh = _svd_parts(packed, m, n)
    big = max(m, n)
    if ord == "nuc":
        s = _real_part(s)
        w = F.astype(F.logical_not(apply(_small.op, (s,), {"scale_dim": big})), s.dtype)
    else:
        s = _real_part(s)
        ext = s[..., :1] if ord == 2 else s[..., -1:]
        top = s[..., :1]
        eps = np.finfo(np.result_type(s.dtype, np.float32)).eps
        hit = F.astype(F.less_equal(F.abs(s - ext), top * (big * eps)), s.dtype)
        w = hit / F.sum(hit, axis=-1, keepdims=True)
    if len(_shape(gk)) == len(_shape(x)):
        gk = F.moveaxis(gk, (row, col), (-2, -1))
    gy = F.matmul(_cj(u) * _row(w), _cj(vh)) * gk
    return F.moveaxis(gy, (-2, -1), (row, col))
