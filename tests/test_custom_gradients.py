"""Custom gradients in three faces -- autograd's ``fastgraph.extend.primitive/defvjp``, JAX's
``fg.custom_vjp``, PyTorch's ``fastgraph.autograd.Function`` -- one mechanism: each is an op,
checked eagerly, in a static graph, inside ``fg.function`` and to second order, against the
gradient of the same function written with fastgraph operations."""
from __future__ import annotations

import numpy as onp
import pytest

import fastgraph as fg
import fastgraph.numpy as np
from fastgraph.extend import defvjp, defvjp_argnum, primitive

X0 = onp.array([0.5, -1.0, 2.0])
W0 = onp.array([1.5, 0.25, -0.75])


# ---- one function (x, w) -> sum(w * logsumexp-ish), three ways -------------------------------
@primitive
def softplus_p(x, w):
    return onp.sum(w * onp.logaddexp(0.0, x))


defvjp(softplus_p,
       lambda ans, x, w: lambda g: g * w * np.exp(-np.logaddexp(0.0, -x)),
       lambda ans, x, w: lambda g: g * np.logaddexp(0.0, x))


@fg.custom_vjp
def softplus_j(x, w):
    return fg.sum(w * fg.logaddexp(0.0, x))


softplus_j.defvjp(lambda x, w: (softplus_j(x, w), (x, w)),
                  lambda res, g: (g * res[1] * fg.sigmoid(res[0]),
                                  g * fg.logaddexp(0.0, res[0])))


class SoftplusT(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return fg.sum(w * fg.logaddexp(0.0, x))

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w * fg.sigmoid(x), g * fg.logaddexp(0.0, x)


FACES = {"extend": softplus_p, "custom_vjp": softplus_j, "Function": SoftplusT.apply}


def reference(x, w):
    return fg.sum(w * fg.logaddexp(0.0, x))


def _loss(f):
    return lambda x, w: f(x, w) * f(x, w)      # (f used twice: the rule runs in a chain)


@pytest.mark.parametrize("face", FACES)
def test_value_and_gradients_eager_traced_and_static(face):
    f = FACES[face]
    want_v, want_g = fg.value_and_grad(_loss(reference), argnums=(0, 1))(X0, W0)
    v, g = fg.value_and_grad(_loss(f), argnums=(0, 1))(X0, W0)
    onp.testing.assert_allclose(v, want_v, rtol=1e-13)
    for a, b in zip(g, want_g):
        onp.testing.assert_allclose(a, b, rtol=1e-12)
    v, g = fg.function(fg.value_and_grad(_loss(f), argnums=(0, 1)))(X0, W0)
    onp.testing.assert_allclose(v, want_v, rtol=1e-13)
    for a, b in zip(g, want_g):
        onp.testing.assert_allclose(a, b, rtol=1e-12)
    graph = fg.Graph()
    with graph.as_default():
        x, w = fg.placeholder(fg.float64, (3,)), fg.placeholder(fg.float64, (None,))
        loss = _loss(f)(x, w)
        grads = fg.gradients(loss, [x, w])
        out = fg.Session(graph).run([loss] + grads, {x: X0, w: W0})
    onp.testing.assert_allclose(out[0], want_v, rtol=1e-13)
    for a, b in zip(out[1:], want_g):
        onp.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("face", FACES)
def test_second_order_when_the_rule_is_written_with_fastgraph_ops(face):
    f = FACES[face]
    want = fg.hessian(lambda x: reference(x, W0))(X0)
    onp.testing.assert_allclose(fg.hessian(lambda x: f(x, W0))(X0), want, rtol=1e-12)
    traced = fg.function(fg.hessian(lambda x: f(x, W0)))(X0)
    onp.testing.assert_allclose(traced, want, rtol=1e-12)


@pytest.mark.parametrize("face", FACES)
def test_the_rule_is_what_is_used(face):
    # a deliberately different rule (gradient 7 for x) shows the custom rule, not the forward's
    # own derivative, reaches the result
    @primitive
    def ident(x):
        return x * 1.0
    defvjp(ident, lambda ans, x: lambda g: 7.0 * g)

    @fg.custom_vjp
    def ident_j(x):
        return x * 1.0
    ident_j.defvjp(lambda x: (x * 1.0, None), lambda res, g: (7.0 * g,))

    class IdentT(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return 7.0 * g

    f = {"extend": ident, "custom_vjp": ident_j, "Function": IdentT.apply}[face]
    onp.testing.assert_array_equal(fg.grad(lambda x: fg.sum(f(x)))(X0), [7.0, 7.0, 7.0])
    onp.testing.assert_array_equal(fg.function(fg.grad(lambda x: fg.sum(f(x))))(X0),
                                   [7.0, 7.0, 7.0])


def test_plain_values_call_the_function_itself():
    assert softplus_p(X0, W0) == onp.sum(W0 * onp.logaddexp(0.0, X0))
    assert isinstance(softplus_j(X0, W0), (float, onp.floating, onp.ndarray))


def test_autograd_conventions_non_array_arguments_and_none_makers():
    @primitive
    def scaled_roll(x, shift, scale):
        return onp.roll(x, shift) * scale

    defvjp(scaled_roll, lambda ans, x, shift, scale: lambda g: np.roll(g, -shift) * scale,
           None, lambda ans, x, shift, scale: lambda g: np.sum(g * ans) / scale)
    g_x, g_s = fg.grad(lambda x, s: fg.sum(scaled_roll(x, 1, s) * W0), argnums=(0, 1))(X0, 2.0)
    onp.testing.assert_allclose(g_x, onp.roll(W0, -1) * 2.0)
    onp.testing.assert_allclose(g_s, onp.sum(W0 * onp.roll(X0, 1)))

    @primitive
    def f(x, y):
        return x * y
    defvjp_argnum(f, lambda argnum, ans, args, kwargs: lambda g: g * args[1 - argnum])
    onp.testing.assert_allclose(fg.grad(lambda a, b: fg.sum(f(a, b)), argnums=1)(X0, W0), X0)


def test_missing_rules_and_wrong_gradient_counts_are_named():
    @primitive
    def noderiv(x):
        return x * 2.0
    with pytest.raises(NotImplementedError, match="VJP of noderiv with respect to argument 0"):
        fg.grad(lambda x: fg.sum(noderiv(x)))(X0)

    class Wrong(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="incorrect number of gradients .expected 2, got 1"):
        fg.grad(lambda x: fg.sum(Wrong.apply(x, W0)))(X0)

    @fg.custom_vjp
    def nobwd(x):
        return x
    with pytest.raises(TypeError, match="nobwd.defvjp"):
        fg.grad(lambda x: fg.sum(nobwd(x) * 1.0))(X0)


def test_custom_vjp_nondiff_argnums_and_function_ctx():
    from functools import partial

    @partial(fg.custom_vjp, nondiff_argnums=(0,))
    def power(n, x):
        return x ** n
    power.defvjp(lambda n, x: (x ** n, x), lambda n, x, g: (g * n * x ** (n - 1),))
    onp.testing.assert_allclose(fg.grad(lambda x: fg.sum(power(3, x)), argnums=0)(X0),
                                3 * X0 ** 2)

    class Scale(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            assert ctx.needs_input_grad == (True, False)
            return g * ctx.k, None

    t = fg.tensor(X0, requires_grad=True)
    fg.sum(Scale.apply(t, 4)).backward()
    onp.testing.assert_array_equal(t.grad.data, [4.0, 4.0, 4.0])
