"""Every instruction-set copy of the fused VM's loops computes the same bits.

The VM's vec kernels (exp, expm1, log, log1p, tanh, sigmoid, softplus) and plain loops are
compiled once per instruction set (AVX-512, AVX2 + FMA, baseline; ``vm.vec_isas()`` lists those
this CPU runs) from one source with every FMA written out, so each copy performs the same
operations with the same roundings.  Checked here by forcing each copy on the same inputs: every
2**10-th float32 bit pattern (twice, with the low bits clear and set), float64 bit patterns with
every sign, exponent and leading mantissa byte, the special values, and block tails of every
length.  A difference in any bit (NaN payloads included) fails.  Run on a CPU with fewer sets,
it checks those it has.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from fastgraph.fused import OPCODES, Expr, compile_kernel
from fastgraph.kernels import vm

_UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}

#: the opcodes whose loops exist once per instruction set: the vec kernels and the plain C loops
PER_ISA = [op for op in OPCODES if op.eval in ("vec", "c")]


def _specials(dtype):
    fi = np.finfo(dtype)
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, float(fi.max), -float(fi.max),
                     float(fi.tiny), -float(fi.tiny), float(fi.smallest_subnormal),
                     -float(fi.smallest_subnormal), 1.0, -1.0, 0.5, -0.5, 20.0, -20.0,
                     709.78, -709.78, -745.13, 88.72, -88.72, -103.97, 1e-300, -1e-300],
                    np.float64).astype(dtype)


def _dense(dtype):
    """Inputs over the whole float range, an odd count (so the last block has a tail)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        hi = np.arange(0, 1 << 32, 1 << 10, dtype=np.uint64).astype(np.uint32)
        bits = np.concatenate([hi, hi | np.uint32((1 << 10) - 1)])
    else:       # every (sign, exponent, top 8 mantissa bits), the other 44 bits random
        rng = np.random.default_rng(7)
        hi = np.arange(0, 1 << 20, dtype=np.uint64) << np.uint64(44)
        bits = hi | rng.integers(0, 1 << 44, size=hi.size, dtype=np.uint64)
    x = np.concatenate([bits.view(dtype), _specials(dtype)])
    return x if x.size % 2 else x[:-1]


def _run_every_copy(kernel, args):
    results = {}
    try:
        for isa in vm.vec_isas():
            vm._set_vec_isa(isa)
            with np.errstate(all="ignore"):
                results[isa] = kernel(*args)
    finally:
        vm._set_vec_isa("cpu")
    return results


def _assert_same_bits(results, what):
    names = list(results)
    ref = results[names[0]]
    ut = _UINT[ref.dtype]
    for isa in names[1:]:
        got = results[isa]
        diff = got.view(ut) != ref.view(ut)
        assert not diff.any(), (f"{what}: {isa} differs from {names[0]} at {int(diff.sum())} "
                                f"elements, e.g. {got[diff][:3]} vs {ref[diff][:3]}")


@pytest.fixture(scope="module", params=[np.float32, np.float64], ids=["f32", "f64"])
def dense(request):
    return _dense(request.param)


@pytest.mark.parametrize("op", PER_ISA, ids=[op.name for op in PER_ISA])
def test_every_copy_gives_the_same_bits_over_the_whole_range(op, dense):
    x = dense
    # the other operands: the same values in other orders, so every pairing of ranges occurs
    args = [x, np.roll(x, 12345), x[::-1].copy()][:op.arity]
    kernel = compile_kernel([Expr.op(op.name, *[Expr.input(i) for i in range(op.arity)])])
    _assert_same_bits(_run_every_copy(kernel, args), f"{op.name} {x.dtype}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_every_copy_gives_the_same_bits_in_a_fused_chain_at_every_tail_length(dtype):
    # the benchmark's expression, on sizes whose last block leaves every tail length of a
    # 16-float / 8-double vector (and of the baseline's one-lane loop)
    rng = np.random.default_rng(3)
    e = [Expr.input(i) for i in range(4)]
    expr = (Expr.op("tanh", e[0] * e[1] + e[2]) * Expr.op("sigmoid", e[3])
            + 0.5 * e[0] * e[0] + Expr.op("softplus", e[1]) - Expr.op("log1p", Expr.op("exp", e[2])))
    kernel = compile_kernel([expr])
    for n in range(4097, 4097 + 17):
        args = [(rng.standard_normal(n) * 10).astype(dtype) for _ in range(4)]
        _assert_same_bits(_run_every_copy(kernel, args), f"chain {np.dtype(dtype)} n={n}")


def test_the_cpus_best_copy_runs_and_every_one_can_be_chosen():
    isas = vm.vec_isas()
    assert isas[-1] == "baseline" and vm.vec_isa() == isas[0]
    assert set(isas) <= {"avx512", "avx2+fma", "baseline"}
    assert ("avx512" in isas) <= ("avx2+fma" in isas)       # AVX-512 implies AVX2 + FMA here


@pytest.mark.parametrize("setting, want, warns", [
    ("baseline", "baseline", False),
    ("sse9", None, True),           # not an instruction set: a warning, and the CPU's best
])
def test_fastgraph_vec_isa_chooses_the_copy_at_import(setting, want, warns):
    code = ("import warnings; warnings.simplefilter('always')\n"
            "from fastgraph.kernels import vm; print(vm.vec_isa())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "FASTGRAPH_VEC_ISA": setting})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (want or vm.vec_isas()[0])
    assert ("FASTGRAPH_VEC_ISA ignored" in out.stderr) == warns, out.stderr
    if warns:
        assert "'sse9'" in out.stderr and "baseline" in out.stderr
