"""``python -m fastgraph demo`` and ``python -m fastgraph bench``.

The commands run in a subprocess against the same fastgraph this process imports (the benchmark
suite is the package's own ``fastgraph.bench``), so the tests also work against an installed
wheel.
"""
from __future__ import annotations

import argparse
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



def _env() -> dict:
    env = dict(os.environ)
    pkg_root = str(Path(fg.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH")) if p)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return env


def _run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fastgraph", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=timeout)


def _run_without_matplotlib(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """The command in a process where ``import matplotlib`` fails, as where it is not
    installed (a ``None`` in ``sys.modules`` is what Python's import system reads as absent)."""
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from fastgraph.__main__ import main\n"
            f"sys.exit(main({args!r}))")
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=120)


def test_demo_runs(tmp_path):
    proc = _run(["demo", "--steps", "20", "--no-progress"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "tensor(1.)" in out                      # the dynamic seed example
    assert "final loss" in out and "eager" in out   # the side-by-side table
    for mode, why in demo.available_modes().items():
        if why is None:
            assert f"\n{mode} " in out, f"mode {mode} missing from the table:\n{out}"


def test_demo_output_fits_one_screen_with_the_table_first(tmp_path):
    proc = _run(["demo", "--steps", "20", "--no-progress"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) <= 40, proc.stdout
    assert max(map(len, lines)) <= 100, proc.stdout
    table = next(i for i, ln in enumerate(lines) if ln.startswith("mode") and "final loss" in ln)
    above = "\n".join(lines[2:table]).strip()      # below the two title lines: load warnings
    assert above == "" or above.startswith("WARNING"), proc.stdout
    summary = next(i for i, ln in enumerate(lines) if "static training plan compiled" in ln)
    seeds = next(i for i, ln in enumerate(lines) if "seed examples" in ln)
    assert table < summary < seeds
    compiled = "\n".join(lines[summary:seeds])
    assert "kernel(s) replacing" in compiled and "buffer(s)" in compiled and "step(s)" in compiled
    assert "[fuse]" not in proc.stdout               # the full explain() only with --explain
    # the ratio column says what it is, in bench's words
    assert "time/eager" in lines[table] and "(< 1: faster)" in proc.stdout


def test_demo_explain_prints_the_whole_plan(tmp_path):
    proc = _run(["demo", "--steps", "3", "--no-progress", "--explain"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for section in ("[fuse]", "[buffers]", "[plan]"):
        assert section in proc.stdout


def test_demo_plot_without_matplotlib_stops_before_any_work(tmp_path):
    proc = _run_without_matplotlib(["demo", "--plot", str(tmp_path / "loss.png")], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pip install matplotlib" in proc.stderr and "Traceback" not in proc.stderr
    assert "final loss" not in proc.stdout and not (tmp_path / "loss.png").exists()


def test_bench_plot_without_matplotlib_stops_before_any_work(tmp_path):
    proc = _run_without_matplotlib(["bench", "--only", "toposort", "--plot",
                                    str(tmp_path / "r.png")], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pip install matplotlib" in proc.stderr and "summary" not in proc.stdout


@pytest.mark.parametrize("command", [[], ["demo"], ["bench"], ["info"]])
def test_help_is_plain_text(tmp_path, command):
    proc = _run([*command, "--help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for markup in ("``", ":func:", ":mod:", ":class:"):
        assert markup not in proc.stdout, proc.stdout


def _record_threads(into: dict, key: str) -> None:
    """fastgraph's thread count and NumPy's BLAS's (through threadpoolctl) right now."""
    from threadpoolctl import threadpool_info
    blas = {lib["num_threads"] for lib in threadpool_info() if lib.get("user_api") == "blas"}
    into[key] = (fg.get_num_threads(), blas)


def test_demo_runs_on_one_thread_by_default_and_restores_the_counts(monkeypatch):
    pytest.importorskip("threadpoolctl")
    seen: dict = {}
    prob = demo.make_problem(n=32)

    def fake_mode(p, steps, progress=False, **kw):
        _record_threads(seen, "during")
        return demo.train_eager(prob, 2)

    monkeypatch.setattr(demo, "MODES", {"eager": fake_mode})
    monkeypatch.setattr(demo, "available_modes", lambda: {"eager": None, "static": None})
    _record_threads(seen, "before")
    args = argparse.Namespace(steps=2, threads=None, explain=False, plot=None, no_progress=True)
    assert demo.main(args) == 0
    _record_threads(seen, "after")
    threads, blas = seen["during"]
    assert threads == demo.DEFAULT_THREADS == 1
    assert blas <= {1}
    assert seen["after"] == seen["before"]


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


def test_demo_plot_writes_the_loss_curves(tmp_path):
    # (without matplotlib, --plot stops before any work: test_demo_plot_without_matplotlib_...)
    pytest.importorskip("matplotlib")
    prob = demo.make_problem(n=64)
    res = [demo.train_eager(prob, 3)]
    assert demo.plot_losses(res, str(tmp_path / "loss.png"))
    assert (tmp_path / "loss.png").stat().st_size > 0


def test_bench_quick_tape_scalar_json(tmp_path):
    out_json = tmp_path / "bench.json"
    proc = _run(["bench", "--quick", "--only", "tape_scalar", "--json", str(out_json),
                 "--no-progress"], cwd=tmp_path, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "summary" in proc.stdout
    data = json.loads(out_json.read_text())
    assert data["quick"] is True
    assert data["load_average_start"] is None or len(data["load_average_start"]) == 3
    assert isinstance(data["machine_busy"], bool) and "round_spread" in data
    assert data["machine"]["cpu_count"] >= 1 and "numpy" in data["machine"]["versions"]
    tape = data["benchmarks"]["tape_scalar"]
    present = [p for p in ("torch", "autograd") if importlib.util.find_spec(p) is not None]
    for peer in present:
        assert tape["ratios"][peer] > 0
        assert any(r["peer"] == peer and r["ratio"] > 0 for r in data["summary"])
    for peer in ("torch", "autograd"):
        if peer not in present:
            assert peer in data["peers_missing"]


def test_bench_rejects_unknown_workload(tmp_path):
    proc = _run(["bench", "--only", "no_such_workload"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown workload" in proc.stderr and "tape_scalar" in proc.stderr


def test_bench_list(tmp_path):
    proc = _run(["bench", "--list"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from fastgraph.cli import bench
    for name in bench.SUITE:
        assert f"\n{name} " in "\n" + proc.stdout
    assert "``" not in proc.stdout


def test_the_suite_is_part_of_the_package():
    """Every workload is a module of the installed ``fastgraph.bench``, none outside it."""
    import fastgraph.bench
    from fastgraph.cli import bench
    assert list(bench.discover()) == list(bench.SUITE)
    pkg = Path(fastgraph.bench.__file__).resolve().parent
    assert pkg.parent == Path(fg.__file__).resolve().parent
    for name, module in bench.discover().items():
        assert callable(importlib.import_module(module).run), name


def test_paired_ratio_pairs_rounds():
    """``Result.paired_ratio``: the median of per-round ratios, not the ratio of medians."""
    from fastgraph.bench.timing import Result, Stats
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
    """One timed round per comparison, no settling pause, in the module's own calls of
    ``compare`` and in the shared harness's (``fastgraph.bench.timing``); ``peers`` answers with
    ``fakes``."""
    from fastgraph.bench import timing
    real_compare = timing.compare

    def compare(name, candidates, **kw):
        kw.update(rounds=1, number=1, settle=0.0)
        return real_compare(name, candidates, **kw)

    def peers(*names):
        return ({n: fakes[n] for n in names if n in fakes}, [n for n in names if n not in fakes])

    monkeypatch.setattr(timing, "compare", compare)
    if hasattr(mod, "compare"):
        monkeypatch.setattr(mod, "compare", compare)
    monkeypatch.setattr(mod, "peers", peers)


def _setup_tape(monkeypatch, mods):
    ts = mods["tape_scalar"]
    # the peers run fastgraph's own chain: same gradients, and `import torch` finds a stand-in
    monkeypatch.setitem(sys.modules, "torch", _fake_module("torch", set_num_threads=lambda n: None))
    for peer in ("torch", "autograd"):
        monkeypatch.setitem(ts.BUILDERS, peer, ts._fastgraph_fns)
    _patch_bench(monkeypatch, ts, {"torch": sys.modules["torch"], "autograd": object()})
    return Counter(("fastgraph", k, t) for k, t in ts.TARGETS.items())


def _setup_mlp(monkeypatch, mods):
    m = mods["mlp"]
    monkeypatch.setitem(sys.modules, "torch", _fake_module("torch", set_num_threads=lambda n: None))
    monkeypatch.setattr(m, "torch_step_fn", m.numpy_step_fn)
    _patch_bench(monkeypatch, m, {"torch": sys.modules["torch"]})
    return Counter((a, b, t) for (a, b), t in m.TARGETS.items())


def _setup_cnn(monkeypatch, mods):
    m = mods["cnn"]
    monkeypatch.setitem(sys.modules, "torch", _fake_module("torch", set_num_threads=lambda n: None))
    monkeypatch.setattr(m, "torch_step_fn", lambda X, y, p, compiled=False:
                        m.fastgraph_eager_step_fn(X, y, p))
    monkeypatch.setattr(m, "jax_step_fn", m.fastgraph_eager_step_fn)
    _patch_bench(monkeypatch, m, {"torch": sys.modules["torch"], "jax": object()})
    return Counter((a, b, t) for (a, b), t in m.TARGETS.items())


def _setup_rnn(monkeypatch, mods):
    m = mods["rnn"]
    monkeypatch.setitem(sys.modules, "torch", _fake_module("torch", set_num_threads=lambda n: None))
    for peer in ("torch_fn", "jax_fn", "autograd_fn", "tf1_fn"):   # NumPy's BPTT stands in
        monkeypatch.setattr(m, peer, m.numpy_fn)
    monkeypatch.setattr(m, "first_calls", lambda xs, weights, available: {
        "fastgraph_function": 0.01, "jax_jit": 1.0})
    monkeypatch.setattr(m, "UNROLLED", (3, 6))
    _patch_bench(monkeypatch, m, {"torch": sys.modules["torch"], "jax": object(),
                                  "autograd": object(), "tensorflow": object()})
    return Counter([(a, b, t) for (a, b), t in m.TARGETS.items()]
                   + [("fastgraph_function", "jax_jit", m.FIRST_CALL_TARGET)])


def _setup_call_overhead(monkeypatch, mods):
    m = mods["call_overhead"]
    for maker in ("_jax", "_tf1"):
        monkeypatch.setattr(m, maker, lambda: m._reference)
    _patch_bench(monkeypatch, m, {"jax": object(), "tensorflow": object()})
    return Counter(("fastgraph", k, t) for k, t in m.TARGETS.items())


def _setup_toposort(monkeypatch, mods):
    m = mods["toposort"]

    class Graph:
        def __init__(self, n, edges, directed):
            pass

        def topological_sorting(self):
            return None

    _patch_bench(monkeypatch, m, {"igraph": _fake_module("igraph", Graph=Graph)})
    return Counter([("fastgraph", "igraph", m.TARGET_RATIO_IGRAPH)])


def _setup_compile(monkeypatch, mods):
    m = mods["compile"]

    def maker(first_s):
        return lambda n, xv, build=None: (first_s, np.zeros(m.SIZE), lambda: None)

    monkeypatch.setattr(m, "_fastgraph", maker(0.01))
    monkeypatch.setattr(m, "_tf1", maker(1.0))
    monkeypatch.setattr(m, "_jax", maker(1.0))
    monkeypatch.setattr(m, "_fastgraph_train", lambda n_vars: (0.1, 1e-3))
    _patch_bench(monkeypatch, m, {"jax": object(), "tensorflow": object()})
    return (Counter(("fastgraph", peer, t) for (peer, _, _), t in m.TARGETS.items())
            + Counter([("fastgraph", "tensorflow", m.WINDOW_TARGET)]))     # the window graph


def _setup_fused(monkeypatch, mods):
    m = mods["fused"]
    monkeypatch.setattr(m, "N_QUICK", 20_000)
    monkeypatch.setattr(m, "tensorflow_fns", lambda tf, threads=None: (
        m.np_forward, m.np_grad, lambda arrays: arrays, m.np_forward, m.np_grad))
    _patch_bench(monkeypatch, m, {"tensorflow": object()})
    # both workloads against each peer target; the floor rows, targets by workload
    return (Counter({("fastgraph", k, t): 2 for k, t in m.TARGETS.items()})
            + Counter(("fastgraph", "memory floor", t) for t in m.FLOOR_TARGETS.values()))


def _setup_fused_vm(monkeypatch, mods):
    m = mods["fused_vm"]
    _patch_bench(monkeypatch, m, {})
    return Counter([("fastgraph", "fastgraph_1thread", 1.0 / m.TARGET_THREAD_SPEEDUP)])


def _setup_numeric(monkeypatch, mods):
    m = mods["numeric"]
    # every peer's value and gradient stood in by the hand-written NumPy one
    monkeypatch.setattr(m, "LOGISTIC_PEERS", {k: (lib, m._logistic_numpy)
                                              for k, (lib, _) in m.LOGISTIC_PEERS.items()})
    monkeypatch.setattr(m, "GP_POINTS", 64)      # the same code on a small problem
    monkeypatch.setattr(m, "GP_PEERS", {k: (lib, m._gp_numpy)
                                        for k, (lib, _) in m.GP_PEERS.items()})
    monkeypatch.setattr(m, "FFT_PEERS", {k: (lib, m._fft_numpy)
                                         for k, (lib, _) in m.FFT_PEERS.items()})
    _patch_bench(monkeypatch, m, {"autograd": object(), "jax": object(), "torch": object()})
    return Counter((a, b, t) for targets in (m.LOGISTIC_TARGETS, m.GP_TARGETS, m.FFT_TARGETS)
                   for (a, b), t in targets.items())


_TARGET_SETUPS = {
    "tape_scalar": _setup_tape,
    "tape_vector": _setup_tape,
    "mlp": _setup_mlp,
    "cnn": _setup_cnn,
    "rnn": _setup_rnn,
    "call_overhead": _setup_call_overhead,
    "toposort": _setup_toposort,
    "compile": _setup_compile,
    "fused": _setup_fused,
    "fused_vm": _setup_fused_vm,
    "numeric": _setup_numeric,
}


def test_every_workload_with_targets_is_checked():
    """A new benchmark module in the suite must be added to ``_TARGET_SETUPS`` (or be known to
    set no target)."""
    from fastgraph.cli import bench
    assert set(bench.discover()) <= set(_TARGET_SETUPS)


@pytest.mark.parametrize("name", list(_TARGET_SETUPS))
def test_summary_rows_carry_each_modules_targets(monkeypatch, capsys, name):
    import importlib
    from fastgraph.cli import bench
    setup = _TARGET_SETUPS[name]
    mods = {m: importlib.import_module(f"fastgraph.bench.{m}") for m in ("tape_scalar", name)}
    expected = setup(monkeypatch, mods)
    kwargs = {"threads": 2} if name == "fused_vm" else {}   # its target needs 2+ threads
    out = mods[name].run(quick=True, verbose=True, **kwargs)
    printed = capsys.readouterr().out
    # a quick run judges nothing against the full-size targets
    assert "MISSES" not in printed and "meets the target" not in printed, printed
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
    # the --quick summary: the same rows, no verdicts, said to be indicative
    quick = bench.format_summary(rows, quick=True)
    assert "indicative" in quick and "target" not in quick.splitlines()[0]
    assert not any(ln.rstrip().split()[-1][:2] in ("<=", "!>")
                   for ln in quick.splitlines()[2:2 + len(rows)])


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


# ---- load, threads and --quick in the suite's own output ----------------------------------------
def _fake_suite(monkeypatch, seen: dict):
    """``bench`` with one stand-in workload whose rounds spread 4x, recording the thread counts
    it ran under."""
    from fastgraph.cli import bench

    def run(quick=False, verbose=True):
        _record_threads(seen, "during")
        cand = {"median_s": 1.0, "min_s": 1.0, "max_s": 4.0, "rounds": 3}
        return {"results": [{"name": "fake", "reference": "fastgraph", "targets": {"peer": 0.9},
                             "candidates": {"fastgraph": dict(cand), "peer": dict(cand,
                                                                                  median_s=2.0)},
                             "ratios": {"peer": 0.5}}]}

    monkeypatch.setitem(sys.modules, "fake_workload", _fake_module("fake_workload", run=run))
    monkeypatch.setattr(bench, "discover", lambda: {"fake": "fake_workload"})
    return bench


def _bench_args(**kw):
    args = dict(quick=False, only=None, threads=None, json=None, plot=None, list=False,
                no_progress=True)
    args.update(kw)
    return argparse.Namespace(**args)


def test_bench_says_above_the_summary_when_the_machine_is_busy(monkeypatch, capsys):
    pytest.importorskip("threadpoolctl")
    from fastgraph.bench import timing
    seen: dict = {}
    bench = _fake_suite(monkeypatch, seen)
    monkeypatch.setattr(timing, "machine_load", lambda: {
        "load_average": [5.0, 4.0, 3.0], "cpus": 2, "busy": True})
    _record_threads(seen, "before")
    assert bench.main(_bench_args(quick=True, threads=1)) == 0
    _record_threads(seen, "after")
    out = capsys.readouterr().out
    summary = out.index("======== summary")
    table = out.index("\ncase ", summary)
    assert summary < out.index("the machine is busy", summary) < table
    assert summary < out.index("timings were unsteady", summary) < table
    assert "indicative" in out[table:] and "<=0.9" not in out and "!>" not in out
    assert seen["during"] == (1, seen["during"][1]) and seen["during"][1] <= {1}
    assert seen["after"] == seen["before"]


def test_bench_quiet_full_run_judges_targets_and_gives_blas_fastgraphs_threads(monkeypatch,
                                                                               capsys):
    pytest.importorskip("threadpoolctl")
    from fastgraph.bench import timing
    seen: dict = {}
    bench = _fake_suite(monkeypatch, seen)
    monkeypatch.setattr(timing, "machine_load", lambda: {
        "load_average": [0.0, 0.0, 0.0], "cpus": 2, "busy": False})
    monkeypatch.setattr(timing, "round_spread", lambda results: 1.05)
    assert bench.main(_bench_args()) == 0
    out = capsys.readouterr().out
    assert "WARNING" not in out and "<=0.9" in out and "indicative" not in out
    assert f"threads: {fg.get_num_threads()} for fastgraph, NumPy's BLAS" in out
    assert seen["during"][1] <= {fg.get_num_threads()}


def test_threads_for_everyone_restores_everything():
    from fastgraph.bench.timing import threads_for_everyone
    env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "XLA_FLAGS")}
    before = fg.get_num_threads()
    with threads_for_everyone(1):
        assert fg.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"
    assert fg.get_num_threads() == before
    assert {k: os.environ.get(k) for k in env} == env


@pytest.mark.parametrize("load, spread, expected", [
    ({"load_average": [1.0, 1.0, 1.0], "cpus": 2, "busy": True}, None, ["machine is busy"]),
    (None, 2.0, ["timings were unsteady"]),
    ({"load_average": [0.2, 0.2, 0.2], "cpus": 2, "busy": False}, 1.2, []),
])
def test_load_warnings(load, spread, expected):
    from fastgraph.bench.timing import load_warnings
    got = load_warnings(load, spread)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert e in g and max(map(len, g.splitlines())) <= 100


def test_machine_load_counts_a_busy_machine(monkeypatch):
    from fastgraph.bench import timing
    monkeypatch.setattr(timing, "usable_cpus", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 0.5, 0.1))
    assert timing.machine_load() == {"load_average": [1.2, 0.5, 0.1], "cpus": 2, "busy": True}
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 0.5, 0.1))
    assert not timing.machine_load()["busy"]
