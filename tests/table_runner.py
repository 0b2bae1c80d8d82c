"""The checks that run a table of function cases (``linalg_table``, ``special_table``,
``stats_table``...: ``OpCase`` lines whose ``fn`` takes and returns arrays) against its references,
one function per check, shared by ``test_linalg_table`` and ``test_special_table``:

* the loss is ``sum(out * cotangent)`` over the floating-point outputs, with random cotangents;
* gradients are compared with central finite differences of the reference, PyTorch and HIPS
  autograd; second order with finite differences of a first-order gradient's projection;
* a static graph and an ``fg.function`` trace give the eager values and gradients.

Each test module parametrises the checks over its own cases and tolerances.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
from optable import as_list, close, leaf_tensors, make_inputs, rng_for


def cotangents(case, outs):
    rng = rng_for(case, 1)
    return [rng.standard_normal(np.shape(o)) for o in outs]


def loss_fn(case, cots):
    def loss(*xs):
        outs = as_list(case.fn(*xs))
        total = 0.0
        for o, c in zip(outs, cots):
            if np.dtype(o.dtype).kind == "f":
                total = total + fg.sum(o * c)
        return total
    return loss


def eager_grads(case, arrays, cots):
    """The loss's gradient with respect to each differentiated argument, on the tape."""
    ts = leaf_tensors(case, arrays)
    loss = loss_fn(case, cots)(*ts)
    if case.zero_grad:
        return [np.zeros(arrays[i].shape) for i in case.diff]
    loss.backward()
    return [ts[i].grad.data for i in case.diff]


def ref_phi(case, arrays, cots):
    outs = as_list(case.ref(*arrays))
    return float(sum(np.sum(np.asarray(o, np.float64) * c) for o, c in zip(outs, cots)))


def numeric_grad(f, arrays, i, eps=1e-6):
    """Central finite differences of ``f(arrays)`` in ``arrays[i]``."""
    g = np.zeros(arrays[i].shape)
    for k in range(arrays[i].size):
        plus = [a.copy() for a in arrays]
        minus = [a.copy() for a in arrays]
        plus[i].reshape(-1)[k] += eps
        minus[i].reshape(-1)[k] -= eps
        g.reshape(-1)[k] = (f(plus) - f(minus)) / (2 * eps)
    return g


def setup(case):
    """float64 inputs and one cotangent per output."""
    arrays = make_inputs(case, np.float64)
    cots = cotangents(case, as_list(case.ref(*arrays)))
    return arrays, cots


def grad_dot(case, arrays, cots, ws, create_graph=False):
    """``sum_i <d loss / d arg_i, ws[i]>`` and the leaves it was differentiated in."""
    ts = leaf_tensors(case, arrays)
    loss = loss_fn(case, cots)(*ts)
    leaves = [ts[i] for i in case.diff]
    gs = fg.autograd.grad(loss, leaves, create_graph=create_graph, allow_unused=True)
    terms = [fg.sum(g * w) for g, w in zip(gs, ws) if g is not None]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total, leaves


# ---- the checks ---------------------------------------------------------------------------------
def check_grad_matches_finite_differences(case):
    arrays, cots = setup(case)
    grads = eager_grads(case, arrays, cots)
    for i, g in zip(case.diff, grads):
        num = numeric_grad(lambda xs: ref_phi(case, xs, cots), arrays, i)
        close(g, num, 1e-6 * case.tol, 1e-7 * case.tol, f"{case.name} d/darg{i}")


def check_grad_matches_torch(case):
    """``case.torch``'s gradient of the same loss (a gradient torch leaves out is zero)."""
    torch = pytest.importorskip("torch")
    arrays, cots = setup(case)
    grads = eager_grads(case, arrays, cots)
    tin = [torch.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(arrays)]
    total = sum((o * torch.from_numpy(c)).sum() for o, c in zip(as_list(case.torch(*tin)), cots)
                if o.dtype.is_floating_point)
    if torch.is_tensor(total) and total.requires_grad:
        total.backward()
    for i, g in zip(case.diff, grads):
        tg = tin[i].grad      # (None: torch's value does not depend on it)
        tg = np.zeros(arrays[i].shape) if tg is None else tg.numpy()
        close(g, tg, 1e-8 * case.tol, 1e-9 * case.tol, f"{case.name} d/darg{i} vs torch")


def check_grad_matches_autograd(case):
    autograd = pytest.importorskip("autograd")
    arrays, cots = setup(case)
    grads = eager_grads(case, arrays, cots)

    def phi(*xs):
        outs = as_list(case.autograd(*xs))
        return sum(autograd.numpy.sum(o * c) for o, c in zip(outs, cots))

    for i, g in zip(case.diff, grads):
        close(g, autograd.grad(phi, i)(*arrays), 1e-8 * case.tol, 1e-9 * case.tol,
              f"{case.name} d/darg{i} vs autograd")


def check_second_order_matches_finite_differences(case):
    arrays, cots = setup(case)
    rng = rng_for(case, 7)
    ws = [rng.standard_normal(arrays[i].shape) for i in case.diff]
    total, leaves = grad_dot(case, arrays, cots, ws, create_graph=True)
    # (a gradient that does not depend on the inputs: a linear function, second order 0)
    hs = fg.autograd.grad(total, leaves, allow_unused=True) if total.requires_grad else \
        [None] * len(leaves)
    for i, h in zip(case.diff, hs):
        h = np.zeros(arrays[i].shape) if h is None else h.data
        num = numeric_grad(lambda xs: float(grad_dot(case, xs, cots, ws)[0].data), arrays, i)
        close(h, num, 1e-5 * case.tol, 1e-6 * case.tol, f"{case.name} second order arg{i}")


def check_static_equals_eager(case, values, grads, known_shapes=True):
    """A graph of placeholders run by a Session: the eager values and gradients, within
    ``values`` and ``grads`` (``(rtol, atol)`` each); with ``known_shapes``, the outputs' static
    shapes are the values' (some shape rules leave a dimension unknown: lstsq's residuals)."""
    arrays, cots = setup(case)
    eager_out = [o.data for o in as_list(case.fn(*[fg.tensor(a) for a in arrays]))]
    eager = eager_grads(case, arrays, cots)
    g = fg.Graph()
    with g.as_default():
        phs = [fg.placeholder(a.dtype, a.shape) for a in arrays]
        outs = as_list(case.fn(*phs))
        for o, e in zip(outs, eager_out):
            assert not known_shapes or tuple(o.shape) == np.shape(e), (case.name, o.shape,
                                                                        np.shape(e))
        gs = fg.gradients(loss_fn(case, cots)(*phs), [phs[i] for i in case.diff])
        with fg.Session() as sess:
            feed = dict(zip(phs, arrays))
            vals = sess.run(outs, feed)
            gvals = sess.run([x for x in gs if x is not None], feed)
    for v, e in zip(vals, eager_out):
        assert np.shape(v) == np.shape(e)
        np.testing.assert_allclose(v, e, rtol=values[0], atol=values[1])
    it = iter(gvals)
    for x, e in zip(gs, eager):
        if x is None:
            assert case.zero_grad or not np.any(e)
            continue
        np.testing.assert_allclose(next(it), e, rtol=grads[0], atol=grads[1])


def check_function_equals_eager(case, values, grads):
    """``fg.function(fg.value_and_grad(loss))``, traced then from its cached plan: the eager
    value and gradients, within ``values`` and ``grads`` (``(rtol, atol)`` each)."""
    arrays, cots = setup(case)
    loss = loss_fn(case, cots)
    eager = fg.value_and_grad(loss, tuple(case.diff))(*arrays)
    traced = fg.function(fg.value_and_grad(loss, tuple(case.diff)))
    for _ in range(2):   # the trace, then the cached plan
        val, gs = traced(*arrays)
        np.testing.assert_allclose(val, eager[0], rtol=values[0], atol=values[1])
        for g, e in zip(gs, eager[1]):
            np.testing.assert_allclose(g, e, rtol=grads[0], atol=grads[1])
