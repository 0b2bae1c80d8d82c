"""``@fg.function`` arguments that are lists, tuples (namedtuples too) or dicts are structures,
as ``jax.jit`` reads pytrees: each leaf is traced and fed on its own, the body gets the same
structure back, and the structure is part of the signature."""
from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import fastgraph as fg

P = namedtuple("P", "w b")
RNG = np.random.default_rng(0)
PARAMS = [(RNG.standard_normal((3, 4)), np.zeros(4)), (RNG.standard_normal((4, 2)), np.zeros(2))]
X = RNG.standard_normal((5, 3))
Y = np.array([0, 1, 0, 1, 1])


def _loss(params, x, y):
    h = x
    for W, b in params[:-1]:
        h = fg.tanh(h @ W + b)
    W, b = params[-1]
    return fg.cross_entropy(h @ W + b, y)


def _leaves(tree):
    if isinstance(tree, dict):
        return [v for k in tree for v in _leaves(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [v for item in tree for v in _leaves(item)]
    return [tree]


def _assert_same_tree(got, want):
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert list(got) == list(want)
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
    for g, w in zip(_leaves(got), _leaves(want)):
        np.testing.assert_array_equal(g, w)


def test_value_and_grad_of_a_parameter_list_matches_eager():
    value, grads = fg.value_and_grad(_loss)(PARAMS, X, Y)
    f = fg.function(fg.value_and_grad(_loss))
    v2, g2 = f(PARAMS, X, Y)
    assert v2 == value
    _assert_same_tree(g2, grads)
    f(PARAMS, X, Y)
    assert f.trace_count == 1 and f.cache_size == 1


@pytest.mark.parametrize("arg,body", [
    (P(2.0, 3.0), lambda p: p.w * p.b),
    ({"a": np.ones(2), "b": 1.5}, lambda d: fg.sum(d["a"] * 2.0 + d["b"])),
    (OrderedDict(a=np.ones(2), b=np.arange(2.0)), lambda d: fg.sum(d["a"] * d["b"])),
    ([np.ones(2), (np.arange(3.0), None)], lambda t: fg.sum(t[0]) + fg.sum(t[1][0])),
    ((1.0, 2.0), lambda t: t[0] * t[1]),
])
def test_structured_arguments_match_eager(arg, body):
    assert fg.function(body)(arg) == body(arg)
    _assert_same_tree(fg.function(fg.grad(body))(arg), fg.grad(body)(arg))


def test_the_body_sees_the_callers_structure():
    seen = []

    @fg.function
    def f(tree):
        seen.append(tree)
        return fg.sum(tree["xs"][0]) + tree["p"].w

    f({"xs": [np.ones(3)], "p": P(1.0, None)})
    tree = seen[0]
    assert type(tree) is dict and type(tree["xs"]) is list and type(tree["p"]) is P
    assert tree["p"].b is None


def test_a_new_structure_retraces_the_same_does_not():
    f = fg.function(lambda t: fg.sum(fg.stack(list(t))))
    assert f([1.0, 2.0]) == 3.0
    assert f([3.0, 4.0]) == 7.0
    assert f.trace_count == 1
    assert f([1.0, 2.0, 3.0]) == 6.0          # length: a new structure
    assert f((1.0, 2.0)) == 3.0               # tuple, not list
    assert f.trace_count == 3


def test_donated_structure_is_updated_in_place():
    def body(params, x, y):
        value, grads = fg.value_and_grad(_loss)(params, x, y)
        return value, [(W - 0.1 * gW, b - 0.1 * gb) for (W, b), (gW, gb) in zip(params, grads)]

    step = fg.function(body, donate_argnums=(0,))
    params = [(W.copy(), b.copy()) for W, b in PARAMS]
    value, new = step(params, X, Y)
    want_value, want = body(PARAMS, X, Y)
    assert value == want_value
    _assert_same_tree(new, want)
    assert new[0][0] is params[0][0]          # written into the donated arrays
    assert step.explain(new, X, Y).count("donated") >= 4


def test_structures_inside_another_trace_inline():
    inner = fg.function(lambda t: t[0] * t[1])
    outer = fg.function(lambda a, b: inner([a, b]) + 1.0)
    assert outer(2.0, 3.0) == 7.0


def test_a_self_containing_argument_is_refused():
    loop = [1.0]
    loop.append(loop)
    with pytest.raises(ValueError, match="contain itself"):
        fg.function(lambda t: t[0])(loop)


# ---- found by fuzzing the structures ----------------------------------------------------------
def test_eager_gradient_through_a_function_runs_it_eagerly():
    # (it fed the Tensor's data and returned NumPy: the gradient came back zero, silently)
    f = fg.function(lambda x: fg.sum(x * x))
    np.testing.assert_array_equal(fg.grad(f)(np.arange(3.0)), [0.0, 2.0, 4.0])
    t = fg.tensor([1.0, 2.0], requires_grad=True)
    f(t).backward()
    np.testing.assert_array_equal(t.grad.data, [2.0, 4.0])
    with fg.no_grad():
        assert not isinstance(f(t), fg.Tensor)     # no gradient wanted: the plan runs


def test_a_none_argument_is_an_empty_structure():
    assert fg.function(lambda p, x: x * 2.0)(None, 3.0) == 6.0
    assert fg.function(fg.grad(lambda p, x: x * x, argnums=(0, 1)))(None, 3.0) == (None, 6.0)


def test_dict_keys_equal_but_of_other_types_are_other_structures():
    f = fg.function(lambda d: list(d)[0])
    assert type(f({1: np.ones(1)})) is np.int64 and type(f({True: np.ones(1)})) is np.bool_
    assert f.trace_count == 2


@pytest.mark.parametrize("arg", [np.float64(5.0), [np.float64(5.0)]])
def test_donated_0d_results_are_numpy_scalars(arg):
    body = (lambda a: a * 2.0) if not isinstance(arg, list) else (lambda a: [a[0] * 2.0])
    donated = fg.function(body, donate_argnums=(0,))(arg)
    plain = fg.function(body)(arg)
    assert type(donated) is type(plain)
    assert repr(donated) == repr(plain)


def test_defaultdict_and_tuple_subclasses():
    from collections import defaultdict

    out = fg.function(lambda d: {"y": d["a"] * 2.0, "d": d})(defaultdict(list, a=np.ones(2)))
    assert type(out["d"]) is defaultdict and out["d"].default_factory is list
    np.testing.assert_array_equal(out["y"], [2.0, 2.0])

    class Pair(tuple):      # not a namedtuple: a leaf (an array), as jax.jit leaves it
        def __new__(cls, a, b):
            return super().__new__(cls, (a, b))

    np.testing.assert_array_equal(fg.function(lambda t: t * 2.0)(Pair(1.0, 2.0)), [2.0, 4.0])


def test_grads_inside_a_trace_stay_eager_unless_a_closure_reaches_a_node():
    @fg.function
    def with_hessian(x):       # jacobian runs eagerly; the grad it wraps must too
        return x * fg.hessian(lambda z: (z ** 3).sum())(np.array([1.0, 2.0])).sum()

    np.testing.assert_array_equal(with_hessian(np.ones(2)), [18.0, 18.0])

    @fg.function
    def with_float(x):         # a gradient of constants is a value, usable as one
        return x * float(fg.grad(lambda z: np.sin(z).sum())(np.array([0.0, 1.0])).sum())

    np.testing.assert_allclose(with_float(np.ones(2)), 1.0 + np.cos(1.0))
    assert fg.function(lambda x: fg.grad(lambda y: x * y)(2.0))(3.0) == 3.0


def test_defaultdict_gradients_keep_the_container():
    from collections import defaultdict

    arg = defaultdict(list, a=np.ones(2))
    loss = lambda d: (d["a"] ** 2).sum()  # noqa: E731
    for g in (fg.grad(loss)(arg), fg.function(fg.grad(loss))(arg)):
        assert type(g) is defaultdict and g.default_factory is list
        np.testing.assert_array_equal(g["a"], [2.0, 2.0])


def test_a_container_subclass_holding_a_grad_tensor_runs_eagerly():
    class Params(list):
        pass

    fn = fg.function(lambda x: (x[0] ** 2).sum())
    np.testing.assert_array_equal(fg.grad(lambda z: fn(Params([z])))(np.array([1.0, 2.0])),
                                  [2.0, 4.0])


@pytest.mark.parametrize("call,where", [
    (lambda: fg.function(lambda x, s: x)(np.ones(3), "abc"), "argument s is 'abc'"),
    (lambda: fg.function(lambda d: d["x"])({"x": np.ones(3), "name": "abc"}),
     "argument d, at d['name'], is 'abc'"),
    (lambda: fg.function(lambda p, x: x)([P(1.0, "q")], 1.0), "at p[0].b, is 'q'"),
    (lambda: fg.function(lambda *a: a[0])(np.ones(3), 1j), "argument #1 is 1j"),
    (lambda: fg.function(lambda x, o: x)(np.ones(3), object()), "argument o is <object"),
    (lambda: fg.function(lambda x, s: x, donate_argnums=(1,))(np.ones(3), np.array(["a"])),
     "argument s is array(['a']"),
])
def test_a_leaf_a_graph_cannot_take_is_named(call, where):
    """A string, object or complex argument (or leaf of one) gets an error naming it and the
    way out (JAX names the argument's path too)."""
    with pytest.raises(TypeError, match="keyword argument") as e:
        call()
    assert where in str(e.value)
