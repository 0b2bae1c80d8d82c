"""Linear algebra beyond the op table: the blocked Cholesky reverse mode, degenerate inputs
(repeated eigen- and singular values, rank-deficient and singular matrices), errors, import
paths and NumPy routing, and a Gaussian process written as a NumPy user would (fitted under
``scipy.optimize.minimize`` against HIPS autograd; its Hessian against finite differences)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.optimize

import fastgraph as fg
import fastgraph.numpy as fnp
import fastgraph.scipy.linalg as spla
from fastgraph.ops import _linalg_numeric as numeric


def _spd(rng, n, batch=()):
    x = rng.standard_normal(batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) / n + np.eye(n)


def _fd_directional(f, x, d, eps=1e-6):
    return (f(x + eps * d) - f(x - eps * d)) / (2 * eps)


def _sym(a):
    return (a + fg.swapaxes(a, -1, -2)) * 0.5


# ---- the blocked Cholesky reverse mode ------------------------------------------------------------
def _closed_form(L, X):
    """sym(L^-T Phi(L^T tril(X)) L^-1), the textbook formula, with NumPy's inverse."""
    P = np.tril(L.T @ np.tril(X))
    P[np.diag_indices_from(P)] *= 0.5
    Li = np.linalg.inv(L)
    S = Li.T @ P @ Li
    return (S + S.T) / 2


@pytest.mark.parametrize("n", [5, 97, 150, 301])
def test_blocked_cholesky_grad_is_the_closed_form(n, rng):
    a = _spd(rng, n)
    L = np.linalg.cholesky(a)
    X = rng.standard_normal((n, n))
    np.testing.assert_allclose(numeric.cholesky_grad(L, X), _closed_form(L, X),
                               rtol=1e-10, atol=1e-10 * np.abs(_closed_form(L, X)).max())


@pytest.mark.parametrize("batch,n", [((3,), 8), ((2,), 40), ((2, 1), 100)])
def test_blocked_cholesky_grad_batched(batch, n, rng):
    a = _spd(rng, n, batch)
    L = np.linalg.cholesky(a)
    X = rng.standard_normal(batch + (n, n))
    got = numeric.cholesky_grad(L, X)
    for idx in np.ndindex(*batch):
        np.testing.assert_allclose(got[idx], _closed_form(L[idx], X[idx]), rtol=1e-9,
                                   atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_gradient_of_a_large_matrix_matches_finite_differences(dtype, rng):
    """n = 130: past the block size, so the recursive split runs."""
    n = 130
    a = _spd(rng, n).astype(dtype)
    w = rng.standard_normal((n, n)).astype(dtype)
    t = fg.tensor(a, requires_grad=True)
    (fg.linalg.cholesky(t) * w).sum().backward()
    assert t.grad.dtype == dtype
    d = rng.standard_normal((n, n))
    d = d + d.T
    f = lambda x: float(np.sum(np.linalg.cholesky(x) * w.astype(np.float64)))  # noqa: E731
    want = _fd_directional(f, a.astype(np.float64), d)
    tol = 1e-3 if dtype == np.float32 else 1e-7
    np.testing.assert_allclose(np.sum(t.grad.data * d), want, rtol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_through_lapack_is_numpys(dtype, rng):
    """Past ``CHOLESKY_LAPACK_MIN`` the factor comes from LAPACK's potrf: NumPy's factor (to
    rounding), the other triangle unread, the input untouched, NumPy's error."""
    n = numeric.CHOLESKY_LAPACK_MIN + 6
    a = _spd(rng, n, (2,)).astype(dtype)
    a[..., 0, -1] = 99.0                                 # garbage outside the lower triangle
    keep = a.copy()
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for upper in (False, True):
        x = np.swapaxes(a, -1, -2).copy() if upper else a
        want = np.linalg.cholesky(x, upper=upper)
        for got in (numeric.cholesky(x, upper=upper), numeric.cholesky(x[1], upper=upper)[None]):
            assert got.dtype == dtype and got.flags.c_contiguous
            np.testing.assert_allclose(got, want[-got.shape[0]:], rtol=tol, atol=tol)
    np.testing.assert_array_equal(a, keep)
    a[1, 3, 3] = -1.0
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        fg.linalg.cholesky(fg.tensor(a))


# ---- degenerate inputs -------------------------------------------------------------------------
def _orthogonal(rng, n):
    return np.linalg.qr(rng.standard_normal((n, n)))[0]


def test_eigh_with_repeated_eigenvalues(rng):
    """The forward is NumPy's; the gradients of a function of the eigenvalues symmetric in the
    repeated ones, and of the repeated eigenspace's projector, are finite and exact."""
    q = _orthogonal(rng, 4)
    a = q @ np.diag([1.0, 1.0, 1.0, 3.0]) @ q.T
    w, v = fg.linalg.eigh(a)
    np.testing.assert_array_equal(w, np.linalg.eigh(a)[0])
    # sum(exp(w)) = tr(expm(a)): gradient expm(a)
    g = fg.grad(lambda x: fg.sum(fg.exp(fg.linalg.eigh(_sym(x))[0])))(a)
    np.testing.assert_allclose(g, sla.expm(a), rtol=1e-12, atol=1e-12)
    g = fg.grad(lambda x: fg.sum(fg.exp(fg.linalg.eigvalsh(_sym(x)))))(a)
    np.testing.assert_allclose(g, sla.expm(a), rtol=1e-12, atol=1e-12)
    # <C, P> for the projector P onto the eigenvalue 1's eigenspace (a gap of 2 to the rest)
    c = rng.standard_normal((4, 4))

    def proj(x):
        v = fg.linalg.eigh(_sym(x))[1][:, :3]
        return fg.sum(fg.matmul(v, fg.swapaxes(v, -1, -2)) * c)

    g = fg.grad(proj)(a)
    assert np.all(np.isfinite(g))
    d = rng.standard_normal((4, 4))

    def proj_np(x):
        v = np.linalg.eigh((x + x.T) / 2)[1][:, :3]
        return float(np.sum(v @ v.T * c))

    np.testing.assert_allclose(np.sum(g * d), _fd_directional(proj_np, a, d), rtol=1e-6)


def test_svd_with_repeated_and_zero_singular_values(rng):
    """Singular values 2, 2, 0 (repeated and zero): NumPy's values; finite and exact gradients
    for functions of the singular values symmetric in the repeated ones, the projector onto
    the repeated singular subspace, and the spectral norms."""
    u, v = _orthogonal(rng, 4)[:, :3], _orthogonal(rng, 3)
    a = u @ np.diag([2.0, 2.0, 0.5]) @ v.T
    z = u @ np.diag([2.0, 2.0, 0.0]) @ v.T
    r = fg.linalg.svd(fg.tensor(z), full_matrices=False)
    np.testing.assert_array_equal(r.S.data, np.linalg.svd(z, full_matrices=False)[1])
    for x in (a, z):
        ur, sr, vhr = np.linalg.svd(x, full_matrices=False)
        g = fg.grad(lambda t: fg.sum(fg.linalg.svd(t)[1] ** 3))(x)
        np.testing.assert_allclose(g, ur @ np.diag(3 * sr ** 2) @ vhr, atol=1e-10)
        gn = fg.grad(lambda t: fg.linalg.norm(t, "nuc"))(x)
        r = int(np.sum(sr > 1e-12))      # 'nuc': U_r Vh_r over the non-zero singular values
        np.testing.assert_allclose(gn, ur[:, :r] @ vhr[:r], atol=1e-10)
        g2 = fg.grad(lambda t: fg.linalg.norm(t, 2))(x)      # a tie at s_max: split evenly
        np.testing.assert_allclose(g2, 0.5 * ur[:, :2] @ vhr[:2], atol=1e-10)
    c = rng.standard_normal((4, 4))

    def proj(t):                           # the left singular subspace of the value 2
        ub = fg.linalg.svd(t, full_matrices=False)[0][:, :2]
        return fg.sum(fg.matmul(ub, fg.swapaxes(ub, -1, -2)) * c)

    def proj_np(t):
        ub = np.linalg.svd(t, full_matrices=False)[0][:, :2]
        return float(np.sum(ub @ ub.T * c))

    g = fg.grad(proj)(a)
    d = rng.standard_normal(a.shape)
    np.testing.assert_allclose(np.sum(g * d), _fd_directional(proj_np, a, d), rtol=1e-6)


def test_pinv_and_lstsq_of_rank_deficient_matrices(rng):
    """Rank 2 of 4 x 3: NumPy's values; the gradient is the derivative along perturbations that
    keep the rank (a = b @ c)."""
    b0, c0 = rng.standard_normal((4, 2)), rng.standard_normal((2, 3))
    a = b0 @ c0
    np.testing.assert_array_equal(fg.linalg.pinv(fg.tensor(a)).data, np.linalg.pinv(a))
    y = rng.standard_normal(4)
    x, res, rank, s = fg.linalg.lstsq(fg.tensor(a), fg.tensor(y))
    xr, resr, rankr, sr = np.linalg.lstsq(a, y)
    np.testing.assert_array_equal(x.data, xr)
    assert res.shape == resr.shape == (0,) and int(rank.data) == rankr == 2
    w = rng.standard_normal((3, 4))
    for f_fg, f_np in ((lambda a: fg.sum(fg.linalg.pinv(a) * w),
                        lambda a: np.sum(np.linalg.pinv(a) * w)),
                       (lambda a: fg.sum(fg.linalg.lstsq(a, y, rcond=1e-10)[0] * w[:, 0]),
                        lambda a: np.sum(np.linalg.lstsq(a, y, rcond=1e-10)[0] * w[:, 0]))):
        gb = fg.grad(lambda b: f_fg(fg.matmul(b, c0)))(b0)
        assert np.all(np.isfinite(gb))
        d = rng.standard_normal(b0.shape)
        want = _fd_directional(lambda b: f_np(b @ c0), b0, d)
        np.testing.assert_allclose(np.sum(gb * d), want, rtol=1e-6)


def test_singular_matrices_give_numpys_values_and_errors():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    t = fg.tensor(s, requires_grad=True)
    assert fg.linalg.cond(t).data == np.linalg.cond(s)
    assert np.isinf(fg.linalg.cond(t, 1).data) and np.isinf(np.linalg.cond(s, 1))
    np.testing.assert_array_equal(fg.linalg.slogdet(t).logabsdet.data,
                                  np.linalg.slogdet(s).logabsdet)
    fg.linalg.det(t).backward()                          # the cofactor matrix
    np.testing.assert_allclose(t.grad.data, [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    with pytest.raises(np.linalg.LinAlgError):
        fg.linalg.cholesky(fg.tensor(s))
    with pytest.raises(np.linalg.LinAlgError):
        fg.linalg.inv(fg.tensor(s))
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        spla.solve_triangular(fg.tensor(np.triu(s) - np.diag([0.0, 4.0])), fg.tensor([1.0, 1.0]))


# ---- errors ------------------------------------------------------------------------------------
def test_bad_input_is_named():
    with pytest.raises(ValueError, match="cholesky.*square"):
        with fg.Graph().as_default():
            fg.linalg.cholesky(fg.placeholder(np.float64, (3, 4)))
    with pytest.raises(np.linalg.LinAlgError, match="two-dimensional"):
        fg.linalg.eigh(fg.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="UPLO"):
        fg.linalg.eigh(fg.tensor(np.eye(2)), UPLO="X")
    with pytest.raises(ValueError, match="solve_triangular.*incompatible"):
        spla.solve_triangular(fg.tensor(np.eye(3)), fg.tensor(np.ones(4)))
    with pytest.raises(ValueError, match="trans"):
        spla.solve_triangular(fg.tensor(np.eye(2)), fg.tensor(np.ones(2)), trans="X")
    with pytest.raises(ValueError, match="l\\+u\\+1"):
        spla.solve_banded((1, 1), fg.tensor(np.ones((2, 3))), fg.tensor(np.ones(3)))
    with pytest.raises(TypeError, match="cho_factor"):
        spla.cho_solve(fg.tensor(np.eye(2)), fg.tensor(np.ones(2)))
    with pytest.raises(NotImplementedError, match="raw"):
        fg.linalg.qr(fg.tensor(np.eye(2)), "raw")
    with pytest.raises(ValueError, match="mode"):
        fg.linalg.qr(fg.tensor(np.eye(2)), "fancy")
    t = fg.tensor(np.arange(6.0).reshape(3, 2) + np.eye(3, 2), requires_grad=True)
    q, r = fg.linalg.qr(t, "complete")
    with pytest.raises(NotImplementedError, match="complete"):
        fg.sum(q).backward()
    lu, piv = spla.lu_factor(fg.tensor(np.ones((3, 2)) + np.eye(3, 2), requires_grad=True))
    assert piv.dtype == np.int32
    with pytest.raises(NotImplementedError, match="square"):
        fg.sum(lu).backward()
    with pytest.raises(np.linalg.LinAlgError, match="real square root"):
        spla.sqrtm(fg.tensor([[-4.0, 1.0], [0.0, 1.0]]))
    np.testing.assert_array_equal(spla.sqrtm(np.array([[-4.0]])), sla.sqrtm(np.array([[-4.0]])))


# ---- import paths and NumPy's functions on Tensors --------------------------------------------
def test_import_paths_and_numpy_routing(rng):
    import importlib
    la = importlib.import_module("fastgraph.numpy.linalg")
    assert la is fg.linalg and fnp.linalg.cholesky is fg.linalg.cholesky
    from fastgraph.scipy import linalg as spla2
    assert spla2 is spla and fg.scipy.linalg is spla
    assert spla.lu is sla.lu                        # SciPy's other functions are SciPy's
    a = _spd(rng, 3)
    t = fg.tensor(a, requires_grad=True)
    L = np.linalg.cholesky(t)                        # NumPy's own function on a Tensor
    assert isinstance(L, fg.Tensor)
    w, v = np.linalg.eigh(t)
    assert isinstance(w, fg.Tensor) and w.requires_grad
    (fg.sum(L) + fg.sum(w) + fg.sum(np.linalg.svd(t, compute_uv=False))).backward()
    assert t.grad is not None and np.all(np.isfinite(t.grad.data))
    assert fg.linalg.svdvals is np.linalg.svdvals or callable(fg.linalg.svdvals)


def test_results_are_numpys_named_tuples(rng):
    a = rng.standard_normal((4, 3))
    t = fg.tensor(a)
    r = fg.linalg.svd(t, full_matrices=False)
    assert r._fields == np.linalg.svd(a, full_matrices=False)._fields
    assert fg.linalg.qr(t)._fields == np.linalg.qr(a)._fields
    assert fg.linalg.eigh(fg.tensor(a.T @ a))._fields == np.linalg.eigh(a.T @ a)._fields
    np.testing.assert_array_equal(r.Vh.data, np.linalg.svd(a, full_matrices=False).Vh)


def test_function_returns_the_named_tuples(rng):
    a = _spd(rng, 3)
    out = fg.function(lambda x: fg.linalg.eigh(x))(a)
    assert type(out).__name__ == "EighResult"
    np.testing.assert_allclose(out.eigenvalues, np.linalg.eigh(a).eigenvalues, rtol=1e-12)


# ---- a Gaussian process, written as a NumPy user writes it -----------------------------------
def _gp_nll(np_, linalg_mod):
    """The negative log marginal likelihood of a GP with an RBF kernel, in the namespace
    ``np_`` (NumPy's spelling), ``linalg_mod`` the scipy.linalg to use."""
    def nll(params, X, y):
        s2, ell, sn2 = np_.exp(params[0]), np_.exp(params[1]), np_.exp(params[2])
        diffs = np_.expand_dims(X / ell, 1) - np_.expand_dims(X / ell, 0)
        K = s2 * np_.exp(-0.5 * np_.sum(diffs ** 2, axis=2)) + (sn2 + 1e-6) * np_.eye(len(y))
        L = np_.linalg.cholesky(K)
        alpha = linalg_mod.solve_triangular(L, y, lower=True)
        return (0.5 * np_.dot(alpha, alpha) + np_.sum(np_.log(np_.diag(L)))
                + 0.5 * len(y) * np_.log(2 * np_.pi))
    return nll


def _gp_data(n, seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(-3, 3, (n, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.3 * r.standard_normal(n)
    return X, y


def test_gaussian_process_fit_matches_autograd():
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    import autograd.scipy.linalg as asla
    X, y = _gp_data(40)
    x0 = np.array([0.1, -0.2, -1.0])
    fits = {}
    for name, vg in (("fastgraph", fg.value_and_grad(_gp_nll(fnp, spla))),
                     ("function", fg.function(fg.value_and_grad(_gp_nll(fnp, spla)))),
                     ("autograd", autograd.value_and_grad(_gp_nll(anp, asla)))):
        fits[name] = scipy.optimize.minimize(vg, x0, args=(X, y), jac=True, method="BFGS",
                                             options={"gtol": 1e-11, "maxiter": 500})
    ref = fits["autograd"]
    for name in ("fastgraph", "function"):
        np.testing.assert_allclose(fits[name].x, ref.x, rtol=0, atol=1e-8, err_msg=name)
        np.testing.assert_allclose(fits[name].fun, ref.fun, rtol=1e-12)
    # and value and gradient at the optimum and away from it
    for p in (ref.x, x0):
        v1, g1 = fg.value_and_grad(_gp_nll(fnp, spla))(p, X, y)
        v2, g2 = autograd.value_and_grad(_gp_nll(anp, asla))(p, X, y)
        np.testing.assert_allclose(v1, v2, rtol=1e-12)
        np.testing.assert_allclose(g1, g2, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("n", [12, 110])
def test_gaussian_process_hessian_matches_finite_differences(n):
    """Second order through cholesky and solve_triangular (n = 110: the blocked reverse mode)."""
    X, y = _gp_data(n, seed=3)
    p = np.array([0.2, 0.1, -1.5])
    nll = _gp_nll(fnp, spla)
    h = fg.hessian(nll)(p, X, y)
    grad = fg.grad(nll)
    eps = 1e-5
    fd = np.stack([(grad(p + eps * e, X, y) - grad(p - eps * e, X, y)) / (2 * eps)
                   for e in np.eye(3)])
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-10)
    if n == 12:
        autograd = pytest.importorskip("autograd")
        import autograd.numpy as anp
        import autograd.scipy.linalg as asla
        ha = autograd.hessian(_gp_nll(anp, asla))(p, X, y)
        np.testing.assert_allclose(h, ha, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(fg.function(fg.hessian(nll))(p, X, y), h, rtol=1e-9,
                                   atol=1e-10)
