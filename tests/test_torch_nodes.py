"""PyTorch's shape methods and training-step idiom on graph values (``Node``): ``flatten`` and
``size`` where a placeholder's batch dimension is unknown, and ``loss.backward()`` inside
``fg.function`` (an error that says what to write, and what it says to write gives PyTorch's
eager step)."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.torch as torch
import fastgraph.torch.nn as nn
import fastgraph.torch.nn.functional as F


def _placeholder(shape, name="x"):
    g = fg.Graph()
    with g.as_default():
        return g, fg.placeholder(np.float32, shape=shape, name=name)


# ---- flatten -----------------------------------------------------------------------------------
# (static shape, flatten's arguments, the static shape of the result)
FLATTEN = [
    ((None, 3, 4), (1,), (None, 12)),
    ((None, 3, 4), (0,), (None,)),
    ((None, 3, 4), (2,), (None, 3, 4)),
    ((None, 3, 4), (0, 1), (None, 4)),
    ((None, 3, 4), (1, -1), (None, 12)),
    ((None, 3, 4, 5), (1, 2), (None, 12, 5)),
    ((2, None, 4), (1,), (2, None)),
    ((2, None, 4), (0, 1), (None, 4)),
    ((None, None, 4), (0,), (None,)),
    ((2, 3, 4), (1,), (2, 12)),
]


@pytest.mark.parametrize("shape, args, static", FLATTEN)
def test_flatten_keeps_unknown_dimensions(shape, args, static):
    g, x = _placeholder(shape)
    with g.as_default():
        y = x.flatten(*args)
        assert y.shape == static
        concrete = tuple(2 if d is None else d for d in shape)
        a = np.arange(np.prod(concrete), dtype=np.float32).reshape(concrete)
        with fg.Session() as sess:
            got = sess.run(y, {x: a})
    ref = fg.tensor(a).flatten(*args).numpy()        # eager: the same method on a Tensor
    np.testing.assert_array_equal(got, ref)
    pt = pytest.importorskip("torch")
    np.testing.assert_array_equal(got, pt.from_numpy(a).flatten(*args).numpy())


def test_flatten_with_two_unknown_dimensions_left_names_the_node():
    g, x = _placeholder((None, None, 4), name="images")
    with g.as_default(), pytest.raises(ValueError, match="flatten.*'images'.*more than one"):
        x.flatten(1)


def test_flatten_module_on_a_placeholder_matches_eager():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    a = np.random.default_rng(0).standard_normal((5, 1, 6, 6)).astype(np.float32)
    g, x = _placeholder((None, 1, 6, 6))
    with g.as_default():
        out = model(x)
        assert out.shape == (None, 3)
        with fg.Session() as sess:
            sess.run(fg.global_variables_initializer())
            got = sess.run(out, {x: a})
    np.testing.assert_allclose(got, model(torch.tensor(a)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


# ---- size ----------------------------------------------------------------------------------------
# (static shape, size's argument, its value); the count (``x.size``) is an int where all is known
SIZE_KNOWN = [
    ((None, 3, 4), 1, 3),
    ((None, 3, 4), -1, 4),
    ((None, 3, 4), -2, 3),
    ((2, None), 0, 2),
    ((2, 3), 1, 3),
    ((2, 3), -2, 2),
]


@pytest.mark.parametrize("shape, dim, value", SIZE_KNOWN)
def test_size_of_a_known_dimension(shape, dim, value):
    _, x = _placeholder(shape)
    assert x.size(dim) == value and type(x.size(dim)) is int


def test_size_of_a_fully_known_node_is_the_tensors():
    _, x = _placeholder((2, 3))
    t = fg.zeros((2, 3))
    assert x.size == t.size == 6 and isinstance(x.size, int)
    assert x.size() == t.size() == (2, 3) and repr(x.size()) == "torch.Size([2, 3])"
    assert x.size().numel() == 6


@pytest.mark.parametrize("shape, call, what", [
    ((None, 3), (0,), r"size\(0\): dimension 0"),
    ((None, 3), (-2,), r"size\(-2\): dimension -2"),
    ((None, 3), (), r"size\(\): the shape"),
    ((3, None), (1,), r"size\(1\): dimension 1"),
])
def test_size_of_an_unknown_dimension_names_the_node(shape, call, what):
    _, x = _placeholder(shape, name="batch_in")
    with pytest.raises(ValueError, match=what + r" of node 'batch_in' .*-1 for it in view"):
        x.size(*call)
    with pytest.raises(ValueError, match="element count of node 'batch_in'"):
        int(x.size)


def test_size_out_of_range_is_pytorchs_error():
    _, x = _placeholder((None, 3))
    with pytest.raises(IndexError, match="dimension out of range"):
        x.size(2)


def test_size_in_fg_function_is_the_traced_shape():
    """A traced argument's shape is known, so ``x.view(x.size(0), -1)`` traces as it runs."""
    f = fg.function(lambda x: x.view(x.size(0), -1) * 2.0)
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(f(a), a.reshape(2, -1) * 2.0)


# ---- loss.backward(); opt.step() inside fg.function ------------------------------------------------
def _model_and_data():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    y = rng.integers(0, 3, 6).astype(np.int64)
    return model, x, y


def test_backward_inside_fg_function_says_what_to_write():
    model, x, y = _model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @fg.function
    def step(xb, yb):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    with pytest.raises(TypeError, match=r"backward\(\) on the symbolic Node .*fg\.value_and_grad"
                                        r".*fg\.gradients\(loss, params\)"):
        step(x, y)
    before = [p.detach().numpy().copy() for p in model.parameters()]
    assert all(np.array_equal(b, p.detach().numpy()) for b, p in zip(before, model.parameters()))


def test_the_step_the_error_suggests_is_pytorchs_eager_step():
    lr = 0.1
    eager, x, y = _model_and_data()
    compiled, _, _ = _model_and_data()
    opt = torch.optim.SGD(eager.parameters(), lr=lr)

    @fg.function
    def step(xb, yb):
        loss = F.cross_entropy(compiled(xb), yb)
        params = list(compiled.parameters())
        for p, g in zip(params, fg.gradients(loss, params)):
            fg.assign(p, p - lr * g)
        return loss

    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(eager(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        opt.step()
        np.testing.assert_allclose(float(step(x, y)), loss.item(), rtol=1e-5)
    for pe, pc in zip(eager.parameters(), compiled.parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_backward_on_a_static_graph_node_raises_too():
    g, x = _placeholder((None, 3))
    with g.as_default(), pytest.raises(TypeError, match=r"backward\(\) on the symbolic Node 'sum'"):
        x.sum().backward()
