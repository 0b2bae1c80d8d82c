"""The C loops of ``fg.softmax``, ``fg.log_softmax`` and ``fg.cross_entropy`` (``fastgraph.kernels.softmax``)
equal their NumPy expressions bit for bit, and hand every case they do not cover back to NumPy (same
values, warnings, errors)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastgraph as fg
from fastgraph.kernels import softmax as loops
from fastgraph.ops.nn import (
    _ce_forward, _ce_grad_forward, _ce_grad_numpy, _ce_loss_numpy, _log_softmax_numpy,
    _softmax_numpy, cross_entropy_and_grad,
)

DTYPES = [np.float32, np.float64]

# (N, C): one row / one class, row sums below 8 elements, at 8 and 9 (the 8 accumulators and
# their remainder), at 128 and 129 (the pairwise block and its first halving), long batches
# (the final sum's halving), and bench_mlp's (128, 10)
SHAPES = [(1, 1), (1, 5), (3, 7), (5, 8), (5, 9), (4, 16), (37, 6), (128, 10), (7, 127),
          (2, 128), (3, 129), (2, 300), (1000, 3), (9000, 1), (20000, 2)]


@pytest.mark.parametrize("n", list(range(1, 140)) + [255, 256, 1000, 8191, 8192, 8193, 100003])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pairwise_sum_is_numpys(n, dtype):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)).astype(dtype)
    got = loops.pairwise_sum(a)
    assert got == np.add.reduce(a) and type(got) is dtype


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_loops_equal_the_numpy_expressions(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    labels = rng.integers(0, shape[1], shape[0])
    loss = loops.cross_entropy(x, labels)
    assert loss is not None                   # the loops ran (else this test compares nothing)
    ref = _ce_loss_numpy(x, labels)
    assert loss == ref and type(loss) is type(ref)
    for g in (1.0, 0.37, -2.5, np.float32(0.1), np.float64(1e-3), np.array(3.0, dtype), 2):
        grad = loops.cross_entropy_grad(g, x, labels)
        assert grad is not None
        want = _ce_grad_numpy(x, labels, g)
        assert grad.dtype == want.dtype and grad.shape == want.shape
        np.testing.assert_array_equal(grad, want)
        both = loops.cross_entropy_and_grad(g, x, labels)
        assert both is not None
        assert both[0] == ref and type(both[0]) is type(ref)
        assert both[1].dtype == want.dtype and both[1].tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
def test_underflowing_exp_stays_on_the_loops_unless_numpy_reports_underflow(dtype):
    x = np.array([[0.0, -800.0, 3.0], [1.0, 2.0, -1e3]], dtype)   # exp underflows to 0
    labels = np.array([1, 0])
    assert loops.cross_entropy(x, labels) == _ce_loss_numpy(x, labels)
    with np.errstate(under="raise"):
        assert loops.cross_entropy(x, labels) is None          # NumPy is asked to raise: let it
        with pytest.raises(FloatingPointError):
            _ce_forward(x, labels)


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("case", [
    "nan", "inf", "negative_label", "int32_labels", "strided", "float16", "int_logits",
], ids=str)
def test_cases_the_loops_leave_to_numpy(case):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4))
    labels = np.array([0, 1, 2, 3, 0, 1])
    if case == "nan":
        x[2, 1] = np.nan
    elif case == "inf":
        x[3, 0] = np.inf
    elif case == "negative_label":
        labels = np.array([0, -1, 2, -4, 0, 1])       # NumPy indexing wraps these
    elif case == "int32_labels":
        labels = labels.astype(np.int32)
    elif case == "strided":
        x = np.asfortranarray(x)
    elif case == "float16":
        x = x.astype(np.float16)
    elif case == "int_logits":
        x = (x * 3).astype(np.int64)
    assert loops.cross_entropy(x, labels) is None
    assert loops.cross_entropy_and_grad(1.0, x, labels) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                # inf - inf: NumPy's own warning
        _same(_ce_forward(x, labels), _ce_loss_numpy(x, labels))
        _same(_ce_grad_forward(1.0, x, labels), _ce_grad_numpy(x, labels, 1.0))
        loss, grad = cross_entropy_and_grad(1.0, x, labels)
        _same(loss, _ce_loss_numpy(x, labels))
        _same(grad, _ce_grad_numpy(x, labels, 1.0))


def test_out_of_range_labels_raise_numpys_index_error():
    x = np.zeros((2, 3))
    for bad in ([0, 3], [-4, 0]):
        assert loops.cross_entropy(x, np.array(bad)) is None
        with pytest.raises(IndexError):
            fg.cross_entropy(x, np.array(bad))


def test_nan_logits_give_nan_as_numpy_does():
    x = np.array([[0.0, np.nan], [1.0, 2.0]])
    assert np.isnan(fg.cross_entropy(x, np.array([0, 1])).item())


def test_static_plan_uses_the_loops_and_agrees_with_eager(rng):
    """The MLP's shapes through a Session (float32 logits, int64 labels): the same bits as eager."""
    x = rng.standard_normal((128, 10)).astype(np.float32)
    labels = rng.integers(0, 10, 128)
    t = fg.tensor(x, requires_grad=True)
    loss = fg.cross_entropy(t, labels)
    loss.backward()
    g = fg.Graph()
    with g.as_default():
        xp = fg.placeholder(np.float32, (None, 10))
        lp = fg.placeholder(np.int64, (None,))
        ls = fg.cross_entropy(xp, lp)
        gx = fg.gradients(ls, [xp])[0]
        val, grad = fg.Session(g).run([ls, gx], {xp: x, lp: labels})
    assert val == loss.item() == _ce_loss_numpy(x, labels)
    np.testing.assert_array_equal(grad, t.grad.data)
    np.testing.assert_array_equal(grad, _ce_grad_numpy(x, labels, 1.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_static_plan_computes_the_loss_and_its_gradient_in_one_pass(dtype, rng):
    """The ``lower`` pass pairs a cross_entropy with its gradient (one call, two projections):
    the same bits as the plan without it, and as eager."""
    x = rng.standard_normal((128, 10)).astype(dtype)
    labels = rng.integers(0, 10, 128)

    def loss(z, y):
        return fg.cross_entropy(z, y)

    paired = fg.function(fg.value_and_grad(loss))
    plain = fg.function(fg.value_and_grad(loss), disable=("lower",))
    assert "cross_entropy and its gradient in one pass" in paired.explain(x, labels)
    assert "one pass" not in plain.explain(x, labels)
    (v1, g1), (v2, g2) = paired(x, labels), plain(x, labels)
    t = fg.tensor(x, requires_grad=True)
    ev = fg.cross_entropy(t, labels)
    ev.backward()
    assert v1 == v2 == ev.item()
    assert g1.tobytes() == g2.tobytes() == t.grad.data.tobytes()


def test_a_seed_computed_from_the_loss_is_not_paired(rng):
    """d/dz exp(loss): the gradient's seed depends on the loss, so the two stay separate."""
    x = rng.standard_normal((8, 4))
    labels = rng.integers(0, 4, 8)
    f = fg.function(fg.grad(lambda z: fg.exp(fg.cross_entropy(z, labels))))
    assert "one pass" not in f.explain(x)
    t = fg.tensor(x, requires_grad=True)
    fg.exp(fg.cross_entropy(t, labels)).backward()
    np.testing.assert_allclose(f(x), t.grad.data, rtol=1e-14)


@pytest.mark.parametrize("g", [1e300, np.nan, np.inf, np.array([1.0]), "1.0"], ids=repr)
def test_seeds_the_loops_leave_to_numpy(g):
    """A seed that overflows float32, is not finite, or is not a real scalar: NumPy's path
    (its warnings, its errors, its broadcasting)."""
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    labels = np.array([0, 1, 2, 0])
    assert loops.cross_entropy_grad(g, x, labels) is None
    assert loops.cross_entropy_and_grad(g, x, labels) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = _ce_grad_numpy(x, labels, g)
        except Exception as exc:              # noqa: BLE001 - the same error either way
            with pytest.raises(type(exc)):
                _ce_grad_forward(g, x, labels)
            return
        _same(_ce_grad_forward(g, x, labels), want)


# ---- softmax and log_softmax ------------------------------------------------------------------
ND_SHAPES = [(1,), (7,), (9,), (300,), (5, 8), (128, 10), (3, 129), (2, 3, 4), (2, 3, 17),
             (2, 2, 5, 130), (4096, 3)]


@pytest.mark.parametrize("shape", ND_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_loops_equal_the_numpy_expressions(shape, dtype):
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 5).astype(dtype)
    for axis in (-1, len(shape) - 1):
        for fast, ref in ((loops.softmax, _softmax_numpy), (loops.log_softmax, _log_softmax_numpy)):
            got = fast(x, axis)
            assert got is not None, fast.__name__
            want = ref(x, axis)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fg.softmax(x), _softmax_numpy(x, -1))       # the op uses them
    np.testing.assert_array_equal(fg.log_softmax(fg.tensor(x)).data, _log_softmax_numpy(x, -1))


@pytest.mark.parametrize("case", ["axis0", "nan", "strided", "int", "empty", "float16"])
def test_softmax_cases_left_to_numpy(case):
    x = np.random.default_rng(2).standard_normal((4, 5))
    axis = -1
    if case == "axis0":
        axis = 0
    elif case == "nan":
        x[1, 2] = np.nan
    elif case == "strided":
        x = x[:, ::2]
    elif case == "int":
        x = (x * 3).astype(np.int64)
    elif case == "empty":
        x = x[:0]
    elif case == "float16":
        x = x.astype(np.float16)
    assert loops.softmax(x, axis) is None and loops.log_softmax(x, axis) is None
    for op, ref in ((fg.softmax, _softmax_numpy), (fg.log_softmax, _log_softmax_numpy)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _same(op(x, axis), ref(x, axis))
