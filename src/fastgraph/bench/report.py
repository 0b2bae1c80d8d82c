"""The README's performance table and ``docs/performance.md``, generated from benchmark results.

``python -m fastgraph bench --json FILE.json`` records every ratio of a run with the machine it
ran on; this module turns such a file into Markdown.  Run it from a source checkout (or name the
checkout with ``--root``):

    python -m fastgraph.bench.report                     # the page for the newest results, on stdout
    python -m fastgraph.bench.report FILE.json > page.md # the page for one file
    python -m fastgraph.bench.report --write             # docs/performance.md and the README's table

The newest results file is the last ``benchmarks/results/bench-*.json`` by name (name new files
``bench-YYYYMMDD-HHMM.json``, UTC). ``tests/test_bench_report.py`` checks the tables against a
fixture, and that the committed page and README table are what this module makes of the newest
file.

>>> payload = {"machine": {"cpu_model": "X", "cpus_usable": 2, "python": "3.11.7",
...            "versions": {"numpy": "2.4.6"}}, "threads": 2,
...            "summary": [{"workload": "tape_scalar", "case": "tape scalar total per op",
...                         "fastgraph": "fastgraph", "peer": "torch", "ratio": 0.2,
...                         "target": 0.33}]}
>>> print(headline_table(payload).splitlines()[-1])
| tape scalar, per op | eager | PyTorch | 0.200x | ≤ 0.33 ✓ |
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from fastgraph.bench.timing import format_seconds

__all__ = ["RESULTS", "newest", "load", "label_case", "label_candidate", "label_peer",
           "machine_text", "headline_table", "full_table", "readme_block", "page",
           "update_readme", "main"]

#: where a checkout keeps each file, relative to its root
RESULTS = Path("benchmarks") / "results"
README = Path("README.md")
PAGE = Path("docs") / "performance.md"
BEGIN, END = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"

#: how the README names each peer and reference the benchmarks time fastgraph against
PEER_NAMES = {
    "torch": "PyTorch", "torch_compile": "torch.compile", "autograd": "autograd",
    "numpy": "NumPy", "numpy_out": "NumPy `out=`", "numexpr": "numexpr",
    "jax": "JAX jit", "jax_jit": "JAX jit", "tensorflow": "TensorFlow 1",
    "tensorflow_xla": "TF XLA", "igraph": "igraph", "rustworkx": "rustworkx",
    "graphlib": "graphlib", "networkx": "networkx", "memory floor": "memory floor",
    "fastgraph_1thread": "itself on 1 thread", "tf1_scan": "TF1 `tf.scan`",
}
#: fastgraph's candidates: the benchmark's own name -> the mode it runs
CANDIDATE_NAMES = {
    "fastgraph_static": "static `Session`", "fastgraph_function": "`fg.function`",
    "fastgraph_function_grads": "`fg.function`, gradients only",
    "numpy_gemms_only": "NumPy's 8 products alone",
    "fastgraph_session": "static `Session`", "fastgraph_eager": "eager",
}
#: what plain ``fastgraph`` is in each workload
DEFAULT_CANDIDATE = {
    "tape_scalar": "eager", "tape_vector": "eager", "mlp": "eager", "fused": "`fg.function`",
    "fused_vm": "fused kernel", "call_overhead": "`Session.run`", "compile": "`Session`",
    "toposort": "`utils.toposort`",
}
#: the dependency versions worth naming, in this order, with their display names
VERSIONS = [("numpy", "NumPy"), ("scipy", "SciPy"), ("torch", "torch"), ("jax", "JAX"),
            ("tensorflow-cpu", "TensorFlow-CPU"), ("tensorflow", "TensorFlow"),
            ("autograd", "autograd"), ("numexpr", "numexpr"), ("igraph", "igraph"),
            ("rustworkx", "rustworkx"), ("networkx", "networkx")]


def newest(results: Path | str = RESULTS) -> Path:
    """The newest ``bench-*.json`` in the folder ``results`` (by name; relative paths from the
    current directory)."""
    results = Path(results)
    files = sorted(results.glob("bench-*.json"))
    if not files:
        raise FileNotFoundError(f"no bench-*.json in {results}: run "
                                f"`python -m fastgraph bench --json {results}/bench-YYYYMMDD-HHMM.json`")
    return files[-1]


def load(path: Path | str) -> dict[str, Any]:
    with open(path) as fh:
        return json.load(fh)


# ---- names ----------------------------------------------------------------------------------------
def label_case(row: dict[str, Any]) -> str:
    """``tape scalar total per op`` -> ``tape scalar, per op``; ``fused_vm: w4_forward`` ->
    ``fused VM: w4 forward``; ``n=10,000,000`` -> ``10M``."""
    case = str(row.get("case") or row["workload"])
    case = case.replace("fused_vm:", "fused VM:").replace("_", " ")
    case = re.sub(r" total per op$", ", per op", case)
    case = re.sub(r"^compile: ", "compile, ", case)
    case = re.sub(r"(\d+) ops$", lambda m: f"{int(m.group(1)):,} ops", case)
    case = re.sub(r" n=([\d,]+)$", lambda m: f", {_short_count(m.group(1))}", case)
    case = re.sub(r"\d{1,3}(?:,\d{3})+(?= nodes| edges)", lambda m: _short_count(m.group(0)), case)
    return case


def _short_count(text: str) -> str:
    n = int(text.replace(",", ""))
    for unit, scale in (("M", 10**6), ("k", 10**3)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n:,}"


def label_candidate(row: dict[str, Any]) -> str:
    name = row.get("fastgraph", "fastgraph")
    if name == "fastgraph":
        return DEFAULT_CANDIDATE.get(row["workload"], "fastgraph")
    return CANDIDATE_NAMES.get(name, name)


def label_peer(row: dict[str, Any]) -> str:
    if row["peer"] == "numpy" and row["workload"] == "mlp":
        return "NumPy by hand"                  # the MLP's NumPy candidate is a written-out step
    return PEER_NAMES.get(row["peer"], row["peer"])


def _ratio(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:.3f}x" if x < 10 else f"{x:.3g}x"


def _target(row: dict[str, Any], verdict: bool = True) -> str:
    """``≤ 0.33 ✓``; without the verdict for quick runs, whose small sizes are not the targets'."""
    target = row.get("target")
    if target is None:
        return ""
    if not verdict:
        return f"≤ {target:.3g}"
    return f"≤ {target:.3g} {'✓' if row['ratio'] <= target else '✗'}"


def _seconds(t: float | None) -> str:
    return format_seconds(t, micro="µs")


# ---- the machine ------------------------------------------------------------------------------------
def _blas(machine: dict[str, Any]) -> str:
    for lib in machine.get("blas") or ():
        if lib.get("owner") in (None, "numpy"):
            return f"{lib.get('internal_api', 'BLAS')} {lib.get('version', '')}".strip()
    return ""


def _load(payload: dict[str, Any]) -> str:
    """The load averages the run recorded (1, 5, 15 minutes), under whatever keys hold "load"."""
    machine = payload.get("machine") or {}
    found = []
    for source in (payload, machine):
        for key, value in source.items():
            if "load" not in key.lower():
                continue
            values = [value] if isinstance(value, (int, float)) else value
            if not (isinstance(values, (list, tuple)) and values
                    and all(isinstance(v, (int, float)) for v in values)):
                continue
            when = " at the start" if key.endswith("start") else (
                " at the end" if key.endswith("end") else "")
            found.append(" / ".join(f"{v:.1f}" for v in values) + when)
    return "load average " + ", ".join(found) if found else ""


def machine_text(payload: dict[str, Any]) -> str:
    """One sentence naming the machine, the thread count and every version that matters."""
    m = payload.get("machine") or {}
    versions = m.get("versions") or {}
    cpus = m.get("cpus_usable") or m.get("cpu_count")
    parts = [m.get("cpu_model", "unknown CPU")]
    if cpus:
        parts[0] += f", {cpus} CPU" + ("s" if cpus != 1 else "")
    if m.get("python"):
        parts.append(f"Python {m['python']}")
    named = []
    for dist, name in VERSIONS:
        if dist in versions and not (dist == "tensorflow" and "tensorflow-cpu" in versions):
            text = f"{name} {versions[dist]}"
            if dist == "numpy" and _blas(m):
                text += f" ({_blas(m).replace('openblas', 'OpenBLAS')})"
            named.append(text)
    parts += named
    threads = payload.get("threads") or m.get("fastgraph_threads")
    run = "quick run (small sizes: indicative ratios)" if payload.get("quick") else "full run"
    head = f"A {run} of `python -m fastgraph bench`"
    if threads:
        head += f" at {threads} thread" + ("s" if threads != 1 else "")
    load = _load(payload)
    return f"{head} on {', '.join(parts)}" + (f"; {load}" if load else "") + "."


# ---- tables -----------------------------------------------------------------------------------------
def _rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in payload.get("summary") or () if r.get("ratio") is not None]


def headline_table(payload: dict[str, Any]) -> str:
    """The rows that carry a target: one ratio per cell (fastgraph's median over the peer's)."""
    lines = ["| workload | fastgraph | vs | ratio | target |",
             "| --- | --- | --- | ---: | ---: |"]
    for r in _rows(payload):
        if r.get("target") is None:
            continue
        lines.append(f"| {label_case(r)} | {label_candidate(r)} | {label_peer(r)} | "
                     f"{_ratio(r['ratio'])} | {_target(r, not payload.get('quick'))} |")
    return "\n".join(lines)


def full_table(payload: dict[str, Any]) -> str:
    """Every row: the two medians, their ratio, the ratio of the fastest rounds, the target."""
    lines = ["| workload | fastgraph | vs | fastgraph median | peer median | ratio | "
             "fastest rounds | target |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in _rows(payload):
        lines.append(f"| {label_case(r)} | {label_candidate(r)} | {label_peer(r)} | "
                     f"{_seconds(r.get('fastgraph_s'))} | {_seconds(r.get('peer_s'))} | "
                     f"{_ratio(r['ratio'])} | {_ratio(r.get('ratio_min'))} | "
                     f"{_target(r, not payload.get('quick'))} |")
    return "\n".join(lines)


NOISE = ("On a loaded 2-core VM, ratios move by up to ~30% between runs; compare rows of one "
         "run, not numbers across machines.")


def _overloaded(payload: dict[str, Any]) -> bool:
    """Whether a 1-minute load average the run recorded exceeds the CPUs it could use."""
    cpus = (payload.get("machine") or {}).get("cpus_usable") or 0
    loads = [v for k, v in payload.items() if k.startswith("load_average")
             and isinstance(v, list) and v and isinstance(v[0], (int, float))]
    return bool(cpus) and any(v[0] > cpus for v in loads)


OVERLOADED = ("Other jobs kept the machine busier than its CPU count during this run, so the rows "
              "that need both cores (the MLP step, thread scaling, the memory floor) are the least "
              "reliable.")


def _caveats(payload: dict[str, Any]) -> str:
    text = NOISE
    if _overloaded(payload):
        text += " " + OVERLOADED
    return text


def readme_block(payload: dict[str, Any]) -> str:
    """What the README holds between its bench-table markers."""
    text = machine_text(payload)
    if (payload.get("machine") or {}).get("cpus_usable", 99) <= 4:
        text += (" On a loaded 2-core VM, ratios move by up to ~30% between runs"
                 + (", more in a run as loaded as this one." if _overloaded(payload) else "."))
    return "\n".join([BEGIN, _wrap(text), "", headline_table(payload), END])


def _wrap(text: str, width: int = 99) -> str:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def _memory_floor(payload: dict[str, Any]) -> list[str]:
    out = []
    for name, bench in (payload.get("benchmarks") or {}).items():
        for case, f in ((bench or {}).get("memory_floor") or {}).items():
            fg_ratio = (f.get("ratio") or {}).get("fastgraph")
            line = (f"* {name} {case.replace('_', ' ')}: the floor is {_seconds(f.get('floor_s'))}"
                    f" at {f.get('bandwidth_GBps', 0):.1f} GB/s")
            if fg_ratio is not None:
                line += f"; fastgraph takes {fg_ratio:.2f}x that"
            out.append(line)
    return out


WORKLOADS = """\
* **tape scalar**: 2,500 iterations of `z = tanh(z*a + b) - z*0.5` on 0-d float64 leaves, then
  `backward()`: 12,500 recorded operations whose arithmetic costs nothing, so the time is the
  engine's own per-operation cost (make the result, record it, walk it back). It bounds
  scalar-heavy code: probabilistic programs, ODE steppers, small optimisation problems.
* **tape vector[64]**: the same chain on length-64 vectors with a final `sum`: whether the
  engine's overhead hides behind NumPy's own on small vectors.
* **MLP training step**: one float32 step of a 784-256-256-10 ReLU classifier (cross-entropy, SGD,
  batch 128). The products cost about as much as everything else together, so the gap to a
  careful hand-written NumPy forward and backward is the framework's overhead. Timed for eager
  (against PyTorch eager), the static `Session` and `fg.function` (against NumPy by hand).
* **fused**: `tanh(a*b + c) * sigmoid(d) + 0.5*a*a` on 10^7 float64 values, forward, and forward
  with the gradients of `sum(y)` for all four inputs, against NumPy, numexpr, JAX, torch.compile
  and TensorFlow's XLA. Elementwise chains are memory-bound, so the yardstick is the **memory
  floor**: the bytes the expression must move at the best streaming bandwidth that several
  probes (NumPy's copy and add, a 4-read-1-write C pass on 1 and N threads) reach in the same
  rounds. XLA and JAX are timed kernel to kernel (their own arrays in and out) and, in rows
  marked `(numpy io)`, with the conversions from and to NumPy.
* **fused VM**: the kernel VM on its own against NumPy, numexpr and JAX, and its thread scaling
  on a compute-bound kernel.
* **call overhead**: one `Session.run` of a tiny plan (10 scalar ops) against JAX's jitted call
  and TensorFlow 1's `Session.run`.
* **compile**: building, compiling and running graphs of 1,000 and 10,000 elementwise operations
  (first run and steady state) against TensorFlow 1 and JAX.
* **toposort**: the topological sort shared by the tape walker and the planner against igraph,
  rustworkx, graphlib and networkx.

Each workload is a module of `fastgraph.bench` whose docstring has the details
(`python -m fastgraph bench --list` names them)."""


def page(payload: dict[str, Any], source: str) -> str:
    """``docs/performance.md`` for one results file (``source``: its path in the repository)."""
    missing = payload.get("peers_missing") or []
    floor = _memory_floor(payload)
    parts = [
        "# Performance",
        "",
        f"<!-- Generated by `python -m fastgraph.bench.report --write` from `{source}`; do not edit. -->",
        "",
        "`python -m fastgraph bench` times fastgraph against every peer library installed "
        "(`pip install \".[bench]\"`), **side by side in one process**: the rounds interleave "
        "the libraries, so a change in machine load hits all of them alike. Each ratio is "
        "fastgraph's median time over the peer's, so **< 1 means fastgraph is faster**; "
        "\"fastest rounds\" is the same ratio from each one's fastest round. A target is the "
        "ratio a benchmark aims to stay at or under.",
        "",
        _wrap(machine_text(payload) + " " + _caveats(payload)),
    ]
    if missing:
        parts += ["", f"Peers not installed for this run: {', '.join(missing)}."]
    parts += ["", "## Targets", "", headline_table(payload), "", "## Every ratio", "",
              full_table(payload)]
    if floor:
        parts += ["", "## Memory floor", "", *floor]
    parts += ["", "## The workloads", "", WORKLOADS, "",
              "## Reproducing", "",
              "```bash",
              'pip install ".[bench]"',
              "python -m fastgraph bench --json benchmarks/results/bench-YYYYMMDD-HHMM.json",
              "python -m fastgraph.bench.report --write  # this page and the README's table",
              "```",
              "",
              "`--quick` runs small sizes in about a minute (its ratios are indicative only), "
              "`--only NAME` picks workloads, `--threads N` sets one thread count for every "
              "library. Ratios measured before results were kept as files are in "
              "`benchmarks/results/history.json`.",
              ""]
    return "\n".join(_wrap_paragraphs(parts))


def _wrap_paragraphs(parts: list[str]) -> list[str]:
    out = []
    for p in parts:
        if p and "\n" not in p and not p.startswith(("|", "#", "*", "<!--", "`" * 3, "pip ",
                                                     "python ")):
            out.append(_wrap(p))
        else:
            out.append(p)
    return out


def update_readme(text: str, payload: dict[str, Any]) -> str:
    """``text`` (the README) with its bench-table block replaced by the one for ``payload``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no {BEGIN} ... {END} block")
    return text[:start] + readme_block(payload) + text[end + len(END):]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fastgraph.bench.report",
        description="Markdown tables from `python -m fastgraph bench --json` results.")
    parser.add_argument("results", nargs="?", type=Path, default=None,
                        help="a results file (default: the newest benchmarks/results/bench-*.json)")
    parser.add_argument("--write", action="store_true",
                        help="write docs/performance.md and the README's table instead of printing")
    parser.add_argument("--root", type=Path, default=Path.cwd(),
                        help="the source checkout (default: the current directory)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    path = (args.results or newest(root / RESULTS)).resolve()
    payload = load(path)
    try:
        source = str(path.relative_to(root))
    except ValueError:
        source = path.name
    text = page(payload, source)
    if not args.write:
        sys.stdout.write(text)
        return 0
    readme = root / README
    if not readme.is_file():
        print(f"{readme} does not exist: --write needs a source checkout (--root DIR)",
              file=sys.stderr)
        return 2
    (root / PAGE).write_text(text)
    readme.write_text(update_readme(readme.read_text(), payload))
    print(f"wrote {PAGE} and the table in {README} from {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
