"""The fused benchmark under several builds of fastgraph, side by side in one run.

What it measures: what a change to the VM's kernels costs -- the tree before it against the tree
after it, or a build with a different compiler setting -- on

* the fused benchmark's workloads (``fastgraph.bench.fused``: ``tanh(a*b + c) * sigmoid(d) + 0.5*a*a``
  through ``@fg.function``, forward and forward + gradients, float64, 1,000,000 elements;
  ``--quick``: 200,000), and the same forward with every region on NumPy's and SciPy's own loops
  (the fuse pass's exact strategy for any size: what exact fused transcendentals would cost);
* an arithmetic-only fused forward, ``(a*b + c) * d - 0.5*a*a``, where FMA contraction would
  matter and transcendentals do not;
* one fused opcode at a time (``compile_kernel``, 16,384 elements in cache, one thread), float32
  and float64: each of the VM's own vectorised transcendentals on its default evaluation and on
  the unfused op's loop (``strategy="ufunc"``, exact), and ``tan`` and ``erf`` on their defaults;
* small regions (4,096 elements, the size up to which the fuse pass runs NumPy's and SciPy's
  loops): ``sigmoid``, ``softplus``, ``erf`` on ``strategy="ufunc"``.

Method: each ``--build NAME=SRC`` is a ``src`` directory holding a built fastgraph. Every round
starts one child process per build, in a shuffled order; the child imports fastgraph from its
``SRC``, warms every case up, then times the cases in shuffled inner rounds (each sample long
enough to be well above the clock's resolution) and prints the median seconds per call. Ratios
are medians of per-round ratios, so the builds share each round's machine load. Results: the
median time per case and build, each build's ratio to every other, and within each build the
exact evaluation's ratio to the default one.

Run from the tree whose harness you want: ``python src/fastgraph/bench/compare_builds.py
--build before=../base/src --build after=src [--rounds 7] [--only CASES] [--quick]
[--json out.json]``. (A child runs this file as a script, so a build need not have it; it needs
``fastgraph.bench.fused``.) Not a suite workload: ``python -m fastgraph bench`` times one build.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
if __name__ == "__main__" and sys.path and Path(sys.path[0]).resolve() == HERE:
    sys.path.pop(0)         # run as a script: this package's modules are not top-level ones
OPCODE_N = 16_384
SMALL_N = 4_096
VEC_OPS = ("exp", "expm1", "log", "log1p", "tanh", "sigmoid", "softplus")
SAMPLE_S = 0.02             # a timing sample lasts at least this long


# ---- the child: one build ------------------------------------------------------------------
def _cases(n: int) -> dict[str, Callable[[], object]]:
    import numpy as np

    import fastgraph as fg
    from fastgraph.fused import Expr, compile_kernel
    from fastgraph.static.passes.fuse import cost
    from fastgraph.bench.fused import fastgraph_fns, make_inputs

    cases: dict[str, Callable[[], object]] = {}
    args = make_inputs(n)
    fwd, grd = fastgraph_fns()
    fwd(*args), grd(*args)                          # traced and compiled now
    cases["fused forward"] = lambda: fwd(*args)
    cases["fused forward+grad"] = lambda: grd(*args)
    saved = cost.EXACT_MAX, cost.EXACT_WORK
    cost.EXACT_MAX = cost.EXACT_WORK = 1 << 62      # every region on NumPy's and SciPy's loops
    try:
        fwd_exact, _ = fastgraph_fns()
        fwd_exact(*args)
    finally:
        cost.EXACT_MAX, cost.EXACT_WORK = saved
    cases["fused forward [exact]"] = lambda: fwd_exact(*args)
    arith = fg.function(lambda a, b, c, d: (a * b + c) * d - 0.5 * a * a)
    arith(*args)
    cases["fused arithmetic forward"] = lambda: arith(*args)

    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64):
        x = rng.uniform(-4, 4, OPCODE_N).astype(dt)
        xs = x[:SMALL_N].copy()
        for name in VEC_OPS + ("tan", "erf"):
            k = compile_kernel([Expr.op(name, Expr.input(0))])
            out = np.empty_like(x)
            cases[f"{name} {dt.__name__}"] = lambda k=k, out=out, x=x: k(x, out=out, num_threads=1)
            if name in VEC_OPS:
                ke = compile_kernel([Expr.op(name, Expr.input(0))], strategy="ufunc")
                cases[f"{name} {dt.__name__} [exact]"] = (
                    lambda k=ke, out=out, x=x: k(x, out=out, num_threads=1))
        for name in ("sigmoid", "softplus", "erf"):
            k = compile_kernel([Expr.op(name, Expr.input(0))], strategy="ufunc")
            out = np.empty_like(xs)
            cases[f"{name} {dt.__name__} small region"] = (
                lambda k=k, out=out, x=xs: k(x, out=out, num_threads=1))
    return cases


def _sample(f: Callable[[], object], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        f()
    return (time.perf_counter() - t0) / number


def child(n: int, inner: int, only: tuple[str, ...] = ()) -> dict[str, float]:
    """Median seconds per call of every case (those starting with one of ``only``, if given),
    under the fastgraph this process imports."""
    cases = {k: f for k, f in _cases(n).items() if not only or k.startswith(only)}
    numbers = {}
    for name, f in cases.items():                   # warm up; calls per sample
        f()
        one = max(_sample(f, 1), 1e-7)
        numbers[name] = max(1, int(SAMPLE_S / one))
    times: dict[str, list[float]] = {name: [] for name in cases}
    order = list(cases)
    for _ in range(inner):
        random.shuffle(order)
        for name in order:
            times[name].append(_sample(cases[name], numbers[name]))
    return {name: statistics.median(ts) for name, ts in times.items()}


# ---- the parent: rounds over builds ---------------------------------------------------------
def _run_child(src: str, n: int, inner: int, only: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(Path(src).resolve()))
    out = subprocess.run([sys.executable, __file__, "--child", "--n", str(n), "--inner",
                          str(inner), "--only", only], env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"build at {src}: the child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _machine(src: str) -> dict:
    """``fastgraph.cli.bench.machine_facts()`` as a build's child process gives them."""
    env = dict(os.environ, PYTHONPATH=str(Path(src).resolve()))
    code = "import json; from fastgraph.cli.bench import machine_facts; print(json.dumps(machine_facts()))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(cases: list[dict]) -> list[dict]:
    """The results as the results files' rows (``workload``, ``fastgraph``, ``peer``, ``ratio``):
    one per pair of builds and case, and one per build for each exact case against its default."""
    rows = []
    for row in cases:
        for pair, r in row["ratio"].items():
            b1, b2 = pair.split("/")
            rows.append({"workload": row["case"], "fastgraph": f"build {b1}",
                         "peer": f"build {b2}", "ratio": r})
        for b, r in row.get("exact/default", {}).items():
            rows.append({"workload": row["case"][: -len(" [exact]")],
                         "fastgraph": f"the unfused op's own loops (exact), build {b}",
                         "peer": f"the default evaluation, build {b}", "ratio": r})
    return rows


def compare_builds(builds: dict[str, str], rounds: int, n: int, inner: int,
                   only: str = "") -> dict:
    """Time every case under every build, interleaved round by round; ratios and medians."""
    per_round: list[dict[str, dict[str, float]]] = []
    load_start = os.getloadavg()
    for _ in range(rounds):
        order = list(builds)
        random.shuffle(order)
        per_round.append({b: _run_child(builds[b], n, inner, only) for b in order})
    load_end = os.getloadavg()
    names = list(builds)
    cases = list(per_round[0][names[0]])
    med = {c: {b: statistics.median(r[b][c] for r in per_round) for b in names} for c in cases}

    def ratio(c, b1, b2):
        return statistics.median(r[b1][c] / r[b2][c] for r in per_round)

    pairs = [(b1, b2) for i, b2 in enumerate(names) for b1 in names[i + 1:]]
    rows = []
    for c in cases:
        row = {"case": c, "median_s": {b: med[c][b] for b in names},
               "ratio": {f"{b1}/{b2}": round(ratio(c, b1, b2), 3) for b1, b2 in pairs}}
        if c.endswith(" [exact]"):
            default = c[: -len(" [exact]")]
            row["exact/default"] = {b: round(statistics.median(
                r[b][c] / r[b][default] for r in per_round), 3) for b in names}
        rows.append(row)
    return {"what": "the fused benchmark's workloads and single fused opcodes under several "
                    "builds, side by side (fastgraph.bench.compare_builds)",
            "builds": builds, "only": only, "rounds": rounds, "n": n, "inner_rounds": inner,
            "opcode_elements": OPCODE_N, "small_region_elements": SMALL_N,
            "machine": _machine(builds[names[-1]]), "load_average_start": load_start,
            "load_average_end": load_end, "summary": summary(rows), "cases": rows}


def _print(res: dict) -> None:
    names = list(res["builds"])
    print(f"{'case':36s} " + " ".join(f"{b:>12s}" for b in names) + "   ratios")
    for row in res["cases"]:
        times = " ".join(f"{row['median_s'][b] * 1e6:10.1f}us" for b in names)
        extra = dict(row["ratio"], **{f"exact/default {b}": v
                                      for b, v in row.get("exact/default", {}).items()})
        print(f"{row['case']:36s} {times}   " + ", ".join(f"{k} {v:.3f}" for k, v in extra.items()))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--build", action="append", default=[], metavar="NAME=SRC",
                   help="a build: NAME and the src directory holding it (repeat)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="200,000 elements, 3 rounds")
    p.add_argument("--only", default="", metavar="CASES",
                   help="comma-separated case names or prefixes ('fused,sigmoid float64')")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, default=1_000_000, help=argparse.SUPPRESS)
    p.add_argument("--inner", type=int, default=3, help="timing samples per case per child")
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.n, a.inner, tuple(s for s in a.only.split(",") if s))))
        return 0
    builds = dict(b.split("=", 1) for b in a.build) or {"current": str(HERE.parent.parent)}
    n, rounds = (200_000, 3) if a.quick else (a.n, a.rounds)
    res = compare_builds(builds, rounds, n, a.inner, a.only)
    _print(res)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
