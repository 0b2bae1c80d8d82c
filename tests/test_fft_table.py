"""The ``np.fft`` op table (``tests/fft_table.py``): values NumPy's (complex128 and complex64;
SciPy's pocketfft computes them, within a few ulp of the largest entry of NumPy's), gradients against central finite differences on the real and imaginary parts,
against HIPS autograd and JAX (the same convention) and PyTorch (the conjugate), second
derivatives, static graphs and ``fg.function`` against eager, NumPy's ``np.fft.fft(t)``, and the
errors."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.numpy as fnp
from fft_table import CASES, make_input

PARAMS = [pytest.param(c, id=c.name) for c in CASES]


def _weights(case, x):
    y = np.asarray(case.call(np.fft)(x))
    return np.cos(np.arange(y.size)).reshape(y.shape), np.sin(0.7 * np.arange(y.size)).reshape(
        y.shape)


def _loss(m, y, wr, wi):
    return m.sum(m.real(y) * wr + m.imag(y) * wi)


def _eager_grad(case, x, wr, wi):
    t = fg.tensor(x, requires_grad=True)
    _loss(fg, case.call(fg.fft)(t), wr, wi).backward()
    return t.grad.data


#: how far a transform's values may be from NumPy's, in ulp of the largest magnitude: SciPy's
#: pocketfft (fastgraph's forwards) and NumPy's round differently in the last bit or two
ULPS_OF_MAX = 8


def assert_numpys(got, expected):
    """``got`` is NumPy's ``expected``: the same dtype and shape, values within
    ``ULPS_OF_MAX`` ulp of ``expected``'s largest magnitude."""
    got = np.asarray(got)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    scale = np.max(np.abs(expected), initial=0.0) * np.finfo(expected.dtype).eps
    np.testing.assert_array_less(np.abs(got - expected), ULPS_OF_MAX * scale + np.finfo(
        expected.dtype).tiny)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("case", PARAMS)
def test_values_are_numpys(case, dtype):
    x = make_input(case, dtype)
    expected = case.call(np.fft)(x)
    got = case.call(fg.fft)(fg.tensor(x))
    assert_numpys(got.data, expected)
    np.testing.assert_array_equal(case.call(fnp.fft)(x), got.data)     # plain values: the same
    routed = case.call(np.fft)(fg.tensor(x, requires_grad=True))       # NumPy's own np.fft
    assert isinstance(routed, fg.Tensor) and routed.requires_grad
    np.testing.assert_array_equal(routed.data, got.data)               # (the same op)


@pytest.mark.parametrize("case", PARAMS)
def test_gradient_matches_finite_differences(case, eps=1e-6):
    x = make_input(case)
    wr, wi = _weights(case, x)
    g = _eager_grad(case, x, wr, wi)
    assert g.dtype == x.dtype and g.shape == x.shape
    f = lambda v: float(_loss(np, case.call(np.fft)(v), wr, wi))     # noqa: E731
    fd = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        for unit in ((1.0, 1j) if x.dtype.kind == "c" else (1.0,)):
            hi, lo = x.copy(), x.copy()
            hi[idx] += eps * unit
            lo[idx] -= eps * unit
            d = (f(hi) - f(lo)) / (2 * eps)
            fd[idx] += d if unit == 1.0 else -1j * d
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES if c.autograd])
def test_gradient_matches_autograd(case):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    x = make_input(case)
    wr, wi = _weights(case, x)
    expected = autograd.grad(lambda v: _loss(anp, case.call(anp.fft)(v), wr, wi))(x)
    np.testing.assert_allclose(_eager_grad(case, x, wr, wi), expected, rtol=1e-10, atol=1e-12)


#: one case of each kind of transform (JAX compiles each call: the whole table would be slow)
JAX_CASES = ("fft_pad", "ifft2", "fftn_axes", "rfft_odd", "rfftn_s", "irfft_odd", "irfftn_s",
             "fftshift")


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES
                                  if c.name in JAX_CASES])
def test_gradient_matches_jax(case):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x = make_input(case)
    wr, wi = _weights(case, x)
    expected = np.asarray(jax.grad(lambda v: _loss(jnp, case.call(jnp.fft)(v), wr, wi))(x))
    np.testing.assert_allclose(_eager_grad(case, x, wr, wi), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", PARAMS)
def test_gradient_is_the_conjugate_of_pytorchs(case):
    torch = pytest.importorskip("torch")
    x = make_input(case)
    wr, wi = _weights(case, x)
    t = torch.tensor(x, requires_grad=True)
    y = case.call(torch.fft)(t)
    wr_t, wi_t = torch.tensor(wr), torch.tensor(wi)
    loss = (y.real * wr_t + y.imag * wi_t).sum() if y.is_complex() else (y * wr_t).sum()
    loss.backward()
    np.testing.assert_allclose(_eager_grad(case, x, wr, wi),
                               np.conj(t.grad.resolve_conj().numpy()), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES if c.order2])
def test_second_derivatives_match_autograd(case):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    x = make_input(case)
    wr, wi = _weights(case, x)
    rng = np.random.default_rng(3)
    vr, vi = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
    # a nonlinear loss, so that the second derivative is not zero
    loss = lambda m, f, v: m.sum(m.abs(case.call(f)(v) * (wr + 1j * wi) + 1.0) ** 3)  # noqa: E731
    t = fg.tensor(x, requires_grad=True)
    g, = fg.autograd.grad(loss(fg, fg.fft, t), [t], create_graph=True)
    fg.sum(fg.real(g) * vr + fg.imag(g) * vi).backward()
    first = autograd.grad(lambda v: loss(anp, anp.fft, v))
    expected = autograd.grad(lambda v: anp.sum(anp.real(first(v)) * vr +
                                               anp.imag(first(v)) * vi))(x)
    np.testing.assert_allclose(t.grad.data, expected, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("case", PARAMS)
def test_static_and_function_equal_eager(case):
    x = make_input(case)
    wr, wi = _weights(case, x)
    g = _eager_grad(case, x, wr, wi)
    value = _loss(np, case.call(np.fft)(x), wr, wi)
    fg.reset_default_graph()
    p = fg.placeholder(x.dtype, x.shape)
    y = case.call(fg.fft)(p)
    assert y.shape == np.shape(case.call(np.fft)(x))
    gp, = fg.gradients(_loss(fg, y, wr, wi), [p])
    with fg.Session() as sess:
        sy, sg = sess.run([y, gp], {p: x})
    np.testing.assert_array_equal(sy, case.call(fg.fft)(fg.tensor(x)).data)   # eager's bits
    np.testing.assert_allclose(sg, g, rtol=1e-13, atol=1e-13)
    f = fg.function(lambda v: _loss(fg, case.call(fg.fft)(v), wr, wi))
    fv, fgrad = fg.value_and_grad(f)(x)
    np.testing.assert_allclose(fv, value, rtol=1e-13)
    np.testing.assert_allclose(fgrad, g, rtol=1e-13, atol=1e-13)


ERRORS = [
    (lambda x: fg.fft.fft(x, norm="unitary"), ValueError, "fft: invalid norm 'unitary'"),
    (lambda x: fg.fft.fft(x, 0), ValueError, r"fft: invalid number of data points \(0,\)"),
    (lambda x: fg.fft.fftn(x, axes=(0, 0)), ValueError, "fftn: repeated axes"),
    (lambda x: fg.fft.fft2(x, s=(4,)), ValueError, r"fft2: s \(4,\) and axes \(0, 1\) differ"),
    (lambda x: fg.fft.fft(x, axis=2), ValueError, "fft"),
]


@pytest.mark.parametrize("call, error, match", ERRORS)
def test_bad_arguments_name_the_transform(call, error, match):
    with pytest.raises(error, match=match):
        call(fg.tensor(np.ones((3, 4)), requires_grad=True))


def test_unknown_sizes_in_a_graph_need_s():
    fg.reset_default_graph()
    p = fg.placeholder("complex128", (None, 4))
    assert fg.fft.fft(p).shape == (None, 4)
    with pytest.raises(ValueError, match="fft: the input's size along axes"):
        fg.fft.fft(p, axis=0)
    assert fg.fft.fft(p, 6, axis=0).shape == (6, 4)
