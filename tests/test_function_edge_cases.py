"""Edge cases of ``@fg.function`` and the fused kernels found by fuzzing: NumPy's power fast
paths, weak Python scalars, the keyword-argument cache, nested outputs, kernel-call arguments."""
from __future__ import annotations

import collections
import gc
import re
import warnings
import weakref

import numpy as np
import pytest

import fastgraph as fg
from fastgraph.fused import Expr, compile_kernel


def _bits_equal(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and \
        np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _n_diff(a, b) -> int:
    a, b = np.asarray(a), np.asarray(b)
    return int((a.view(np.uint8).reshape(a.size, -1) != b.view(np.uint8).reshape(b.size, -1))
               .any(axis=1).sum())


def _specials_and_randoms(dtype, n=40_000, seed=0):
    rng = np.random.default_rng(seed)
    tiny = np.finfo(dtype).smallest_subnormal
    sp = [-np.inf, -0.0, 0.0, np.inf, np.nan, -1.0, 1.0, -2.5, tiny, -tiny, 1e30, -1e30]
    x = np.concatenate([sp, rng.standard_normal(n // 2) * 3,
                        np.abs(rng.standard_normal(n - n // 2 - len(sp))) * 10])
    return x.astype(dtype)


def _fused_and_unfused(build):
    """Run ``build() -> (fetch, feed_dict)`` in a fused and an unfused session."""
    g = fg.Graph()
    res = []
    with g.as_default():
        y, feeds = build()
        for disable in ((), ("fuse",)):
            with fg.Session(disable=disable) as s, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res.append(s.run(y, feeds))
            if not disable:
                with fg.Session() as s:
                    assert "fused_0" in s.explain(y, feeds), "the fused plan fused nothing"
    return res


# ------------------------------------------------------------------------------------------------
# 1. power: the fused kernel gives NumPy's (the unfused plan's) bits
# ------------------------------------------------------------------------------------------------
EXPONENTS = [0.5, 2.0, -1.0, 1.0, 0.0, -0.0, 3.0, -2.0, 1.5, -0.5, 2, 3, -1, 0.5000000001]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("e", EXPONENTS, ids=repr)
def test_fused_power_with_a_constant_exponent_gives_numpys_bits(dtype, e):
    """NumPy's power loop takes fast paths for a scalar exponent (0.5 -> sqrt, 2 -> x*x,
    -1 -> 1/x): sqrt(-inf) is NaN where pow gives inf, sqrt(-0.0) is -0.0; and float32 runs
    powf, not pow in double.  ``-inf ** 0.5`` used to be inf fused and NaN unfused."""
    x = _specials_and_randoms(dtype)

    def build():
        p = fg.placeholder(dtype, x.shape)
        return fg.power(p, e) * 2.0 + 1.0, {p: x}

    fused, unfused = _fused_and_unfused(build)
    with np.errstate(all="ignore"):
        want = np.power(x, e) * 2.0 + 1.0
    assert _bits_equal(unfused, want)
    assert _n_diff(fused, unfused) == 0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_power_with_a_runtime_scalar_exponent_gives_numpys_bits(dtype):
    """An exponent fed at run time is known only then: that power stays a NumPy step."""
    x = _specials_and_randoms(dtype)
    for e in (0.5, 2.0, -1.0, 3.0):
        def build():
            p, q = fg.placeholder(dtype, x.shape), fg.placeholder(dtype, ())
            return p * 0.25 + fg.power(p * 1.5, q) * 2.0 + 1.0, {p: x, q: dtype(e)}

        fused, unfused = _fused_and_unfused(build)
        assert _n_diff(fused, unfused) == 0, e


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_power_with_an_array_of_one_value_as_exponent(dtype):
    """NumPy uses pow for an exponent array (nonzero strides) even when it holds 0.5
    everywhere, and the fast path for a zero-stride broadcast of 0.5."""
    x = _specials_and_randoms(dtype)
    for ev in (np.full(x.shape, 0.5, dtype), np.broadcast_to(dtype(0.5), x.shape)):
        def build():
            p = fg.placeholder(dtype, x.shape)
            return fg.power(p * 1.5, fg.constant(ev) + 0.0) * 2.0 + 1.0, {p: x}

        fused, unfused = _fused_and_unfused(build)
        assert _n_diff(fused, unfused) == 0


# ------------------------------------------------------------------------------------------------
# 2. Python scalar arguments are weak
# ------------------------------------------------------------------------------------------------
def test_python_scalar_arguments_promote_weakly_like_numpy():
    f = fg.function(lambda x, s: x * s)
    x32 = np.ones(3, np.float32)
    assert f(x32, 2.0).dtype == np.float32 == (x32 * 2.0).dtype
    r = f(np.array([100], np.int8), 2)
    assert r.dtype == np.int8 and r.tolist() == [-56]
    assert f(x32, True).dtype == np.float32
    # NumPy scalars are strong: another signature
    assert f(x32, np.float64(2.0)).dtype == np.float64
    assert f.trace_count == 4
    # a Python float of another value reuses the trace
    np.testing.assert_array_equal(f(x32, 3.0), np.full(3, 3.0, np.float32))
    assert f.trace_count == 4


@pytest.mark.parametrize("disable", [(), ("fuse",)])
def test_weak_scalar_arguments_fused_and_unfused_agree(disable):
    x = np.linspace(-1, 1, 50_000).astype(np.float32)
    f = fg.function(lambda x, s: (x * 1.5 > s) * x + fg.tanh(x * s), disable=disable)
    got = f(x, 0.1)
    want = (x * 1.5 > 0.1) * x + np.tanh(x * 0.1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    # the comparison is made in float32, as NumPy makes it (0.1 rounded to float32)
    g = fg.function(lambda x, s: x > s, disable=disable)
    t = np.full(4, np.float32(0.1))
    assert g(t, 0.1).tolist() == (t > 0.1).tolist() == [False] * 4


def test_weak_scalars_are_fused_into_float32_kernels():
    x = np.linspace(0, 3, 50_000).astype(np.float32)
    f = fg.function(lambda x, s: fg.sqrt(x * s) - s)
    assert "fused_0" in f.explain(x, 0.1)
    got = f(x, 0.1)
    assert got.dtype == np.float32
    assert _bits_equal(got, np.sqrt(x * 0.1) - 0.1)
    assert _bits_equal(got, fg.function(lambda x, s: fg.sqrt(x * s) - s,
                                        disable=("fuse",))(x, 0.1))


@pytest.mark.parametrize("disable", [(), ("fuse",)])
def test_an_op_of_weak_scalars_only_is_typed_consistently(disable):
    """``s * 2.0`` of two Python scalars is a NumPy float64 (``fg.multiply(2.0, 3.0)``): the
    plan computes it so whether fused or not."""
    f = fg.function(lambda x, s: x * (s * 2.0) + 1.0, disable=disable)
    x = np.ones(50_000, np.float32)
    r = f(x, 2.0)
    assert r.dtype == np.float64
    np.testing.assert_array_equal(r, np.full(x.shape, 5.0))
    np.testing.assert_array_equal(f(x, 3.0), np.full(x.shape, 7.0))
    assert f.trace_count == 1


def test_weak_scalar_argument_donated_or_returned():
    f = fg.function(lambda x, s: (x + s, s))
    a, s = f(np.ones(2, np.float32), 2.5)
    assert a.dtype == np.float32 and s == 2.5
    d = fg.function(lambda x, s: x * s, donate_argnums=(1,))
    assert d(np.ones(2), 3.0).tolist() == [3.0, 3.0]


# ------------------------------------------------------------------------------------------------
# 3. keyword arguments are cached by type and value (bits for floats)
# ------------------------------------------------------------------------------------------------
def test_keyword_arguments_of_equal_value_but_other_type_retrace():
    k = fg.function(lambda x, scale: x * scale)
    x = np.arange(3)
    assert k(x, scale=2).dtype == np.int64
    assert k(x, scale=2.0).dtype == np.float64
    assert k(x, scale=True).dtype == np.int64
    assert k(x, scale=np.float32(2.0)).dtype == np.float64
    assert k.trace_count == 4
    k(x, scale=2.0)
    assert k.trace_count == 4


def test_keyword_zero_signs_and_nans():
    k = fg.function(lambda x, scale: x * scale)
    x = np.ones(2)
    assert np.signbit(k(x, scale=0.0)).tolist() == [False, False]
    assert np.signbit(k(x, scale=-0.0)).tolist() == [True, True]
    n = k.trace_count
    for _ in range(5):
        assert np.isnan(k(x, scale=float("nan"))).all()
    assert k.trace_count == n + 1 and len(k._cache) == n + 1
    # tuples and lists by their elements; unhashable values are traced on every call
    c = fg.function(lambda x, shape: fg.reshape(x, shape))
    assert c(np.ones(4), shape=(2, 2)).shape == (2, 2)
    assert c(np.ones(4), shape=[4]).shape == (4,)
    c(np.ones(4), shape=(2, 2))
    assert c.trace_count == 2
    u = fg.function(lambda x, opts: x * opts["s"])
    assert u(np.ones(2), opts={"s": 3.0}).tolist() == [3.0, 3.0]
    assert u(np.ones(2), opts={"s": 4.0}).tolist() == [4.0, 4.0]
    assert u.trace_count == 2


# ------------------------------------------------------------------------------------------------
# 4. nested outputs holding plain values
# ------------------------------------------------------------------------------------------------
Pair = collections.namedtuple("Pair", "a b")


class _MyList(list):
    pass


def test_nested_outputs_with_python_values_keep_their_structure():
    x = np.ones(2)
    out = fg.function(lambda x: [x, (x + 1, 2.0)])(x)
    assert type(out) is list and type(out[1]) is tuple
    np.testing.assert_array_equal(out[1][0], [2.0, 2.0])
    assert out[1][1] == 2.0
    out = fg.function(lambda x: {"a": [x, 3], "b": Pair(x * 2, (1.5, None)),
                                 "c": _MyList([4.0])})(x)
    assert set(out) == {"a", "b", "c"} and out["a"][1] == 3
    assert type(out["b"]) is Pair and out["b"].b == (1.5, None)
    np.testing.assert_array_equal(out["b"].a, [2.0, 2.0])
    assert type(out["c"]) is _MyList and out["c"] == [4.0]
    od = fg.function(lambda x: collections.OrderedDict(z=[x.sum(), 1], y=0.5))(x)
    assert type(od) is collections.OrderedDict and list(od) == ["z", "y"]
    assert od["z"] == [2.0, 1] and od["y"] == 0.5


# ------------------------------------------------------------------------------------------------
# 5. kernel-call arguments
# ------------------------------------------------------------------------------------------------
def test_misaligned_out_is_reported_as_misaligned():
    k = compile_kernel([Expr.input(0) * 2.0])
    buf = np.zeros(10 * 8 + 1, np.uint8)[1:].view(np.float64)
    assert not buf.flags.aligned
    with pytest.raises(ValueError, match="misaligned"):
        k(np.ones(10), out=buf)
    with pytest.raises(ValueError, match="zero strides"):
        k(np.ones(10), out=np.lib.stride_tricks.as_strided(np.zeros(1), (10,), (0,)))


@pytest.mark.parametrize("nt", [2.5, 2.0, "2", True, np.float64(2)])
def test_num_threads_must_be_an_integer(nt):
    k = compile_kernel([Expr.input(0) * 2.0])
    a = np.ones(10)
    for call in (lambda: k(a, num_threads=nt), lambda: k(a[::2], num_threads=nt),
                 lambda: k(a, out=np.empty(10), num_threads=nt),
                 lambda: k.call_flat((a,), (np.empty(10),), num_threads=nt)):
        with pytest.raises(TypeError, match="num_threads"):
            call()
    np.testing.assert_array_equal(k(a, num_threads=np.int64(2)), 2 * a)


def test_input_index_is_bounded():
    from fastgraph.fused.compiler import MAX_INPUTS
    with pytest.raises(ValueError, match="MAX_INPUTS"):
        Expr.input(10 ** 9)
    with pytest.raises(ValueError):
        Expr.input(-1)
    with pytest.raises(TypeError):
        Expr.input(2.5)
    assert compile_kernel([Expr.input(MAX_INPUTS - 1) * 1.5]).nin == MAX_INPUTS
    with pytest.raises(ValueError, match="MAX_INPUTS"):
        compile_kernel([Expr.input(0)], nin=MAX_INPUTS + 1)


def test_an_eager_factory_inside_function_says_what_to_use():
    f = fg.function(lambda a: a + fg.ones(2))
    with pytest.raises(TypeError, match=r"cannot mix an eager fg.Tensor.*np.ones"):
        f(np.zeros(2))
    g = fg.function(lambda a: a + np.ones(2))     # the advice works
    np.testing.assert_array_equal(g(np.zeros(2)), np.ones(2))


# ---- methods, nesting, values a trace cannot give ----------------------------------------------
class _Scaler:
    def __init__(self, k):
        self.k = k

    @fg.function
    def forward(self, x):
        return x * self.k


def test_function_on_a_method_binds_each_instance():
    a, b = _Scaler(2.0), _Scaler(3.0)
    np.testing.assert_array_equal(a.forward(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(b.forward(np.ones(2)), [3.0, 3.0])
    assert a.forward.function is a.forward.function    # one traced function per instance
    a.forward(np.ones(2))
    assert a.forward.trace_count == 1
    f = _Scaler(4.0).forward              # holds its instance, as a bound method does
    import gc
    gc.collect()
    np.testing.assert_array_equal(f(np.ones(3)), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(f(np.ones(2)), [4.0, 4.0])   # a retrace after the collection
    del f
    import gc
    n = len(_Scaler.forward._bound)
    del b
    gc.collect()
    assert len(_Scaler.forward._bound) == n - 1        # and forgotten with the instance


def test_a_method_of_a_class_without_weakrefs_warns_and_still_works():
    class Slotted:
        __slots__ = ("k",)

        def __init__(self, k):
            self.k = k

        @fg.function
        def forward(self, x):
            return x * self.k

    s = Slotted(2.0)
    with pytest.warns(RuntimeWarning, match="__weakref__"):
        np.testing.assert_array_equal(s.forward(np.ones(2)), [2.0, 2.0])


def test_explain_with_nodes_says_it_needs_concrete_arguments():
    f = fg.function(lambda x: x * 2)
    with pytest.raises(TypeError, match="concrete arguments"):
        fg.function(lambda x: f.explain(x))(np.ones(2))


def test_a_function_called_inside_another_is_inlined():
    inner = fg.function(lambda x: fg.tanh(x) * 2)
    outer = fg.function(lambda x: inner(x) + 1)
    x = np.linspace(-1, 1, 5)
    np.testing.assert_array_equal(outer(x), np.tanh(x) * 2 + 1)
    assert inner.trace_count == 0
    rec = fg.function(lambda x, n: x if n == 0 else rec(x * 2, n=n - 1))
    np.testing.assert_array_equal(rec(np.ones(2), n=3), [8.0, 8.0])


def test_an_eager_tensor_keyword_is_its_data():
    f = fg.function(lambda x, *, s: x * s)
    np.testing.assert_array_equal(f(np.ones(2), s=fg.tensor([3.0, 4.0])), [3.0, 4.0])


@pytest.mark.parametrize("body, what", [
    (lambda x: np.asarray(x), "converting to a NumPy array"),
    (lambda x: np.array([x, x]), "converting to a NumPy array"),
    (lambda x: np.sum(x), "np.sum"),
    (lambda x: np.reshape(x, (2, 1)), "np.reshape"),
    (lambda x: float(x[0]), "float()"),
    (lambda x: x.item(), "item()"),
    (lambda x: x.tolist(), "tolist()"),
])
def test_asking_a_traced_value_for_its_value_says_so(body, what):
    with pytest.raises(TypeError, match=r"needs the value of symbolic Node"):
        fg.function(body)(np.ones(2))
    with pytest.raises(TypeError, match=re.escape(what)):
        fg.function(body)(np.ones(2))


def test_zero_d_results_are_numpy_scalars_so_a_loop_keeps_its_dtypes():
    # Python floats would come back weak on the next call: the dtypes would drift and the
    # function would trace again (a Session still returns Python numbers, as documented)
    f = fg.function(lambda x, s: (x * s, s * fg.sum(x)))
    x, s = np.ones(3, np.float32), np.float64(0.5)
    for _ in range(3):
        y, s = f(x, s)
        assert y.dtype == np.float64 and type(s) is np.float64
    assert f.trace_count == 1
    g = fg.function(lambda x: (fg.sum(x), fg.sum(x > 0)))
    total, count = g(np.ones(3))
    assert type(total) is np.float64 and type(count) is np.int64


def _cached_plans(f):
    """Weak references to the graphs and plans ``f`` keeps cached (a method's per-instance
    traces included)."""
    fs = [f] + [bound for _, bound in f._bound.values()]
    return [weakref.ref(getattr(t, name)) for g in fs for t in g._cache.values()
            for name in ("graph", "plan")]


@pytest.mark.parametrize("make", [
    lambda: fg.function(lambda x, y: fg.tanh(x * y).sum()),
    lambda: fg.function(fg.grad(lambda x, y: fg.sum(fg.tanh(x * y) ** 2))),
    lambda: fg.function(fg.grad(
        lambda x, y: fg.sum(fg.grad(lambda x: fg.sum(fg.sin(x) * y))(x) ** 2))),
], ids=["plain", "grad", "grad_of_grad"])
def test_clear_cache_releases_the_traces_and_the_next_call_retraces(make):
    f = make()
    x, y = np.linspace(-1, 1, 6), np.linspace(0.5, 2, 6)
    want = f(x, y)
    f(x[:3], y[:3])
    f(x.astype(np.float32), y.astype(np.float32))
    assert f.cache_size == 3 and f.trace_count == 3
    refs = _cached_plans(f)
    assert len(refs) == 6
    f.clear_cache()
    gc.collect()
    assert f.cache_size == 0
    assert [r() for r in refs] == [None] * 6          # graphs, plans (and their buffers) freed
    np.testing.assert_array_equal(f(x, y), want)
    assert f.trace_count == 4 and f.cache_size == 1   # one retrace, cached again
    np.testing.assert_array_equal(f(x, y), want)
    assert f.trace_count == 4
    with pytest.raises(AttributeError):
        f.cache_size = 0


def test_clear_cache_on_methods_per_instance_and_through_the_class():
    a, b = _Scaler(2.0), _Scaler(3.0)
    a.forward(np.ones(2))
    a.forward(np.ones(3))
    b.forward(np.ones(2))
    assert (a.forward.cache_size, b.forward.cache_size) == (2, 1)
    assert _Scaler.forward.cache_size >= 3             # (other tests' live instances too)
    a_refs = _cached_plans(a.forward.function)
    a.forward.clear_cache()                            # this instance's traces only
    gc.collect()
    assert [r() for r in a_refs] == [None] * 4
    assert (a.forward.cache_size, b.forward.cache_size) == (0, 1)
    np.testing.assert_array_equal(a.forward(np.ones(2)), [2.0, 2.0])
    assert a.forward.trace_count == 3
    held = b.forward                                   # a BoundFunction handed out earlier
    b_refs = _cached_plans(b.forward.function)
    _Scaler.forward.clear_cache()                      # every instance's
    gc.collect()
    assert [r() for r in b_refs] == [None] * 2
    assert _Scaler.forward.cache_size == 0 and held.cache_size == 0
    np.testing.assert_array_equal(held(np.ones(2)), [3.0, 3.0])
    np.testing.assert_array_equal(b.forward(np.ones(2)), [3.0, 3.0])
    assert b.forward.trace_count == 2 and b.forward.cache_size == 1


def test_clear_caches_clears_every_live_function_and_keeps_none_alive():
    f = fg.function(lambda x: x * 2)
    g = fg.function(fg.grad(lambda x: fg.sum(x ** 3)))
    a = _Scaler(5.0)
    f(np.ones(2))
    g(np.ones(2))
    a.forward(np.ones(2))
    refs = _cached_plans(f) + _cached_plans(g) + _cached_plans(a.forward.function)
    fg.clear_caches()
    gc.collect()
    assert f.cache_size == g.cache_size == a.forward.cache_size == 0
    assert [r() for r in refs] == [None] * 6
    np.testing.assert_array_equal(g(np.ones(2)), [3.0, 3.0])
    assert g.trace_count == 2
    # the registry of live functions holds them weakly
    h = fg.function(lambda x: x + 1)
    h(np.ones(2))
    dead = weakref.ref(h)
    del h
    gc.collect()
    assert dead() is None
    fg.clear_caches()
