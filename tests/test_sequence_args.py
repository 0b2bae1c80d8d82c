"""A list or tuple argument holding Tensors (or graph Nodes) is one array of the graph, as
``np.array`` would make it -- its gradient flows (before, it was read as plain data and the
gradient was silently dropped).  Same in eager mode, in static graphs and under fg.function."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.numpy as fnp


def _leaf():
    return fg.tensor([1.5, -2.0, 3.0], requires_grad=True)


# (name, f(t) built with a list holding Tensors, the same f with stack/explicit ops)
CASES = [
    ("add", lambda t: fg.add([t[0], 1.0], 2.0), lambda t: fg.stack([t[0], 1.0]) + 2.0),
    ("multiply_right", lambda t: fg.multiply(3.0, [t[0] * t[1], t[2]]),
     lambda t: 3.0 * fg.stack([t[0] * t[1], t[2]])),
    ("tuple", lambda t: fg.exp((t[0], t[2])), lambda t: fg.exp(fg.stack([t[0], t[2]]))),
    ("nested", lambda t: fg.sum(fg.multiply([[t[0], 1.0], [2.0, t[1]]], [[1.0], [t[2]]])),
     lambda t: fg.sum(fg.stack([fg.stack([t[0], 1.0]), fg.stack([2.0, t[1]])])
                      * fg.stack([fg.stack([1.0]), fg.stack([t[2]])]))),
    ("stack_of_lists", lambda t: fg.stack([[t[0], 1.0], [t[1], t[2]]], axis=1),
     lambda t: fg.stack([fg.stack([t[0], 1.0]), fg.stack([t[1], t[2]])], axis=1)),
    ("concatenate", lambda t: fg.concatenate([[t[0], 3.0], t]),
     lambda t: fg.concatenate([fg.stack([t[0], 3.0]), t])),
    ("matmul", lambda t: fg.matmul([[t[0], t[1]], [t[2], 1.0]], t[:2]),
     lambda t: fg.matmul(fg.stack([fg.stack([t[0], t[1]]), fg.stack([t[2], 1.0])]), t[:2])),
    ("where", lambda t: fg.where([True, False], [t[0], t[1]], t[2]),
     lambda t: fg.where(np.array([True, False]), fg.stack([t[0], t[1]]), t[2])),
    ("rows_of_vectors", lambda t: fg.sum(fg.tanh([t, t * 2.0])),
     lambda t: fg.sum(fg.tanh(fg.stack([t, t * 2.0])))),
]


@pytest.mark.parametrize("name,f,ref", CASES, ids=[c[0] for c in CASES])
def test_eager_list_of_tensors_is_differentiable(name, f, ref):
    t = _leaf()
    out = f(t)
    assert isinstance(out, fg.Tensor) and out.requires_grad
    fg.sum(out * out).backward()
    got = t.grad.data.copy()
    t2 = _leaf()
    expected = ref(t2)
    np.testing.assert_array_equal(out.data, expected.data)
    fg.sum(expected * expected).backward()
    np.testing.assert_array_equal(got, t2.grad.data)
    assert np.any(got != 0)


@pytest.mark.parametrize("name,f,ref", CASES, ids=[c[0] for c in CASES])
def test_static_list_of_nodes_is_differentiable(name, f, ref):
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(np.float64, shape=(3,), name="x")
        out = fg.sum(f(x) ** 2)
        (gx,) = fg.gradients(out, [x])
    value, grad = fg.Session(graph=g).run([out, gx], {x: np.array([1.5, -2.0, 3.0])})
    t = _leaf()
    expected = fg.sum(ref(t) ** 2)
    expected.backward()
    np.testing.assert_allclose(value, expected.item(), rtol=1e-15)
    np.testing.assert_allclose(grad, t.grad.data, rtol=1e-15)


@pytest.mark.parametrize("name,f,ref", CASES, ids=[c[0] for c in CASES])
def test_function_list_of_tensors_matches_eager(name, f, ref):
    loss = lambda v: fg.sum(f(v) ** 2)  # noqa: E731
    value, grad = fg.function(fg.value_and_grad(loss))(np.array([1.5, -2.0, 3.0]))
    t = _leaf()
    expected = loss(t)
    expected.backward()
    np.testing.assert_allclose(value, expected.item(), rtol=1e-15)
    np.testing.assert_allclose(grad, t.grad.data, rtol=1e-15)


# (data holding the float32 Tensor T, the same data with T's value as a NumPy float32)
_T = np.float32(2.0)
DTYPE_CASES = [
    (lambda T: [T, 1.0], [_T, 1.0]),
    (lambda T: [T, 1], [_T, 1]),
    (lambda T: [[T], [T]], [[_T], [_T]]),
    (lambda T: (T, np.float32(3.0)), (_T, np.float32(3.0))),
]


@pytest.mark.parametrize("make,plain", DTYPE_CASES)
def test_dtype_and_values_are_numpys(make, plain):
    t = fg.tensor(_T, requires_grad=True)
    got = fg.add(make(t), 1.0)
    want = np.add(np.array(plain), 1.0)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.data, want)


def test_plain_lists_still_run_numpy():
    out = fg.add([[1.0, 2.0]], 1)
    assert type(out) is np.ndarray and out.tolist() == [[2.0, 3.0]]
    assert fg.sum((1, 2, 3)) == 6


def test_ragged_list_holding_a_tensor_raises_clearly():
    t = _leaf()
    with pytest.raises(ValueError, match="stack"):
        fg.add([t, 1.0], 1.0)


def test_self_containing_list_raises_instead_of_crashing():
    a = [1.0]
    a.append(a)
    with pytest.raises((ValueError, TypeError, RecursionError)):
        fg.add(a, 1.0)
    deep = [1.0]
    for _ in range(200):
        deep = [deep]
    with pytest.raises((ValueError, TypeError, RecursionError)):
        fg.add(deep, _leaf()[0])


# ---- fastgraph.numpy: array / asarray / copy ------------------------------------------------
def test_numpy_array_of_tensors_is_differentiable():
    t = _leaf()
    v = fnp.array([t[0] * 3.0, t[1], 5.0])
    assert isinstance(v, fg.Tensor)
    fnp.sum(v * v).backward()
    np.testing.assert_array_equal(t.grad.data, [2 * 9 * 1.5, 2 * -2.0, 0.0])


def test_numpy_array_copies_and_casts():
    t = _leaf()
    c = fnp.array(t)
    assert isinstance(c, fg.Tensor) and not np.shares_memory(c.data, t.data)
    c32 = fnp.array(t, dtype=np.float32)
    assert c32.dtype == np.float32
    fnp.sum(c32 * 2.0).backward()
    assert t.grad.dtype == np.float64 and t.grad.data.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="copy=False"):
        fnp.array(t, copy=False)
    with pytest.raises(TypeError, match="ndmin"):
        fnp.array(t, ndmin=2)


def test_numpy_asarray_and_copy():
    t = _leaf()
    assert fnp.asarray(t) is t
    assert fnp.asarray(t, dtype=np.float32).dtype == np.float32
    s = fnp.asarray([t[0], t[1]])
    assert isinstance(s, fg.Tensor) and s.requires_grad
    c = fnp.copy(t)
    fnp.sum(c * t).backward()
    np.testing.assert_array_equal(t.grad.data, 2 * t.data)
    assert not np.shares_memory(c.data, t.data)


def test_numpy_array_on_plain_values_is_numpys():
    assert type(fnp.array([1, 2])) is np.ndarray and fnp.array([1, 2]).dtype == np.int64
    assert fnp.array([[1.0]], ndmin=3).shape == (1, 1, 1)
    a = np.arange(3.0)
    assert fnp.asarray(a) is a
    assert fnp.copy(a) is not a and type(fnp.copy(a)) is np.ndarray


def test_numpy_array_in_a_static_graph():
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(np.float64, shape=(2,), name="x")
        y = fnp.sum(fnp.array([x[0] * 2.0, x[1], 1.0]) ** 2)
        (gx,) = fg.gradients(y, [x])
    value, grad = fg.Session(graph=g).run([y, gx], {x: np.array([1.0, 2.0])})
    assert value == 9.0
    np.testing.assert_array_equal(grad, [8.0, 4.0])


@pytest.mark.parametrize("method", ["flatten", "copy", "clone"])
def test_copying_methods_do_not_alias_and_pass_the_gradient(method):
    t = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    c = getattr(t, method)()
    assert not np.shares_memory(c.data, t.data)
    fg.sum(c * c).backward()
    np.testing.assert_array_equal(t.grad.data, 2 * t.data)
    plain = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    d = getattr(plain, method)()
    d[0] = 9.0                      # NumPy's flatten/copy: the original is unchanged
    assert plain.data[0, 0] == 1.0


def test_namedtuple_holding_tensors_is_packed_too():
    t = fg.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    res = fg.linalg.slogdet(t)                  # SlogdetResult, a namedtuple
    fg.sum(fg.add(res, 1.0)).backward()         # d log|det| / dA = inv(A).T
    np.testing.assert_allclose(t.grad.data, np.linalg.inv(t.data).T, rtol=1e-15)
    packed = fnp.array(fg.linalg.slogdet(t))
    assert isinstance(packed, fg.Tensor) and packed.requires_grad


@pytest.mark.parametrize("call,positional", [
    (lambda u: fnp.sum(a=u * u), lambda u: fnp.sum(u * u)),
    (lambda u: fnp.clip(u, min=0.0, max=1.5), lambda u: fnp.clip(u, 0.0, 1.5)),
    (lambda u: fnp.mean(a=u, axis=0), lambda u: fnp.mean(u, 0)),
])
def test_fastgraph_numpy_takes_numpys_keyword_names(call, positional):
    u = fg.tensor([1.0, 2.0], requires_grad=True)
    out = call(u)
    assert isinstance(out, fg.Tensor)
    fg.sum(out).backward()
    got = u.grad.data.copy()
    v = fg.tensor([1.0, 2.0], requires_grad=True)
    ref = positional(v)
    fg.sum(ref).backward()
    np.testing.assert_array_equal(out.data, ref.data)
    np.testing.assert_array_equal(got, v.grad.data)


# ---- found by fuzzing the packing and the transforms ----------------------------------------
def test_object_array_holding_tensors_is_packed():
    t = fg.tensor([1.0, 2.0], requires_grad=True)
    u = fg.tensor([3.0, 4.0], requires_grad=True)
    objects = np.array([t[0], t[1]], dtype=object)
    (fg.sum(fg.multiply(objects, u)) + fg.sum(u)).backward()
    np.testing.assert_array_equal(t.grad.data, [3.0, 4.0])
    np.testing.assert_array_equal(u.grad.data, [2.0, 3.0])
    f = lambda x: fg.sum(fg.multiply(np.array([x[0], x[1]], dtype=object), x)) + fg.sum(x)  # noqa
    np.testing.assert_array_equal(fg.grad(f)(np.array([1.0, 2.0])), [3.0, 5.0])


@pytest.mark.parametrize("build", [
    lambda: (lambda l: (l.append(l), l.append(l), l.append(1.0), l)[-1])([]),
    lambda: (lambda m: (m.append(m), m)[-1])([fg.tensor(1.0)]),
])
@pytest.mark.parametrize("call", [lambda l: fg.sum(l), lambda l: fg.add(l, fg.tensor(1.0)),
                                  lambda l: fnp.sum(l)])
def test_list_that_contains_itself_raises_at_once(build, call):
    with pytest.raises(ValueError, match="sequence"):
        call(build())


def test_grad_of_a_closure_over_the_argument_inside_function():
    # the differentiated variable is a new node: a captured use of the same value is a constant
    def outer(x):
        return fg.grad(lambda y: x * y)(x)

    def nested(x):
        return fg.grad(lambda y: fg.grad(lambda z: x * y * z)(x))(x)

    for f, want in ((outer, 2.0), (fg.grad(outer), 1.0), (nested, 2.0)):
        assert f(2.0) == want
        assert fg.function(f)(2.0) == want
    listy = lambda x: fg.grad(lambda y: fg.sum(fg.multiply([x * y, y * y], [y, x])))(x)  # noqa
    assert listy(2.0) == fg.function(listy)(2.0) == 16.0


def test_cross_entropy_labels_as_a_list_of_nodes():
    logits = np.random.default_rng(0).standard_normal((2, 3))

    @fg.function
    def f(x, lab):
        return fg.cross_entropy(x, [lab[0], lab[1]])

    assert f(logits, np.array([0, 2])) == fg.cross_entropy(logits, np.array([0, 2]))


def test_assign_a_list_holding_nodes():
    g = fg.Graph()
    with g.as_default():
        v = fg.Variable(np.array([1.0, 2.0]))
        p = fg.placeholder(np.float64, shape=(), name="p")
        step = fg.assign(v, [p, v[0]])
        sess = fg.Session(graph=g)
        sess.run(fg.global_variables_initializer())
        sess.run(step, {p: 5.0})
        np.testing.assert_array_equal(sess.run(v), [5.0, 1.0])


@pytest.mark.parametrize("call,message", [
    (lambda t: fnp.sum(t, a=t), "multiple values"),
    (lambda t: fnp.clip(t, a_min=2, max=4), "a_max"),
    (lambda t: fnp.reshape(t, (3, 2), "F"), "np.reshape: .*no gradient"),
    (lambda t: fnp.sum(t, dtype=np.float32), "np.sum: .*no gradient"),
])
def test_fastgraph_numpy_reports_numpys_errors(call, message):
    with pytest.raises(TypeError, match=message):
        call(fg.tensor(np.arange(6.0), requires_grad=True))


def test_numpys_none_defaults_keep_the_gradient():
    t = fg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    (np.mean(t, axis=0, dtype=None).sum() + fg.sum(t)).backward()
    np.testing.assert_array_equal(t.grad.data, np.full((2, 3), 1.5))
    assert isinstance(np.sum(t, 0, None, None), fg.Tensor)
    assert isinstance(np.max(t, axis=1, out=None), fg.Tensor)
    assert isinstance(np.sum(t, keepdims=np._NoValue), fg.Tensor)


def test_grad_inside_function_when_only_a_closure_holds_the_node():
    # (the transforms saw plain arguments and ran eagerly: "cannot mix an eager fg.Tensor ...")
    assert fg.function(lambda x: fg.grad(lambda y: x * y)(2.0))(3.0) == 3.0
    siskind = lambda x: x * fg.grad(lambda y: x + y)(1.0)  # noqa: E731
    assert fg.function(fg.grad(siskind))(1.0) == fg.grad(siskind)(1.0) == 1.0
    assert fg.function(lambda x: x + fg.grad(lambda y: y * y)(3.0))(1.0) == 7.0


def test_format_spec_on_a_0d_tensor():
    t = fg.tensor(3.14159, requires_grad=True)
    assert f"{t:.3f}" == "3.142" and f"{t * 2:8.2f}" == "    6.28"
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match="format"):
        f"{fg.tensor([1.0, 2.0]):.2f}"


def test_jacobian_inside_a_trace_reaching_a_node_goes_symbolic():
    @fg.function
    def j(x):
        return fg.jacobian(lambda z: z * x)(np.ones(2))

    np.testing.assert_array_equal(j(np.array([2.0, 3.0])), np.diag([2.0, 3.0]))

    @fg.function
    def g_of_j(x):      # nested eager transforms: the outermost one goes symbolic
        return fg.grad(lambda s: fg.sum(fg.jacobian(lambda z: z * x * s)(np.ones(2))))(1.0)

    np.testing.assert_allclose(g_of_j(np.array([2.0, 3.0])), 5.0)


@pytest.mark.parametrize("build", [
    lambda t: fnp.array(["a", t]),
    lambda t: fg.stack([np.array("a"), t]),
    lambda t: fnp.array([None, t]),
    lambda t: fnp.array([[t, "q"], [1.0, 2.0]]),
    lambda t: fg.concatenate([fg.reshape(t, (1,)), ["x"]]),
])
def test_joining_tensors_with_strings_or_objects_raises(build):
    """The joined array would be strings or objects and drop ``t``'s gradient without a word;
    PyTorch refuses such lists too.  Plain strings still join as in NumPy."""
    t = fg.tensor(2.0, requires_grad=True)
    with pytest.raises(TypeError, match="cannot join .* with Tensors or graph Nodes"):
        build(t)
    assert fnp.array(["a", "b"]).dtype.kind == "U"
    assert fg.stack(["a", "b"]).dtype.kind == "U"
