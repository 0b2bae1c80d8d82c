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
