"""Optimizers for eager parameters: SGD (momentum) and Adam, against hand formulas and torch.optim."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg

W0 = np.array([[0.5, -1.0], [2.0, 0.25]])
X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -0.7]])


def _loss(w):
    return (fg.matmul(X, w) ** 2).sum() * 0.5


def _grad_np(w):
    return X.T @ (X @ w)


def _fg_steps(make_opt, n, dtype=np.float64):
    w = fg.tensor(W0.astype(dtype), requires_grad=True)
    opt = make_opt([w])
    hist = []
    for _ in range(n):
        opt.zero_grad()
        _loss(w).backward()
        opt.step()
        hist.append(w.data.copy())
    return w, hist


def _torch_steps(make_opt, n):
    torch = pytest.importorskip("torch")
    w = torch.tensor(W0, requires_grad=True)
    Xt = torch.tensor(X)
    opt = make_opt(torch, [w])
    hist = []
    for _ in range(n):
        opt.zero_grad()
        ((Xt @ w) ** 2).sum().mul(0.5).backward()
        opt.step()
        hist.append(w.detach().numpy().copy())
    return hist


# ---- SGD ----------------------------------------------------------------------------------------
def test_sgd_first_step_exact():
    _, hist = _fg_steps(lambda p: fg.optim.SGD(p, lr=0.1), 1)
    np.testing.assert_allclose(hist[0], W0 - 0.1 * _grad_np(W0), rtol=1e-15)


def test_sgd_momentum_first_steps_exact():
    lr, m = 0.05, 0.9
    _, hist = _fg_steps(lambda p: fg.optim.SGD(p, lr=lr, momentum=m), 3)
    w, buf = W0.copy(), None
    for k in range(3):
        g = _grad_np(w)
        buf = g.copy() if buf is None else m * buf + g
        w = w - lr * buf
        np.testing.assert_allclose(hist[k], w, rtol=1e-14, err_msg=f"step {k + 1}")


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_matches_torch(momentum):
    hist_t = _torch_steps(lambda torch, p: torch.optim.SGD(p, lr=0.05, momentum=momentum), 5)
    _, hist = _fg_steps(lambda p: fg.optim.SGD(p, lr=0.05, momentum=momentum), 5)
    for k, (a, b) in enumerate(zip(hist, hist_t)):
        np.testing.assert_allclose(a, b, rtol=1e-13, err_msg=f"step {k + 1}")


# ---- Adam ---------------------------------------------------------------------------------------
def test_adam_first_steps_exact():
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    _, hist = _fg_steps(lambda p: fg.optim.Adam(p, lr=lr), 3)
    # step 1 by hand: m_hat = g, v_hat = g**2, so the update is lr * g / (|g| + eps)
    g1 = _grad_np(W0)
    np.testing.assert_allclose(hist[0], W0 - lr * g1 / (np.abs(g1) + eps), rtol=1e-14)
    w, m, v = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
    for t in range(1, 4):
        g = _grad_np(w)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
        np.testing.assert_allclose(hist[t - 1], w, rtol=1e-13, err_msg=f"step {t}")


def test_adam_defaults():
    opt = fg.optim.Adam([fg.tensor(1.0, requires_grad=True)])
    assert (opt.b1, opt.b2, opt.eps) == (0.9, 0.999, 1e-8)
    assert opt.lr == 1e-3


def test_adam_matches_torch():
    hist_t = _torch_steps(lambda torch, p: torch.optim.Adam(p, lr=0.02), 6)
    _, hist = _fg_steps(lambda p: fg.optim.Adam(p, lr=0.02), 6)
    for k, (a, b) in enumerate(zip(hist, hist_t)):
        np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=f"step {k + 1}")


# ---- behaviour ------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda p: fg.optim.SGD(p, lr=0.1, momentum=0.5),
                                  lambda p: fg.optim.Adam(p, lr=0.1)], ids=["sgd", "adam"])
def test_step_updates_in_place_and_keeps_dtype(make):
    w, _ = _fg_steps(make, 2, dtype=np.float32)
    assert w.dtype == np.float32 and w.is_leaf and w.requires_grad
    w2 = fg.tensor(W0, requires_grad=True)
    buf = w2.data
    opt = make([w2])
    _loss(w2).backward()
    opt.step()
    assert w2.data is buf  # the parameter's storage is updated, not replaced
    assert not np.array_equal(buf, W0)


def test_zero_grad_resets_and_step_skips_params_without_grad():
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    b = fg.tensor([3.0], requires_grad=True)
    opt = fg.optim.SGD([a, b], lr=1.0)
    (a * a).sum().backward()
    opt.step()
    np.testing.assert_array_equal(a.data, [-1.0, -2.0])
    np.testing.assert_array_equal(b.data, [3.0])  # no gradient: untouched
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    (a * 2.0).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.data, [0.0, 0.0])


def test_gradients_accumulate_between_zero_grads():
    w = fg.tensor([1.0], requires_grad=True)
    opt = fg.optim.SGD([w], lr=0.1)
    (w * 2.0).sum().backward()
    (w * 3.0).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.data, [1.0 - 0.1 * 5.0])


def test_optimizer_validates_parameters():
    with pytest.raises(ValueError):
        fg.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError):
        fg.optim.SGD([fg.tensor([1.0])], lr=0.1)  # does not require grad
    x = fg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError):
        fg.optim.SGD([x * 2.0], lr=0.1)  # not a leaf
    with pytest.raises(ValueError):
        fg.optim.Adam([x], lr=-1.0)
    opt = fg.optim.SGD((p for p in [x]), lr=0.1)  # any iterable
    assert len(opt.params) == 1


# ---- convergence ----------------------------------------------------------------------------------
def _least_squares(seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((40, 4))
    w_true = np.array([1.0, -2.0, 0.5, 3.0])
    b = A @ w_true + 0.01 * rng.standard_normal(40)
    return A, b, np.linalg.lstsq(A, b, rcond=None)[0]


@pytest.mark.parametrize("make,steps", [
    (lambda p: fg.optim.SGD(p, lr=0.01), 400),
    (lambda p: fg.optim.SGD(p, lr=0.005, momentum=0.9), 300),
    (lambda p: fg.optim.Adam(p, lr=0.1), 600),
], ids=["sgd", "sgd-momentum", "adam"])
def test_converges_on_least_squares(make, steps):
    A, b, w_star = _least_squares()
    w = fg.zeros(4, requires_grad=True)
    bias = fg.zeros((), requires_grad=True)
    opt = make([w, bias])
    for _ in range(steps):
        opt.zero_grad()
        loss = fg.mean((fg.matmul(A, w) + bias - b) ** 2)
        loss.backward()
        opt.step()
    np.testing.assert_allclose(w.data, w_star, atol=2e-2)
    assert abs(bias.item()) < 2e-2
    assert loss.item() < 1e-3


# ---- the compiled in-place update (fastgraph.kernels.update.sub_scaled) ---------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (1,), (3,), (1023,), (1025,), (40, 77), (784, 256)])
def test_sgd_update_is_numpys_bit_for_bit(dtype, shape):
    rng = np.random.default_rng(len(shape) + sum(shape))
    p0 = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    w = fg.tensor(p0.copy(), requires_grad=True)
    w.grad = fg.tensor(g.copy())
    buf = w.data
    fg.optim.SGD([w], lr=0.01).step()
    ref = p0.copy()
    ref -= 0.01 * g  # what NumPy computes: lr rounded to the dtype, product rounded, subtracted
    assert w.data is buf and w.dtype == dtype
    np.testing.assert_array_equal(w.data.reshape(-1).view(np.uint8), ref.reshape(-1).view(np.uint8))
    np.testing.assert_array_equal(w.grad.data, g)  # the gradient is read, never modified


def test_sgd_update_other_layouts_and_dtypes_go_through_numpy():
    from fastgraph.kernels.update import sub_scaled
    p = np.arange(12.0).reshape(3, 4)
    assert sub_scaled(p.T, p.T.copy(), 0.5) == 0          # not C-contiguous
    assert sub_scaled(p, p.astype(np.float32), 0.5) == 0  # dtypes differ
    assert sub_scaled(p[:, :2].copy(), p[:, 2:].copy().reshape(6), 0.5) == 0  # shapes differ
    flat = np.arange(8.0)
    assert sub_scaled(flat[:4], flat[2:6], 0.5) == 0      # overlapping: NumPy's temporary rules
    same = np.arange(4.0)
    assert sub_scaled(same, same, 0.5) == 4                # g is p itself: fine element by element
    np.testing.assert_array_equal(same, np.arange(4.0) * 0.5)
    # a non-contiguous parameter (a view) still gets NumPy's update through the optimizer
    w = fg.tensor(np.ones((4, 4)), requires_grad=True)
    w.data = np.asfortranarray(w.data)
    w.grad = fg.tensor(np.full((4, 4), 2.0))
    fg.optim.SGD([w], lr=0.25).step()
    np.testing.assert_array_equal(w.data, np.full((4, 4), 0.5))


def test_sgd_update_floating_point_errors_warn_as_numpy_does():
    from fastgraph.kernels.update import sub_scaled
    p = np.ones(3000, np.float32)
    g = np.ones(3000, np.float32)
    g[2500] = 3e38  # overflows in the third block of 1024
    assert sub_scaled(p.copy(), g, 10.0) == 2048
    w = fg.tensor(p.copy(), requires_grad=True)
    w.grad = fg.tensor(g)
    with pytest.warns(RuntimeWarning, match="overflow"):
        fg.optim.SGD([w], lr=10.0).step()
    ref = p.copy()
    with np.errstate(over="ignore"):
        ref -= np.float32(10.0) * g
    np.testing.assert_array_equal(w.data, ref)
    w = fg.tensor(p.copy(), requires_grad=True)
    w.grad = fg.tensor(g)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        fg.optim.SGD([w], lr=10.0).step()
