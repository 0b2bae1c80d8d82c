"""The linear-algebra op table (``linalg_table``), case by case:

* values: plain NumPy in gives exactly NumPy's/SciPy's result, Tensors give the same values
  (float64 exactly, float32 kept float32 and close);
* first-order gradients against central finite differences (float64), PyTorch and, where
  PyTorch lacks the function, HIPS autograd;
* second order (``create_graph=True``) against finite differences of the first-order gradient;
* static graphs and ``fg.function`` traces equal eager values and gradients, and static shapes
  with unknown batch dimensions agree with the values run.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.scipy.linalg as spla
from linalg_table import CASES, FUNCTIONS
from optable import as_list, case_params, make_inputs, rng_for
from optable import close, leaf_tensors


def _cotangents(case, outs):
    rng = rng_for(case, 1)
    return [rng.standard_normal(np.shape(o)) for o in outs]


def _loss_fn(case, cots):
    def loss(*xs):
        outs = as_list(case.fn(*xs))
        total = 0.0
        for o, c in zip(outs, cots):
            if np.dtype(o.dtype).kind == "f":
                total = total + fg.sum(o * c)
        return total
    return loss


def _eager_grads(case, arrays, cots):
    ts = leaf_tensors(case, arrays)
    loss = _loss_fn(case, cots)(*ts)
    if case.zero_grad:
        return [np.zeros(a.shape) for a in arrays]
    loss.backward()
    return [ts[i].grad.data for i in case.diff]


def _ref_phi(case, arrays, cots):
    outs = as_list(case.ref(*arrays))
    return float(sum(np.sum(np.asarray(o, np.float64) * c) for o, c in zip(outs, cots)))


def _numeric_grad(f, arrays, i, eps=1e-6):
    g = np.zeros(arrays[i].shape)
    for k in range(arrays[i].size):
        plus = [a.copy() for a in arrays]
        minus = [a.copy() for a in arrays]
        plus[i].reshape(-1)[k] += eps
        minus[i].reshape(-1)[k] -= eps
        g.reshape(-1)[k] = (f(plus) - f(minus)) / (2 * eps)
    return g


def _setup(case):
    arrays = make_inputs(case, np.float64)
    cots = _cotangents(case, as_list(case.ref(*arrays)))
    return arrays, cots


# ---- coverage ------------------------------------------------------------------------------------
def test_table_covers_every_function():
    covered = {c.op for c in CASES}
    assert not set(FUNCTIONS) - covered, sorted(set(FUNCTIONS) - covered)
    for name in spla.__all__:
        assert name in covered or f"scipy.{name}" in covered, f"spla.{name} has no case"
    for name in ("cholesky", "eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv", "lstsq",
                 "matrix_power", "cond", "multi_dot"):
        assert name in fg.linalg.__all__ and callable(getattr(fg.linalg, name))


# ---- values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", case_params(CASES))
def test_numpy_in_gives_numpys_result_and_tensors_the_same_values(case):
    arrays = make_inputs(case, np.float64)
    refs = as_list(case.ref(*arrays))
    plain = as_list(case.fn(*arrays))
    outs = as_list(case.fn(*leaf_tensors(case, arrays)))
    assert len(plain) == len(refs) == len(outs)
    for p, o, r in zip(plain, outs, refs):
        assert not isinstance(p, fg.Tensor)
        np.testing.assert_array_equal(p, r, err_msg=f"{case.name}: NumPy in")
        assert isinstance(o, fg.Tensor)
        np.testing.assert_array_equal(o.data, r, err_msg=f"{case.name}: Tensors")


@pytest.mark.parametrize("case", case_params(CASES))
def test_float32_stays_float32(case):
    arrays = make_inputs(case, np.float32)
    refs = as_list(case.ref(*[a.astype(np.float64) for a in arrays]))
    ts = leaf_tensors(case, arrays)
    outs = as_list(case.fn(*ts))
    ref32 = as_list(case.ref(*arrays))     # (SciPy's det of float32 is float64)
    for o, r, r32 in zip(outs, refs, ref32):
        if np.dtype(o.dtype).kind == "f":
            assert o.dtype == np.asarray(r32).dtype, f"{case.name}: {o.dtype}"
        close(o.data, r, 2e-4 * case.tol, 2e-4 * case.tol, f"{case.name} float32")
    if not case.zero_grad:
        sum(fg.sum(o) for o in outs if np.dtype(o.dtype).kind == "f").backward()
        for i in case.diff:
            assert ts[i].grad.dtype == np.float32


# ---- first order -------------------------------------------------------------------------------
@pytest.mark.parametrize("case", case_params(CASES))
def test_grad_matches_finite_differences(case):
    arrays, cots = _setup(case)
    grads = _eager_grads(case, arrays, cots)
    for i, g in zip(case.diff, grads):
        num = _numeric_grad(lambda xs: _ref_phi(case, xs, cots), arrays, i)
        close(g, num, 1e-6 * case.tol, 1e-7 * case.tol, f"{case.name} d/darg{i}")


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: c.torch is not None))
def test_grad_matches_torch(case):
    torch = pytest.importorskip("torch")
    arrays, cots = _setup(case)
    grads = _eager_grads(case, arrays, cots)
    tin = [torch.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(arrays)]
    touts = as_list(case.torch(*tin))
    total = sum((o * torch.from_numpy(c)).sum() for o, c in zip(touts, cots))
    if case.zero_grad:
        assert not total.requires_grad or all(
            t.grad is None or not t.grad.any() for t in tin)
        return
    total.backward()
    for i, g in zip(case.diff, grads):
        tg = tin[i].grad
        tg = np.zeros(arrays[i].shape) if tg is None else tg.numpy()
        close(g, tg, 1e-8 * case.tol, 1e-9 * case.tol, f"{case.name} d/darg{i} vs torch")


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: c.autograd is not None))
def test_grad_matches_autograd(case):
    autograd = pytest.importorskip("autograd")
    arrays, cots = _setup(case)
    grads = _eager_grads(case, arrays, cots)

    def phi(*xs):
        outs = as_list(case.autograd(*xs))
        return sum(autograd.numpy.sum(o * c) for o, c in zip(outs, cots))

    for i, g in zip(case.diff, grads):
        ag = autograd.grad(phi, i)(*arrays)
        close(g, ag, 1e-8 * case.tol, 1e-9 * case.tol, f"{case.name} d/darg{i} vs autograd")


# ---- second order ------------------------------------------------------------------------------
def _grad_dot(case, arrays, cots, ws, create_graph=False):
    ts = leaf_tensors(case, arrays)
    loss = _loss_fn(case, cots)(*ts)
    leaves = [ts[i] for i in case.diff]
    gs = fg.autograd.grad(loss, leaves, create_graph=create_graph, allow_unused=True)
    terms = [fg.sum(g * w) for g, w in zip(gs, ws) if g is not None]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total, leaves


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: c.order2
                                             and not c.zero_grad))
def test_second_order_matches_finite_differences(case):
    arrays, cots = _setup(case)
    rng = rng_for(case, 7)
    ws = [rng.standard_normal(arrays[i].shape) for i in case.diff]
    total, leaves = _grad_dot(case, arrays, cots, ws, create_graph=True)
    # (a gradient that does not depend on the inputs: a linear function, second order 0)
    hs = fg.autograd.grad(total, leaves, allow_unused=True) if total.requires_grad else \
        [None] * len(leaves)
    for i, h in zip(case.diff, hs):
        h = np.zeros(arrays[i].shape) if h is None else h.data
        num = _numeric_grad(lambda xs: float(_grad_dot(case, xs, cots, ws)[0].data), arrays, i)
        close(h, num, 1e-5 * case.tol, 1e-6 * case.tol, f"{case.name} second order arg{i}")


# ---- static and traced ----------------------------------------------------------------------
@pytest.mark.parametrize("case", case_params(CASES))
def test_static_equals_eager(case):
    arrays, cots = _setup(case)
    eager_out = [o.data for o in as_list(case.fn(*[fg.tensor(a) for a in arrays]))]
    eager_grads = _eager_grads(case, arrays, cots)
    g = fg.Graph()
    with g.as_default():
        phs = [fg.placeholder(a.dtype, a.shape) for a in arrays]
        outs = as_list(case.fn(*phs))
        loss = _loss_fn(case, cots)(*phs)
        grads = fg.gradients(loss, [phs[i] for i in case.diff])
        with fg.Session() as sess:
            feed = dict(zip(phs, arrays))
            vals = sess.run(outs, feed)
            gvals = sess.run([x for x in grads if x is not None], feed)
    for v, e in zip(vals, eager_out):
        assert np.shape(v) == np.shape(e)
        np.testing.assert_allclose(v, e, rtol=1e-10, atol=1e-12)
    it = iter(gvals)
    for x, e in zip(grads, eager_grads):
        if x is None:
            assert case.zero_grad or not np.any(e)
            continue
        np.testing.assert_allclose(next(it), e, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: not c.zero_grad))
def test_function_equals_eager(case):
    arrays, cots = _setup(case)
    loss = _loss_fn(case, cots)
    argnums = tuple(case.diff)
    eager = fg.value_and_grad(loss, argnums)(*arrays)
    traced = fg.function(fg.value_and_grad(loss, argnums))
    for _ in range(2):   # the trace, then the cached plan
        val, grads = traced(*arrays)
        np.testing.assert_allclose(val, eager[0], rtol=1e-10, atol=1e-12)
        for g, e in zip(grads, eager[1]):
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("case", case_params(CASES))
def test_static_shapes_with_unknown_batch_dimensions(case):
    arrays = make_inputs(case, np.float64)
    g = fg.Graph()
    with g.as_default():
        # the leading (batch) axes of matrices unknown; vectors and scalars as they are
        phs = [fg.placeholder(a.dtype, (None,) * (a.ndim - 2) + a.shape[-2:] if a.ndim > 2
                              else a.shape) for a in arrays]
        outs = as_list(case.fn(*phs))
        with fg.Session() as sess:
            vals = sess.run(outs, dict(zip(phs, arrays)))
    for o, v in zip(outs, vals):
        assert o.shape is not None and len(o.shape) == np.ndim(v), (o.shape, np.shape(v))
        for d, n in zip(o.shape, np.shape(v)):
            assert d is None or d == n, (case.name, o.shape, np.shape(v))
