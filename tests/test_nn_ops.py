"""Every case of ``nn_table`` (the deep-learning ops, PyTorch's semantics):

* against PyTorch in float64 and float32: the forward value and the gradient of
  ``sum(out * cotangent)`` for each differentiable argument, and second order (the gradient of
  ``sum(grad * w)``, by ``create_graph=True`` against PyTorch's double backward);
* against central finite differences (float64), along random directions;
* eager == static ``Session`` == ``fg.function``: the gradients bit for bit (float32);
* float32 stays float32.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
from nn_table import NN_CASES, nn_case_params
from optable import as_list, make_inputs, rng_for
from optable import close, leaf_tensors

DTYPES = [np.float64, np.float32]
# PyTorch's warnings: even kernels with padding='same', kl_div's 'mean'
pytestmark = [pytest.mark.filterwarnings("ignore:Using padding='same'"),
              pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")]
#: cases whose gradient is not the derivative of their value, by definition
NOT_A_DERIVATIVE = {"embedding-padding_idx"}   # the padding row gets no gradient


def _tol(dtype, case):
    base = (1e-10, 1e-10) if np.dtype(dtype) == np.float64 else (2e-4, 2e-4)
    return base[0] * case.tol, base[1] * case.tol


def _cots(case, outs, seed=1):
    rng = rng_for(case, seed)
    return [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in outs]


def _eager(case, arrays, cots=None):
    ts = leaf_tensors(case, arrays)
    outs = as_list(case.fn(*ts))
    if cots is None:
        cots = _cots(case, [o.data for o in outs])
    fg.autograd.backward(outs, [fg.tensor(c) for c in cots])
    return [o.data for o in outs], cots, [ts[i].grad.data for i in case.diff]


def _torch_run(case, arrays, cots):
    torch = pytest.importorskip("torch")
    tin = [torch.from_numpy(np.array(a)).requires_grad_(i in case.diff)
           for i, a in enumerate(arrays)]
    touts = as_list(case.torch(*tin))
    torch.autograd.backward(touts, [torch.from_numpy(c) for c in cots])
    return [t.detach().numpy() for t in touts], [tin[i].grad.numpy() for i in case.diff]


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("case", nn_case_params())
def test_matches_torch(case, dtype):
    arrays = make_inputs(case, dtype)
    outs, cots, grads = _eager(case, arrays)
    touts, tgrads = _torch_run(case, arrays, cots)
    rtol, atol = _tol(dtype, case)
    for o, t in zip(outs, touts):
        assert o.dtype == dtype, f"{case.name}: forward gave {o.dtype}"
        close(o, t, rtol, atol, f"{case.name} forward")
    for i, g, t in zip(case.diff, grads, tgrads):
        assert g.dtype == dtype, f"{case.name}: gradient of argument {i} is {g.dtype}"
        close(g, t, rtol, atol, f"{case.name} d/darg{i}")


@pytest.mark.parametrize("case", nn_case_params(lambda c: c.name not in NOT_A_DERIVATIVE))
def test_gradient_matches_finite_differences(case):
    """<grad, v> against (f(x + e v) - f(x - e v)) / 2e along two random directions per
    differentiable argument (float64)."""
    arrays = make_inputs(case, np.float64)
    _, cots, grads = _eager(case, arrays)
    rng = rng_for(case, 3)
    eps = 1e-6

    def phi(xs):
        return float(sum(np.sum(np.asarray(o) * c) for o, c in zip(as_list(case.fn(*xs)), cots)))

    for i, g in zip(case.diff, grads):
        for _ in range(2):
            v = rng.standard_normal(arrays[i].shape)
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i] = plus[i] + eps * v
            minus[i] = minus[i] - eps * v
            fd = (phi(plus) - phi(minus)) / (2 * eps)
            assert abs(float(np.sum(g * v)) - fd) <= 1e-6 * max(1.0, abs(fd)), \
                f"{case.name} d/darg{i}: {float(np.sum(g * v))} vs finite differences {fd}"


@pytest.mark.parametrize("case", nn_case_params(lambda c: c.order2))
def test_second_order_matches_torch(case):
    torch = pytest.importorskip("torch")
    arrays = make_inputs(case, np.float64)
    rng = rng_for(case, 7)
    ts = leaf_tensors(case, arrays)
    outs = as_list(case.fn(*ts))
    cots = [rng.standard_normal(o.shape) for o in outs]
    ws = [rng.standard_normal(arrays[i].shape) for i in case.diff]
    leaves = [ts[i] for i in case.diff]
    gs = fg.autograd.grad(outs, leaves, [fg.tensor(c) for c in cots], create_graph=True)
    total = sum((g * fg.tensor(w)).sum() for g, w in zip(gs, ws) if g.requires_grad)
    tin = [torch.from_numpy(np.array(a)).requires_grad_(i in case.diff)
           for i, a in enumerate(arrays)]
    touts = as_list(case.torch(*tin))
    tleaves = [tin[i] for i in case.diff]
    tgs = torch.autograd.grad(touts, tleaves, [torch.from_numpy(c) for c in cots],
                              create_graph=True)
    ttotal = sum((g * torch.from_numpy(w)).sum() for g, w in zip(tgs, ws) if g.requires_grad)
    # (a gradient that does not depend on the inputs: second derivatives zero)
    hs = [None] * len(leaves) if isinstance(total, int) else \
        fg.autograd.grad(total, leaves, allow_unused=True)
    ths = [None] * len(leaves) if isinstance(ttotal, int) or not ttotal.requires_grad else \
        torch.autograd.grad(ttotal, tleaves, allow_unused=True)
    for i, h, th in zip(case.diff, hs, ths):
        h = np.zeros(arrays[i].shape) if h is None else h.data
        th = np.zeros(arrays[i].shape) if th is None else th.detach().numpy(force=True)
        close(h, th, 1e-9, 1e-9, f"{case.name} second order d/darg{i}")


def _static(case, arrays, cots, disable):
    g = fg.Graph()
    with g.as_default():
        nodes = [fg.placeholder(a.dtype, a.shape) for a in arrays]
        souts = as_list(case.fn(*nodes))
        sgrads = fg.gradients(souts, [nodes[i] for i in case.diff], grad_ys=cots)
        res = fg.Session(g, disable=disable).run(souts + sgrads, dict(zip(nodes, arrays)))
    return res[:len(souts)], res[len(souts):]


#: fused elementwise kernels evaluate within a few ulp of NumPy's (docs/fusion.md)
FUSED_RTOL = 2e-6


@pytest.mark.parametrize("case", nn_case_params())
def test_eager_static_and_function_agree(case):
    """The values and gradients of ``sum(out * cot)`` (float32): bit for bit eager, in a
    ``Session`` and in ``fg.function`` without fusion; within a few ulp with it (the fused
    kernels' own transcendentals and summation order)."""
    arrays = make_inputs(case, np.float32)
    outs, cots, grads = _eager(case, arrays)

    def loss(*xs):
        return sum(fg.sum(o * c) for o, c in zip(as_list(case.fn(*xs)), cots))

    for disable, exact in ((("fuse",), True), ((), False)):
        souts, sgrads = _static(case, arrays, cots, disable)
        value, fgrads = fg.function(fg.value_and_grad(loss, argnums=case.diff),
                                    disable=disable)(*arrays)
        np.testing.assert_allclose(value, float(loss(*arrays)), rtol=1e-5)
        pairs = [(s, o, "static forward") for s, o in zip(souts, outs)]
        pairs += [(s, e, f"static d/darg{i}") for i, e, s in zip(case.diff, grads, sgrads)]
        pairs += [(f, e, f"fg.function d/darg{i}") for i, e, f in zip(case.diff, grads, fgrads)]
        for got, want, what in pairs:
            what = f"{case.name}: {what}" + ("" if exact else " (fused)")
            if exact:
                np.testing.assert_array_equal(got, want, err_msg=what)
            else:
                close(got, want, FUSED_RTOL, FUSED_RTOL, what)
