"""The fused kernels' results against the unfused ops' (NumPy's and SciPy's) bits.

Every VM opcode carries its bound (``OpCode.ulp``: the most ulp its result may differ from the
unfused op's, per dtype; docs/fusion.md has the table).  It is checked here for every opcode,
both dtypes and every instruction-set copy of the loops, over the whole float range: random bit
patterns (subnormals, huge values, infinities, NaNs with payloads of both signs) and the regions
where each function changes.  Infinities, NaN-ness and the sign of zero results are exact.
Kernels small enough to run NumPy's loops, and every op that is not one of the VM's own
transcendentals, give the unfused bits exactly; arithmetic, comparisons and rounding inside a
fused region add nothing: they see the transcendental's value and round as NumPy does, so a
comparison or ``floor`` downstream of ``exp`` can change only where ``exp``'s own bound lets
the value cross the threshold.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
from fastgraph.fused import BY_NAME, OPCODES, Expr, compile_kernel
from fastgraph.kernels import vm

DTYPES = [np.float32, np.float64]
_UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}
_INT = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}
SMALL = 4096          # kernels of at most this many elements run NumPy's loops


def _unfused(name):
    """What the unfused graph computes for opcode ``name``: the fastgraph op of that name."""
    return getattr(fg, name)


UNARY = [op.name for op in OPCODES if op.arity == 1 and hasattr(fg, op.name)]


@pytest.fixture(params=vm.vec_isas())
def vec_copy(request):
    """Each instruction-set copy of the VM's loops this CPU can run (baseline, and AVX2)."""
    vm._set_vec_isa(request.param)
    try:
        yield request.param
    finally:
        vm._set_vec_isa("cpu")


def _whole_range(dtype, n=1 << 18, seed=0):
    """Floats from every part of the range: uniform random bit patterns (so every exponent,
    subnormals, infinities and NaN payloads of both signs appear in proportion to their share of
    the encodings) and values where the functions change: near 0, around +-1, the overflow and
    underflow thresholds of exp, and the special values themselves."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    ut = _UINT[dtype]
    bits = rng.integers(0, np.iinfo(ut).max, size=n, dtype=ut, endpoint=True).view(dtype)
    fi = np.finfo(dtype)
    big = float(np.log(fi.max))
    tiny = float(fi.smallest_subnormal)
    dense = [rng.uniform(-1.1 * big, 1.1 * big, n // 4), rng.standard_normal(n // 4) * 4,
             rng.uniform(-1e-3, 1e-3, n // 8), 10.0 ** rng.uniform(-45 if dtype == np.float32
                                                               else -320, 0, n // 8),
             np.linspace(-1.5, 1.5, 8193)]
    nan_payloads = (np.array([0x7FC00001, 0xFFC12345, 0x7F800001, 0xFF800002], np.uint32).view(
        np.float32) if dtype == np.float32 else np.array(
        [0x7FF8000000000001, 0xFFF8123456789ABC, 0x7FF0000000000001, 0xFFF0000000000002],
        np.uint64).view(np.float64))
    special = np.array([0.0, -0.0, np.inf, -np.inf, tiny, -tiny, float(fi.tiny), -float(fi.tiny),
                        float(fi.max), -float(fi.max), 1.0, -1.0, big, -big, np.nextafter(big, 0),
                        -(big + 1.0), -745.5, -746.0, -88.8, -103.9, 0.5, -0.5])
    with np.errstate(all="ignore"):
        parts = [bits] + [d.astype(dtype) for d in dense] + [nan_payloads,
                                                             special.astype(dtype)]
    return np.concatenate(parts)


def _ulps(got, want):
    """Distance in ulps between finite (or infinite) values of one dtype: the number of
    representable floats between them (0 between +0 and -0)."""
    it = _INT[got.dtype]
    a, b = got.view(it).astype(np.int64), want.view(it).astype(np.int64)
    lo = np.int64(np.iinfo(it).min)
    a = np.where(a < 0, lo - a, a)
    b = np.where(b < 0, lo - b, b)
    return np.abs(a - b)


def _assert_within(got, want, bound, what):
    """``got`` is ``want`` up to ``bound`` ulps; NaN-ness, infinities, zeros and their sign are
    exact (a NaN's sign and payload bits are not: NumPy's own loops differ there)."""
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    assert np.array_equal(nan_got, nan_want), f"{what}: NaN where the unfused op gives none " \
        f"(or the reverse) at {got[nan_got != nan_want][:5]} vs {want[nan_got != nan_want][:5]}"
    ok = ~nan_want
    g, w = got[ok], want[ok]
    inf = np.isinf(g) | np.isinf(w)
    assert np.array_equal(g[inf], w[inf]), f"{what}: infinities differ"
    assert np.array_equal(g == 0, w == 0), f"{what}: 0 where the unfused op gives none (or the " \
        f"reverse) at {g[(g == 0) != (w == 0)][:5]} vs {w[(g == 0) != (w == 0)][:5]}"
    zero = (g == 0) & (w == 0)
    assert np.array_equal(np.signbit(g[zero]), np.signbit(w[zero])), f"{what}: sign of zero"
    u = _ulps(g, w)
    worst = int(np.argmax(u)) if u.size else 0
    assert u.size == 0 or u[worst] <= bound, \
        f"{what}: {u[worst]} ulp > {bound} (fused {g[worst]!r}, unfused {w[worst]!r})"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("name", UNARY)
def test_every_opcode_holds_its_bound_over_the_whole_range(name, dtype, vec_copy):
    x = _whole_range(dtype)
    bound = BY_NAME[name].ulp[np.dtype(dtype).name]
    with np.errstate(all="ignore"):
        got = compile_kernel([Expr.op(name, Expr.input(0))])(x, num_threads=2)
        want = np.asarray(_unfused(name)(x))
    assert got.dtype == want.dtype == dtype
    _assert_within(got, want, bound, f"{name} {np.dtype(dtype).name} ({vec_copy})")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("name", UNARY)
def test_small_plans_give_the_unfused_bits(name, dtype):
    # a region of at most SMALL elements runs NumPy's (and SciPy's) own loops ("ufunc"): exactly
    # what the unfused plan computes, so small plans (a softmax in a cross-entropy) agree bit
    # for bit -- sigmoid, softplus and erf included
    x = _whole_range(dtype, n=2048)[:SMALL]
    with np.errstate(all="ignore"):
        got = compile_kernel([Expr.op(name, Expr.input(0))], strategy="ufunc")(x)
        fused, unfused, _ = _fused_and_unfused(lambda p: getattr(fg, name)(p) * 2.0, x)
        want = np.asarray(_unfused(name)(x))
    _assert_within(got, want, 0, f"{name} {np.dtype(dtype).name}")
    _assert_within(fused, unfused, 0, f"{name} * 2 in a plan, {np.dtype(dtype).name}")


def _around(x0, dtype, steps=64):
    """``x0`` in ``dtype`` and the ``steps`` floats either side of it."""
    x = np.full(2 * steps + 1, x0, dtype)
    k = np.arange(-steps, steps + 1)
    for i in range(steps):
        x = np.where(k > i, np.nextafter(x, np.inf), np.where(-k > i, np.nextafter(x, -np.inf), x))
    return x.astype(dtype)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_sigmoid_is_zero_exactly_where_expit_is(dtype, vec_copy):
    # SciPy's expit, 1 / (1 + exp(-x)), is 0 from where exp(-x) overflows down; the VM's rational
    # form gave the subnormal the true value rounds to (5e-324 at -745.0 in float64): the same
    # ulp-wise, but a `sigmoid(x) > 0` or `log(sigmoid(x))` downstream saw the difference
    big = float(np.log(np.finfo(dtype).max))
    x = np.concatenate([_around(-big, dtype), _around(-(big + 14.0), dtype),
                        np.array([-745.0, -746.0, -1e4, -np.finfo(dtype).max, -np.inf], dtype)])
    x = np.tile(x, SMALL // x.size + 1)         # more than SMALL elements: the vec kernel runs
    with np.errstate(all="ignore"):
        got = compile_kernel([Expr.op("sigmoid", Expr.input(0))])(x)
        want = np.asarray(fg.sigmoid(x))
    assert np.array_equal(got == 0, want == 0), (dtype, vec_copy, x[(got == 0) != (want == 0)])
    assert (want == 0).any() and (want > 0).any()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["tan", "erf", "sinh", "cosh", "arctan"])
def test_transcendentals_on_numpys_loops_give_its_bits_at_any_size(name, dtype, vec_copy):
    # not one of the VM's own vec kernels: the unfused op's own loop runs (tan was libm in
    # double, up to 1 ulp from NumPy's float32 tan; erf libm's, not SciPy's)
    x = _whole_range(dtype, n=1 << 16)
    with np.errstate(all="ignore"):
        got = compile_kernel([Expr.op(name, Expr.input(0))])(x, num_threads=2)
        want = np.asarray(_unfused(name)(x))
    _assert_within(got, want, 0, f"{name} {np.dtype(dtype).name} ({vec_copy})")


def test_the_bounds_are_the_documented_table():
    # docs/fusion.md states each nonzero bound in one table; the opcode rows are its source
    from pathlib import Path
    text = (Path(__file__).resolve().parent.parent / "docs" / "fusion.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip(" `") for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in BY_NAME:
            rows[cells[0]] = (int(cells[1]), int(cells[2]))
    want = {op.name: (op.ulp["float32"], op.ulp["float64"]) for op in OPCODES
            if op.ulp["float32"] or op.ulp["float64"]}
    assert rows == want


# ---- downstream of a fused transcendental ------------------------------------------------------
def _fused_and_unfused(f, *xs):
    """``f``'s result(s) from a fused and from an unfused plan; and the fused plan's text."""
    g = fg.Graph()
    with g.as_default():
        ps = [fg.placeholder(x.dtype, x.shape) for x in xs]
        y = f(*ps)
    feed = dict(zip(ps, xs))
    with fg.Session(g) as fused, fg.Session(g, disable=("fuse",)) as unfused:
        if isinstance(y, list):
            return ([np.asarray(v) for v in fused.run(y, feed)],
                    [np.asarray(v) for v in unfused.run(y, feed)], fused.explain(y, feed))
        return (np.asarray(fused.run(y, feed)), np.asarray(unfused.run(y, feed)),
                fused.explain(y, feed))


def _at_thresholds(dtype, inverse, thresholds, n=1 << 15, seed=1):
    """Inputs whose transcendental value lands on (or within a few ulp of) each threshold."""
    rng = np.random.default_rng(seed)
    t = rng.choice(np.asarray(thresholds, np.float64), n)
    with np.errstate(all="ignore"):
        x = inverse(t).astype(dtype)
    steps = rng.integers(-3, 4, n)
    for _ in range(3):                          # nudge by a few ulp either way
        x = np.where(steps > 0, np.nextafter(x, np.inf), np.where(steps < 0, np.nextafter(
            x, -np.inf), x)).astype(dtype)
        steps = steps - np.sign(steps)
    return x


# (name, transcendental, what follows it, inverse of the transcendental, thresholds)
DOWNSTREAM = [
    ("floor(exp)", fg.exp, fg.floor, np.log, np.arange(1, 200)),
    ("ceil(3 log)", fg.log, lambda t: fg.ceil(t * 3.0), np.exp, np.arange(-30, 30) / 3.0),
    ("exp > k", fg.exp, lambda t: t > 7.0, np.log, [7.0]),
    ("sign(tanh - 0.25)", fg.tanh, lambda t: fg.sign(t - 0.25), np.arctanh, [0.25]),
    ("where(sigmoid > 0.75)", fg.sigmoid, lambda t: fg.where(t > 0.75, t, -t),
     lambda s: np.log(s / (1 - s)), [0.75]),
    ("round(4 tanh)", fg.tanh, lambda t: fg.round(t * 4.0), np.arctanh, [-0.375, 0.125, 0.625]),
    ("trunc(expm1)", fg.expm1, lambda t: fg.trunc(t), np.log1p, np.arange(1, 50)),
    ("int(log1p * 10)", fg.log1p, lambda t: fg.astype(t * 10.0, np.int64), np.expm1,
     np.arange(1, 60) / 10.0),
    ("softplus >= 2", fg.softplus, lambda t: t >= 2.0, lambda s: np.log(np.expm1(s)), [2.0]),
    ("tanh * 2 + 1", fg.tanh, lambda t: t * 2.0 + 1.0, np.arctanh, [-0.5, 0.0, 0.5]),
    ("expm1 * y + 1", fg.expm1, lambda t: t * 0.1 + 1.0, np.log1p, [-0.5, 1.0, 10.0]),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("case", DOWNSTREAM, ids=[c[0] for c in DOWNSTREAM])
def test_ops_after_a_fused_transcendental_add_nothing_to_its_bound(case, dtype):
    # a fused region computing D(T(x)) gives exactly D applied (by NumPy) to the fused T(x), and
    # the fused T(x) is within T's bound of NumPy's: so a comparison or rounding D changes its
    # result only where T's own bound reaches across D's threshold
    name, T, D, inverse, thresholds = case
    x = _at_thresholds(dtype, inverse, thresholds)
    # both from one fused region (a transcendental alone is not worth a kernel)
    (t_fused, d_fused), (t_numpy, d_unfused), plan = _fused_and_unfused(
        lambda p: [T(p), D(T(p))], x)
    assert "1 kernel(s) replacing" in plan and f"{T.__name__}(r0)  [vec]" in plan, plan
    _assert_within(t_fused, t_numpy, BY_NAME[T.__name__].ulp[np.dtype(dtype).name], name)
    with np.errstate(all="ignore"):
        d_of_fused = np.asarray(D(t_fused))
        d_of_numpy = np.asarray(D(t_numpy))
    assert d_fused.tobytes() == d_of_fused.astype(d_fused.dtype).tobytes(), name
    assert d_unfused.tobytes() == d_of_numpy.astype(d_unfused.dtype).tobytes(), name
    # so where the fused plan's decision differs from the unfused one, moving NumPy's T(x) by at
    # most T's bound in ulp reaches the fused decision: the threshold lies within the bound
    differ = np.flatnonzero(d_fused != d_unfused)
    bound = BY_NAME[T.__name__].ulp[np.dtype(dtype).name]
    reached = np.zeros(differ.size, bool)
    for k in range(-bound, bound + 1):
        moved = _step(t_numpy[differ], k)
        with np.errstate(all="ignore"):
            reached |= np.asarray(D(moved)).astype(d_fused.dtype) == d_fused[differ]
    assert reached.all(), (name, x[differ][~reached][:5])


def _step(x, k):
    """``x`` moved ``k`` floats up (``k > 0``) or down."""
    for _ in range(abs(k)):
        x = np.nextafter(x, np.inf if k > 0 else -np.inf).astype(x.dtype)
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "log1p"])
def test_argmax_of_a_fused_result_picks_within_twice_the_bound(name, dtype):
    # rows of nearly equal inputs (a few ulp apart): NumPy's argmax of a fused plan's result may
    # pick another column than on the unfused result, but only one whose unfused value is within
    # twice the op's bound of the row's maximum (each of the two values moved by at most the bound)
    rng = np.random.default_rng(2)
    base = rng.uniform(0.1, 0.9, 2048).astype(dtype)
    x = np.stack([_step(base, int(k)) for k in rng.integers(0, 4, 8)], axis=1)
    t_fused, t_numpy, plan = _fused_and_unfused(lambda p: getattr(fg, name)(p) * 2.0, x)
    assert f"{name}(r0)  [vec]" in plan, plan
    i_fused, i_unfused = np.argmax(t_fused, axis=1), np.argmax(t_numpy, axis=1)
    rows = np.arange(x.shape[0])
    picked, best = t_numpy[rows, i_fused], t_numpy[rows, i_unfused]
    assert (_ulps(picked, best) <= 2 * BY_NAME[name].ulp[np.dtype(dtype).name]).all()
