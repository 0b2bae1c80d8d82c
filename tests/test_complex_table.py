"""The complex op table (``tests/complex_table.py``), line by line: values against NumPy,
gradients against central finite differences on the real and imaginary parts, against HIPS
autograd (whose convention fastgraph follows) and PyTorch (the conjugate), second derivatives
against autograd (where it has no rule, against central differences of the gradient), static
graphs (every pass on, and off) and ``fg.function`` against eager; and
the refusals: an op whose VJPs do not hold for complex values raises rather than differentiate
through them, and the fuse pass leaves complex steps to NumPy."""
from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.linalg

import fastgraph as fg
from fastgraph.ops.linalg_decomp import NUMPY_EIG_REAL_WHEN_REAL
from complex_table import CASES, make_inputs

PARAMS = [pytest.param(c, id=c.name) for c in CASES]
AUTOGRAD = [pytest.param(c, id=c.name) for c in CASES if c.autograd]
ORDER2 = [pytest.param(c, id=c.name) for c in CASES if c.order2 and c.autograd]
ORDER2_FD = [pytest.param(c, id=c.name) for c in CASES if c.order2 and not c.autograd]
TORCH = [pytest.param(c, id=c.name) for c in CASES if c.torch is not None]
STATIC = [pytest.param(c, id=c.name) for c in CASES if c.op != "real_if_close"]


def _weights(case, arrays):
    """Random real weights for the real and imaginary parts of each output element."""
    out = np.asarray(case.ref(*arrays))
    rng = np.random.default_rng(11)
    return rng.standard_normal(out.shape), rng.standard_normal(out.shape)


def _loss(m, y, wr, wi):
    """A real scalar of a (complex or real) output: its parts weighted."""
    return m.sum(m.real(y) * wr + m.imag(y) * wi)


def _numpy_loss(case, arrays, wr, wi):
    return float(_loss(np, np.asarray(case.ref(*arrays)), wr, wi))


def _finite_differences(case, arrays, wr, wi, eps=1e-6):
    """d loss / dx - i d loss / dy for each input: autograd's convention."""
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros(a.shape, dtype=a.dtype)
        for idx in np.ndindex(a.shape):
            parts = (1.0, 1j) if a.dtype.kind == "c" else (1.0,)
            for unit in parts:
                hi = [b.copy() for b in arrays]
                lo = [b.copy() for b in arrays]
                hi[i][idx] += eps * unit
                lo[i][idx] -= eps * unit
                d = (_numpy_loss(case, hi, wr, wi) - _numpy_loss(case, lo, wr, wi)) / (2 * eps)
                g[idx] += d if unit == 1.0 else -1j * d
        grads.append(g)
    return grads


def _eager(case, arrays, wr, wi):
    ts = [fg.tensor(a, requires_grad=True) for a in arrays]
    y = case.fn(*ts)
    _loss(fg, y, wr, wi).backward()
    return np.asarray(y.data), [t.grad.data for t in ts]


@pytest.mark.parametrize("case", PARAMS)
def test_values_match_numpy(case):
    arrays = make_inputs(case)
    expected = case.ref(*arrays)
    got = case.fn(*[fg.tensor(a) for a in arrays])
    assert got.dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(got.data, expected, rtol=1e-13, atol=1e-13)
    plain = case.fn(*arrays)        # NumPy values in: NumPy values out
    assert isinstance(plain, (np.ndarray, np.generic))
    np.testing.assert_allclose(plain, expected, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("case", PARAMS)
def test_gradient_matches_finite_differences(case):
    arrays = make_inputs(case)
    wr, wi = _weights(case, arrays)
    _, grads = _eager(case, arrays, wr, wi)
    for a, g, fd in zip(arrays, grads, _finite_differences(case, arrays, wr, wi)):
        assert g.dtype == a.dtype and g.shape == a.shape
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", AUTOGRAD)
def test_gradient_matches_autograd(case):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    arrays = make_inputs(case)
    wr, wi = _weights(case, arrays)
    _, grads = _eager(case, arrays, wr, wi)
    for i, g in enumerate(grads):
        expected = autograd.grad(lambda *xs: _loss(anp, case.peer(anp)(*xs), wr, wi), i)(*arrays)
        np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", TORCH)
def test_gradient_is_the_conjugate_of_pytorchs(case):
    torch = pytest.importorskip("torch")
    arrays = make_inputs(case)
    wr, wi = _weights(case, arrays)
    _, grads = _eager(case, arrays, wr, wi)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = case.torch(*ts)
    wr_t, wi_t = torch.tensor(wr), torch.tensor(wi)
    loss = (y.real * wr_t + y.imag * wi_t).sum() if y.is_complex() else (y * wr_t).sum()
    loss.backward()
    for g, t in zip(grads, ts):
        np.testing.assert_allclose(g, np.conj(t.grad.resolve_conj().numpy()), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", ORDER2)
def test_second_derivatives_match_autograd(case):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    arrays = make_inputs(case)
    wr, wi = _weights(case, arrays)
    rng = np.random.default_rng(5)
    vs = [(rng.standard_normal(a.shape), rng.standard_normal(a.shape)) for a in arrays]

    def first(m, grad_of, xs):
        gs = grad_of(xs)
        return sum(m.sum(m.real(g) * vr + m.imag(g) * vi) for g, (vr, vi) in zip(gs, vs))

    ts = [fg.tensor(a, requires_grad=True) for a in arrays]
    gs = fg.autograd.grad(_loss(fg, case.fn(*ts), wr, wi), ts, create_graph=True)
    first(fg, lambda xs: gs, ts).backward()

    def ag_grads(xs):
        f = lambda *x: _loss(anp, case.peer(anp)(*x), wr, wi)      # noqa: E731
        return [autograd.grad(f, i)(*xs) for i in range(len(xs))]

    for i, t in enumerate(ts):
        expected = autograd.grad(
            lambda x: first(anp, ag_grads, arrays[:i] + [x] + arrays[i + 1:]))(arrays[i])
        np.testing.assert_allclose(t.grad.data, expected, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("case", ORDER2_FD)
def test_second_derivatives_match_finite_differences(case):
    """Where autograd has no rule: the derivative of <v, gradient> against central differences
    of fastgraph's own first-order gradient (itself checked against finite differences)."""
    arrays = make_inputs(case)
    wr, wi = _weights(case, arrays)
    rng = np.random.default_rng(5)
    vs = [rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape) for a in arrays]

    def pairing(xs):
        _, gs = _eager(case, xs, wr, wi)
        return float(sum(np.sum((g * v).real) for g, v in zip(gs, vs)))

    ts = [fg.tensor(a, requires_grad=True) for a in arrays]
    gs = fg.autograd.grad(_loss(fg, case.fn(*ts), wr, wi), ts, create_graph=True)
    fg.sum(fg.stack([fg.sum(fg.real(g * v)) for g, v in zip(gs, vs)])).backward()
    eps = 1e-6
    for i, (a, t) in enumerate(zip(arrays, ts)):
        fd = np.zeros(a.shape, dtype=a.dtype)
        for idx in np.ndindex(a.shape):
            for unit in ((1.0, 1j) if a.dtype.kind == "c" else (1.0,)):
                hi = [b.copy() for b in arrays]
                lo = [b.copy() for b in arrays]
                hi[i][idx] += eps * unit
                lo[i][idx] -= eps * unit
                d = (pairing(hi) - pairing(lo)) / (2 * eps)
                fd[idx] += d if unit == 1.0 else -1j * d
        np.testing.assert_allclose(t.grad.data, fd, rtol=1e-6, atol=1e-7)


def _static(case, arrays, wr, wi, disable=()):
    fg.reset_default_graph()
    phs = [fg.placeholder(a.dtype, a.shape) for a in arrays]
    y = case.fn(*phs)
    grads = fg.gradients(_loss(fg, y, wr, wi), phs)
    with fg.Session(disable=disable) as sess:
        return sess.run([y, grads], dict(zip(phs, arrays)))


@pytest.mark.parametrize("disable", [(), ("fold", "simplify", "merge", "fuse", "buffers")],
                         ids=["passes_on", "passes_off"])
@pytest.mark.parametrize("case", STATIC)
def test_static_equals_eager(case, disable):
    arrays = make_inputs(case)
    wr, wi = _weights(case, arrays)
    ev, eg = _eager(case, arrays, wr, wi)
    sv, sg = _static(case, arrays, wr, wi, disable)
    assert np.asarray(sv).dtype == ev.dtype
    np.testing.assert_allclose(sv, ev, rtol=1e-13, atol=1e-13)
    for a, b in zip(sg, eg):
        assert np.asarray(a).dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("case", STATIC)
def test_function_equals_eager(case):
    arrays = make_inputs(case)
    wr, wi = _weights(case, arrays)
    ev, eg = _eager(case, arrays, wr, wi)
    f = fg.function(lambda *xs: _loss(fg, case.fn(*xs), wr, wi))
    value, grads = fg.value_and_grad(f, tuple(range(len(arrays))))(*arrays)
    np.testing.assert_allclose(value, _numpy_loss(case, arrays, wr, wi), rtol=1e-12)
    for a, b in zip(grads, eg):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


# ---- the fuse pass leaves complex steps to NumPy ----------------------------------------------
def _objective(x, r):
    z = fg.exp(x * 0.5) * x + 1.0          # complex: NumPy steps
    return fg.sum(fg.tanh(fg.abs(z) * r + r * r) ** 2)   # real from abs on: fusable


def test_fuse_pass_leaves_complex_steps_out_and_agrees_with_unfused_plans():
    rng = np.random.default_rng(0)
    z = rng.standard_normal(5000) + 1j * rng.standard_normal(5000)
    r = rng.standard_normal(5000)
    fg.reset_default_graph()
    x, y = fg.placeholder("complex128", z.shape), fg.placeholder("float64", r.shape)
    loss = _objective(x, y)
    gx, = fg.gradients(loss, [x])
    results = {}
    for disable in ((), ("fuse",)):
        with fg.Session(disable=disable) as sess:
            results[disable] = sess.run([loss, gx], {x: z, y: r})
            text = sess.explain([loss, gx], {x: z, y: r})
        # the plan's steps, "name = op(inputs) [...]  shape=... dtype=..." (a kernel with several
        # outputs is read by projections "fused_0:1 = proj(fused_0)  ... dtype=..."), by name
        steps = {}
        for name, rest in re.findall(r"^  (\S+) = (.*)$", text.split("[plan]")[1], re.M):
            dtype = re.search(r"dtype=(\S+)$", rest)
            steps[name] = (rest, dtype.group(1) if dtype else None)
        kernels = {n: call for n, (call, _) in steps.items() if re.match(r"fused_\d+\(", call)}
        assert bool(kernels) == (not disable), text
        assert any(dt and dt.startswith("complex") for _, dt in steps.values())
        for name, call in kernels.items():      # no fused kernel reads or writes a complex value
            inputs = re.match(r"fused_\d+\(([^)]*)\)", call).group(1).split(", ")
            assert all(steps[i][1] and not steps[i][1].startswith("complex")
                       for i in inputs if i in steps), call
            outputs = [dt for n, (_, dt) in steps.items()
                       if n == name or n.startswith(name + ":")]
            assert outputs and not any(dt and dt.startswith("complex") for dt in outputs), name
    (v1, g1), (v2, g2) = results[()], results[("fuse",)]
    np.testing.assert_allclose(v1, v2, rtol=1e-12)
    np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-13)
    t = fg.tensor(z, requires_grad=True)
    _objective(t, r).backward()
    np.testing.assert_allclose(g1, t.grad.data, rtol=1e-12, atol=1e-13)


# ---- refusals ---------------------------------------------------------------------------------
REFUSED = [
    ("maximum", lambda x: fg.maximum(x, x * 2)),
    ("minimum", lambda x: fg.minimum(x, x * 2)),
    ("clip", lambda x: fg.clip(x, 0, 1)),
    ("max", lambda x: fg.max(x)),
    ("min", lambda x: fg.min(x, axis=0)),
    ("sort", lambda x: fg.sort(x)),
]


@pytest.mark.parametrize("name, fn", REFUSED, ids=[n for n, _ in REFUSED])
def test_ops_without_complex_gradients_refuse_complex_values(name, fn):
    z = np.array([1 + 2j, -0.5 + 1j, 2 - 1j, 0.3 + 0.1j])
    with pytest.raises(TypeError, match=f"{name}: no gradient for complex values"):
        fn(fg.tensor(z, requires_grad=True))
    assert fn(fg.tensor(z)) is not None        # without a gradient: NumPy's values
    fg.reset_default_graph()
    x = fg.placeholder("complex128", z.shape)
    with pytest.raises(TypeError, match=f"{name}: no gradient for complex values"):
        fg.gradients(fg.sum(fg.real(fn(x))), [x])


def test_real_if_close_is_refused_in_graphs():
    fg.reset_default_graph()
    with pytest.raises(TypeError, match="real_if_close: the result's dtype depends"):
        fg.real_if_close(fg.placeholder("complex128", (2,)))


def test_complex_tensors_and_their_properties():
    t = fg.tensor([1 + 2j, 3 - 4j], requires_grad=True)
    assert t.dtype == np.complex128 and fg.tensor([1j], dtype=np.complex64).dtype == np.complex64
    np.testing.assert_array_equal(t.real.data, [1.0, 3.0])
    np.testing.assert_array_equal(t.imag.data, [2.0, -4.0])
    np.testing.assert_array_equal(t.conj().data, [1 - 2j, 3 + 4j])
    np.testing.assert_array_equal(np.conjugate(t).data, [1 - 2j, 3 + 4j])
    np.testing.assert_array_equal(np.real(t).data, [1.0, 3.0])
    np.testing.assert_allclose(np.angle(t).data, np.angle([1 + 2j, 3 - 4j]))
    (abs(t) ** 2).sum().backward()                       # d|z|^2 = 2 conj(z)
    np.testing.assert_array_equal(t.grad.data, [2 - 4j, 6 + 8j])
    with pytest.raises(TypeError, match="complex256|clongdouble|unsupported dtype"):
        fg.tensor(np.array([1j], dtype=np.clongdouble))


# ---- eig at degenerate inputs, and NumPy's dtypes --------------------------------------------
DEGENERATE = {
    "repeated": np.diag([1.0, 1.0, 2.0]),
    "defective": np.array([[1.0, 1.0], [0.0, 1.0]]),           # one eigenvector (a Jordan block)
    "defective_complex": np.array([[2.0, 1.0], [0.0, 2.0]]) + 0j,
}


@pytest.mark.parametrize("name", DEGENERATE)
def test_eig_at_degenerate_inputs_gives_numpys_values_and_the_documented_gradient(name):
    a = DEGENERATE[name]
    t = fg.tensor(a, requires_grad=True)
    w, v = fg.linalg.eig(t)
    expected_w, expected_v = np.linalg.eig(a)
    assert w.dtype == expected_w.dtype and v.dtype == expected_v.dtype
    np.testing.assert_array_equal(w.data, expected_w)
    np.testing.assert_array_equal(v.data, expected_v)
    # the trace's gradient is the identity, repeated eigenvalues or not; equal eigenvalues add
    # nothing to the eigenvector part (|v|^2 here)
    g_trace, = fg.autograd.grad(fg.sum(fg.real(w)), [t], retain_graph=True)
    np.testing.assert_allclose(g_trace.data, np.eye(len(a)), atol=1e-12)
    g_vectors, = fg.autograd.grad(fg.sum(fg.abs(v) ** 2), [t])
    np.testing.assert_allclose(g_vectors.data, 0.0, atol=1e-12)


def test_eig_dtypes_are_numpys_eagerly_and_complex_in_graphs():
    a = np.array([[0.0, 1.0], [-2.0, -3.0]])                     # eigenvalues -1, -2
    w = fg.linalg.eigvals(fg.tensor(a, requires_grad=True))
    # (real results for real eigenvalues up to NumPy 2.4, complex from 2.5: the installed one's)
    assert w.dtype == np.linalg.eigvals(a).dtype
    assert w.dtype == (np.float64 if NUMPY_EIG_REAL_WHEN_REAL else np.complex128)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])               # eigenvalues +-i
    assert fg.linalg.eigvals(fg.tensor(rotation)).dtype == np.complex128
    assert isinstance(np.linalg.eig(fg.tensor(a)), tuple)       # NumPy's np.linalg.eig routes
    fg.reset_default_graph()
    p = fg.placeholder("float64", (2, 2))
    w, v = fg.linalg.eig(p)
    assert w.dtype == v.dtype == np.complex128 and w.shape == (2,) and v.shape == (2, 2)
    with fg.Session() as sess:
        np.testing.assert_allclose(sess.run(w, {p: a}), np.linalg.eigvals(a))


# ---- NumPy 2's vector products: vecmat and vecdot conjugate their first operand --------------
VECTOR_PRODUCTS = [
    ("matvec", fg.matvec, lambda a, v: fg.matmul(a, v), [(3, 4), (4,)]),
    ("vecmat", fg.vecmat, lambda v, a: fg.matmul(fg.conj(v), a), [(3,), (3, 4)]),
    ("vecdot", fg.vecdot, lambda x, y: fg.sum(fg.conj(x) * y, axis=-1), [(2, 4), (4,)]),
]


@pytest.mark.parametrize("name, op, same, shapes", VECTOR_PRODUCTS,
                         ids=[c[0] for c in VECTOR_PRODUCTS])
def test_vector_products_complex_gradients_match_their_matmul_forms(name, op, same, shapes):
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]
    w = 0.7 - 1.1j
    for i in range(2):
        loss = lambda f: lambda *xs: fg.sum(fg.abs(f(*xs) * w) ** 2)   # noqa: E731
        got = fg.grad(loss(op), i)(*args)
        want = fg.grad(loss(same), i)(*args)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{name} arg {i}")


# ---- complex64 through the decompositions: NumPy's dtypes, gradients of the input's dtype ----
DECOMPOSITIONS = [
    ("eigh", lambda a: fg.linalg.eigh(a)[0], lambda a: np.linalg.eigh(a)[0]),
    ("eigh_vectors", lambda a: fg.linalg.eigh(a)[1], lambda a: np.linalg.eigh(a)[1]),
    ("svd", lambda a: fg.linalg.svd(a)[1], lambda a: np.linalg.svd(a)[1]),
    ("cholesky", fg.linalg.cholesky, np.linalg.cholesky),
    ("qr", lambda a: fg.linalg.qr(a)[1], lambda a: np.linalg.qr(a)[1]),
    ("norm", lambda a: fg.linalg.norm(a, "nuc"), lambda a: np.linalg.norm(a, "nuc")),
    ("slogdet", lambda a: fg.linalg.slogdet(a)[0], lambda a: np.linalg.slogdet(a)[0]),
    ("pinv", fg.linalg.pinv, np.linalg.pinv),
    ("lstsq", lambda a: fg.linalg.lstsq(a, a[:, 0])[0], lambda a: np.linalg.lstsq(a, a[:, 0])[0]),
    ("lstsq_s", lambda a: fg.linalg.lstsq(a, a[:, 0])[3],
     lambda a: np.linalg.lstsq(a, a[:, 0])[3]),
    ("cond", fg.linalg.cond, np.linalg.cond),
    ("scipy.cholesky", lambda a: _spla().cholesky(a), lambda a: scipy.linalg.cholesky(a)),
    ("scipy.cho_solve", lambda a: _spla().cho_solve(_spla().cho_factor(a), a[:, 0]),
     lambda a: scipy.linalg.cho_solve(scipy.linalg.cho_factor(a), a[:, 0])),
    ("scipy.lu_solve", lambda a: _spla().lu_solve(_spla().lu_factor(a), a, trans=2),
     lambda a: scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), a, trans=2)),
    ("scipy.solve_triangular", lambda a: _spla().solve_triangular(a, a[:, 0], trans=2),
     lambda a: scipy.linalg.solve_triangular(a, a[:, 0], trans=2)),
    ("scipy.expm", lambda a: _spla().expm(a), lambda a: scipy.linalg.expm(a)),
    ("scipy.sqrtm", lambda a: _spla().sqrtm(a), lambda a: scipy.linalg.sqrtm(a)),
    ("scipy.inv", lambda a: _spla().inv(a, assume_a="pos"),
     lambda a: scipy.linalg.inv(a, assume_a="pos")),
]


def _spla():
    import fastgraph.scipy.linalg
    return fastgraph.scipy.linalg


@pytest.mark.parametrize("name, fn, ref", DECOMPOSITIONS, ids=[d[0] for d in DECOMPOSITIONS])
def test_complex64_decompositions_keep_numpys_dtypes(name, fn, ref):
    rng = np.random.default_rng(3)
    z = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    a = (z @ z.conj().T / 3 + np.eye(3)).astype(np.complex64)          # Hermitian, definite
    t = fg.tensor(a, requires_grad=True)
    out = fn(t)
    expected = ref(a)
    assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
    np.testing.assert_allclose(out.data, expected, rtol=1e-5, atol=1e-5)
    fg.sum(fg.abs(out) ** 2).backward()
    assert t.grad.dtype == np.complex64 and np.all(np.isfinite(t.grad.data))
