"""A ``fastgraph.torch.nn`` model run three ways gives one answer: eager on Tensors, as an
``@fg.function`` training step (the parameters and buffers are the plan's variables, read from
and written back to their own arrays) and as a static graph on a placeholder (the parameters
become Session Variables).  No PyTorch needed."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.torch.nn as nn
import fastgraph.torch.nn.functional as F

LR = 0.1


def make_model(seed=0, dropout=False):
    fg.random.seed(seed)
    layers = [nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
              nn.Flatten(), nn.Linear(4 * 4 * 4, 16), nn.Tanh()]
    if dropout:
        layers.append(nn.Dropout(0.0))
    return nn.Sequential(*layers, nn.Linear(16, 5))


def data(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((6, 1, 8, 8)).astype(np.float32),
            rng.integers(0, 5, 6).astype(np.int64))


def eager_step(model, x, y):
    model.zero_grad()
    loss = F.cross_entropy(model(fg.tensor(x)), y)
    loss.backward()
    with fg.no_grad():
        for p in model.parameters():
            p.data -= LR * p.grad.data
    return loss.item()


def compiled_step(model):
    @fg.function
    def step(x, labels):
        loss = F.cross_entropy(model(x), labels)
        params = list(model.parameters())      # the trace's Variables while tracing
        for p, g in zip(params, fg.gradients(loss, params)):
            fg.assign(p, p - LR * g)
        return loss
    return step


def test_function_step_equals_eager_step_and_updates_in_place():
    a, b = make_model(), make_model()
    x, y = data()
    arrays = [p.detach().numpy() for p in list(b.parameters()) + list(b.buffers())]
    step = compiled_step(b)
    for _ in range(4):
        la, lb = eager_step(a, x, y), step(x, y)
        assert np.isclose(la, float(lb), rtol=1e-6)
    assert step.trace_count == 1
    for (k, u), (k2, v) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_allclose(v.data, u.data, rtol=1e-5, atol=1e-6, err_msg=k)
    assert int(b[1].num_batches_tracked.data) == 4
    # the module's own arrays were updated: nothing was rebound
    assert all(p.detach().numpy() is q
               for p, q in zip(list(b.parameters()) + list(b.buffers()), arrays))


def test_function_reads_the_current_parameters_on_each_call():
    m = make_model()
    m.eval()
    x, _ = data()
    f = fg.function(lambda x: m(x))
    first = f(x)
    np.testing.assert_allclose(first, m(fg.tensor(x)).data, rtol=1e-6, atol=1e-6)
    with fg.no_grad():
        m[5].weight.data *= 2              # an eager change, seen by the compiled plan
    np.testing.assert_allclose(f(x), m(fg.tensor(x)).data, rtol=1e-6, atol=1e-6)
    assert not np.allclose(f(x), first)
    assert f.trace_count == 1


def test_eager_and_compiled_steps_interleave():
    a, b = make_model(), make_model()
    x, y = data()
    step = compiled_step(b)
    for i in range(4):
        eager_step(a, x, y)
        if i % 2:
            step(x, y)
        else:
            eager_step(b, x, y)
    for (k, u), (k2, v) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_allclose(v.data, u.data, rtol=1e-5, atol=1e-6, err_msg=k)


def test_static_graph_on_a_placeholder():
    m = make_model()
    x, _ = data()
    m.eval()
    g = fg.Graph()
    with g.as_default():
        xp = fg.placeholder(np.float32, (None, 1, 8, 8))
        out = m(xp)
        names = [v.name for v in g.variables]
        with fg.Session() as sess:
            sess.run(fg.global_variables_initializer())
            got = sess.run(out, {xp: x})
    # every parameter and the running statistics (eval() does not count batches)
    assert len(names) == len(list(m.parameters())) + 2
    assert "Linear/weight" in names and "BatchNorm2d/running_var" in names
    np.testing.assert_allclose(got, m(fg.tensor(x)).data, rtol=1e-6, atol=1e-6)
    # the eager parameters are back after the graph was built
    assert all(type(p) is nn.Parameter for p in m.parameters())


def test_static_training_graph_with_gradients_and_update_ops():
    a, b = make_model(), make_model()
    x, y = data()
    g = fg.Graph()
    with g.as_default():
        xp = fg.placeholder(np.float32, x.shape)
        yp = fg.placeholder(np.int64, y.shape)
        loss = F.cross_entropy(b(xp), yp)          # training mode: batch statistics
        params = [v for v in g.variables if v.trainable]
        train = fg.group(*[fg.assign(p, p - LR * gr)
                           for p, gr in zip(params, fg.gradients(loss, params))],
                         nn.update_ops())           # the running statistics' assignments
        running = [g.get("BatchNorm2d/running_mean"), g.get("BatchNorm2d/running_var")]
        sess = fg.Session()
        sess.run(fg.global_variables_initializer())
        for _ in range(3):
            la = eager_step(a, x, y)
            lb, _ = sess.run([loss, train], {xp: x, yp: y})
            assert np.isclose(la, lb, rtol=1e-6)
        rm, rv = sess.run(running)
    np.testing.assert_allclose(rm, a[1].running_mean.data, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(rv, a[1].running_var.data, rtol=1e-5)
    # the Session's variables are the graph's own: the eager module did not move
    np.testing.assert_array_equal(b[1].running_var.data, 1)


def test_rnn_module_compiles():
    fg.random.seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True)
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    f = fg.function(lambda x: lstm(x)[0])
    np.testing.assert_allclose(f(x), lstm(fg.tensor(x))[0].data, rtol=1e-5, atol=1e-6)


def test_batchnorm_momentum_none_compiled_matches_eager():
    fg.random.seed(0)
    a, b = nn.BatchNorm1d(3, momentum=None), nn.BatchNorm1d(3, momentum=None)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    f = fg.function(lambda x: b(x))
    for i in range(3):
        np.testing.assert_allclose(f(x * (i + 1)), a(fg.tensor(x * (i + 1))).data, rtol=1e-5,
                                   atol=1e-6)
    np.testing.assert_allclose(b.running_var.data, a.running_var.data, rtol=1e-5)
    np.testing.assert_allclose(b.running_mean.data, a.running_mean.data, rtol=1e-5, atol=1e-7)


def test_module_without_init_is_an_error():
    class Bad(nn.Module):
        def __init__(self):
            pass
    with pytest.raises(RuntimeError, match="Module.__init__"):
        Bad()(1)
    with pytest.raises(AttributeError, match="before Module.__init__"):
        class Worse(nn.Module):
            def __init__(self):
                self.fc = nn.Linear(1, 1)
        Worse()
