"""Systematic eager checks of every op in ``optable``.

For every case, in float64 and float32:

* the forward value equals the NumPy/SciPy reference, and float32 stays float32;
* the eager gradient of ``sum(out * cotangent)`` matches central finite differences (float64)
  and PyTorch (both dtypes; skipped cleanly without torch);
* second order (``create_graph=True``): the gradient of ``sum(grad * w)`` matches finite
  differences of the first-order gradient, and torch's double backward;
* zero-gradient ops put zeros (not ``None``) in ``.grad``.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
from fastgraph import ops as F
from optable import CASES, CASES_BY_NAME, DESIGN_OPS, COVERED_OPS, as_list, case_params, \
    make_inputs, rng_for
from optable import close, leaf_tensors

DTYPES = [np.float64, np.float32]

# Known library bugs: case name -> reason.  Tests over these cases are strict xfails, so the
# suite stays green until the fix lands (then the mark must be removed: strict=True).
KNOWN_BUGS: dict[str, dict[str, str]] = {
    # test name -> {case name: reason}
}


def _marks(test: str, dtype=None) -> dict:
    bugs = dict(KNOWN_BUGS.get(test, {}))
    if dtype is not None:
        bugs.update(KNOWN_BUGS.get(f"{test}[{np.dtype(dtype).name}]", {}))
    return {name: pytest.mark.xfail(strict=True, reason=f"bug: {why}")
            for name, why in bugs.items()}


def params(test: str, predicate=None):
    """(case, dtype) parameters with the known-bug marks of ``test``."""
    out = []
    for dtype in DTYPES:
        for p in case_params(marks=_marks(test, dtype), predicate=predicate):
            (c,) = p.values
            out.append(pytest.param(c, dtype, id=f"{c.name}-{np.dtype(dtype).name}",
                                    marks=p.marks))
    return out


def params64(test: str, predicate=None):
    return case_params(marks=_marks(test, np.float64), predicate=predicate)


def _tol(dtype, case, kind="fwd"):
    if np.dtype(dtype) == np.float32:
        base = {"fwd": (2e-5, 2e-5), "grad": (2e-3, 2e-4), "fd": None}[kind]
    else:
        base = {"fwd": (1e-12, 1e-12), "grad": (1e-9, 1e-10), "fd": (1e-6, 1e-7)}[kind]
    return base[0] * case.tol, base[1] * case.tol


# ---- helpers -----------------------------------------------------------------------------------
def _cotangents(case, outs, rng):
    return [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in outs]


def _fg_grads(case, arrays, cots=None, seed=1):
    """Eager ``(outputs, cotangents, grads)`` of ``sum(out * cot)``, via ``backward(gradient=)``."""
    ts = leaf_tensors(case, arrays)
    outs = as_list(case.fn(*ts))
    if cots is None:
        cots = _cotangents(case, [o.data for o in outs], rng_for(case, seed))
    fg.autograd.backward(outs, [fg.tensor(c) for c in cots])
    return outs, cots, [ts[i].grad for i in case.diff]


def _phi_ref(case, arrays, cots):
    """``sum(ref(*arrays) * cot)`` in float64 with the NumPy reference."""
    outs = as_list(case.ref(*arrays))
    return float(sum(np.sum(np.asarray(o, dtype=np.float64) * c) for o, c in zip(outs, cots)))


def _numeric_grad(f, arrays, i, eps=1e-6):
    x = arrays[i]
    g = np.zeros(x.shape)
    flat = g.reshape(-1)
    for k in range(x.size):
        plus = [a.copy() for a in arrays]
        minus = [a.copy() for a in arrays]
        plus[i].reshape(-1)[k] += eps
        minus[i].reshape(-1)[k] -= eps
        flat[k] = (f(plus) - f(minus)) / (2 * eps)
    return g


def _torch_inputs(torch, case, arrays):
    ts = []
    for i, a in enumerate(arrays):
        t = torch.from_numpy(np.array(a))
        if i in case.diff:
            t.requires_grad_(True)
        ts.append(t)
    return ts


def _need_torch(case):
    torch = pytest.importorskip("torch")
    if case.torch is None:
        pytest.skip(f"{case.name}: no PyTorch equivalent")
    return torch


# ---- the table covers the core vocabulary ---------------------------------------------------------------
def test_table_covers_every_design_op():
    missing = sorted(set(DESIGN_OPS) - set(COVERED_OPS))
    assert not missing, f"ops of the core vocabulary without a case in optable: {missing}"


def test_table_has_broadcasting_and_0d_cases():
    shapes = {c.name: [s for s, _ in c.args] for c in CASES}
    assert any(() in s for s in shapes.values())
    assert any(len(s) == 2 and s[0] != s[1] for s in shapes.values())


def test_make_inputs_is_seeded():
    c = CASES_BY_NAME["matmul_batched"]
    a = make_inputs(c, np.float64, np.random.default_rng(5))
    b = make_inputs(c, np.float64, np.random.default_rng(5))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    for x in make_inputs(c, np.float32):
        assert x.dtype == np.float32


# ---- forward -----------------------------------------------------------------------------------
@pytest.mark.parametrize("case,dtype", params("test_forward_matches_reference"))
def test_forward_matches_reference(case, dtype):
    arrays = make_inputs(case, dtype)
    outs = as_list(case.fn(*leaf_tensors(case, arrays)))
    refs = as_list(case.ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a
                              for a in arrays]))
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        assert isinstance(o, fg.Tensor), f"{case.name}: got {type(o).__name__}, not a Tensor"
        close(o.data, r, *_tol(dtype, case, "fwd"), what=f"{case.name} forward")


@pytest.mark.parametrize("case", params64("test_forward_numpy_in_numpy_out",
                                          predicate=lambda c: not c.tensor_only))
def test_forward_numpy_in_numpy_out(case):
    """On plain ndarrays every op returns exactly what NumPy returns (no Tensor)."""
    arrays = make_inputs(case, np.float64)
    outs = as_list(case.fn(*arrays))
    refs = as_list(case.ref(*arrays))
    for o, r in zip(outs, refs):
        assert not isinstance(o, fg.Tensor)
        close(o, r, 1e-12, 1e-12, what=f"{case.name} numpy forward")


@pytest.mark.parametrize("case", case_params(marks=_marks("test_float32_stays_float32")))
def test_float32_stays_float32(case):
    arrays = make_inputs(case, np.float32)
    outs, _, grads = _fg_grads(case, arrays)
    for o in outs:
        want = np.float32 if case.out_dtype is None else case.out_dtype
        assert o.dtype == want, f"{case.name}: forward gave {o.dtype}"
    for i, g in zip(case.diff, grads):
        assert g is not None, f"{case.name}: no gradient for argument {i}"
        assert g.dtype == np.float32, f"{case.name}: grad of argument {i} is {g.dtype}"
        assert g.shape == arrays[i].shape


# ---- first order -------------------------------------------------------------------------------
@pytest.mark.parametrize("case", params64("test_grad_matches_finite_differences"))
def test_grad_matches_finite_differences(case):
    arrays = make_inputs(case, np.float64)
    outs, cots, grads = _fg_grads(case, arrays)
    for i, g in zip(case.diff, grads):
        assert g is not None, f"{case.name}: no gradient for argument {i}"
        assert isinstance(g, fg.Tensor) and g.grad_fn is None
        num = _numeric_grad(lambda xs: _phi_ref(case, xs, cots), arrays, i)
        close(g.data, num, *_tol(np.float64, case, "fd"), what=f"{case.name} d/darg{i}")


@pytest.mark.parametrize("case,dtype", params("test_grad_matches_torch"))
def test_grad_matches_torch(case, dtype):
    torch = _need_torch(case)
    arrays = make_inputs(case, dtype)
    outs, cots, grads = _fg_grads(case, arrays)
    tin = _torch_inputs(torch, case, arrays)
    touts = as_list(case.torch(*tin))
    for o, to in zip(outs, touts):
        close(o.data, to.detach().numpy(), *_tol(dtype, case, "grad"),
               what=f"{case.name} forward vs torch")
    torch.autograd.backward(touts, [torch.from_numpy(c) for c in cots])
    for i, g in zip(case.diff, grads):
        tg = tin[i].grad
        tg = np.zeros(arrays[i].shape) if tg is None else tg.numpy()
        close(g.data, tg, *_tol(dtype, case, "grad"), what=f"{case.name} d/darg{i} vs torch")


@pytest.mark.parametrize("case", case_params(marks=_marks("test_zero_gradient_ops"),
                                             predicate=lambda c: c.zero_grad))
def test_zero_gradient_ops(case):
    arrays = make_inputs(case, np.float64)
    x = fg.tensor(arrays[0], requires_grad=True)
    y = case.fn(x)
    y.sum().backward()
    assert x.grad is not None, f"{case.name}: .grad is None, expected zeros"
    np.testing.assert_array_equal(x.grad.data, np.zeros_like(arrays[0]))


@pytest.mark.parametrize("cmp", ["<", "<=", ">", ">=", "==", "!="])
def test_comparisons_are_boolean_and_carry_no_gradient(cmp):
    x = fg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    c = eval(f"x {cmp} 0.5")
    assert c.dtype == np.bool_
    assert not c.requires_grad
    y = (x * c).sum()  # the mask multiplies: gradient flows through x only
    y.backward()
    np.testing.assert_array_equal(x.grad.data, eval(f"np.array([1.0, -2.0, 3.0]) {cmp} 0.5")
                                  .astype(float))


# ---- second order ------------------------------------------------------------------------------
def _second_order_fg(case, arrays, cots, ws):
    ts = leaf_tensors(case, arrays)
    outs = as_list(case.fn(*ts))
    leaves = [ts[i] for i in case.diff]
    gs = fg.autograd.grad(outs, leaves, [fg.tensor(c) for c in cots], create_graph=True,
                          allow_unused=True)
    total = None
    for g, w in zip(gs, ws):
        if g is None or not g.requires_grad:
            continue
        term = (g * fg.tensor(w)).sum()
        total = term if total is None else total + term
    if total is None:  # the gradient does not depend on the inputs: second derivative is zero
        return [np.zeros(a.shape) for a in (arrays[i] for i in case.diff)]
    hs = fg.autograd.grad(total, leaves, allow_unused=True)
    return [np.zeros(arrays[i].shape) if h is None else h.data
            for i, h in zip(case.diff, hs)]


def _first_order_dot(case, arrays, cots, ws):
    ts = leaf_tensors(case, arrays)
    outs = as_list(case.fn(*ts))
    leaves = [ts[i] for i in case.diff]
    gs = fg.autograd.grad(outs, leaves, [fg.tensor(c) for c in cots], allow_unused=True)
    return float(sum(np.sum(g.data * w) for g, w in zip(gs, ws) if g is not None))


def _second_order_setup(case, dtype):
    arrays = make_inputs(case, dtype)
    rng = rng_for(case, 7)
    refs = as_list(case.ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a
                              for a in arrays]))
    cots = [rng.standard_normal(np.shape(r)).astype(dtype) for r in refs]
    ws = [rng.standard_normal(arrays[i].shape).astype(dtype) for i in case.diff]
    return arrays, cots, ws


def _order2(c):
    return c.order2 and not c.zero_grad


@pytest.mark.parametrize("case", params64("test_second_order_matches_finite_differences",
                                          predicate=_order2))
def test_second_order_matches_finite_differences(case):
    """d/dx sum(grad(x) * w), by create_graph=True, vs central differences of the gradient."""
    arrays, cots, ws = _second_order_setup(case, np.float64)
    hs = _second_order_fg(case, arrays, cots, ws)
    for i, h in zip(case.diff, hs):
        num = _numeric_grad(lambda xs: _first_order_dot(case, xs, cots, ws), arrays, i)
        close(h, num, 1e-5 * case.tol, 1e-6 * case.tol, what=f"{case.name} second order arg{i}")


@pytest.mark.parametrize("case,dtype", params("test_second_order_matches_torch",
                                              predicate=_order2))
def test_second_order_matches_torch(case, dtype):
    torch = _need_torch(case)
    arrays, cots, ws = _second_order_setup(case, dtype)
    hs = _second_order_fg(case, arrays, cots, ws)
    tin = _torch_inputs(torch, case, arrays)
    touts = as_list(case.torch(*tin))
    leaves = [tin[i] for i in case.diff]
    tgs = torch.autograd.grad(touts, leaves, [torch.from_numpy(c) for c in cots],
                              create_graph=True, allow_unused=True)
    total = sum((g * torch.from_numpy(w)).sum() for g, w in zip(tgs, ws)
                if g is not None and g.requires_grad)
    if isinstance(total, int):
        ths = [None] * len(leaves)
    else:
        ths = torch.autograd.grad(total, leaves, allow_unused=True)
    for i, h, th in zip(case.diff, hs, ths):
        th = np.zeros(arrays[i].shape) if th is None else th.detach().numpy(force=True)
        rtol, atol = _tol(dtype, case, "grad")
        close(h, th, rtol * 10, atol * 10, what=f"{case.name} second order arg{i} vs torch")


@pytest.mark.parametrize("case", params64("test_second_order_dtype_float32",
                                          predicate=_order2))
def test_second_order_dtype_float32(case):
    arrays, cots, ws = _second_order_setup(case, np.float32)
    ts = leaf_tensors(case, arrays)
    outs = as_list(case.fn(*ts))
    gs = fg.autograd.grad(outs, [ts[i] for i in case.diff], [fg.tensor(c) for c in cots],
                          create_graph=True, allow_unused=True)
    for g in gs:
        assert g is not None and g.dtype == np.float32


# ---- numerical stability -----------------------------------------------------------------------
def test_softmax_family_stable_for_huge_logits():
    x = fg.tensor([[1000.0, 0.0, -1000.0], [1e4, 1e4, 1e4]], requires_grad=True)
    s = fg.softmax(x)
    ls = fg.log_softmax(x)
    np.testing.assert_allclose(s.data, [[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]], atol=1e-15)
    np.testing.assert_allclose(ls.data, [[0.0, -1000.0, -2000.0], [-np.log(3)] * 3], rtol=1e-12)
    ce = fg.cross_entropy(x, np.array([2, 0]))
    np.testing.assert_allclose(ce.item(), (2000.0 + np.log(3)) / 2, rtol=1e-12)
    ce.backward()
    assert np.all(np.isfinite(x.grad.data))
    np.testing.assert_allclose(x.grad.data, [[0.5, 0.0, -0.5], [1 / 6 - 0.5, 1 / 6, 1 / 6]],
                               atol=1e-12)
    lse = fg.logsumexp(fg.tensor([1000.0, 1000.0]))
    np.testing.assert_allclose(lse.item(), 1000.0 + np.log(2), rtol=1e-14)


def test_cross_entropy_rejects_float_labels():
    with pytest.raises(TypeError, match="integer"):
        fg.cross_entropy(fg.randn(3, 2), np.array([0.0, 1.0, 1.0]))


# ---- edge cases outside the table's smooth domains ---------------------------------------------------
@pytest.mark.parametrize("data,axis,expected", [
    ([0.0, 2.0, 3.0], None, [6.0, 0.0, 0.0]),
    ([[0.0, 2.0], [0.0, 0.0], [4.0, 5.0]], 1, [[2.0, 0.0], [0.0, 0.0], [5.0, 4.0]]),
])
def test_prod_gradient_with_zero_entries(data, axis, expected):
    x = fg.tensor(data, requires_grad=True)
    fg.prod(x, axis=axis).sum().backward()
    np.testing.assert_array_equal(x.grad.data, expected)


def test_ties_share_gradient_like_torch():
    x = fg.tensor([1.0, 3.0, 3.0], requires_grad=True)
    fg.maximum(x, fg.tensor([1.0, 0.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [0.5, 1.0, 0.5])
    y = fg.tensor([[2.0, 2.0], [1.0, 0.0]], requires_grad=True)
    fg.max(y, axis=1).sum().backward()
    np.testing.assert_array_equal(y.grad.data, [[0.5, 0.5], [1.0, 0.0]])


def test_kinks_use_torch_subgradients():
    x = fg.tensor([0.0, 0.0], requires_grad=True)
    (fg.abs(x) + fg.relu(x)).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.0])
    c = fg.tensor([-0.5, 0.5], requires_grad=True)
    fg.clip(c, -0.5, 0.5).sum().backward()  # at the bounds the gradient passes (torch.clamp)
    np.testing.assert_array_equal(c.grad.data, [1.0, 1.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_op_equals_its_composition(dtype, rng):
    """``fg.cross_entropy`` is one op; its value is ``-mean(pick(log_softmax))`` bit for bit, and
    its gradient, eager and static, that composition's gradient to rounding."""
    x = (rng.standard_normal((37, 6)) * 5).astype(dtype)
    labels = rng.integers(0, 6, 37)
    t1, t2 = fg.tensor(x, requires_grad=True), fg.tensor(x, requires_grad=True)
    fused = fg.cross_entropy(t1, labels)
    composed = -fg.mean(F.pick(fg.log_softmax(t2), labels))
    assert fused.dtype == dtype
    assert fused.item() == composed.item()
    fused.backward()
    composed.backward()
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(t1.grad.data, t2.grad.data, rtol=tol, atol=tol)
    assert t1.grad.dtype == dtype
    g = fg.Graph()
    with g.as_default():
        xp = fg.placeholder(dtype, (None, 6))
        lp = fg.placeholder(np.int64, (None,))
        loss = fg.cross_entropy(xp, lp)
        gx = fg.gradients(loss, [xp])[0]
        val, grad = fg.Session(g).run([loss, gx], {xp: x, lp: labels})
    assert val == fused.item()
    np.testing.assert_allclose(grad, t1.grad.data, rtol=tol, atol=tol)


def test_cross_entropy_second_order_through_the_seed(rng):
    """The loss scaled by a function of the logits: the second derivative flows through the
    gradient op's seed as well as its logits (eager and traced), checked by finite differences."""
    labels, w = np.array([0, 2, 1, 0]), rng.standard_normal((4, 3))

    def f(x):
        return fg.sum(fg.sin(x)) * fg.cross_entropy(x, labels)

    def h(x):
        return fg.sum(fg.grad(f)(x) * w)

    x = rng.standard_normal((4, 3))
    eps, fd = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        fd[i] = (float(h(xp)) - float(h(xm))) / (2 * eps)
    np.testing.assert_allclose(fg.grad(h)(x), fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(fg.function(fg.grad(h))(x), fd, rtol=1e-6, atol=1e-7)
