"""``python -m fastgraph demo`` and ``python -m fastgraph bench`` (issue #6).

The commands run in a subprocess against the same fastgraph this process imports; the benchmark
suite is taken from this checkout (``FASTGRAPH_BENCHMARKS``), so the tests also work against an
installed wheel.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import fastgraph as fg
from fastgraph.cli import demo

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "benchmarks"


def _run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    pkg_root = str(Path(fg.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH")) if p)
    env["FASTGRAPH_BENCHMARKS"] = str(BENCH_DIR)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return subprocess.run([sys.executable, "-m", "fastgraph", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_demo_runs(tmp_path):
    proc = _run(["demo", "--steps", "20", "--no-progress"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "tensor(1.)" in out                      # the dynamic seed example
    assert "final loss" in out and "eager" in out   # the side-by-side table
    for mode, why in demo.available_modes().items():
        if why is None:
            assert f"\n{mode} " in out, f"mode {mode} missing from the table:\n{out}"


def test_demo_modes_reach_the_same_loss():
    prob = demo.make_problem(n=128)
    results = {}
    for mode, why in demo.available_modes().items():
        if why is None:
            results[mode] = demo.MODES[mode](prob, 15)
    eager = results["eager"]
    assert eager.losses[-1] < eager.losses[0]       # it learns
    for mode, res in results.items():
        assert len(res.losses) == 15
        np.testing.assert_allclose(res.losses, eager.losses, rtol=1e-7, atol=1e-10,
                                   err_msg=f"{mode} loss curve differs from eager")
        assert res.final_loss == pytest.approx(eager.final_loss, rel=1e-7)
        assert res.accuracy == eager.accuracy
        for p, q in zip(res.params, eager.params):
            np.testing.assert_allclose(p, q, rtol=1e-6, atol=1e-9)


def test_demo_plot_without_or_with_matplotlib(tmp_path, capsys):
    prob = demo.make_problem(n=64)
    res = [demo.train_eager(prob, 3)]
    made = demo.plot_losses(res, str(tmp_path / "loss.png"))
    out = capsys.readouterr().out
    if importlib.util.find_spec("matplotlib") is None:
        assert not made and "matplotlib is not installed" in out
    else:
        assert made and (tmp_path / "loss.png").stat().st_size > 0


needs_suite = pytest.mark.skipif(not (BENCH_DIR / "_timing.py").is_file(),
                                 reason="benchmarks/ is not in this checkout")


@needs_suite
def test_bench_quick_tape_scalar_json(tmp_path):
    out_json = tmp_path / "bench.json"
    proc = _run(["bench", "--quick", "--only", "tape_scalar", "--json", str(out_json),
                 "--no-progress"], cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "summary" in proc.stdout
    data = json.loads(out_json.read_text())
    assert data["quick"] is True
    assert data["machine"]["cpu_count"] >= 1 and "numpy" in data["machine"]["versions"]
    tape = data["benchmarks"]["tape_scalar"]
    present = [p for p in ("torch", "autograd") if importlib.util.find_spec(p) is not None]
    for peer in present:
        assert tape["ratios"][peer] > 0
        assert any(r["peer"] == peer and r["ratio"] > 0 for r in data["summary"])
    for peer in ("torch", "autograd"):
        if peer not in present:
            assert peer in data["peers_missing"]


@needs_suite
def test_bench_rejects_unknown_workload(tmp_path):
    proc = _run(["bench", "--only", "no_such_workload"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown workload" in proc.stderr and "tape_scalar" in proc.stderr


@needs_suite
def test_bench_list(tmp_path):
    proc = _run(["bench", "--list"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in ("tape_scalar", "tape_vector", "mlp", "fused"):
        assert name in proc.stdout


@needs_suite
def test_paired_ratio_pairs_rounds(monkeypatch):
    """``Result.paired_ratio``: the median of per-round ratios, not the ratio of medians."""
    monkeypatch.syspath_prepend(str(REPO))
    from benchmarks._timing import Result, Stats
    a = Stats("a", times=[1.0, 2.0, 9.0])
    b = Stats("b", times=[2.0, 4.0, 3.0])
    res = Result("r", {"a": a, "b": b}, number=1)
    assert res.paired_ratio("a", "b") == 0.5          # rounds: 0.5, 0.5, 3.0
    assert res.ratio("a", "b") == 2.0 / 3.0           # medians: 2.0 / 3.0


@pytest.mark.parametrize("path, owner", [
    ("/venv/lib/python3.11/site-packages/numpy.libs/libscipy_openblas64_-32a4.so", "numpy"),
    ("/venv/lib/python3.11/site-packages/scipy.libs/libscipy_openblas-6cdc.so", "scipy"),
    ("/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so", "torch"),
    ("/usr/lib/x86_64-linux-gnu/libopenblas.so.0", None),
    (None, None),
])
def test_info_names_whose_blas_it_is(path, owner):
    from fastgraph.cli import info
    assert info._owner(path) == owner


@pytest.mark.parametrize("args, message", [
    (["demo", "--threads", "0"], "--threads: number of threads must be a positive integer up to"),
    (["demo", "--threads", "-1"], "--threads: number of threads must be a positive integer up to"),
    (["demo", "--steps", "1"], "--steps: must be at least 2"),
    (["demo", "--plot", "/proc/no/such/dir/x.png"], "cannot write into"),
    (["demo", "--plot", "curves.xyz"], "expected a .png/.pdf/.svg file"),
    (["bench", "--threads", "0", "--only", "toposort"], "--threads: number of threads must be a positive integer up to"),
    (["bench", "--json", "/proc/no/such/dir/x.json", "--only", "toposort"], "cannot write into"),
    (["bench", "--only", ","], "--only names no workload"),
])
def test_bad_arguments_are_usage_errors_before_any_work(tmp_path, args, message):
    proc = _run(args, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("n", [0, -1, 2 ** 31, 10 ** 20])
def test_thread_counts_out_of_range_are_rejected(n):
    with pytest.raises(ValueError, match="positive integer up to"):
        fg.set_num_threads(n)


# ---- targets in the summary ------------------------------------------------------------------
# Every benchmark module with a speed target must put it into the suite's summary rows
# (``fastgraph.cli.bench.headline``), from its own target constants.  Each module runs here in
# process, ``--quick``, with one timed round, its peers faked by cheap stand-ins (so the test
# does not depend on which peers are installed): what is checked is the bookkeeping, not speed.

def _fake_module(name: str, **attrs):
    import types
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    return mod


def _patch_bench(monkeypatch, mod, fakes: dict):
    """One timed round per comparison, no settling pause; ``peers`` answers with ``fakes``."""
    real_compare = mod.compare

    def compare(name, candidates, **kw):
        kw.update(rounds=1, number=1, settle=0.0)
        return real_compare(name, candidates, **kw)

    def peers(*names):
        return ({n: fakes[n] for n in names if n in fakes}, [n for n in names if n not in fakes])

    monkeypatch.setattr(mod, "compare", compare)
    monkeypatch.setattr(mod, "peers", peers)


def _setup_tape(monkeypatch, mods):
    ts = mods["bench_tape_scalar"]
    # the peers run fastgraph's own chain: same gradients, and `import torch` finds a stand-in
    monkeypatch.setitem(sys.modules, "torch", _fake_module("torch", set_num_threads=lambda n: None))
    for peer in ("torch", "autograd"):
        monkeypatch.setitem(ts.BUILDERS, peer, ts._fastgraph_fns)
    _patch_bench(monkeypatch, ts, {"torch": sys.modules["torch"], "autograd": object()})
    return Counter(("fastgraph", k, t) for k, t in ts.TARGETS.items())


def _setup_mlp(monkeypatch, mods):
    m = mods["bench_mlp"]
    monkeypatch.setitem(sys.modules, "torch", _fake_module("torch", set_num_threads=lambda n: None))
    monkeypatch.setattr(m, "torch_step_fn", m.numpy_step_fn)
    _patch_bench(monkeypatch, m, {"torch": sys.modules["torch"]})
    return Counter((a, b, t) for (a, b), t in m.TARGETS.items())


def _setup_call_overhead(monkeypatch, mods):
    m = mods["bench_call_overhead"]
    for maker in ("_jax", "_tf1"):
        monkeypatch.setattr(m, maker, lambda: m._reference)
    _patch_bench(monkeypatch, m, {"jax": object(), "tensorflow": object()})
    return Counter(("fastgraph", k, t) for k, t in m.TARGETS.items())


def _setup_toposort(monkeypatch, mods):
    m = mods["bench_toposort"]

    class Graph:
        def __init__(self, n, edges, directed):
            pass

        def topological_sorting(self):
            return None

    _patch_bench(monkeypatch, m, {"igraph": _fake_module("igraph", Graph=Graph)})
    return Counter([("fastgraph", "igraph", m.TARGET_RATIO_IGRAPH)])


def _setup_compile(monkeypatch, mods):
    m = mods["bench_compile"]

    def maker(first_s):
        return lambda n, xv: (first_s, np.zeros(m.SIZE), lambda: None)

    monkeypatch.setattr(m, "_fastgraph", maker(0.01))
    monkeypatch.setattr(m, "_tf1", maker(1.0))
    monkeypatch.setattr(m, "_jax", maker(1.0))
    monkeypatch.setattr(m, "_fastgraph_train", lambda n_vars: (0.1, 1e-3))
    _patch_bench(monkeypatch, m, {"jax": object(), "tensorflow": object()})
    return Counter(("fastgraph", peer, t) for (peer, _, _), t in m.TARGETS.items())


def _setup_fused(monkeypatch, mods):
    m = mods["bench_fused"]
    monkeypatch.setattr(m, "N_QUICK", 20_000)
    monkeypatch.setattr(m, "tensorflow_fns", lambda tf, threads=None: (
        m.np_forward, m.np_grad, lambda arrays: arrays))
    _patch_bench(monkeypatch, m, {"tensorflow": object()})
    # both workloads against each peer target; the floor rows, targets by workload
    return (Counter({("fastgraph", k, t): 2 for k, t in m.TARGETS.items()})
            + Counter(("fastgraph", "memory floor", t) for t in m.FLOOR_TARGETS.values()))


def _setup_fused_vm(monkeypatch, mods):
    m = mods["bench_fused_vm"]
    _patch_bench(monkeypatch, m, {})
    return Counter([("fastgraph", "fastgraph_1thread", 1.0 / m.TARGET_THREAD_SPEEDUP)])


def _setup_numeric(monkeypatch, mods):
    m = mods["bench_numeric"]
    # every peer's value and gradient stood in by the hand-written NumPy one
    monkeypatch.setattr(m, "LOGISTIC_PEERS", {k: (lib, m._logistic_numpy)
                                              for k, (lib, _) in m.LOGISTIC_PEERS.items()})
    _patch_bench(monkeypatch, m, {"autograd": object(), "jax": object(), "torch": object()})
    return Counter((a, b, t) for (a, b), t in m.LOGISTIC_TARGETS.items())


_TARGET_SETUPS = {
    "tape_scalar": ("bench_tape_scalar", _setup_tape),
    "tape_vector": ("bench_tape_vector", _setup_tape),
    "mlp": ("bench_mlp", _setup_mlp),
    "call_overhead": ("bench_call_overhead", _setup_call_overhead),
    "toposort": ("bench_toposort", _setup_toposort),
    "compile": ("bench_compile", _setup_compile),
    "fused": ("bench_fused", _setup_fused),
    "fused_vm": ("bench_fused_vm", _setup_fused_vm),
    "numeric": ("bench_numeric", _setup_numeric),
}


@needs_suite
def test_every_workload_with_targets_is_checked():
    """A new benchmark module in the suite must be added to ``_TARGET_SETUPS`` (or be known to
    set no target)."""
    from fastgraph.cli import bench
    assert set(bench.discover(BENCH_DIR)) <= set(_TARGET_SETUPS)


@needs_suite
@pytest.mark.parametrize("name", list(_TARGET_SETUPS))
def test_summary_rows_carry_each_modules_targets(monkeypatch, name):
    import importlib
    from fastgraph.cli import bench
    monkeypatch.syspath_prepend(str(REPO))
    module, setup = _TARGET_SETUPS[name]
    mods = {m: importlib.import_module(f"benchmarks.{m}")
            for m in ("bench_tape_scalar", module) if (BENCH_DIR / f"{m}.py").is_file()}
    expected = setup(monkeypatch, mods)
    kwargs = {"threads": 2} if name == "fused_vm" else {}   # its target needs 2+ threads
    out = mods[module].run(quick=True, verbose=False, **kwargs)
    rows = bench.headline(name, out)
    got = Counter((r["fastgraph"], r["peer"], r["target"]) for r in rows
                  if r["target"] is not None)
    assert got == expected, rows
    for r in rows:
        assert r["workload"] == name and r["ratio"] > 0
    # each target shows in the summary table's last column ("<=" met, "!>" missed)
    lines = bench.format_summary(rows).splitlines()[2:-1]
    marked = [ln for ln in lines if ln.rstrip().split()[-1][:2] in ("<=", "!>")]
    assert len(marked) == sum(expected.values()), "\n".join(lines)


def test_headline_targets_from_results_and_extra_rows():
    """The summary's contract with the modules that give no ``headline`` of their own."""
    from fastgraph.cli import bench

    def cand(t):
        return {"median_s": t, "min_s": t, "max_s": t}

    out = {"results": [
        {"name": "w", "reference": "fastgraph", "targets": {"peer": 0.5, "fastgraph_1thread": 0.6},
         "candidates": {"fastgraph": cand(1.0), "peer": cand(4.0), "other": cand(0.5),
                        "fastgraph_1thread": cand(2.0), "fastgraph_x": cand(3.0),
                        "probe": cand(1.0)},
         "ratios": {"peer": 0.25, "other": 2.0, "fastgraph_1thread": 0.5,
                    "fastgraph_x": 1 / 3, "probe": 1.0}},
        {"name": "v", "reference": "fastgraph", "candidates": {"fastgraph": cand(1.0),
                                                               "peer": cand(0.5)},
         "ratios": {"peer": 2.0}}],
        "not_candidates": ["probe"],
        "headline_extra": [{"case": "w, floor", "fastgraph": "fastgraph", "peer": "memory floor",
                            "fastgraph_s": 1.0, "peer_s": 0.5, "ratio": 2.0, "target": 1.5}]}
    rows = bench.headline("bench", out)
    got = {(r["case"], r["peer"]): r["target"] for r in rows}
    assert got == {("bench: w", "peer"): 0.5, ("bench: w", "other"): None,
                   ("bench: w", "fastgraph_1thread"): 0.6, ("bench: v", "peer"): None,
                   ("w, floor", "memory floor"): 1.5}
    table = bench.format_summary(rows)
    assert "<=0.5" in table and "<=0.6" in table and "!>1.5" in table
    # a module's own headline gets the extra rows as well
    rows = bench.headline("bench", {"headline": [dict(out["headline_extra"][0], target=None)],
                                    "headline_extra": out["headline_extra"]})
    assert [r["target"] for r in rows] == [None, 1.5]
