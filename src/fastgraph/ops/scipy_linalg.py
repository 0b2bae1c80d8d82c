"""``fastgraph.scipy.linalg``: SciPy's ``scipy.linalg`` with gradients, SciPy's argument names
and semantics: ``cholesky cho_factor cho_solve solve_triangular lu_factor lu_solve sqrtm expm
solve_sylvester solve_banded block_diag det inv``.

Each forward is SciPy's own function (batched over leading axes, as SciPy 1.15+ batches, with
SciPy's rule for right-hand sides: 1-D is a vector, otherwise a (batch of) matrices); each VJP
is written with fastgraph ops, so gradients of any order work.  ``overwrite_a``/``overwrite_b``
are accepted and never overwrite anything (SciPy does not promise to either).  The triangular
and banded solvers read only the part of their matrix that SciPy reads, and the gradient is
zero on the rest; ``cholesky``/``cho_factor`` give the symmetric gradient (as
``numpy.linalg.cholesky``; Hermitian for complex matrices).  Complex matrices are
differentiable in HIPS autograd's convention.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as _sla

from .._core import apply, defop, holds_graph_value
from .._core import shapes as _shapes
from . import _linalg_numeric as _N
from .linalg_decomp import _cholesky_complex_vjp, _cj, _is_complex, _mT, _shape

from .. import ops as F

SCIPY = "scipy.linalg"


def _ndim(x) -> int:
    return F.shape._known_ndim(x, "scipy.linalg")


def _col(v):
    return F.expand_dims(v, -1)


def _row(v):
    return F.expand_dims(v, -2)


def _as_matrix_rhs(b):
    """A vector right-hand side as a one-column matrix: ``(b2, was_vector)``."""
    return (_col(b), True) if len(_shape(b)) == 1 else (b, False)


def _square(name, s):
    s = tuple(s)
    if len(s) < 2 or (s[-1] is not None and s[-2] is not None and s[-1] != s[-2]):
        raise ValueError(f"{name}: expected square matrix, got shape {s}")
    return s


def _solve_shape(name):
    """``a`` (..., n, n) and ``b`` (n,) or (..., n, k): the solution's shape."""
    def rule(shapes, **_):
        a, b = tuple(shapes[0]), tuple(shapes[-1])
        _square(name, a)
        n = a[-1] if a[-1] is not None else a[-2]
        if len(b) == 0:
            raise ValueError(f"{name}: b must be at least 1-D, got shape {b}")
        bn = b[0] if len(b) == 1 else b[-2]
        if n is not None and bn is not None and n != bn:
            raise ValueError(f"{name}: shapes of a {a} and b {b} are incompatible")
        if len(b) == 1:
            return a[:-2] + (n if n is not None else bn,)
        batch = _shapes.broadcast(name, a[:-2], b[:-2])
        return batch + (n if n is not None else bn, b[-1])
    return rule


def _rhs_ndim(b) -> int:
    return _N.core_ndim_rhs(b)


# ---- solve_triangular -------------------------------------------------------------------------
_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}


def _trans_code(trans, name="solve_triangular"):
    try:
        return _TRANS[trans]
    except (KeyError, TypeError):
        raise ValueError(f"{name}: invalid trans argument {trans!r} (0, 1, 2 or 'N', 'T', "
                         f"'C')") from None


def _st_forward(a, b, trans, lower, unit_diagonal, check_finite):
    def one(a2, b2):
        return _sla.solve_triangular(a2, b2, trans=trans, lower=lower,
                                     unit_diagonal=unit_diagonal, check_finite=check_finite)
    return _N.over_batch(one, [a, b], [2, _rhs_ndim(b)])


def _st_rhs_grad(g, a, trans, lower, unit_diagonal):
    # op(a)^-T g; for 'C' (op(a) = a^H) that is conj(a^-1 conj(g)), a^-1 g for real matrices
    if trans == 2:
        return _cj(F.solve_triangular(a, _cj(g), trans=0, lower=lower,
                                      unit_diagonal=unit_diagonal, check_finite=False))
    return F.solve_triangular(a, g, trans=0 if trans else 1, lower=lower,
                              unit_diagonal=unit_diagonal, check_finite=False)


def _triangle_of(x, lower, unit_diagonal):
    if lower:
        return F.tril(x, -1 if unit_diagonal else 0)
    return F.triu(x, 1 if unit_diagonal else 0)


def _st_vjp_a(g, ans, a, b, trans, lower, unit_diagonal, check_finite):
    gb = _st_rhs_grad(g, a, trans, lower, unit_diagonal)
    gb2, _ = _as_matrix_rhs(gb) if len(_shape(b)) == 1 else (gb, False)
    x2 = _col(ans) if len(_shape(b)) == 1 else ans
    # op(a) x = b:  d/d op(a) = -gb x^T (negated on the smaller factor, not the product)
    gb2 = -gb2
    ga = F.matmul(gb2, _mT(x2)) if trans == 0 else F.matmul(x2, _mT(gb2))
    if trans == 2:      # a enters conjugated: a^H x = b
        ga = _cj(ga)
    return _triangle_of(ga, lower, unit_diagonal)


def _st_vjp_b(g, ans, a, b, trans, lower, unit_diagonal, check_finite):
    return _st_rhs_grad(g, a, trans, lower, unit_diagonal)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """Solve ``op(a) x = b`` for a triangular ``a`` (only its ``lower``/upper triangle is read,
    its diagonal taken as ones with ``unit_diagonal``), SciPy's
    ``scipy.linalg.solve_triangular``: ``trans`` 0/'N' (``a``), 1/'T' (``a.T``), 2/'C'
    (``a^H``); LAPACK's ``trtrs``.  Differentiable in ``a`` (on the triangle read) and ``b``.

        >>> L = fg.tensor([[2.0, 0.0], [1.0, 1.0]], requires_grad=True)
        >>> spla.solve_triangular(L, fg.tensor([2.0, 3.0]), lower=True)
        tensor([1., 2.])
    """
    attrs = {"trans": _trans_code(trans), "lower": bool(lower),
             "unit_diagonal": bool(unit_diagonal), "check_finite": bool(check_finite)}
    if holds_graph_value((a, b)):
        a, b = F.shape._as_operand(a), F.shape._as_operand(b)
    return apply(solve_triangular.op, (a, b), attrs)


solve_triangular = defop("solve_triangular", _st_forward, _st_vjp_a, _st_vjp_b,
                         shape=_solve_shape("solve_triangular"), function=solve_triangular,
                         blas="lapack", exports=(SCIPY,), complex_vjps=True)


# ---- cholesky, cho_factor, cho_solve ------------------------------------------------------------
def _chol_vjp(g, ans, a, lower, check_finite):
    if _is_complex(ans):
        # the Hermitian gradient, numpy.linalg.cholesky's (upper: U = L^H, its cotangent g^H)
        return _cholesky_complex_vjp(ans, g) if lower else \
            _cholesky_complex_vjp(F.conj(_mT(ans)), F.conj(_mT(g)))
    if lower:
        return F.cholesky_grad(ans, g)
    return F.cholesky_grad(_mT(ans), _mT(g))


def _chol_forward(a, lower, check_finite):
    return _N.over_batch(lambda a2: _sla.cholesky(a2, lower=lower, check_finite=check_finite),
                         [a], [2])


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of a (batch of) symmetric positive-definite matrices, SciPy's
    ``scipy.linalg.cholesky``: upper ``U`` (``a = U^T U``) unless ``lower=True``; the other
    triangle is zero.  The gradient is the symmetric one.

        >>> spla.cholesky(fg.tensor([[4.0, 2.0], [2.0, 3.0]]), lower=True)  # doctest: +SKIP
    """
    if holds_graph_value((a,)):
        a = F.shape._as_operand(a)
    return apply(cholesky.op, (a,), {"lower": bool(lower), "check_finite": bool(check_finite)})


cholesky = defop("scipy_cholesky", _chol_forward, _chol_vjp, function=cholesky,
                 shape=lambda shapes, **_: _square("cholesky", shapes[0]), blas="lapack",
                 exports=((SCIPY, "cholesky"),), complex_vjps=True)


def _cho_factor_forward(a, lower, check_finite):
    return _N.over_batch(
        lambda a2: _sla.cho_factor(a2, lower=lower, check_finite=check_finite)[0], [a], [2])


def _cho_factor_keeps_other_triangle() -> bool:
    """Whether the installed SciPy's ``cho_factor`` leaves ``a``'s own entries in the triangle
    it does not factor (SciPy before 1.18) or zeros them (from 1.18): the gradient of that
    triangle is ``a``'s copy or nothing, and it must be the one SciPy's value has."""
    c, _ = _sla.cho_factor(np.array([[4.0, 1.0], [1.0, 3.0]]), lower=False)
    return bool(c[1, 0] != 0.0)


CHO_FACTOR_KEEPS_OTHER_TRIANGLE = _cho_factor_keeps_other_triangle()


def _cho_factor_vjp(g, ans, a, lower, check_finite):
    # the factor's triangle: Cholesky's gradient; the other triangle is a's own entries where
    # SciPy copies them there, else zeros (no gradient)
    if lower:
        grad = _chol_vjp(F.tril(g), F.tril(ans), a, True, check_finite)
        return grad + F.triu(g, 1) if CHO_FACTOR_KEEPS_OTHER_TRIANGLE else grad
    grad = _chol_vjp(F.triu(g), F.triu(ans), a, False, check_finite)
    return grad + F.tril(g, -1) if CHO_FACTOR_KEEPS_OTHER_TRIANGLE else grad


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """SciPy's ``scipy.linalg.cho_factor``: ``(c, lower)``, ``c`` holding the Cholesky factor in
    its ``lower``/upper triangle and, in the other, what the installed SciPy leaves there
    (``a``'s own entries before SciPy 1.18, zeros from 1.18), for :func:`cho_solve`.
    Differentiable (the factor's triangle symmetrically, the other as the copy of ``a`` it is,
    where it is one).

        >>> c, low = spla.cho_factor(fg.tensor([[4.0, 2.0], [2.0, 3.0]]))
    """
    if not holds_graph_value((a,)):
        return _sla.cho_factor(a, lower=lower, check_finite=check_finite)
    a = F.shape._as_operand(a)
    c = apply(cho_factor.op, (a,), {"lower": bool(lower), "check_finite": bool(check_finite)})
    return c, bool(lower)


# the op's value is c alone
cho_factor = defop("cho_factor", _cho_factor_forward, _cho_factor_vjp, function=cho_factor,
                   shape=lambda shapes, **_: _square("cho_factor", shapes[0]), blas="lapack",
                   exports=(SCIPY,), complex_vjps=True)


def _cho_solve_forward(c, b, lower, check_finite):
    def one(c2, b2):
        return _sla.cho_solve((c2, lower), b2, check_finite=check_finite)
    return _N.over_batch(one, [c, b], [2, _rhs_ndim(b)])


def _cho_solve_vjp_c(g, ans, c, b, lower, check_finite):
    w, _ = _as_matrix_rhs(_cho_solve_vjp_b(g, ans, c, b, lower, check_finite))
    x, _ = _as_matrix_rhs(ans) if len(_shape(b)) == 1 else (ans, False)
    # x = A^-1 b with A = L L^H:  d/dA = -w x^T, d/dL = -(w x^T + conj(x w^T)) conj(L), as
    # -(w (L^H x)^T + conj(x) (L^T conj(w))^T): products with the vectors first (no n^3 term);
    # for real matrices -(w x^T + x w^T) L
    xc, wc = _cj(x), _cj(w)
    if lower:
        L = F.tril(c)
        Lc = _cj(L)
        return F.tril(-(F.matmul(w, F.matmul(_mT(x), Lc)) + F.matmul(xc, F.matmul(_mT(wc), Lc))))
    U = F.triu(c)            # A = U^H U:  d/dU = -conj(U) (w x^T + conj(x w^T))
    Uc = _cj(U)
    return F.triu(-(F.matmul(F.matmul(Uc, w), _mT(x)) + F.matmul(F.matmul(Uc, xc), _mT(wc))))


def _cho_solve_vjp_b(g, ans, c, b, lower, check_finite):
    # A^-T g = conj(A^-1 conj(g)) (A Hermitian)
    return _cj(_cho_solve(c, _cj(g), lower))


def _cho_solve(c, b, lower, check_finite=False):
    return apply(cho_solve.op, (c, b), {"lower": lower, "check_finite": check_finite})


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` from :func:`cho_factor`'s ``(c, lower)``, SciPy's
    ``scipy.linalg.cho_solve`` (LAPACK ``potrs``); only the factor's triangle of ``c`` is read.
    Differentiable in ``c`` and ``b``.

        >>> c = spla.cho_factor(fg.tensor([[4.0, 2.0], [2.0, 3.0]]))
        >>> spla.cho_solve(c, fg.tensor([1.0, 1.0]))  # doctest: +SKIP
    """
    if not (isinstance(c_and_lower, (tuple, list)) and len(c_and_lower) == 2):
        raise TypeError(f"cho_solve: c_and_lower must be the pair (c, lower) that cho_factor "
                        f"returns, got {type(c_and_lower).__name__}")
    c, lower = c_and_lower
    if not holds_graph_value((c, b)):
        return _sla.cho_solve((c, lower), b, check_finite=check_finite)
    c, b = F.shape._as_operand(c), F.shape._as_operand(b)
    return _cho_solve(c, b, bool(lower), bool(check_finite))


cho_solve = defop("cho_solve", _cho_solve_forward, _cho_solve_vjp_c, _cho_solve_vjp_b,
                  shape=_solve_shape("cho_solve"), function=cho_solve, blas="lapack",
                  exports=(SCIPY,), complex_vjps=True)


# ---- lu_factor, lu_solve ----------------------------------------------------------------------
def _lu_factor_2d(a, check_finite):
    lu, piv = _sla.lu_factor(a, check_finite=check_finite)
    m, n = lu.shape
    out = np.zeros((m + 1, n), dtype=lu.dtype)
    out[:m] = lu
    out[m, :min(m, n)] = piv
    return out


def _perm_of(piv, n):
    """The row order ``perm`` with ``P^T a = a[perm]`` from LAPACK's row swaps ``piv``."""
    piv = np.real(np.asarray(piv)).astype(np.intp)      # packed with complex values
    perm = np.broadcast_to(np.arange(n), piv.shape[:-1] + (n,)).copy()
    rows = np.arange(int(np.prod(piv.shape[:-1], dtype=np.int64)))
    flat = perm.reshape(-1, n)
    pv = piv.reshape(-1, piv.shape[-1])
    for i in range(pv.shape[-1]):
        j = pv[:, i]
        flat[rows, i], flat[rows, j] = flat[rows, j], flat[rows, i].copy()
    return perm


def _permute_rows_forward(x, piv, inverse):
    x = np.asarray(x)
    perm = _perm_of(piv, x.shape[-2])
    if inverse:
        perm = np.argsort(perm, axis=-1)
    perm = np.broadcast_to(perm[..., :, None], np.broadcast_shapes(
        perm.shape[:-1], x.shape[:-2]) + (x.shape[-2], 1))
    xb = np.broadcast_to(x, perm.shape[:-2] + x.shape[-2:])
    return np.take_along_axis(xb, perm, axis=-2)


def _permute_rows(x, piv, inverse=False):
    """``P^T x`` (``inverse``: ``P x``) for the permutation of LAPACK's row swaps ``piv``."""
    return apply(_permute_rows.op, (x, piv), {"inverse": inverse})


_permute_rows = defop("lu_permute_rows", _permute_rows_forward,
                      lambda g, ans, x, piv, inverse: _permute_rows(g, piv, not inverse), None,
                      shape=lambda shapes, **_: _shapes.broadcast(
                          "lu_permute_rows", tuple(shapes[0])[:-2], tuple(shapes[1])[:-1])
                      + tuple(shapes[0])[-2:], function=_permute_rows,
                      doc="Rows of x in the order of LAPACK's row swaps (a permutation).",
                      complex_vjps=True)


def _lu_factor_vjp(g, ans, a, check_finite):
    m, n = _shape(a)[-2:]
    if m != n:
        raise NotImplementedError(f"lu_factor: the gradient is implemented for square "
                                  f"matrices only (got {m} x {n})")
    lu, piv = ans[..., :n, :], ans[..., n, :]
    glu = g[..., :n, :]
    # A = P L U:  gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T
    L = F.tril(lu, -1) + _eye_like(lu)
    U = F.triu(lu)
    phi = F.tril(F.matmul(_mT(L), F.tril(glu, -1)), -1) + F.triu(F.matmul(F.triu(glu), _mT(U)))
    y = F.solve_triangular(lu, phi, trans=1, lower=True, unit_diagonal=True,
                           check_finite=False)                        # L^-T phi
    z = _mT(F.solve_triangular(lu, _mT(y), lower=False, check_finite=False))   # ... U^-T
    return _permute_rows(z, piv, inverse=True)


def _eye_like(x):
    """Identity matrices shaped like ``x`` (a constant)."""
    return F.linalg_identity_like(x)


def _lu_factor_shape(shapes, check_finite):
    s = tuple(shapes[0])
    if len(s) < 2:
        raise ValueError(f"lu_factor: expected a (batch of) matrices, got shape {s}")
    return s[:-2] + (None if s[-2] is None else s[-2] + 1, s[-1])


def lu_factor(a, overwrite_a=False, check_finite=True):
    """SciPy's ``scipy.linalg.lu_factor``: ``(lu, piv)`` (LAPACK ``getrf``: ``L`` unit lower
    below the diagonal, ``U`` on and above it, ``piv`` the row swaps, int32), for
    :func:`lu_solve`.  ``lu`` is differentiable (square matrices); ``piv`` is an integer array.

        >>> lu, piv = spla.lu_factor(fg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    """
    if not holds_graph_value((a,)):
        return _sla.lu_factor(a, check_finite=check_finite)
    a = F.shape._as_operand(a)
    m = _shape(a)[-2]
    if m is None:
        raise ValueError("lu_factor: the number of rows must be known to build it in a graph")
    packed = apply(lu_factor.op, (a,), {"check_finite": bool(check_finite)})
    n = _shape(a)[-1]
    k = None if n is None else min(m, n)
    return packed[..., :m, :], F.astype(packed[..., m, :k], np.int32)


# the op's value is lu with the pivots as one more row
lu_factor = defop("lu_factor", lambda a, check_finite: _N.over_batch(
                      lambda a2: _lu_factor_2d(a2, check_finite), [a], [2]),
                  _lu_factor_vjp, shape=_lu_factor_shape, function=lu_factor, blas="lapack",
                  exports=(SCIPY,), complex_vjps=True)


def _lu_solve_forward(lu, piv, b, trans, check_finite):
    def one(lu2, piv2, b2):
        return _sla.lu_solve((lu2, piv2), b2, trans=trans, check_finite=check_finite)
    return _N.over_batch(one, [lu, piv, b], [2, 1, _rhs_ndim(b)])


def _lu_solve(lu, piv, b, trans=0, check_finite=False):
    return apply(lu_solve.op, (lu, piv, b), {"trans": trans, "check_finite": check_finite})


def _lu_solve_vjp_lu(g, ans, lu, piv, b, trans, check_finite):
    vec = len(_shape(b)) == 1
    gb = _lu_solve_vjp_b(g, ans, lu, piv, b, trans, check_finite)
    gb2 = _col(gb) if vec else gb
    x2 = _col(ans) if vec else ans
    L = F.tril(lu, -1) + _eye_like(lu)
    U = F.triu(lu)
    # A = P L U, d/dA = -gb x^T (trans 0) or -x gb^T; then d/dL = tril(P^T gA U^T, -1) and
    # d/dU = triu(L^T P^T gA), with the outer product's vectors multiplied first
    left, right = (gb2, x2) if trans == 0 else (x2, gb2)
    if trans == 2:      # a^H x = b: a enters conjugated
        left, right = _cj(left), _cj(right)
    pl = _permute_rows(left, piv)                          # P^T left
    gl = -F.matmul(pl, _mT(F.matmul(U, right)))
    gu = -F.matmul(F.matmul(_mT(L), pl), _mT(right))
    return F.tril(gl, -1) + F.triu(gu)


def _lu_solve_vjp_b(g, ans, lu, piv, b, trans, check_finite):
    if trans == 2:      # a^-H's transpose: conj(a^-1 conj(g))
        return _cj(_lu_solve(lu, piv, _cj(g), 0))
    return _lu_solve(lu, piv, g, 0 if trans else 1)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` (``trans`` 1/'T': ``a^T x = b``, 2/'C': ``a^H x = b``) from
    :func:`lu_factor`'s ``(lu, piv)``, SciPy's ``scipy.linalg.lu_solve`` (LAPACK ``getrs``).
    Differentiable in ``lu`` and ``b``.

        >>> spla.lu_solve(spla.lu_factor(fg.tensor([[1.0, 2.0], [3.0, 4.0]])),
        ...               fg.tensor([1.0, 1.0]))  # doctest: +SKIP
    """
    if not (isinstance(lu_and_piv, (tuple, list)) and len(lu_and_piv) == 2):
        raise TypeError(f"lu_solve: lu_and_piv must be the pair (lu, piv) that lu_factor "
                        f"returns, got {type(lu_and_piv).__name__}")
    lu, piv = lu_and_piv
    t = _trans_code(trans, "lu_solve")
    if not holds_graph_value((lu, piv, b)):
        return _sla.lu_solve((lu, piv), b, trans=trans, check_finite=check_finite)
    lu, b = F.shape._as_operand(lu), F.shape._as_operand(b)
    return _lu_solve(lu, piv, b, t, bool(check_finite))


lu_solve = defop("lu_solve", _lu_solve_forward, _lu_solve_vjp_lu, None, _lu_solve_vjp_b,
                 shape=_solve_shape("lu_solve"), function=lu_solve, blas="lapack",
                 exports=(SCIPY,), complex_vjps=True)


# ---- sqrtm, expm, solve_sylvester -------------------------------------------------------------
def _sylvester_forward(a, b, q):
    return _N.over_batch(_sla.solve_sylvester, [a, b, q], [2, 2, 2])


def _sylvester_adjoint(g, a, b):
    # <G, dX> with A dX + dX B = R:  R's cotangent solves A^T Y + Y B^T = G
    return solve_sylvester(_mT(a), _mT(b), g)


def solve_sylvester(a, b, q):
    """Solve the Sylvester equation ``a x + x b = q``, SciPy's ``scipy.linalg.solve_sylvester``
    (Bartels-Stewart); differentiable in ``a``, ``b`` and ``q``.

        >>> spla.solve_sylvester(fg.tensor([[2.0]]), fg.tensor([[1.0]]), fg.tensor([[6.0]]))
        tensor([[2.]])
    """
    if holds_graph_value((a, b, q)):
        a, b, q = (F.shape._as_operand(v) for v in (a, b, q))
    return apply(solve_sylvester.op, (a, b, q), None)


def _sylvester_shape(shapes, **_):
    a, b, q = (tuple(s) for s in shapes)
    _square("solve_sylvester", a)
    _square("solve_sylvester", b)
    if len(q) < 2:
        raise ValueError(f"solve_sylvester: q must be a (batch of) matrices, got shape {q}")
    for d1, d2, what in ((a[-1], q[-2], "a and q"), (b[-1], q[-1], "b and q")):
        if d1 is not None and d2 is not None and d1 != d2:
            raise ValueError(f"solve_sylvester: shapes of {what} are incompatible ({a}, {b}, "
                             f"{q})")
    return _shapes.broadcast("solve_sylvester", a[:-2], b[:-2], q[:-2]) + q[-2:]


solve_sylvester = defop(
    "solve_sylvester", _sylvester_forward,
    lambda g, ans, a, b, q: -F.matmul(_sylvester_adjoint(g, a, b), _mT(ans)),
    lambda g, ans, a, b, q: -F.matmul(_mT(ans), _sylvester_adjoint(g, a, b)),
    lambda g, ans, a, b, q: _sylvester_adjoint(g, a, b),
    shape=_sylvester_shape, function=solve_sylvester, blas="lapack", exports=(SCIPY,),
    complex_vjps=True)


def _sqrtm_forward(a):
    r = _sla.sqrtm(a)
    return r[0] if isinstance(r, tuple) else r


def _sqrtm_op_forward(a):
    r = _sqrtm_forward(a)
    if np.iscomplexobj(r) and not np.iscomplexobj(a):
        raise np.linalg.LinAlgError(
            "sqrtm: this real matrix has no real square root (SciPy's is complex: an eigenvalue "
            "on the negative real axis); complex results are not supported for Tensors and "
            "Nodes")
    return r


def sqrtm(A, disp=True, blocksize=64):
    """The principal matrix square root ``X`` (``X @ X = A``), SciPy's ``scipy.linalg.sqrtm``
    (Schur method; ``disp``/``blocksize``, deprecated by SciPy, are accepted and unused).  The
    gradient solves the Sylvester equation ``X^T Y + Y X^T = G``.  A real matrix without a real
    square root has a complex one (SciPy's result for plain arrays); for Tensors and Nodes it
    is a ``LinAlgError`` (real results only).

        >>> spla.sqrtm(fg.tensor([[4.0, 0.0], [0.0, 9.0]]))
        tensor([[2., 0.],
                [0., 3.]])
    """
    if not holds_graph_value((A,)):
        return _sqrtm_forward(A)
    return apply(sqrtm.op, (F.shape._as_operand(A),), None)


def _sqrtm_vjp(g, ans, a):
    return solve_sylvester(_mT(ans), _mT(ans), g)


sqrtm = defop("sqrtm", _sqrtm_op_forward, _sqrtm_vjp, function=sqrtm,
              shape=lambda shapes, **_: _square("sqrtm", shapes[0]), blas="lapack",
              exports=(SCIPY,), complex_vjps=True)


def _expm_vjp(g, ans, a):
    # the adjoint of the Frechet derivative at A is the one at A^T: the top-right block of
    # expm([[A^T, G], [0, A^T]])
    n = _shape(a)[-1]
    if n is None:
        raise ValueError("expm: the matrix size must be known to differentiate it in a graph")
    at = _mT(a)
    zero = F.broadcast_like(np.zeros((), dtype=np.result_type(ans.dtype)), at)
    big = F.concatenate([F.concatenate([at, g], axis=-1), F.concatenate([zero, at], axis=-1)],
                        axis=-2)
    return expm(big)[..., :n, n:]


def expm(A):
    """The matrix exponential, SciPy's ``scipy.linalg.expm`` (Pade approximation with scaling
    and squaring), batched; its gradient is the Frechet derivative at ``A^T`` (the block
    ``expm([[A^T, G], [0, A^T]])[:n, n:]``), so any order works.

        >>> spla.expm(fg.zeros((2, 2)))
        tensor([[1., 0.],
                [0., 1.]])
    """
    if holds_graph_value((A,)):
        A = F.shape._as_operand(A)
    return apply(expm.op, (A,), None)


expm = defop("expm", _sla.expm, _expm_vjp, function=expm,
             shape=lambda shapes, **_: _square("expm", shapes[0]), blas="lapack",
             exports=(SCIPY,), complex_vjps=True)


# ---- solve_banded -----------------------------------------------------------------------------
def _band_indices(l, u, n):
    """For the banded storage of ``A^T`` (bands swapped): the rows and columns of ``ab`` each of
    its entries comes from, and where such an entry exists."""
    rows = np.arange(l + u + 1)[:, None]
    cols = np.arange(n)[None, :]
    src_row = np.broadcast_to(u + l - rows, (l + u + 1, n))
    src_col = cols + rows - l
    valid = (src_col >= 0) & (src_col < n)
    return (src_row.copy(), np.clip(src_col, 0, max(n - 1, 0))), valid


def _banded_transpose(ab, l, u):
    n = _shape(ab)[-1]
    if n is None:
        raise ValueError("solve_banded: the matrix size must be known to differentiate it")
    (r, c), valid = _band_indices(l, u, n)
    taken = ab[(Ellipsis, r, c)]
    return F.where(valid, taken, 0.0)


def _banded_outer(gb2, x2, l, u):
    """The band of ``-gb x^T`` in banded storage: ``[r, j] = -sum_k gb[j + r - u, k] x[j, k]``
    where that row exists."""
    n = _shape(x2)[-2]
    rows = np.arange(l + u + 1)[:, None]
    src = np.arange(n)[None, :] + rows - u
    valid = (src >= 0) & (src < n)
    idx = np.clip(src, 0, max(n - 1, 0))
    gathered = _mT(gb2)[(Ellipsis, idx)]                       # (..., k, l+u+1, n)
    prod = gathered * F.expand_dims(_mT(x2), -2)
    return -F.where(valid, F.sum(prod, axis=-3), 0.0)


def _banded_forward(ab, b, l, u, check_finite):
    def one(ab2, b2):
        return _sla.solve_banded((l, u), ab2, b2, check_finite=check_finite)
    return _N.over_batch(one, [ab, b], [2, _rhs_ndim(b)])


def _banded(ab, b, l, u, check_finite=False):
    return apply(solve_banded.op, (ab, b), {"l": l, "u": u, "check_finite": check_finite})


def _banded_vjp_b(g, ans, ab, b, l, u, check_finite):
    return _banded(_banded_transpose(ab, l, u), g, u, l)


def _banded_vjp_ab(g, ans, ab, b, l, u, check_finite):
    gb = _banded_vjp_b(g, ans, ab, b, l, u, check_finite)
    vec = len(_shape(b)) == 1
    return _banded_outer(_col(gb) if vec else gb, _col(ans) if vec else ans, l, u)


def _banded_shape(shapes, l, u, **_):
    ab, b = (tuple(s) for s in shapes)
    if len(ab) < 2:
        raise ValueError(f"solve_banded: ab must be a (batch of) 2-D band storages, got {ab}")
    if ab[-2] is not None and ab[-2] != l + u + 1:
        raise ValueError(f"solve_banded: invalid values for the number of lower and upper "
                         f"diagonals: l+u+1 ({l + u + 1}) does not equal ab.shape[0] "
                         f"({ab[-2]})")
    n = ab[-1]
    bn = b[0] if len(b) == 1 else b[-2]
    if n is not None and bn is not None and n != bn:
        raise ValueError(f"solve_banded: shapes of ab {ab} and b {b} are incompatible")
    if len(b) == 1:
        return ab[:-2] + (bn if n is None else n,)
    return _shapes.broadcast("solve_banded", ab[:-2], b[:-2]) + (bn if n is None else n, b[-1])


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` for a banded ``a`` in LAPACK's band storage
    (``ab[u + i - j, j] == a[i, j]``), SciPy's ``scipy.linalg.solve_banded``.  Differentiable in
    ``ab`` (on the entries LAPACK reads) and ``b``.

        >>> spla.solve_banded((1, 1), fg.tensor([[0.0, 1.0, 1.0], [2.0, 2.0, 2.0],
        ...                                     [1.0, 1.0, 0.0]]), fg.tensor([3.0, 4.0, 3.0]))
        tensor([1., 1., 1.])
    """
    l, u = (_shapes.as_int(v, "solve_banded", "band width") for v in l_and_u)
    if not holds_graph_value((ab, b)):
        return _sla.solve_banded((l, u), ab, b, check_finite=check_finite)
    ab, b = F.shape._as_operand(ab), F.shape._as_operand(b)
    return _banded(ab, b, l, u, bool(check_finite))


solve_banded = defop("solve_banded", _banded_forward, _banded_vjp_ab, _banded_vjp_b,
                     shape=_banded_shape, function=solve_banded, blas="lapack",
                     exports=(SCIPY,), complex_vjps=True)


# ---- block_diag, det, inv ---------------------------------------------------------------------
def _block_shapes(shapes):
    out = []
    for s in shapes:
        s = tuple(s)
        if len(s) == 0:
            out.append((1, 1))
        elif len(s) == 1:
            out.append((1, s[0]))
        else:
            out.append(s[-2:])
    return out


def _block_diag_shape(shapes):
    blocks = _block_shapes(shapes)
    batch = _shapes.broadcast("block_diag", *[tuple(s)[:-2] for s in shapes if len(s) > 2])
    rows = [r for r, _ in blocks]
    cols = [c for _, c in blocks]
    return tuple(batch) + (None if None in rows else sum(rows), None if None in cols else
                           sum(cols))


def _block_diag_vjp_for(i):
    def vjp(g, ans, *arrs):
        blocks = _block_shapes([_shape(a) for a in arrs])
        r0 = sum(r for r, _ in blocks[:i])
        c0 = sum(c for _, c in blocks[:i])
        r1, c1 = r0 + blocks[i][0], c0 + blocks[i][1]
        return g[..., r0:r1, c0:c1]
    return vjp


def block_diag(*arrs):
    """The block-diagonal matrix of the arguments (0-d and 1-D ones as 1 x n rows), SciPy's
    ``scipy.linalg.block_diag``, batched over leading axes as SciPy 1.17's; differentiable in
    each block.

        >>> spla.block_diag(fg.tensor([[1.0]]), fg.tensor([2.0, 3.0])).shape
        (2, 3)
    """
    if not holds_graph_value(arrs):
        return _sla.block_diag(*arrs)
    arrs = tuple(F.shape._as_operand(a) for a in arrs)
    for i, a in enumerate(arrs):
        for d in _block_shapes([_shape(a)])[0]:
            if d is None:
                raise ValueError(f"block_diag: block {i}'s shape must be known to build it in "
                                 f"a graph")
    return apply(block_diag.op, arrs, None)


block_diag = defop("block_diag", lambda *arrs: _sla.block_diag(*arrs),
                   vjp_for=_block_diag_vjp_for, variadic=True, function=block_diag,
                   shape=_block_diag_shape, exports=(SCIPY,), complex_vjps=True)


def _det_forward(a, check_finite):
    return _sla.det(a, check_finite=check_finite)


def det(a, overwrite_a=False, check_finite=True):
    """The determinant, SciPy's ``scipy.linalg.det`` (batched); gradient the cofactor matrix,
    as ``fg.linalg.det``'s.

        >>> spla.det(fg.tensor([[1.0, 2.0], [3.0, 4.0]]))  # doctest: +SKIP
        tensor(-2.)
    """
    if holds_graph_value((a,)):
        a = F.shape._as_operand(a)
    return apply(det.op, (a,), {"check_finite": bool(check_finite)})


det = defop("scipy_det", _det_forward,
            lambda g, ans, a, check_finite: F.expand_dims(g, (-1, -2)) * _mT(F.adjugate(a)),
            shape=lambda shapes, **_: _square("det", shapes[0])[:-2], function=det,
            blas="lapack", exports=((SCIPY, "det"),), complex_vjps=True)


def _inv_forward(a, check_finite, assume_a, lower):
    kw = {} if assume_a is None else {"assume_a": assume_a, "lower": lower}
    return _sla.inv(a, check_finite=check_finite, **kw)


def inv(a, overwrite_a=False, check_finite=True, *, assume_a=None, lower=False):
    """The inverse, SciPy's ``scipy.linalg.inv`` (batched; ``assume_a``/``lower`` passed on
    where SciPy has them); gradient ``-inv(a)^T g inv(a)^T``.

        >>> spla.inv(fg.tensor([[2.0, 0.0], [0.0, 4.0]]))
        tensor([[0.5 , 0.  ],
                [0.  , 0.25]])
    """
    if holds_graph_value((a,)):
        a = F.shape._as_operand(a)
    return apply(inv.op, (a,), {"check_finite": bool(check_finite), "assume_a": assume_a,
                                "lower": bool(lower)})


def _inv_vjp(g, ans, a, check_finite, assume_a, lower):
    if assume_a in ("sym", "symmetric"):
        # only one triangle was read: the symmetric gradient
        full = -F.matmul(_mT(ans), F.matmul(g, _mT(ans)))
        return (full + _mT(full)) * 0.5
    if assume_a in ("pos", "positive definite", "her", "hermitian"):
        # one triangle read, the other its conjugate: the Hermitian gradient (that of
        # (a + a^H) / 2)
        full = -F.matmul(_mT(ans), F.matmul(g, _mT(ans)))
        return (full + _cj(_mT(full))) * 0.5
    if assume_a in ("lower triangular", "upper triangular"):
        full = -F.matmul(_mT(ans), F.matmul(g, _mT(ans)))
        return F.tril(full) if assume_a == "lower triangular" else F.triu(full)
    return -F.matmul(_mT(ans), F.matmul(g, _mT(ans)))


inv = defop("scipy_inv", _inv_forward, _inv_vjp,
            shape=lambda shapes, **_: _square("inv", shapes[0]), function=inv, blas="lapack",
            exports=((SCIPY, "inv"),), complex_vjps=True)
