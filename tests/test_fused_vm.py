"""Table-driven tests of the fused-kernel VM (fastgraph.kernels.vm) and its compiler
(fastgraph.fused).

Every opcode in the table is checked against its NumPy reference in both dtypes, over contiguous,
strided, transposed, reversed and broadcast operands and sizes around the block size and the thread
threshold; then multi-output kernels, reductions, thread-count determinism, out= buffers and errors.
"""
import tracemalloc
import warnings

import numpy as np
import pytest

from fastgraph.kernels import vm as _fused
from fastgraph.fused import (BY_NAME, DEFAULT_BLOCK, OPCODES, Expr, compile_kernel)
from fastgraph.fused.opcodes import REFS

B = DEFAULT_BLOCK
SIZES = [0, 1, B - 1, B, B + 1, 40_000]
DTYPES = [np.float64, np.float32]
TOL = {np.float64: dict(rtol=1e-12, atol=1e-14), np.float32: dict(rtol=1e-5, atol=1e-6)}
OPS = [op.name for op in OPCODES]


def _domain(name, i, x):
    """Map standard-normal samples into each op's interesting domain."""
    if name in ("log", "sqrt", "reciprocal") or (name == "power" and i == 0):
        return np.abs(x) + 0.1
    if name == "log1p":
        return np.abs(x) * 2 - 0.5
    if name in ("where", "select") and i == 0:
        return (x > 0).astype(x.dtype)
    if name == "clip" and i == 1:
        return x - 1.0
    if name == "clip" and i == 2:
        return x + 1.0
    if name in ("sinh", "cosh", "exp", "expm1"):
        return x * 5
    if name in ("tanh", "sigmoid", "softplus", "erf"):
        return x * 4
    if name in ("floor", "ceil", "sign"):
        return np.round(x * 3, 1)
    if name in ("equal", "not_equal", "less_equal", "greater_equal"):
        return np.round(x)
    return x * 2


def _inputs(name, shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [_domain(name, i, rng.standard_normal(s)).astype(dtype) for i, s in enumerate(shapes)]


def _ref(name, arrays, dtype):
    with np.errstate(all="ignore"):
        r = BY_NAME[name].ref(*[np.asarray(a, np.float64) for a in arrays])
        # computed in float64, rounded to the kernel dtype (float32 overflows where float64 does not)
        return np.asarray(r, np.float64).astype(dtype).astype(np.float64)


def _check(name, arrays, dtype, got, tol_scale=1.0):
    want = _ref(name, arrays, dtype)
    assert got.dtype == dtype
    assert got.shape == want.shape
    tol = dict(TOL[dtype])
    if dtype == np.float32 and name in ("fma", "nfma", "tanh_grad", "sigmoid_grad", "power", "cosh",
                                        "sinh", "tan"):
        tol["atol"] = 1e-5
        tol["rtol"] = 2e-5
    if name == "tan" and dtype == np.float32:
        tol["rtol"] = 1e-4   # float32 rounding of x near pi/2 is amplified
    np.testing.assert_allclose(got.astype(np.float64), want, equal_nan=True,
                               err_msg=f"op {name} {np.dtype(dtype).name}", **tol)


def _kernel(name, **kw):
    arity = BY_NAME[name].arity
    return compile_kernel([Expr.op(name, *[Expr.input(i) for i in range(arity)])], **kw)


# ------------------------------------------------------------------------------------------------
# the table and the VM agree
# ------------------------------------------------------------------------------------------------
def test_opcode_table_matches_vm():
    """The VM built its dispatch from the table: same numbers, same names, every op covered."""
    assert _fused.vm_opcode_map() == {op.code: op.name for op in OPCODES}
    assert len({op.code for op in OPCODES}) == len(OPCODES)
    assert all(op.code > 0 for op in OPCODES)
    for op in OPCODES:
        assert op.eval in ("c", "vec", "ufunc")
        if op.eval == "vec":
            assert _fused.vm_has_vec(op.name), op.name
        if op.ufunc is not None:    # NumPy's, or SciPy's by its dotted path; its loops found
            assert isinstance(_fused._ufunc_named(op.ufunc), np.ufunc)
            assert all(_fused.ufunc_loop_available(op.name, dt) for dt in DTYPES), op.name


def test_opcode_rows_are_the_compilers_table():
    """The compiler's table is the VM's X-macro list (fg_opcodes.h) as exported, in opcode
    order, and every row has its NumPy reference (the only per-op fact kept in Python)."""
    rows = _fused.opcode_rows()
    assert [r[2] for r in rows] == list(range(1, len(rows) + 1))
    assert [(op.name, op.arity, op.code, op.eval, op.ufunc, op.cost,
             (op.ulp["float32"], op.ulp["float64"]), op.doc) for op in OPCODES] == list(rows)
    assert set(REFS) == {op.name for op in OPCODES}
    assert all(callable(op.ref) for op in OPCODES)
    assert all(op.arity in (1, 2, 3) and op.cost >= 1 for op in OPCODES)


def test_every_instruction_set_copy_can_be_chosen():
    """The CPU's copies, best first, each selectable by name; baseline always there."""
    isas = _fused.vec_isas()
    assert isas[-1] == "baseline" and _fused.vec_isa() == isas[0]
    x = np.linspace(-30, 30, 4099)
    k = compile_kernel([Expr.op("tanh", Expr.input(0)) + Expr.op("exp", Expr.input(0))])
    try:
        for isa in isas:
            _fused._set_vec_isa(isa)
            assert _fused.vec_isa() == isa
            np.testing.assert_allclose(k(x), np.tanh(x) + np.exp(x), rtol=1e-14)
    finally:
        _fused._set_vec_isa("cpu")
    assert _fused.vec_isa() == isas[0]


@pytest.mark.parametrize("case", [
    # (what, input strides, output strides, shape, input size, output size)
    ("input past its end", [[1]], [[1]], (100,), 10, 100),
    ("output past its end", [[1]], [[1]], (100,), 100, 10),
    ("negative stride below the start", [[-1]], [[1]], (10,), 10, 10),
    ("huge shape", [[0]], [[0]], (2 ** 62,), 1, 1),
    ("huge stride", [[2 ** 60]], [[1]], (2,), 10, 2),
    ("two axes", [[10, 1]], [[10, 1]], (11, 10), 100, 110),
])
def test_program_run_rejects_strides_outside_the_operands(case):
    """``Program.run`` is the VM's general entry, taking its caller's element strides; wrong
    ones must raise, not read or write outside the arrays (they used to crash the process)."""
    what, ist, ost, shape, n_in, n_out = case
    k = compile_kernel([Expr.op("exp", Expr.input(0))])
    a, o = np.ones(n_in), np.empty(n_out)
    with pytest.raises(ValueError):
        k._prog.run(True, [a], np.array(ist), [o], np.array(ost), shape, 0, [0], [0], 1,
                    B, 1 << 30)


def test_program_run_accepts_strides_inside_the_operands():
    k = compile_kernel([Expr.op("exp", Expr.input(0))])
    a = np.arange(20.0).reshape(4, 5)
    o = np.empty((4, 5))
    k._prog.run(True, [a[:, ::-1]], np.array([[5, -1]]), [o], np.array([[5, 1]]), (4, 5), 0,
                [0], [0], 1, B, 1 << 30)
    np.testing.assert_allclose(o, np.exp(a[:, ::-1]), rtol=1e-15)


def test_program_rejects_unknown_opcode_and_bad_registers():
    bad = max(op.code for op in OPCODES) + 1
    with pytest.raises(ValueError, match="unknown opcode"):
        _fused.Program(np.array([[bad, 0, 1, 0, -1, -1]]), 2, [0], [1], [], [])
    with pytest.raises(ValueError, match="out of range"):
        _fused.Program(np.array([[BY_NAME["exp"].code, 0, 5, 0, -1, -1]]), 2, [0], [1], [], [])
    with pytest.raises(ValueError, match="before it is written"):
        _fused.Program(np.array([[BY_NAME["add"].code, 0, 2, 0, 1, -1]]), 3, [0], [2], [], [])
    with pytest.raises(ValueError, match="input or constant"):
        _fused.Program(np.array([[BY_NAME["exp"].code, 0, 0, 1, -1, -1]]), 2, [0, 1], [0], [], [])


def test_program_outputs_need_registers_of_their_own():
    # the VM points an output's register at the output array: an input's or constant's register
    # (or one listed for two outputs) would lose its value -- rejected, not run on garbage
    none = np.zeros((0, 6), np.intc)
    with pytest.raises(ValueError, match="input or constant register"):
        _fused.Program(none, 1, [0], [0], [], [])
    with pytest.raises(ValueError, match="input or constant register"):
        _fused.Program(none, 2, [0], [1], [1], [2.0])
    exp = np.array([[BY_NAME["exp"].code, 0, 1, 0, -1, -1]], np.intc)
    with pytest.raises(ValueError, match="earlier output"):
        _fused.Program(exp, 2, [0], [1, 1], [], [])


@pytest.mark.parametrize("block", [2 ** 21, 2 ** 40, 2 ** 61])
def test_block_sizes_are_bounded(block):
    # a huge block once overflowed the scratch size computation (a segfault)
    with pytest.raises(ValueError, match="block must be in"):
        compile_kernel(Expr.input(0) + 1.0, block=block)
    k = compile_kernel(Expr.input(0) + 1.0)
    with pytest.raises(ValueError, match="block must be in"):
        k._prog.configure(block, 1 << 30)
    with pytest.raises(ValueError, match="nregs"):
        _fused.Program(np.zeros((0, 6), np.intc), 2 ** 31 - 1, [0], [1], [], [])


def test_program_run_rejects_unknown_reduction_codes():
    k = compile_kernel([Expr.op("exp", Expr.input(0))])
    a, o = np.arange(20.0), np.empty(1)
    for code in (7, -1):
        with pytest.raises(ValueError, match="unknown reduction code"):
            k._prog.run(True, [a], np.array([[8]]), [o], np.array([[0]]), (20,), 20,
                        [code], [0], 1, B, 1 << 30)


# ------------------------------------------------------------------------------------------------
# every opcode, both dtypes, contiguous, all sizes
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name", OPS)
def test_opcode_contiguous_sizes(name, dtype):
    k = _kernel(name)
    arity = BY_NAME[name].arity
    for n in SIZES:
        xs = _inputs(name, [(n,)] * arity, dtype, seed=n)
        _check(name, xs, dtype, k(*xs, num_threads=2))


# The plain arithmetic ops must round exactly as the unfused NumPy expressions do, in the kernel's
# own dtype, whichever copy of the loops (baseline or AVX2+FMA) runs: in particular fma is a*b+c
# rounded twice, never contracted into one fused multiply-add instruction.
EXACT = {
    "copy": lambda a: a.copy(), "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": np.divide, "fma": lambda a, b, c: a * b + c, "nfma": lambda a, b, c: c - a * b,
    "mul_greater": lambda a, b, c: a * (b > c).astype(a.dtype), "negative": np.negative,
    "square": lambda a: a * a, "reciprocal": lambda a: np.ones((), a.dtype) / a, "abs": np.abs,
    "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil, "maximum": np.maximum,
    "minimum": np.minimum, "relu": lambda a: np.maximum(a, np.zeros((), a.dtype)),
    "tanh_grad": lambda y, g: g * (np.ones((), y.dtype) - y * y),
    "sigmoid_grad": lambda s, g: (g * s) * (np.ones((), s.dtype) - s),
    "where": lambda c, a, b: np.where(c != 0, a, b), "select": lambda c, a, b: np.where(c != 0, a, b),
    "clip": lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    "mul_mul": lambda a, b, c: (a * b) * c,
    **{name: (lambda f: lambda a, b: f(a, b).astype(a.dtype))(getattr(np, name))
       for name in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")},
}


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(EXACT))
def test_arithmetic_rounds_like_numpy(name, dtype, vec_copy):
    assert EXACT.keys() <= set(OPS)
    k = _kernel(name)
    arity = BY_NAME[name].arity
    for n in (B + 3, 3 * B + 7):
        xs = _inputs(name, [(n,)] * arity, dtype, seed=n)
        if name in ("where", "select"):
            xs[0][::3] = 0
        with np.errstate(all="ignore"):
            want = EXACT[name](*xs)
        got = k(*xs, num_threads=2)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{name} ({_fused.vec_isa()} loops)")


@pytest.mark.parametrize("strategy", ["libm", "vec", "ufunc"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name", [op.name for op in OPCODES if op.ufunc or op.eval != "c"])
def test_opcode_every_strategy(name, dtype, strategy):
    # threshold=0 and 2 threads: NumPy inner loops run in OpenMP workers, without the GIL
    k = _kernel(name, strategy=strategy, threshold=0)
    xs = _inputs(name, [(3 * B + 7,)] * BY_NAME[name].arity, dtype, seed=3)
    _check(name, xs, dtype, k(*xs, num_threads=2))


LAYOUTS = ["step", "transposed", "reversed", "scalar", "row", "column", "0d"]


def _layout(name, layout, dtype, arity):
    """Operands in a given layout plus their broadcast result shape."""
    rng = np.random.default_rng(7)

    def base(shape, i):
        return _domain(name, i, rng.standard_normal(shape)).astype(dtype)

    xs = []
    for i in range(arity):
        if layout == "step":
            xs.append(base((3 * B + 5,), i)[::3])
        elif layout == "transposed":
            xs.append(base((70, 45), i).T)
        elif layout == "reversed":
            xs.append(base((60, 50), i)[::-1, ::-2])
        elif layout == "scalar":   # first operand full, the others 0-d scalars
            xs.append(base((37, B + 3), i) if i == 0 else base((), i))
        elif layout == "row":
            xs.append(base((40, 129), i) if i == 0 else base((1, 129), i))
        elif layout == "column":
            xs.append(base((130, 41), i) if i == 0 else base((130, 1), i))
        elif layout == "0d":
            xs.append(base((), i))
    return xs


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name", OPS)
def test_opcode_layouts(name, dtype, layout):
    arity = BY_NAME[name].arity
    xs = _layout(name, layout, dtype, arity)
    k = _kernel(name, threshold=0)    # threshold 0: even small sizes run multi-threaded
    got = k(*xs, num_threads=2)
    _check(name, xs, dtype, got)
    if arity > 1 and layout in ("row", "column", "scalar"):
        # broadcast operand first as well
        xs2 = xs[::-1]
        _check(name, xs2, dtype, k(*xs2, num_threads=2))


@pytest.mark.parametrize("name", [op.name for op in OPCODES if op.arity == 1])
def test_unary_special_values(name):
    vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e-10, -1e-10,
                     0.5, -0.5, 19.0, -19.0, 25.0, -25.0, 700.0, -700.0, 709.7, 710.0, -745.0,
                     -746.0, 1e300, -1e300])
    for dtype in DTYPES:
        with np.errstate(all="ignore"):
            x = vals.astype(dtype)
        for strategy in ("auto", "libm", "vec", "ufunc"):
            got = _kernel(name, strategy=strategy)(x)
            want = _ref(name, [x], dtype)
            tol = dict(TOL[dtype])
            tol["atol"] = 1e-300 if dtype == np.float64 else 1e-38
            with np.errstate(all="ignore"):
                np.testing.assert_allclose(got.astype(np.float64), want, equal_nan=True,
                                           err_msg=f"{name} {strategy} {dtype}", **tol)


@pytest.fixture(params=["cpu", "baseline"])
def vec_copy(request):
    """Run a test on the CPU's copy of the vec/arithmetic loops and on the baseline copy (on an
    AVX2 machine the float64 tanh/sigmoid have hand-written AVX2 loops that the baseline's scalar
    code does not share, so both copies are checked)."""
    _fused._set_vec_isa(request.param)
    try:
        yield request.param
    finally:
        _fused._set_vec_isa("cpu")


def test_set_vec_isa_switches_and_restores():
    cpu = _fused.vec_isa()
    _fused._set_vec_isa("baseline")
    try:
        assert _fused.vec_isa() == "baseline"
    finally:
        _fused._set_vec_isa("cpu")
    assert _fused.vec_isa() == cpu
    with pytest.raises(ValueError, match="baseline"):
        _fused._set_vec_isa("sse9")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_vec_transcendentals_dense_accuracy(vec_copy):
    """The own exp/expm1/tanh/sigmoid/log kernels stay within a few ulp over their range."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-745, 709, 200_000), rng.uniform(-40, 40, 200_000),
                        rng.uniform(-1e-3, 1e-3, 50_000), np.linspace(-1, 1, 10_001)])
    for name, ref in [("exp", np.exp), ("expm1", np.expm1), ("tanh", np.tanh),
                      ("log1p", np.log1p)]:
        got = _kernel(name, strategy="vec")(x)
        want = ref(x)
        ok = np.isfinite(want) & (np.abs(want) > 1e-300)
        rel = np.abs(got[ok] - want[ok]) / np.abs(want[ok])
        assert rel.max() < 1e-15, (name, rel.max())   # a few ulp
    pos = np.concatenate([np.abs(x), 10.0 ** rng.uniform(-320, 308, 100_000),
                          1 + rng.uniform(-1e-6, 1e-6, 10_000)])
    got, want = _kernel("log", strategy="vec")(pos), np.log(pos)
    assert np.array_equal(got[pos == 0], want[pos == 0])
    ok = np.isfinite(want) & (np.abs(want) > 1e-300)
    assert (np.abs(got[ok] - want[ok]) / np.abs(want[ok])).max() < 1e-15
    sp = _kernel("softplus", strategy="vec")(x)
    np.testing.assert_allclose(sp, BY_NAME["softplus"].ref(x), rtol=1e-15, atol=1e-300)
    s = _kernel("sigmoid", strategy="vec")(x)
    np.testing.assert_allclose(s, BY_NAME["sigmoid"].ref(x), rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("name", ["exp", "expm1", "tanh", "sigmoid", "log", "log1p"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vec_transcendentals_do_not_depend_on_position(name, dtype, vec_copy):
    """An element's value is the same wherever it sits: inside a SIMD vector, in a loop's
    remainder (n % 4 or n % 8 elements), or alone -- so block and thread splits cannot change
    results (float64 tanh/sigmoid run hand-written 4-lane loops with a padded remainder)."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(40) * 3, [0.0, -0.0, 20.0, -19.5, 1e-300, -750.0,
                                                      710.0, np.inf, -np.inf, np.nan]])
    x = (np.abs(x) if name in ("log", "log1p") else x).astype(dtype)
    k = _kernel(name, strategy="vec")
    with np.errstate(all="ignore"):
        whole = k(x)
        for start in range(4):
            for n in range(1, 10):
                part = k(x[start:start + n].copy())
                assert part.tobytes() == whole[start:start + n].tobytes(), (name, start, n)
        alone = np.concatenate([k(x[i:i + 1].copy()) for i in range(len(x))])
    assert alone.tobytes() == whole.tobytes()


def test_vec_transcendentals_float32_accuracy(vec_copy):
    """Single-precision vec kernels: within a few float32 ulp of the exact (float64) values."""
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-103, 88, 200_000), rng.uniform(-12, 12, 200_000),
                        rng.uniform(-1e-3, 1e-3, 50_000)]).astype(np.float32)
    xd = x.astype(np.float64)
    refs = {"exp": np.exp, "expm1": np.expm1, "tanh": np.tanh,
            "sigmoid": BY_NAME["sigmoid"].ref}
    for name, ref in refs.items():
        got = _kernel(name, strategy="vec")(x).astype(np.float64)
        want = ref(xd)
        ok = np.abs(want) > 1e-37              # float32 normal range
        rel = np.abs(got[ok] - want[ok]) / np.abs(want[ok])
        assert rel.max() < 5e-7, (name, rel.max())


# ------------------------------------------------------------------------------------------------
# dtype rules
# ------------------------------------------------------------------------------------------------
def test_dtype_promotion():
    k = compile_kernel([Expr.input(0) + Expr.input(1)])
    f32 = np.ones(3, np.float32)
    f64 = np.ones(3)
    assert k(f32, f32).dtype == np.float32
    assert k(f32, f64).dtype == np.float64
    assert k(f32, np.arange(3)).dtype == np.float64
    assert k(f32, 2.0).dtype == np.float32           # Python scalars are weak (NumPy 2)
    assert k(np.arange(3), np.array([True, False, True])).dtype == np.float64
    assert k(f32, f32, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(k([1, 2], 3), [4.0, 5.0])
    with pytest.raises(TypeError, match="float32 or float64"):
        k(f64, f64, dtype=np.int32)
    with pytest.raises(TypeError, match="input 0 .*complex|promote to complex"):
        k(np.ones(3, complex), f64)
    with pytest.raises(TypeError):
        k(np.array(["a"]), f64)


# ------------------------------------------------------------------------------------------------
# multi-output kernels: the reference workload, forward and gradients in one kernel
# ------------------------------------------------------------------------------------------------
def w4_exprs():
    a, b, c, d = (Expr.input(i) for i in range(4))
    u = a * b + c
    t = Expr.op("tanh", u)
    s = Expr.op("sigmoid", d)
    y = t * s + 0.5 * a * a
    # gradients of sum(y): dy/du = s * (1 - t^2); dy/dd = t * s * (1 - s)
    gu = Expr.op("tanh_grad", t, s)
    ga = gu * b + a
    gb = gu * a
    gd = Expr.op("sigmoid_grad", s, t)
    return y, ga, gb, gu, gd


def w4_numpy(a, b, c, d):
    u = a * b + c
    t = np.tanh(u)
    s = BY_NAME["sigmoid"].ref(d)
    y = t * s + 0.5 * a * a
    gu = s * (1 - t * t)
    return y, gu * b + a, gu * a, gu, t * s * (1 - s)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("n", [1, B + 1, 50_000])
def test_multi_output_forward_and_grad(dtype, n):
    k = compile_kernel(list(w4_exprs()))
    xs = [np.random.default_rng(i).standard_normal(n).astype(dtype) for i in range(4)]
    got = k(*xs)
    assert isinstance(got, tuple) and len(got) == 5
    want = w4_numpy(*[x.astype(np.float64) for x in xs])
    for g, w in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, w, **({"rtol": 1e-12, "atol": 1e-14} if dtype == np.float64
                                            else {"rtol": 1e-4, "atol": 1e-5}))
    # describe() lists the program
    text = k.describe()
    for word in ("tanh", "sigmoid", "fma", "out4"):
        assert word in text


def test_outputs_that_are_inputs_constants_or_repeated():
    x = Expr.input(0)
    e = Expr.op("exp", x)
    k = compile_kernel([x, Expr.const(2.5), e, e, x * 2])
    a = np.linspace(-1, 1, 2001)
    o = k(a)
    np.testing.assert_array_equal(o[0], a)
    np.testing.assert_array_equal(o[1], np.full_like(a, 2.5))
    np.testing.assert_allclose(o[2], np.exp(a), rtol=1e-15)
    np.testing.assert_array_equal(o[2], o[3])
    assert not np.shares_memory(o[2], o[3])
    np.testing.assert_array_equal(o[4], a * 2)


def test_cse_and_peepholes():
    x, y = Expr.input(0), Expr.input(1)
    t1 = Expr.op("tanh", x * y)
    t2 = Expr.op("tanh", Expr.op("multiply", x, y))   # same expression built twice
    k = compile_kernel([t1 + t2, Expr.op("power", x, 2.0)])
    listing = k.describe()
    assert listing.count("tanh(") == 1
    assert "square(" in listing and "power(" not in listing
    a, b = np.linspace(-2, 2, 999), np.linspace(3, -1, 999)
    o1, o2 = k(a, b)
    np.testing.assert_allclose(o1, 2 * np.tanh(a * b), rtol=1e-15)
    np.testing.assert_array_equal(o2, a ** 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_product_peepholes_round_twice(dtype):
    """``a*b + c`` -> fma and ``c - a*b`` -> nfma only when the product has no other use, and
    both give NumPy's two roundings bit for bit (no contraction into one FMA instruction)."""
    x, y, z = Expr.input(0), Expr.input(1), Expr.input(2)
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal(3001).astype(dtype) for _ in range(3))
    for expr, op, want in ((z - x * y, "nfma(", c - a * b), (x * y + z, "fma(", a * b + c),
                           (z + x * y, "fma(", c + a * b)):
        k = compile_kernel([expr])
        assert op in k.describe() and "multiply(" not in k.describe()
        np.testing.assert_array_equal(k(a, b, c), want)
    shared = compile_kernel([z - x * y, x * y])          # the product is also an output
    assert "nfma(" not in shared.describe()
    d, p = shared(a, b, c)
    np.testing.assert_array_equal(d, c - a * b)
    np.testing.assert_array_equal(p, a * b)
    assert "nfma(" not in compile_kernel([x * y - z]).describe()   # a*b - c stays as it is


def _with_specials(x):
    fi = np.finfo(x.dtype)
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, fi.max, -fi.max, fi.smallest_subnormal,
                   20.0, -20.0], x.dtype)
    x = x.copy()
    x[::97][:sp.size] = sp
    return x


#: (expression, the superinstruction it becomes, the instructions it replaces)
SUPERINSTRUCTION_CASES = [
    (lambda x, y, z: 0.5 * x * x, "mul_mul", ("multiply",)),
    (lambda x, y, z: x * (y * z), "mul_mul", ("multiply",)),
    (lambda x, y, z: (x * y) * z - x, "mul_mul", ("multiply",)),
    (lambda x, y, z: Expr.op("tanh", x * y + z), "tanh_fma", ("fma", "tanh")),
    (lambda x, y, z: Expr.op("tanh", z + x * y) * Expr.op("sigmoid", z) + 0.5 * x * x,
     "tanh_fma", ("fma", "tanh", "multiply")),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("case", range(len(SUPERINSTRUCTION_CASES)))
def test_superinstructions_give_the_two_instructions_bits(case, dtype, vec_copy):
    """The superinstruction peephole folds a pair into one pass with the pair's bits (NaN
    payloads aside), on every block-tail length, and ``superinstructions=False`` keeps the
    pair."""
    f, sup, gone = SUPERINSTRUCTION_CASES[case]
    x, y, z = Expr.input(0), Expr.input(1), Expr.input(2)
    fused = compile_kernel([f(x, y, z)], nin=3)
    plain = compile_kernel([f(x, y, z)], nin=3, superinstructions=False)
    assert f"= {sup}(" in fused.describe() and f"= {sup}(" not in plain.describe()
    for name in gone:
        assert fused.describe().count(f"= {name}(") < plain.describe().count(f"= {name}(")
    rng = np.random.default_rng(case)
    for n in (B - 5, 3 * B + 13):
        args = [_with_specials((rng.standard_normal(n) * 3).astype(dtype)) for _ in range(3)]
        with np.errstate(all="ignore"):
            got, want = fused(*args), plain(*args)
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got) | np.isnan(got), np.signbit(want) | np.isnan(want))


def test_superinstructions_only_where_they_keep_the_results():
    x, y, z = Expr.input(0), Expr.input(1), Expr.input(2)
    inner = x * y
    shared = compile_kernel([inner * z, inner])             # the product is also an output
    assert "mul_mul(" not in shared.describe()
    u = x * y + z
    both = compile_kernel([Expr.op("tanh", u), Expr.op("exp", u)])   # the fma has another use
    assert "tanh_fma(" not in both.describe()
    for strategy in ("libm", "ufunc"):       # tanh is not the vec loop: tanh_fma would be
        k = compile_kernel([Expr.op("tanh", u)], strategy=strategy)
        assert "tanh_fma(" not in k.describe() and "= tanh(" in k.describe()


def test_superinstructions_are_switched_off_by_name_in_a_plan():
    import fastgraph as fg
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(5000) for _ in range(3))
    g = fg.Graph()
    with g.as_default():
        ps = [fg.placeholder(np.float64, (5000,)) for _ in range(3)]
        y = fg.tanh(ps[0] * ps[1] + ps[2]) / (0.5 * ps[0] * ps[0])
    feed = dict(zip(ps, (a, b, c)))
    with fg.Session(g) as on, fg.Session(g, disable=("superinstructions",)) as off:
        text_on, text_off = on.explain(y, feed), off.explain(y, feed)
        assert "tanh_fma(" in text_on and "mul_mul(" in text_on
        assert "tanh_fma(" not in text_off and "mul_mul(" not in text_off
        assert "= fma(" in text_off
        np.testing.assert_array_equal(on.run(y, feed), off.run(y, feed))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_relu_mask_peephole(dtype):
    """relu's gradient ``g * (x > 0)`` (either operand order) is one ``mul_greater`` pass with
    NumPy's bits: -0.0 where a negative g is masked, NaN where g is NaN or an infinite g is
    masked, 0 where x is NaN."""
    g, x = Expr.input(0), Expr.input(1)
    a = np.array([1.5, -2.0, np.nan, np.inf, -np.inf, 3.0, -0.0, 2.0] * 300, dtype)
    b = np.array([1.0, -1.0, 2.0, -3.0, 0.0, np.nan, 1.0, 0.0] * 300, dtype)
    with np.errstate(invalid="ignore"):     # inf * 0 is NaN, as in NumPy
        want = a * (b > 0).astype(dtype)
    for expr in (g * Expr.op("greater", x, 0.0), Expr.op("greater", x, 0.0) * g):
        k = compile_kernel([expr])
        assert "mul_greater(" in k.describe() and "= greater(" not in k.describe()
        got = k(a, b)
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))
    both = compile_kernel([g * Expr.op("greater", x, 0.0), Expr.op("greater", x, 0.0)])
    assert "mul_greater(" not in both.describe()         # the mask is also an output


def test_expr_operators_with_numpy_scalars():
    x = Expr.input(0)
    e = np.float64(2.0) * x - np.float32(1.0) / (x ** 2) + (-x)
    assert isinstance(e, Expr)
    a = np.linspace(0.5, 2, 100)
    np.testing.assert_allclose(compile_kernel([e])(a), 2 * a - 1 / a ** 2 - a, rtol=1e-15)
    assert repr(Expr.op("exp", x)) == "exp(in0)"


def test_kernel_without_inputs():
    k = compile_kernel([Expr.const(1.5), Expr.op("exp", Expr.const(0.0))])
    a, b = k()
    assert a.shape == () and a == 1.5 and b == 1.0
    assert compile_kernel([Expr.const(2.0)], reduce=("sum", None))() == 2.0


def test_unused_input_and_nin():
    k = compile_kernel([Expr.op("exp", Expr.input(1))], nin=3)
    a = np.arange(5.0)
    np.testing.assert_allclose(k(np.zeros(5), a, np.zeros((5, 1))), np.broadcast_to(np.exp(a), (5, 5)))
    with pytest.raises(ValueError, match="broadcast"):   # unused inputs still broadcast
        k(np.zeros(7), a, 0.0)
    with pytest.raises(ValueError, match="nin"):
        compile_kernel([Expr.input(3)], nin=2)


# ------------------------------------------------------------------------------------------------
# reductions
# ------------------------------------------------------------------------------------------------
NP_RED = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("shape,axes", [
    ((0,), None), ((1,), None), ((B + 1,), None), ((100_003,), None),
    ((37, 29), 0), ((37, 29), 1), ((37, 29), -1), ((37, 29), (0, 1)),
    ((7, 300, 5), (0, 2)), ((7, 300, 5), 1), ((3000, 3), 1), ((3, 3000), 0),
    ((40, 50, 60), (1,)), ((2, 1, 3000), (0, 1)),
])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(kind, shape, axes, dtype, keepdims):
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    y = np.random.default_rng(2).standard_normal(shape[-1:]).astype(dtype)
    k = compile_kernel([Expr.op("tanh", Expr.input(0)) * Expr.input(1)],
                       reduce=(kind, axes, keepdims), threshold=0)
    expr = np.tanh(x.astype(np.float64)) * y
    if kind in ("max", "min") and expr.size == 0:
        with pytest.raises(ValueError, match="zero-size"):
            k(x, y)
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # mean of an empty slice
        want = NP_RED[kind](expr, axis=axes, keepdims=keepdims)
    got = k(x, y, num_threads=2)
    assert got.shape == np.shape(want)
    assert got.dtype == dtype
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, want, equal_nan=True, **tol)


def test_reduce_max_propagates_nan():
    x = np.arange(5000.0)
    x[4321] = np.nan
    for kind in ("max", "min", "sum"):
        k = compile_kernel([Expr.input(0) * 1.0], reduce=(kind, None))
        assert np.isnan(k(x))


def test_mixed_reduced_and_elementwise_outputs():
    """Loss and gradients in one pass: sum(y) next to elementwise outputs."""
    y, ga, gb, gu, gd = w4_exprs()
    k = compile_kernel([y, ga, gd], reduce=[("sum", None), None, None])
    xs = [np.random.default_rng(i).standard_normal((300, 70)) for i in range(4)]
    loss, g1, g2 = k(*xs)
    want = w4_numpy(*xs)
    assert loss.shape == ()
    np.testing.assert_allclose(loss, want[0].sum(), rtol=1e-12)
    np.testing.assert_allclose(g1, want[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g2, want[4], rtol=1e-12, atol=1e-14)
    # partial-axis reduction next to an elementwise output (iteration order is permuted)
    k2 = compile_kernel([y, ga], reduce=[("mean", 0), None])
    m, g = k2(*xs)
    np.testing.assert_allclose(m, want[0].mean(0), rtol=1e-12)
    np.testing.assert_allclose(g, want[1], rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="same axes"):
        compile_kernel([y, ga], reduce=[("sum", 0), ("sum", 1)])


def test_reduce_errors():
    k = compile_kernel([Expr.input(0) + 0.0], reduce=("sum", (5,)))
    with pytest.raises(ValueError, match="out of bounds"):
        k(np.ones((2, 3)))
    with pytest.raises(ValueError, match="repeated"):
        compile_kernel([Expr.input(0) + 0.0], reduce=("sum", (0, 0)))(np.ones((2, 3)))
    with pytest.raises(ValueError, match="unknown reduction"):
        compile_kernel([Expr.input(0)], reduce=("prod", None))


# ------------------------------------------------------------------------------------------------
# determinism: 1 thread == N threads, bitwise
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_threads_bitwise_equal(dtype):
    xs = [np.random.default_rng(i).standard_normal((517, 389)).astype(dtype) for i in range(4)]
    y, ga, gb, gu, gd = w4_exprs()
    kernels = [compile_kernel([y, ga, gb, gu, gd], threshold=0),
               compile_kernel([y], reduce=("sum", None), threshold=0),
               compile_kernel([y], reduce=("mean", 1), threshold=0),
               compile_kernel([y], reduce=("max", 0), threshold=0),
               compile_kernel([y, gd], reduce=[("sum", (0,)), None], threshold=0)]
    for k in kernels:
        ref = k(*xs, num_threads=1)
        ref = ref if isinstance(ref, tuple) else (ref,)
        for nt in (2, 3, 4, 7):
            got = k(*xs, num_threads=nt)
            got = got if isinstance(got, tuple) else (got,)
            for g, r in zip(got, ref):
                assert g.tobytes() == r.tobytes(), (k.describe(), nt)


def test_default_threads_from_config(monkeypatch):
    import fastgraph
    k = compile_kernel([Expr.op("exp", Expr.input(0))], reduce=("sum", None), threshold=0)
    x = np.random.default_rng(0).standard_normal(100_000)
    prev = fastgraph.get_num_threads()
    fastgraph.set_num_threads(1)
    try:
        r1 = k(x)
        fastgraph.set_num_threads(2)
        r2 = k(x)
    finally:
        fastgraph.set_num_threads(prev)
    assert r1.tobytes() == r2.tobytes()
    with pytest.raises(ValueError):
        k(x, num_threads=0)


# ------------------------------------------------------------------------------------------------
# out= buffers
# ------------------------------------------------------------------------------------------------
def test_out_buffers_no_allocation():
    y, ga, gb, gu, gd = w4_exprs()
    k = compile_kernel([y, ga, gd])
    n = 500_000
    xs = [np.random.default_rng(i).standard_normal(n) for i in range(4)]
    outs = [np.empty(n) for _ in range(3)]
    k(*xs, out=outs)   # warm up
    tracemalloc.start()
    try:
        res = k(*xs, out=outs, num_threads=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert all(r is o for r, o in zip(res, outs))
    assert peak < 64 * 1024, peak         # far less than one 4 MB output
    want = w4_numpy(*xs)
    np.testing.assert_allclose(outs[0], want[0], rtol=1e-12, atol=1e-14)
    # single output: a bare array is accepted, and returned
    k1 = compile_kernel([y])
    o = np.empty(n)
    assert k1(*xs, out=o) is o
    # reduced output buffer
    ks = compile_kernel([y], reduce=("sum", None))
    o0 = np.empty(())
    assert ks(*xs, out=[o0]) is o0
    np.testing.assert_allclose(o0, want[0].sum(), rtol=1e-10)


def test_out_strided_and_aliasing_inputs():
    k = compile_kernel([Expr.op("exp", Expr.input(0)) + Expr.input(1)])
    a = np.random.default_rng(0).standard_normal((300, 40))
    b = np.random.default_rng(1).standard_normal((300, 40))
    big = np.zeros((300, 80))
    out = big[:, ::2]                                  # strided out buffer
    want = np.exp(a) + b
    k(a, b, out=out)
    np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-14)
    assert np.all(big[:, 1::2] == 0)
    # out aliases an input exactly (in place)
    a2, b2 = a.copy(), b.copy()
    k(a2, b2, out=a2)
    np.testing.assert_allclose(a2, want, rtol=1e-13, atol=1e-14)
    a2, b2 = a.copy(), b.copy()
    k(a2, b2, out=b2, num_threads=2)
    np.testing.assert_allclose(b2, want, rtol=1e-13, atol=1e-14)
    # out overlaps an input at an offset: the input is copied first
    buf = np.concatenate([a.ravel(), [0.0]])
    src = buf[1:].copy()
    k2 = compile_kernel([Expr.op("exp", Expr.input(0))])
    k2(buf[1:], out=buf[:-1])
    np.testing.assert_allclose(buf[:-1], np.exp(src), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_streaming_stores_same_result(dtype):
    y, ga, gb, gu, gd = w4_exprs()
    xs = [np.random.default_rng(i).standard_normal(5 * B + 3).astype(dtype) for i in range(4)]
    plain = compile_kernel([y, gd], threshold=0)(*xs, num_threads=2)
    streamed = compile_kernel([y, gd], threshold=0, stream_min=0)
    for got in (streamed(*xs, num_threads=2), streamed(*[x[1:] for x in xs])):
        ref = plain if got[0].shape == plain[0].shape else \
            compile_kernel([y, gd])(*[x[1:] for x in xs])
        for g, r in zip(got, ref):
            assert g.tobytes() == r.tobytes()


def _operands(kind, rng):
    """(inputs, out) of one operand signature for the geometry-cache test; fresh data."""
    a = rng.standard_normal((6, 40))
    b = rng.standard_normal((6, 40))
    if kind == "strided":
        return (rng.standard_normal((6, 80))[:, ::2], b), None
    if kind == "transposed":
        return (rng.standard_normal((40, 6)).T, b), None
    if kind == "broadcast_row":
        return (a, rng.standard_normal(40)), None
    if kind == "broadcast_col":
        return (a, rng.standard_normal((6, 1))), None
    if kind == "float32_cast":
        return (a.astype(np.float32), b), None
    if kind == "byteswapped":
        return (a.astype(">f8"), b), None
    if kind == "out_given":
        return (a, b), np.empty((6, 40))
    if kind == "in_place":
        return (a, b), a
    if kind == "misaligned":
        raw = np.zeros(6 * 40 * 8 + 1, np.uint8)[1:].view(np.float64).reshape(6, 40)
        raw[...] = a
        return (raw, b), None
    return (a, b), None


_GEO_KINDS = ["plain", "strided", "transposed", "broadcast_row", "broadcast_col",
              "float32_cast", "byteswapped", "out_given", "in_place", "misaligned"]
_GEO_CASES = [(k, r) for r in (None, ("sum", (1,), False), ("max", None, False))
              for k in _GEO_KINDS if r is None or k not in ("out_given", "in_place")]


@pytest.mark.parametrize("kind, reduce", _GEO_CASES)
def test_general_path_geometry_cache(kind, reduce):
    """A repeated call with the same operand signature reuses the general path's geometry; it
    must compute exactly what a fresh kernel computes, on new data every call.  (Reduced
    outputs are not given: their shape differs, and one cannot be an input.)"""
    x, y = Expr.input(0), Expr.input(1)
    expr = Expr.op("tanh", Expr.op("add", Expr.op("multiply", x, y), x))
    cached = compile_kernel([expr], reduce=reduce)
    rng = np.random.default_rng(7)
    for call in range(3):
        ins, out = _operands(kind, rng)
        fresh = compile_kernel([expr], reduce=reduce)
        want = fresh(*[np.array(v) for v in ins])
        got = cached(*ins, out=out) if out is not None else cached(*ins)
        np.testing.assert_array_equal(got, want)
        if out is not None:
            assert got is out
    assert len(cached._geo) <= 1        # one signature, one geometry (or the C fast path)
    if reduce is not None and kind != "misaligned":
        assert len(cached._geo) == 1
    if kind == "misaligned":            # copied for its data pointer: nothing to reuse
        assert not cached._geo


def test_general_path_geometry_cache_takes_numpy_scalars():
    """A plan's 0-d feeds arrive as NumPy scalars: cached like the 0-d arrays they become."""
    x, s = Expr.input(0), Expr.input(1)
    k = compile_kernel([Expr.op("multiply", x, s)], reduce=("sum", None, False))
    a = np.arange(12.0).reshape(3, 4)
    for v in (np.float64(0.5), np.float64(-2.0), np.array(3.0)):
        np.testing.assert_array_equal(k(a, v), (a * v).sum())
    assert len(k._geo) == 1
    np.testing.assert_array_equal(k(a.astype(np.float32), np.float32(2.0)),
                                  (a.astype(np.float32) * np.float32(2.0)).sum(dtype=np.float64)
                                  .astype(np.float32))
    assert len(k._geo) == 2
    assert k(a, 2.0) == (a * 2.0).sum()          # a Python float: not cached (weak scalar)
    assert len(k._geo) == 2


def test_general_path_geometry_cache_still_checks_each_call():
    """A cached signature does not skip the checks that depend on the arrays themselves."""
    x, y = Expr.input(0), Expr.input(1)
    k = compile_kernel([Expr.op("multiply", x, y)], reduce=("sum", (1,), False))
    a, b = np.arange(12.0).reshape(3, 4), np.ones((3, 4))
    out = np.empty(3)
    k(a, b, out=out)
    ro = np.empty(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        k(a, b, out=ro)
    buf = np.arange(12.0)
    want = (buf.reshape(3, 4) * b).sum(1)
    got = k(buf.reshape(3, 4), b, out=buf[:3])   # the reduced output overlaps the input
    np.testing.assert_array_equal(got, want)     # computed from the input's values before
    np.testing.assert_array_equal(k(a, b, out=out), (a * b).sum(1))


def test_general_path_geometry_cache_keys_on_signature():
    x, y = Expr.input(0), Expr.input(1)
    k = compile_kernel([Expr.op("multiply", x, y)], reduce=("sum", (1,), False))
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(k(a, a), (a * a).sum(1))
    np.testing.assert_array_equal(k(a.T, a.T), (a.T * a.T).sum(1))      # other strides
    np.testing.assert_array_equal(k(a[:2], a[:2]), (a[:2] * a[:2]).sum(1))  # other shape
    np.testing.assert_array_equal(k(a, a[0]), (a * a[0]).sum(1))        # broadcast
    assert len(k._geo) == 4


def test_out_errors():
    k = compile_kernel([Expr.input(0) * 2, Expr.input(0) + 1])
    x = np.ones((4, 5))
    with pytest.raises(ValueError, match="2 output"):
        k(x, out=[np.empty((4, 5))])
    with pytest.raises(ValueError, match=r"shape \(4, 4\)"):
        k(x, out=[np.empty((4, 5)), np.empty((4, 4))])
    with pytest.raises(TypeError, match="dtype float32"):
        k(x, out=[np.empty((4, 5)), np.empty((4, 5), np.float32)])
    ro = np.empty((4, 5))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        k(x, out=[np.empty((4, 5)), ro])
    o = np.empty((4, 5))
    with pytest.raises(ValueError, match="overlap"):
        k(x, out=[o, o])
    with pytest.raises(TypeError, match="ndarray"):
        k(x, out=[[0] * 5] * 2)
    ks = compile_kernel([Expr.input(0) * 2], reduce=("sum", 1))
    with pytest.raises(ValueError, match="C-contiguous"):
        ks(x, out=[np.empty(8)[::2]])


# ------------------------------------------------------------------------------------------------
# bad input never crashes
# ------------------------------------------------------------------------------------------------
def test_bad_inputs():
    k = compile_kernel([Expr.input(0) + Expr.input(1)])
    with pytest.raises(TypeError, match="takes 2 input"):
        k(np.ones(3))
    with pytest.raises(ValueError, match=r"\(3,\), \(4,\)"):
        k(np.ones(3), np.ones(4))
    with pytest.raises(KeyError, match="unknown fused opcode"):
        Expr.op("frobnicate", Expr.input(0))
    with pytest.raises(TypeError, match="takes 2 operand"):
        Expr.op("add", Expr.input(0))
    with pytest.raises(TypeError):
        Expr.op("add", Expr.input(0), "x")
    with pytest.raises(ValueError):
        compile_kernel([])
    with pytest.raises(ValueError, match="strategy"):
        compile_kernel([Expr.input(0)], strategy="fast")


def test_odd_shapes_do_not_crash():
    k = compile_kernel([Expr.op("tanh", Expr.input(0)) * Expr.input(1)], threshold=0)
    # 0-d
    r = k(np.float64(0.5), 2.0)
    assert r.shape == () and np.isclose(r, np.tanh(0.5) * 2)
    # empty
    assert k(np.ones((0, 3)), np.ones(3)).shape == (0, 3)
    assert k(np.ones((3, 0)), np.ones((1, 0))).shape == (3, 0)
    # 64 dims (NumPy's maximum), broadcasting in several of them
    shape = [1] * 64
    shape[3], shape[40], shape[63] = 3, 2, 5
    a = np.random.default_rng(0).standard_normal(shape)
    b = np.random.default_rng(1).standard_normal([1] * 63 + [5])
    np.testing.assert_allclose(k(a, b, num_threads=2), np.tanh(a) * b, rtol=1e-15)
    c = np.random.default_rng(0).standard_normal((2,) * 20)
    np.testing.assert_allclose(k(c, c.T), np.tanh(c) * c.T, rtol=1e-15)
    # non-native byte order and unaligned strides are handled by conversion
    be = np.arange(10.0).astype(">f8")
    np.testing.assert_allclose(k(be, 1.0), np.tanh(np.arange(10.0)))
    raw = np.zeros(81, np.uint8)[1:].view(np.float64)   # misaligned data pointer
    raw[:] = np.arange(10.0)
    np.testing.assert_allclose(k(raw, 1.0), np.tanh(np.arange(10.0)))


# ------------------------------------------------------------------------------------------------
# the lean entry point (call_flat) and the C-level fast path of __call__
# ------------------------------------------------------------------------------------------------
def _flat_kernels():
    x, y, z = Expr.input(0), Expr.input(1), Expr.input(2)
    one = compile_kernel([Expr.op("tanh", x * y) + x])                  # 3 ops, 1 output
    multi = compile_kernel([Expr.op("exp", x) * 0.5 + z, Expr.op("sigmoid", y) - 2.0, x])
    return one, multi


def _general(k, ins, dtype):
    """The same kernel through the general path (dtype= forces it)."""
    return k(*ins, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 7, B - 1, B + 1, 5000, 40_000])
def test_call_flat_equals_general_path(dtype, n):
    one, multi = _flat_kernels()
    rng = np.random.default_rng(n)
    xs = [rng.standard_normal(n).astype(dtype) for _ in range(3)]
    for k, ins in ((one, xs[:2]), (multi, xs)):
        want = _general(k, ins, dtype)
        want = want if isinstance(want, tuple) else (want,)
        for nt in (None, 1, 2):
            outs = tuple(np.full(n, np.nan, dtype) for _ in range(k.nout))
            assert k.call_flat(tuple(ins), outs, nt) is None
            for o, w in zip(outs, want):
                assert o.tobytes() == w.tobytes()
            # lists are accepted too, and __call__'s fast path gives the same bits
            outs2 = [np.empty(n, dtype) for _ in range(k.nout)]
            k.call_flat(list(ins), outs2, num_threads=nt)
            got = k(*ins, num_threads=nt)
            got = got if isinstance(got, tuple) else (got,)
            for o2, g, w in zip(outs2, got, want):
                assert o2.tobytes() == w.tobytes() and g.tobytes() == w.tobytes()


def test_call_flat_shapes_are_flat_and_zero_size():
    one, _ = _flat_kernels()
    a = np.random.default_rng(0).standard_normal((30, 7))
    b = np.random.default_rng(1).standard_normal(210)
    o = np.empty((7, 30))
    one.call_flat((a, b), (o,))
    np.testing.assert_array_equal(o.ravel(), one(a.ravel(), b))
    e = np.empty(0)
    one.call_flat((e, e), (np.empty(0),))        # nothing to do, no error


def test_call_flat_scratch_reuse_sizes_and_dtypes():
    """The per-thread scratch cached on the kernel grows, switches dtype and thread count, and
    keeps its constant registers right (they are filled once per dtype/block)."""
    one, multi = _flat_kernels()
    rng = np.random.default_rng(3)
    seq = [(np.float64, 1), (np.float64, 40_000), (np.float32, 3), (np.float32, 70_000),
           (np.float64, 2), (np.float32, B), (np.float64, 100_000), (np.float64, 5)]
    for dtype, n in seq * 2:
        xs = [rng.standard_normal(n).astype(dtype) for _ in range(3)]
        for nt in (1, 2):
            outs = tuple(np.empty(n, dtype) for _ in range(multi.nout))
            multi.call_flat(tuple(xs), outs, nt)
            want = _general(multi, xs, dtype)
            for o, w in zip(outs, want):
                assert o.tobytes() == w.tobytes()
            o = np.empty(n, dtype)
            one.call_flat((xs[0], xs[1]), (o,), nt)
            assert o.tobytes() == _general(one, xs[:2], dtype).tobytes()
            # the general path shares the cache: a broadcast call in between
            col = xs[2][:1].reshape(1, 1)
            g = one(xs[0].reshape(-1, 1), col, num_threads=nt)
            np.testing.assert_array_equal(g.ravel(), _general(one, [xs[0], np.repeat(xs[2][:1], n)],
                                                                  dtype))


def test_call_flat_in_place():
    one, multi = _flat_kernels()
    rng = np.random.default_rng(4)
    for n in (10, 5000):
        a = rng.standard_normal(n)
        b = rng.standard_normal(n)
        want = one(a, b)
        a2 = a.copy()
        one.call_flat((a2, b), (a2,))              # output is input 0
        np.testing.assert_array_equal(a2, want)
        a3 = a.copy()
        assert one(a3, b, out=a3) is a3            # __call__ fast path, in place
        np.testing.assert_array_equal(a3, want)
        xs = [rng.standard_normal(n) for _ in range(3)]
        want = multi(*xs)
        ys = [x.copy() for x in xs]
        multi.call_flat(tuple(ys), (ys[2], ys[0], ys[1]))
        for got, w in zip((ys[2], ys[0], ys[1]), want):
            np.testing.assert_array_equal(got, w)


def test_call_flat_contract_errors():
    one, _ = _flat_kernels()
    red = compile_kernel([Expr.op("exp", Expr.input(0))], reduce=("sum", None))
    a = np.ones(10)
    b = np.ones(10)
    o = np.empty(10)
    with pytest.raises(TypeError, match="input"):
        one.call_flat((a,), (o,))
    with pytest.raises(TypeError, match="output"):
        one.call_flat((a, b), (o, o))
    with pytest.raises(TypeError):
        one.call_flat((a, [1.0] * 10), (o,))
    with pytest.raises(TypeError):
        one.call_flat((a, b), (np.empty(10, np.int64),))
    with pytest.raises(ValueError):
        one.call_flat((a, b.astype(np.float32)), (o,))           # no conversion
    with pytest.raises(ValueError):
        one.call_flat((a, np.ones(20)[::2]), (o,))                # not contiguous
    with pytest.raises(ValueError):
        one.call_flat((a, np.ones(11)), (o,))                     # wrong size (no broadcast)
    with pytest.raises(ValueError):
        one.call_flat((a, b.astype(">f8")), (o,))                 # byte-swapped
    ro = np.empty(10)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        one.call_flat((a, b), (ro,))
    big = np.zeros(20)
    with pytest.raises(ValueError, match="overlap"):
        one.call_flat((big[:10], b), (big[5:15],))                # partial overlap
    with pytest.raises(ValueError):
        one.call_flat((a, b), (o,), 0)
    with pytest.raises(TypeError, match="reduction"):
        red.call_flat((a,), (np.empty(()),))
    # the kernel still works after every refused call (the cached scratch was released)
    one.call_flat((a, b), (o,))
    np.testing.assert_array_equal(o, one(a, b))


def test_fast_path_falls_back_exactly():
    """Operands the C fast path declines give the general path's result (and its errors)."""
    one, multi = _flat_kernels()
    rng = np.random.default_rng(5)
    a = rng.standard_normal(3000)
    b = rng.standard_normal(3000)
    want = one(a, b)
    b32 = b.astype(np.float32)
    np.testing.assert_array_equal(one(a, b32), one(a, b32.astype(np.float64)))  # promotion
    np.testing.assert_array_equal(one(a.astype(">f8"), b), want)      # byte-swapped input
    big = np.concatenate([a, b])
    o = big[1000:4000]                                                  # overlaps both halves
    got = one(big[:3000], big[3000:], out=o)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="overlap"):
        buf = np.empty(6000)
        multi(a, b, a, out=[buf[:3000], buf[1000:4000], buf[3000:]])


@pytest.mark.parametrize("n", [100, 5000, 60_000])
def test_call_flat_two_python_threads(n):
    """Two Python threads calling one kernel at once (the GIL is released for n >= 4096): one
    uses the cached scratch, the other its own; every result is right."""
    import threading
    one, multi = _flat_kernels()
    rng = np.random.default_rng(6)
    data = []
    for t in range(2):
        xs = [rng.standard_normal(n) for _ in range(3)]
        want = tuple(multi(*xs, dtype=np.float64))
        want1 = one(xs[0], xs[1], dtype=np.float64)
        data.append((xs, want, want1))
    errors = []
    start = threading.Barrier(2)

    def worker(t):
        xs, want, want1 = data[t]
        outs = tuple(np.empty(n) for _ in range(3))
        o1 = np.empty(n)
        try:
            start.wait()
            for it in range(60):
                nt = 1 + (it + t) % 2
                multi.call_flat(tuple(xs), outs, nt)
                one.call_flat((xs[0], xs[1]), (o1,), nt)
                for o, w in zip(outs, want):
                    if o.tobytes() != w.tobytes():
                        errors.append((t, it, "flat"))
                if o1.tobytes() != want1.tobytes():
                    errors.append((t, it, "flat1"))
                got = multi(*xs, num_threads=nt)                   # __call__ fast path
                if any(g.tobytes() != w.tobytes() for g, w in zip(got, want)):
                    errors.append((t, it, "call"))
                g = multi(xs[0][::-1], xs[1][::-1], xs[2][::-1])   # general path
                if g[0].tobytes() != want[0][::-1].tobytes():
                    errors.append((t, it, "general"))
        except Exception as e:      # pragma: no cover - reported below
            errors.append((t, repr(e)))

    ths = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    assert not errors, errors[:5]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("entry", ["call", "flat"])
def test_in_place_outputs_equal_out_of_place(dtype, entry):
    """An output written over an input (in place) gives what a separate output gives, whether
    the VM writes it straight into the array (the input is not read after the output's writer
    starts) or computes it in scratch first (it is read later, or the writer is multi-pass)."""
    rng = np.random.default_rng(3)
    x0, y0 = (rng.standard_normal(5000).astype(dtype) for _ in range(2))
    a, b = Expr.input(0), Expr.input(1)
    cases = [
        ([Expr.op("fma", b, Expr.const(-0.1), a)], (0,)),                  # SGD update: direct
        ([a - 0.1 * b], (0,)),                                  # the same as nfma: direct
        ([a * 2.0, a + b], (0, 1)),                     # out0 written, then in0 read again
        ([Expr.op("softplus", a)], (0,)),                                  # multi-pass writer
        ([Expr.op("tanh", a) * b, Expr.op("exp", a)], (1, 0)),
    ]
    for exprs, alias in cases:
        for strategy in ("auto", "libm"):
            k = compile_kernel(exprs, nin=2, strategy=strategy)
            want = k(x0, y0, out=tuple(np.empty_like(x0) for _ in exprs))
            want = want if isinstance(want, tuple) else (want,)
            ins = [x0.copy(), y0.copy()]
            outs = tuple(ins[j] if j is not None else np.empty_like(x0) for j in alias)
            if entry == "call":
                k(*ins, out=outs if len(outs) > 1 else outs[0])
            else:
                k.call_flat(tuple(ins), outs, 1)
            for got, w in zip(outs, want):
                np.testing.assert_array_equal(got, w, err_msg=f"{exprs} {strategy}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_grad_building_blocks_match_the_ops_rounding(dtype):
    """tanh_grad / sigmoid_grad in the VM round exactly like the registry ops' NumPy forward (and
    the eager tape's loops), so fused and eager gradients agree bit for bit."""
    import fastgraph.ops as F
    rng = np.random.default_rng(5)
    t = rng.uniform(-1, 1, 3000).astype(dtype)
    g = rng.standard_normal(3000).astype(dtype)
    for name in ("tanh_grad", "sigmoid_grad"):
        got = compile_kernel([Expr.op(name, Expr.input(0), Expr.input(1))])(t, g)
        np.testing.assert_array_equal(got, BY_NAME[name].ref(t, g))
        small = getattr(F, name)(t[:100], g[:100])          # eager: the tape's C loop / NumPy
        np.testing.assert_array_equal(got[:100], np.asarray(small))


@pytest.mark.parametrize("dtype", DTYPES)
def test_power_gives_numpys_bits_for_constant_exponents(dtype):
    """NumPy's power loop with a scalar exponent: 0.5 -> sqrt, 2 -> x*x, -1 -> 1/x, 1 -> x
    (the compiler's rewrites), others its own loop (powf for float32, where pow in double
    rounded to float32 differed in the last bit)."""
    rng = np.random.default_rng(3)
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.concatenate([[-np.inf, -0.0, 0.0, np.inf, np.nan, -1.0, tiny, -tiny],
                        rng.standard_normal(40_000) * 4]).astype(dtype)
    for e in (0.5, 2.0, -1.0, 1.0, 0.0, -0.0, 3.0, -2.0, 1.5, -0.5):
        k = compile_kernel([Expr.op("power", Expr.input(0), e)])
        with np.errstate(all="ignore"):
            want = np.power(x, dtype(e))
        for nt in (1, 3):
            got = k(x, num_threads=nt)
            assert got.dtype == want.dtype
            assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (e, nt)
    listing = compile_kernel([Expr.op("power", Expr.input(0), 0.5)]).describe()
    assert "sqrt(" in listing and "power(" not in listing
