"""The compiled convolution and pooling kernels: 1 thread == 2 threads bit for bit (the tasks
are fixed by the shapes), the NumPy path gives the same values, tiling, and clear errors."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.nn_ops as N
from fastgraph.ops import convolution as C


@pytest.fixture
def threads():
    old = fg.get_num_threads()
    yield
    fg.set_num_threads(old)


def _step(x, w, b, dtype):
    """Values and gradients of a conv -> relu -> max pool -> avg pool chain."""
    X = fg.tensor(x.astype(dtype), requires_grad=True)
    W = fg.tensor(w.astype(dtype), requires_grad=True)
    B = fg.tensor(b.astype(dtype), requires_grad=True)
    h = fg.relu(N.conv2d(X, W, B, padding=1))
    h = N.max_pool2d(h, 3, stride=2, padding=1)
    y = N.avg_pool2d(h, 2, ceil_mode=True) + N.adaptive_avg_pool2d(h, 3).sum()
    y.sum().backward()
    return [y.data, X.grad.data, W.grad.data, B.grad.data]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [((16, 3, 20, 20), (8, 3, 3, 3)),     # folds of 9 and 7 samples
                                   ((10, 3, 20, 20), (8, 3, 3, 3)),     # a last fold of one
                                   ((8, 16, 24, 24), (32, 16, 3, 3))])  # tiles of output rows
def test_one_thread_equals_two_threads(threads, dtype, shape, rng):
    xs, ws = shape
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws) * 0.2, rng.standard_normal(ws[0])
    fg.set_num_threads(1)
    one = _step(x, w, b, dtype)
    fg.set_num_threads(2)
    two = _step(x, w, b, dtype)
    for a, c in zip(one, two):
        np.testing.assert_array_equal(a, c)


def test_tiling_depends_on_shapes_only():
    assert C.tiling(8, 25, 28, 28) == (28, True)           # LeNet's first layer: whole samples
    rows, threaded = C.tiling(32, 144, 24, 24)             # 32 * 144 * 24 per row
    assert threaded and rows * 32 * 144 * 24 <= C.SINGLE_THREAD_MNK
    assert C.tiling(512, 4608, 14, 14) == (14, False)      # one row is past the bound: BLAS's threads


def test_folding_depends_on_shapes_only():
    # LeNet's second layer: 6 samples of 16 x 200 weights by 100 positions in one product
    assert C.folding(64, 16, 200, 100, 4) == 6
    assert C.folding(64, 16, 200, 100, 8) == 3                 # float64: half as many
    assert C.folding(4, 8, 25, 784, 4) == 4                    # never more than the batch
    assert C.folding(64, 64, 4608, 196, 4) == 1                # one sample fills the budget
    assert C._policy(64, 16, 200, (10, 10), np.dtype(np.float32)) == (10, True, 6)
    assert C._policy(8, 512, 4608, (14, 14), np.dtype(np.float32)) == (14, False, 1)


@pytest.mark.parametrize("geometry", [dict(padding=2), dict(stride=2, padding=1),
                                      dict(dilation=2, groups=2)])
def test_folded_products_equal_one_product_a_sample(monkeypatch, geometry, rng):
    """Side-by-side samples give the values and gradients of one product per sample, within
    rounding: BLAS may block a wider product differently at its edge columns (seen on AVX-512
    OpenBLAS kernels). The fold depends on shapes only, so a given call's bits do not vary."""
    x = rng.standard_normal((11, 4, 13, 12))
    w = rng.standard_normal((6, 4 // geometry.get("groups", 1), 5, 3)) * 0.2
    monkeypatch.setattr(C, "FOLD_MAX", 4)                  # folds of 4, 4 and 3 samples
    folded = _conv_and_grads(x, w, geometry)
    monkeypatch.setattr(C, "FOLD_MAX", 1)
    single = _conv_and_grads(x, w, geometry)
    for got, want in zip(folded, single):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_path_gives_the_same_values(monkeypatch, dtype, rng):
    x = rng.standard_normal((3, 4, 9, 8)).astype(dtype)
    w = rng.standard_normal((6, 2, 3, 2)).astype(dtype)
    kw = dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
    compiled = _conv_and_grads(x, w, kw)
    monkeypatch.setattr(C, "USE_KERNELS", False)
    plain = _conv_and_grads(x, w, kw)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, c in zip(compiled, plain):
        np.testing.assert_allclose(a, c, rtol=tol, atol=tol)


def _conv_and_grads(x, w, kw):
    X, W = fg.tensor(x, requires_grad=True), fg.tensor(w, requires_grad=True)
    y = N.conv2d(X, W, **kw)
    y.backward(fg.tensor(np.cos(np.arange(y.size)).reshape(y.shape).astype(x.dtype)))
    return [y.data, X.grad.data, W.grad.data]


def test_bias_epilogue_equals_separate_steps(rng):
    """``conv2d(x, w, b)`` adds the bias inside the kernel: the values of conv + add."""
    x = rng.standard_normal((4, 3, 10, 10)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    np.testing.assert_array_equal(N.conv2d(x, w, b), N.conv2d(x, w) + b[:, None, None])


@pytest.mark.parametrize("call,match", [
    (lambda: N.conv2d(np.ones((1, 3, 5, 5)), np.ones((2, 2, 3, 3))), "channels"),
    (lambda: N.conv2d(np.ones((1, 4, 5, 5)), np.ones((3, 2, 3, 3)), groups=2), "divisible"),
    (lambda: N.conv2d(np.ones((1, 1, 2, 2)), np.ones((1, 1, 3, 3))), "smaller than"),
    (lambda: N.conv2d(np.ones((1, 1, 5, 5)), np.ones((1, 1, 3, 3)), stride=2,
                      padding="same"), "strided"),
    (lambda: N.conv2d(np.ones((1, 1, 5, 5)), np.ones((1, 1, 3, 3)), padding="full"),
     "padding"),
    (lambda: N.conv2d(np.ones((1, 1, 5, 5)), np.ones((1, 1, 3)),), "4-D weight"),
    (lambda: N.conv2d(np.ones((5, 5)), np.ones((1, 1, 3, 3))), "unbatched"),
    (lambda: N.conv2d(np.ones((1, 1, 5, 5)), np.ones((2, 1, 3, 3)), np.ones(3)), "bias"),
    (lambda: N.conv2d(np.ones((1, 1, 5, 5)), np.ones((1, 1, 3, 3)), stride=0), "positive"),
    (lambda: N.conv2d(np.ones((1, 1, 5, 5)), np.ones((1, 1, 3, 3)), stride=1.5), "integers"),
    (lambda: N.conv_transpose2d(np.ones((1, 2, 3, 3)), np.ones((2, 1, 3, 3)), stride=2,
                                output_padding=2), "output_padding"),
    (lambda: N.max_pool2d(np.ones((1, 1, 5, 5)), 2, padding=2), "half"),
    (lambda: N.max_pool2d(np.ones((1, 1, 1, 1)), 3), "too small"),
    (lambda: N.avg_pool2d(np.ones((1, 1, 4, 4)), 2, divisor_override=0), "divisor"),
    (lambda: N.adaptive_avg_pool2d(np.ones((1, 1, 4, 4)), 0), "output_size"),
])
def test_bad_arguments_raise_clear_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_integer_input_is_refused():
    with pytest.raises(TypeError, match="float32 or float64"):
        N.conv2d(np.ones((1, 1, 3, 3), dtype=np.int64), np.ones((1, 1, 2, 2), dtype=np.int64))


def test_static_shapes_are_checked_at_build_time():
    with fg.Graph().as_default():
        x = fg.placeholder(np.float32, (None, 3, 8, 8))
        y = N.max_pool2d(N.conv2d(x, np.ones((4, 3, 3, 3), np.float32), padding=1), 2)
        assert y.shape == (None, 4, 4, 4)
        with pytest.raises(ValueError, match="channels"):
            N.conv2d(x, np.ones((4, 2, 3, 3), np.float32))


def _lenet_graph(bias_form):
    x = fg.placeholder(np.float32, (None, 1, 12, 12))
    labels = fg.placeholder(np.int64, (None,))
    rng = np.random.default_rng(0)
    w1 = fg.Variable((rng.standard_normal((4, 1, 3, 3)) * 0.3).astype(np.float32))
    b1 = fg.Variable(rng.standard_normal(4).astype(np.float32))
    w2 = fg.Variable((rng.standard_normal((10, 4 * 6 * 6)) * 0.1).astype(np.float32))
    if bias_form == "conv2d":
        h = N.conv2d(x, w1, b1, padding=1)
    elif bias_form == "add":
        h = N.conv2d(x, w1, padding=1) + fg.reshape(b1, (4, 1, 1))
    else:
        h = N.conv2d(x, w1, padding=1) + fg.reshape(b1, (1, 4, 1, 1))
    h = N.max_pool2d(fg.relu(h), 2)
    loss = fg.cross_entropy(fg.matmul(fg.reshape(h, (-1, 4 * 6 * 6)), fg.transpose(w2)), labels)
    return x, labels, loss, fg.gradients(loss, [w1, b1, w2])


@pytest.mark.parametrize("bias_form", ["conv2d", "add", "add4d"])
def test_fuse_takes_bias_and_relu_into_the_convolution(bias_form, rng):
    """relu(conv(x, w) + b) becomes one conv_bias step with a ReLU epilogue; the fused plan's
    values and gradients are the unfused plan's, bit for bit."""
    g = fg.Graph()
    with g.as_default():
        x, labels, loss, grads = _lenet_graph(bias_form)
        init = fg.global_variables_initializer()
    feed = {x: rng.standard_normal((5, 1, 12, 12)).astype(np.float32),
            labels: rng.integers(0, 10, 5)}
    fused, unfused = fg.Session(g), fg.Session(g, disable=("fuse",))
    for s in (fused, unfused):
        s.run(init)
    a = fused.run([loss] + grads, feed)
    b = unfused.run([loss] + grads, feed)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    text = fused.explain([loss] + grads, feed)
    assert "activation='relu'" in text and " relu(" not in text.split("[plan]")[1]
    assert "conv_bias" not in unfused.explain([loss] + grads, feed).split("[plan]")[1] or \
        bias_form == "conv2d"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spatial,ceil_mode", [((8, 6), False), ((7, 9), False), ((8, 6), True),
                                               ((2, 3), False)])
def test_two_by_two_max_pool_equals_the_tables(dtype, spatial, ceil_mode, rng):
    """The 2x2 stride-2 loop picks the tables' index: the first maximum, ties and NaN
    included."""
    from fastgraph.ops import pooling as P
    x = rng.integers(-1, 2, (3, 4) + spatial).astype(dtype)    # many ties
    x[0, 0, 0, :2] = np.nan
    x[1, 2, 1, 1] = np.nan
    x[2, 3] = -0.0
    args = ((2, 2), (2, 2), (0, 0), (1, 1), ceil_mode)
    assert P._pairs_of_pairs(x, *args)
    generic = P._max_indices(x, P._max_tables(spatial, *args), (1, 1), 2)
    np.testing.assert_array_equal(P._max_pool_indices_forward(x, *args), generic)


def test_two_by_two_loop_is_only_for_windows_inside_the_planes():
    from fastgraph.ops import pooling as P
    x = np.zeros((1, 1, 7, 9))
    assert not P._pairs_of_pairs(x, (2, 2), (2, 2), (0, 0), (1, 1), True)    # a partial window
    assert not P._pairs_of_pairs(x, (2, 2), (2, 2), (1, 1), (1, 1), False)   # padding
    assert not P._pairs_of_pairs(x, (2, 2), (1, 1), (0, 0), (1, 1), False)   # overlapping
    assert not P._pairs_of_pairs(x[:, :, :1], (2, 2), (2, 2), (0, 0), (1, 1), False)
