"""Forward mode (``fg.jvp``, ``fg.linearize``, ``fg.make_jvp``, ``fg.jacfwd``), built from the
VJP rules by the transpose trick, case by case:

* every case of the op tables (``optable``, ``linalg_table``, ``special_table``): the
  Jacobian-vector product against the reverse-mode Jacobian ``fg.jacobian`` contracted with the
  tangent, and the same product inside ``fg.function`` and in a static graph run by a Session;
* a table of functions (elementwise, broadcasting, reductions, matmul, solve, pytrees) against
  JAX's ``jax.jvp`` and ``jax.jacfwd``, and ``make_jvp`` against HIPS autograd's;
* composition with reverse mode (forward-over-reverse Hessian-vector products, gradients of
  Jacobian-vector products), argnums, and the errors for tangents that do not match.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.numpy as fnp
import linalg_table
import special_table
from optable import CASES, as_list, case_params, close, make_inputs, rng_for

TABLE = CASES + linalg_table.CASES + special_table.CASES


def _diff_function(case, arrays):
    """``case.fn`` as a function of its differentiable arguments only, keeping its floating
    outputs (as a list), and those arguments."""
    def f(*diff):
        full = list(arrays)
        for i, d in zip(case.diff, diff):
            full[i] = d
        return [o for o in as_list(case.fn(*full)) if np.dtype(o.dtype).kind == "f"]
    return f, tuple(arrays[i] for i in case.diff)


def _tangents(case, primals):
    rng = rng_for(case, 2)
    return tuple(rng.standard_normal(np.shape(p)) for p in primals)


def _j_times_v(jac, tangents):
    """``sum_i J_i . v_i`` over the differentiated arguments (``fg.jacobian``'s layout)."""
    return sum(np.tensordot(j, v, axes=v.ndim) for j, v in zip(jac, tangents))


@pytest.mark.parametrize("case", case_params(TABLE, predicate=lambda c: c.diff))
def test_jvp_is_the_reverse_mode_jacobian_times_the_tangent(case):
    arrays = make_inputs(case)
    f, primals = _diff_function(case, arrays)
    tangents = _tangents(case, primals)
    out, tout = fg.jvp(f, primals, tangents)
    assert type(out) is list and len(tout) == len(out)
    jac = fg.jacobian(f, argnums=tuple(range(len(primals))))(*primals)
    values = f(*map(fg.tensor, primals))        # (Tensors: some cases call Tensor methods)
    for k, (o, t, j) in enumerate(zip(out, tout, jac)):
        close(o, values[k].data, 1e-15, 0, f"{case.name} value {k}")
        assert np.shape(t) == np.shape(o) and np.asarray(t).dtype == np.asarray(o).dtype
        close(t, _j_times_v(j, tangents), 1e-10 * case.tol, 1e-12 * case.tol,
              f"{case.name} tangent {k}")


@pytest.mark.parametrize("case", case_params(TABLE, predicate=lambda c: c.diff and c.static))
def test_jvp_inside_function_and_static_graphs_equals_eager(case):
    arrays = make_inputs(case)
    f, primals = _diff_function(case, arrays)
    tangents = _tangents(case, primals)
    _, eager = fg.jvp(f, primals, tangents)
    n = len(primals)
    traced = fg.function(lambda *pt: fg.jvp(f, pt[:n], pt[n:])[1])(*primals, *tangents)
    g = fg.Graph()
    with g.as_default():
        ps = [fg.placeholder(p.dtype, p.shape) for p in primals]
        ts = [fg.placeholder(t.dtype, t.shape) for t in tangents]
        fetch = fg.jvp(f, tuple(ps), tuple(ts))[1]
        with fg.Session(graph=g) as sess:
            static = sess.run(fetch, dict(zip(ps + ts, primals + tangents)))
    for k, e in enumerate(eager):
        close(traced[k], e, 1e-12 * case.tol, 1e-13, f"{case.name} fg.function {k}")
        close(static[k], e, 1e-12 * case.tol, 1e-13, f"{case.name} Session {k}")


# ---- against JAX -----------------------------------------------------------------------------
def _jnp():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


#: (name, fastgraph function, JAX function (given jax.numpy), primal shapes)
JAX_TABLE = [
    ("exp_sin", lambda x: fg.exp(fg.sin(x)) * x, lambda j: lambda x: j.exp(j.sin(x)) * x,
     [(3, 4)]),
    ("tanh_log1p", lambda x: fg.tanh(x) + fg.log1p(x * x),
     lambda j: lambda x: j.tanh(x) + j.log1p(x * x), [(5,)]),
    ("broadcast_mul_div", lambda a, b: a * b / (1.0 + b * b),
     lambda j: lambda a, b: a * b / (1.0 + b * b), [(3, 4), (4,)]),
    ("broadcast_3d", lambda a, b: fg.maximum(a, 0.0) * b - a,
     lambda j: lambda a, b: j.maximum(a, 0.0) * b - a, [(2, 1, 4), (3, 1)]),
    ("sum_axis", lambda x: fg.sum(x * x, axis=1), lambda j: lambda x: j.sum(x * x, axis=1),
     [(3, 4)]),
    ("mean_keepdims", lambda x: x - fg.mean(x, axis=0, keepdims=True),
     lambda j: lambda x: x - j.mean(x, axis=0, keepdims=True), [(3, 4)]),
    ("logsumexp", lambda x: fg.logsumexp(x, axis=-1),
     lambda j: lambda x: __import__("jax").scipy.special.logsumexp(x, axis=-1), [(2, 5)]),
    ("max_prod", lambda x: fg.max(x, axis=0) + fg.prod(x, axis=1).sum(),
     lambda j: lambda x: j.max(x, axis=0) + j.prod(x, axis=1).sum(), [(3, 4)]),
    ("matmul", lambda a, b: fg.matmul(a, b), lambda j: lambda a, b: a @ b, [(3, 4), (4, 2)]),
    ("batched_matmul_tanh", lambda a, b: fg.tanh(fg.matmul(a, b)),
     lambda j: lambda a, b: j.tanh(a @ b), [(2, 3, 4), (4, 2)]),
    ("solve", lambda a, b: fg.linalg.solve(a + 3.0 * fnp.eye(3), b),
     lambda j: lambda a, b: j.linalg.solve(a + 3.0 * j.eye(3), b), [(3, 3), (3, 2)]),
    ("inv_det", lambda a: fg.linalg.inv(a + 3.0 * fnp.eye(3)) * fg.linalg.det(a + 3.0 * fnp.eye(3)),
     lambda j: lambda a: j.linalg.inv(a + 3.0 * j.eye(3)) * j.linalg.det(a + 3.0 * j.eye(3)),
     [(3, 3)]),
    ("softmax_getitem", lambda x: fg.softmax(x[:, 1:], axis=-1)[0],
     lambda j: lambda x: __import__("jax").nn.softmax(x[:, 1:], axis=-1)[0], [(2, 4)]),
    ("concat_stack_reshape", lambda a, b: fg.reshape(fg.stack([a, fg.concatenate([b, b])[:3]]),
                                                      (6,)),
     lambda j: lambda a, b: j.reshape(j.stack([a, j.concatenate([b, b])[:3]]), (6,)),
     [(3,), (2,)]),
    ("where_clip", lambda x: fg.where(x > 0, fg.clip(x, -0.5, 0.5), x ** 3),
     lambda j: lambda x: j.where(x > 0, j.clip(x, -0.5, 0.5), x ** 3), [(6,)]),
    ("scalar_output", lambda x, y: fg.sum(fg.sin(x) * y), lambda j: lambda x, y: j.sum(j.sin(x) * y),
     [(4,), (4,)]),
]


@pytest.mark.parametrize("name,fg_fn,jax_fn,shapes", JAX_TABLE, ids=[r[0] for r in JAX_TABLE])
def test_jvp_against_jax_and_jacfwd_against_jacobian(name, fg_fn, jax_fn, shapes):
    jax, jnp = _jnp()
    rng = np.random.default_rng(abs(hash(name)) % 2 ** 32)
    primals = tuple(rng.uniform(-1.0, 1.0, s) for s in shapes)
    tangents = tuple(rng.standard_normal(s) for s in shapes)
    out, tout = fg.jvp(fg_fn, primals, tangents)
    ref_out, ref_tout = jax.jvp(jax_fn(jnp), primals, tangents)
    close(out, ref_out, 1e-13, 1e-14, f"{name} value")
    close(tout, ref_tout, 1e-12, 1e-13, f"{name} tangent")
    nums = tuple(range(len(shapes)))     # (jacfwd against reverse mode: JAX's costs compiles)
    for got, ref in zip(fg.jacfwd(fg_fn, argnums=nums)(*primals),
                        fg.jacobian(fg_fn, argnums=nums)(*primals)):
        close(got, ref, 1e-12, 1e-13, f"{name} jacfwd")


def test_pytrees_against_jax():
    jax, jnp = _jnp()

    def model(fnp_or_jnp):
        def f(params, x):
            h = fnp_or_jnp.tanh(x @ params["W"] + params["b"][0])
            return {"out": h * params["b"][1], "pair": (fnp_or_jnp.sum(h), h[0])}
        return f

    rng = np.random.default_rng(3)
    params = {"W": rng.standard_normal((3, 2)), "b": [rng.standard_normal(2), 1.5]}
    x = rng.standard_normal((4, 3))
    tp = {"W": rng.standard_normal((3, 2)), "b": [rng.standard_normal(2), 0.25]}
    tx = rng.standard_normal((4, 3))
    out, tout = fg.jvp(model(fnp), (params, x), (tp, tx))
    ref_out, ref_tout = jax.jvp(model(jnp), (params, x), (tp, tx))
    assert set(tout) == {"out", "pair"} and type(tout["pair"]) is tuple
    for got, ref in [(out["out"], ref_out["out"]), (tout["out"], ref_tout["out"]),
                     (tout["pair"][0], ref_tout["pair"][0]), (tout["pair"][1], ref_tout["pair"][1])]:
        close(got, ref, 1e-12, 1e-13)
    J = fg.jacfwd(model(fnp))(params, x)
    J_ref = jax.jacfwd(model(jnp))(params, x)
    close(J["out"]["W"], J_ref["out"]["W"], 1e-12, 1e-13)
    close(J["pair"][1]["b"][0], J_ref["pair"][1]["b"][0], 1e-12, 1e-13)
    close(J["pair"][0]["b"][1], J_ref["pair"][0]["b"][1], 1e-12, 1e-13)
    J_rev = fg.jacobian(model(fnp))(params, x)     # the same layout as reverse mode's
    close(J["out"]["W"], J_rev["out"]["W"], 1e-12, 1e-13)


def test_linearize_against_jax():
    jax, jnp = _jnp()
    x = np.array([0.3, -1.2, 2.0])
    y, f_jvp = fg.linearize(lambda a, b: fg.sin(a) * b, x, x[::-1].copy())
    y_ref, f_ref = jax.linearize(lambda a, b: jnp.sin(a) * b, x, x[::-1].copy())
    close(y, y_ref, 1e-15, 0)
    for v in (np.ones(3), np.array([1.0, -2.0, 0.5])):     # one linearization, many tangents
        close(f_jvp(v, 2 * v), f_ref(v, 2 * v), 1e-13, 1e-14)


def test_make_jvp_against_autograd():
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp

    def f(np_):
        return lambda x, W: np_.tanh(np_.dot(W, x)) * x[0]

    x, W = np.array([0.5, -1.0, 2.0]), np.arange(6.0).reshape(2, 3) / 4.0
    v, vW = np.array([1.0, 0.0, -1.0]), np.ones((2, 3))
    ans, jv = fg.make_jvp(f(fnp))(x, W)(v)
    ref_ans, ref_jv = autograd.make_jvp(f(anp))(x, W)(v)
    close(ans, ref_ans, 1e-15, 0)
    close(jv, ref_jv, 1e-13, 1e-14)
    jvp_W = fg.make_jvp(f(fnp), argnum=1)(x, W)
    for vec in (vW, 2 * vW):                                 # one forward pass, many vectors
        close(jvp_W(vec)[1], autograd.make_jvp(f(anp), argnum=1)(x, W)(vec)[1], 1e-13, 1e-14)
    both = fg.make_jvp(f(fnp), argnum=(0, 1))(x, W)((v, vW))[1]
    close(both, autograd.make_jvp(f(anp), argnum=(0, 1))(x, W)((v, vW))[1], 1e-13, 1e-14)


# ---- composition, argnums, aux ---------------------------------------------------------------
def test_forward_over_reverse_is_the_hessian_vector_product():
    f = lambda x: fg.sum(fg.sin(x) * x ** 3) + x[0] * x[1]  # noqa: E731
    x, v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.5, -0.25])
    _, hv = fg.jvp(fg.grad(f), (x,), (v,))
    close(hv, fg.hessian(f)(x) @ v, 1e-13, 1e-14)
    close(hv, fg.hvp(f, x, v), 1e-13, 1e-14)
    # reverse over forward: the gradient of a Jacobian-vector product
    g = fg.grad(lambda y: fg.sum(fg.jvp(f, (y,), (v,))[1]))(x)
    close(g, fg.hessian(f)(x) @ v, 1e-13, 1e-14)
    # jacfwd of grad: the Hessian, forward over reverse
    close(fg.jacfwd(fg.grad(f))(x), fg.hessian(f)(x), 1e-13, 1e-14)
    close(fg.function(lambda y: fg.jacfwd(fg.grad(f))(y))(x), fg.hessian(f)(x), 1e-13, 1e-14)


def test_jvp_of_custom_gradients_needs_only_linearity_in_the_cotangent():
    # forward mode differentiates a rule in its cotangent only: a rule written with fastgraph
    # operations on g works, even one whose other factors are plain NumPy values
    from fastgraph.extend import defvjp, primitive

    @primitive
    def cube(x):
        return x ** 3

    def plain(v):
        return v.data if isinstance(v, fg.Tensor) else v

    defvjp(cube, lambda ans, x: lambda g: g * (3.0 * plain(x) ** 2))

    @fg.custom_vjp
    def softclip(x):
        return fg.tanh(x)

    softclip.defvjp(lambda x: (softclip(x), x), lambda x, g: (g * (1.0 - fg.tanh(x) ** 2),))
    x, v = np.array([0.5, -2.0]), np.array([1.0, 3.0])
    close(fg.jvp(cube, (x,), (v,))[1], 3 * x ** 2 * v, 1e-15, 0)
    close(fg.jvp(softclip, (x,), (v,))[1], (1 - np.tanh(x) ** 2) * v, 1e-15, 0)
    close(fg.function(lambda x, v: fg.jvp(softclip, (x,), (v,))[1])(x, v),
          (1 - np.tanh(x) ** 2) * v, 1e-15, 0)

    # a rule that takes its cotangent out of fastgraph cannot be transposed: an error, not zeros
    @primitive
    def opaque(x):
        return x * 2.0

    defvjp(opaque, lambda ans, x: lambda g: np.asarray(g) * 2.0)
    with pytest.raises(RuntimeError, match="Can't convert a Tensor that requires grad"):
        fg.jvp(opaque, (x,), (v,))


def test_jvp_through_control_flow_eager_and_traced():
    # fg.scan and fg.cond differentiate to second order, so forward mode goes through them
    xs = np.arange(8.0).reshape(4, 2) / 8.0

    def rnn(w):
        c, ys = fg.scan(lambda c, x: (fg.tanh(c * w + x), c * x), w * 0.0, xs)
        return fg.sum(ys) + fg.sum(c)

    def branch(x, p):
        return fg.cond(p > 0, lambda x: fg.sin(x) * p, lambda x: x ** 2, x)

    w, v = np.array([0.5, -0.3]), np.array([1.0, 2.0])
    expected = fg.grad(rnn)(w) @ v
    close(fg.jvp(rnn, (w,), (v,))[1], expected, 1e-13, 1e-14)
    close(fg.function(lambda w, v: fg.jvp(rnn, (w,), (v,))[1])(w, v), expected, 1e-13, 1e-14)
    close(fg.function(fg.jacfwd(rnn))(w), fg.grad(rnn)(w), 1e-13, 1e-14)
    traced = fg.function(lambda x, p, v: fg.jvp(lambda x: branch(x, p), (x,), (v,))[1])
    for p in (2.0, -1.0):
        expected = fg.jacobian(lambda x: branch(x, p))(w) @ v
        close(fg.jvp(lambda x: branch(x, p), (w,), (v,))[1], expected, 1e-13, 1e-14)
        close(traced(w, p, v), expected, 1e-13, 1e-14)


def test_argnums_aux_and_constants():
    f = lambda x, y, s: fg.sum(x * y) * s  # noqa: E731
    x, y = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    assert fg.jacfwd(f, argnums=1)(x, y, 2.0).tolist() == (2.0 * x).tolist()
    jx, js = fg.jacfwd(f, argnums=(0, 2))(x, y, 2.0)
    assert jx.tolist() == (2.0 * y).tolist() and js == np.dot(x, y)
    (J, aux) = fg.jacfwd(lambda x: (x * x, "aux"), has_aux=True)(x)
    assert aux == "aux" and J.tolist() == np.diag(2 * x).tolist()
    out, t, aux = fg.jvp(lambda x: (fg.exp(x), x.shape), (x,), (np.ones(2),), has_aux=True)
    assert aux == (2,) and np.array_equal(t, np.exp(x))
    # an output that does not depend on the inputs: a zero tangent of its shape
    out, t = fg.jvp(lambda x: np.ones(3), (x,), (np.ones(2),))
    assert t.tolist() == [0.0, 0.0, 0.0]
    # an integer primal is differentiated as float64 (as fg.grad does); a Python number tangent
    # takes its primal's dtype
    assert fg.jvp(lambda k: k * 2.0, (3,), (1.0,))[1] == 2.0
    x32 = x.astype(np.float32)
    t32 = fg.jvp(lambda x: x * x, (x32,), (np.ones(2, np.float32),))[1]
    assert t32.dtype == np.float32 and t32.tolist() == [2.0, 4.0]
    assert fg.jvp(lambda a: a * a, (2.0,), (1,))[1] == 4.0
    # the tangent of a zero-size input, and jacfwd's of an input with no elements
    assert fg.jacfwd(lambda x: fg.sum(x) + 1.0)(np.zeros(0)).shape == (0,)


def test_jvp_on_tensors_inside_an_outer_tape():
    # called on Tensors that require grad, jvp returns Tensors connected to them
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    _, t = fg.jvp(lambda y: y ** 3, (x,), (np.ones(2),))
    assert isinstance(t, fg.Tensor)
    t.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


# ---- bad tangents ------------------------------------------------------------------------------
ERRORS = [
    ("shape", lambda: fg.jvp(fg.sin, (np.ones(2),), (np.ones(3),)), ValueError,
     r"tangent primals\[0\] has shape \(3,\) but its primal has shape \(2,\)"),
    ("pytree_shape", lambda: fg.jvp(lambda p: p["w"], ({"w": np.ones((2, 2))},),
                                    ({"w": np.ones(4)},)), ValueError,
     r"tangent primals\[0\]\['w'\] has shape \(4,\) but its primal has shape \(2, 2\)"),
    ("dtype", lambda: fg.jvp(fg.sin, (np.ones(2, np.float32),), (np.ones(2),)), TypeError,
     r"tangent primals\[0\] has dtype float64 but its primal is differentiated at dtype float32"),
    ("structure", lambda: fg.jvp(lambda p: p[0], ([np.ones(2), np.ones(2)],), (np.ones(2),)),
     TypeError, r"tangent primals\[0\] must be a sequence of 2 like its primal"),
    ("dict_keys", lambda: fg.jvp(lambda p: p["a"], ({"a": 1.0},), ({"b": 1.0},)), TypeError,
     r"must be a dict with the primal's keys \['a'\]"),
    ("not_tuples", lambda: fg.jvp(fg.sin, 1.0, 1.0), TypeError,
     r"primals must be a tuple or list"),
    ("count", lambda: fg.jvp(fg.sin, (1.0,), (1.0, 2.0)), TypeError,
     r"1 primals but 2 tangents"),
    ("linearize_shape", lambda: fg.linearize(fg.sin, np.ones(2))[1](np.ones((2, 1))), ValueError,
     r"linearize: the tangent primals\[0\] has shape \(2, 1\) but its primal has shape \(2,\)"),
    ("make_jvp_shape", lambda: fg.make_jvp(lambda a, b: a * b, argnum=1)(1.0, np.ones(3))(
        np.ones(2)), ValueError, r"make_jvp: the tangent argument 1 has shape \(2,\)"),
    ("integer_output", lambda: fg.jvp(lambda x: fg.argmax(x), (np.ones(2),), (np.ones(2),)),
     TypeError, r"jvp of '<lambda>': the output has dtype int64"),
]


def test_unknown_shapes_in_static_graphs():
    # jvp needs no shapes (the tangent is pushed through whatever batch comes); jacfwd has one
    # product per input element, so it refuses an unknown shape by name
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(np.float64, (None, 3))
        v = fg.placeholder(np.float64, (None, 3))
        _, t = fg.jvp(lambda x: fg.sum(fg.tanh(x), axis=1), (x,), (v,))
        X, V = np.ones((2, 3)), np.arange(6.0).reshape(2, 3)
        with fg.Session(graph=g) as sess:
            close(sess.run(t, {x: X, v: V}), ((1 - np.tanh(X) ** 2) * V).sum(1), 1e-15, 0)
        with pytest.raises(TypeError, match=r"jacfwd of 'tanh' inside a graph needs inputs and "
                                            r"outputs of known shape.*\(None, 3\)"):
            fg.jacfwd(fg.tanh)(x)


@pytest.mark.parametrize("name,call,exc,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_mismatched_tangents_are_refused_naming_the_argument(name, call, exc, message):
    with pytest.raises(exc, match=message):
        call()
