"""fastgraph.bench.report: benchmark results (``python -m fastgraph bench --json``) become the
README's performance table and docs/performance.md, and the committed ones are what it makes of
the newest results file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastgraph.bench import report

ROOT = Path(__file__).resolve().parent.parent

#: a results file as `bench --json` writes it, cut down to what the report reads
FIXTURE = {
    "quick": False,
    "threads": 2,
    "machine": {
        "cpu_model": "AMD EPYC", "cpu_count": 2, "cpus_usable": 2, "python": "3.11.7",
        "fastgraph": "0.1.0", "fastgraph_threads": 2,
        "blas": [{"internal_api": "openblas", "version": "0.3.30", "owner": "numpy"},
                 {"internal_api": "openblas", "version": "0.3.29", "owner": "scipy"}],
        "versions": {"numpy": "2.4.6", "torch": "2.13.0+cpu", "tensorflow-cpu": "2.21.0",
                     "tensorflow": "2.21.0", "tqdm": "4.70.1"},
    },
    "peers_missing": ["jax"],
    "summary": [
        {"workload": "tape_scalar", "case": "tape scalar total per op", "fastgraph": "fastgraph",
         "peer": "torch", "fastgraph_s": 4.5e-06, "peer_s": 2.08e-05, "ratio": 0.2163,
         "ratio_min": 0.2078, "target": 0.33},
        {"workload": "mlp", "case": "MLP training step", "fastgraph": "fastgraph_static",
         "peer": "numpy", "fastgraph_s": 0.0276, "peer_s": 0.0254, "ratio": 1.0866,
         "ratio_min": 0.73, "target": 1.0},
        {"workload": "fused", "case": "fused forward n=10,000,000", "fastgraph": "fastgraph",
         "peer": "numpy", "fastgraph_s": 0.0241, "peer_s": 0.531, "ratio": 0.0454,
         "ratio_min": 0.05, "target": None},
        {"workload": "compile", "case": "compile: steady run, 10000 ops",
         "fastgraph": "fastgraph", "peer": "tensorflow", "fastgraph_s": 0.0024,
         "peer_s": 0.0119, "ratio": 0.2017, "ratio_min": 0.199, "target": 0.25},
    ],
    "benchmarks": {"fused": {"memory_floor": {
        "forward": {"floor_s": 0.0168, "bandwidth_GBps": 23.8, "ratio": {"fastgraph": 1.43}}}}},
}

MACHINE = ("A full run of `python -m fastgraph bench` at 2 threads on AMD EPYC, 2 CPUs, Python "
           "3.11.7, NumPy 2.4.6 (OpenBLAS 0.3.30), torch 2.13.0+cpu, TensorFlow-CPU 2.21.0.")

HEADLINE = """\
| workload | fastgraph | vs | ratio | target |
| --- | --- | --- | ---: | ---: |
| tape scalar, per op | eager | PyTorch | 0.216x | ≤ 0.33 ✓ |
| MLP training step | static `Session` | NumPy by hand | 1.087x | ≤ 1 ✗ |
| compile, steady run, 10,000 ops | `Session` | TensorFlow 1 | 0.202x | ≤ 0.25 ✓ |"""

FULL = """\
| workload | fastgraph | vs | fastgraph median | peer median | ratio | fastest rounds | target |
| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |
| tape scalar, per op | eager | PyTorch | 4.5 µs | 20.8 µs | 0.216x | 0.208x | ≤ 0.33 ✓ |
| MLP training step | static `Session` | NumPy by hand | 27.6 ms | 25.4 ms | 1.087x | 0.730x | ≤ 1 ✗ |
| fused forward, 10M | `fg.function` | NumPy | 24.1 ms | 531 ms | 0.045x | 0.050x |  |
| compile, steady run, 10,000 ops | `Session` | TensorFlow 1 | 2.4 ms | 11.9 ms | 0.202x | 0.199x | ≤ 0.25 ✓ |"""


def test_machine_sentence_names_cpu_cores_python_numpy_blas_and_peers():
    assert report.machine_text(FIXTURE) == MACHINE


def test_headline_table_has_the_rows_with_targets_one_number_per_cell():
    assert report.headline_table(FIXTURE) == HEADLINE


def test_full_table_has_every_row():
    assert report.full_table(FIXTURE) == FULL


def test_quick_runs_give_no_verdicts():
    quick = dict(FIXTURE, quick=True)
    table = report.headline_table(quick)
    assert "✓" not in table and "✗" not in table and "≤ 0.33 |" in table
    assert "quick run" in report.machine_text(quick)


def test_recorded_load_is_named():
    loaded = json.loads(json.dumps(FIXTURE))
    loaded["machine"]["load_average"] = [3.04, 2.5, 2.0]
    assert report.machine_text(loaded).endswith("; load average 3.0 / 2.5 / 2.0.")
    del loaded["machine"]["load_average"]
    loaded["load_average_start"], loaded["load_average_end"] = [4.2, 4.0, 3.5], [1.0, 2.0, 3.0]
    assert report.machine_text(loaded).endswith(
        "; load average 4.2 / 4.0 / 3.5 at the start, 1.0 / 2.0 / 3.0 at the end.")


def test_an_overloaded_run_says_which_rows_to_trust_least():
    assert "as loaded as this one" not in report.readme_block(FIXTURE)
    assert "least reliable" not in report.page(FIXTURE, "x.json")
    loaded = dict(FIXTURE, load_average_start=[3.5, 3.0, 2.0], load_average_end=[1.0, 1.0, 1.0])
    assert "as loaded as this one" in report.readme_block(loaded)
    assert "least reliable" in report.page(loaded, "x.json")


def test_page_holds_tables_floor_missing_peers_and_source():
    text = report.page(FIXTURE, "benchmarks/results/bench-x.json")
    assert text.startswith("# Performance\n")
    assert "`benchmarks/results/bench-x.json`" in text
    assert HEADLINE in text and FULL in text
    assert "Peers not installed for this run: jax." in text
    assert "* fused forward: the floor is 16.8 ms at 23.8 GB/s; fastgraph takes 1.43x that" in text
    assert "~30%" in text


def test_readme_block_replaced_between_markers_only():
    readme = f"# t\n\nbefore\n\n{report.BEGIN}\nold table\n{report.END}\n\nafter\n"
    new = report.update_readme(readme, FIXTURE)
    assert new.startswith("# t\n\nbefore\n\n" + report.BEGIN + "\n")
    assert new.endswith(report.END + "\n\nafter\n")
    assert "old table" not in new and HEADLINE in new
    assert report.update_readme(new, FIXTURE) == new
    with pytest.raises(ValueError, match="bench-table"):
        report.update_readme("# no markers\n", FIXTURE)


def test_newest_is_the_last_bench_file_by_name(tmp_path: Path):
    for name in ("bench-20261201-0900.json", "bench-20261202-0100.json", "history.json"):
        (tmp_path / name).write_text("{}")
    assert report.newest(tmp_path).name == "bench-20261202-0100.json"
    with pytest.raises(FileNotFoundError, match="fastgraph bench --json"):
        report.newest(tmp_path / "empty")


def test_cli_prints_the_page(tmp_path: Path, capsys):
    path = tmp_path / "bench-1.json"
    path.write_text(json.dumps(FIXTURE))
    assert report.main([str(path)]) == 0
    assert capsys.readouterr().out == report.page(FIXTURE, path.name)


# ---- what is committed is generated from the newest results ----------------------------------------
def _newest():
    path = report.newest(ROOT / report.RESULTS)
    return report.load(path), str(path.relative_to(ROOT))


def test_committed_performance_page_is_generated_from_the_newest_results():
    payload, source = _newest()
    assert (ROOT / "docs" / "performance.md").read_text() == report.page(payload, source), (
        "docs/performance.md is stale: run `python -m fastgraph.bench.report --write`")


def test_committed_readme_table_is_generated_from_the_newest_results():
    payload, _ = _newest()
    readme = (ROOT / "README.md").read_text()
    assert report.update_readme(readme, payload) == readme, (
        "the README's performance table is stale: run `python -m fastgraph.bench.report --write`")


def test_results_files_are_structured():
    """Every results file names its machine and gives workload, peer and ratio per row."""
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        data = report.load(path)
        assert data.get("machine", {}).get("cpu_model"), path.name
        assert data["machine"].get("versions", {}).get("numpy"), path.name
        rows = data.get("summary") or data.get("series")
        assert rows, path.name
        for row in rows:
            assert {"workload", "peer"} <= set(row), (path.name, row)
            assert any(k in row for k in ("ratio", "ratios", "ratio_range")), (path.name, row)
