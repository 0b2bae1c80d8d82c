"""``python -m fastgraph bench``: the benchmark suite against every installed peer library.

Runs the workloads of :mod:`fastgraph.bench` (each module exposes ``run(quick=False,
verbose=True) -> dict`` and times with :func:`fastgraph.bench.timing.compare`: peers interleaved
round by round, medians with min/max), then prints one summary: the time ratio fastgraph / peer
(< 1: fastgraph faster) with the module's target for it where it sets one (see ``headline``),
and the memory floor where it applies.

One thread count for everyone: ``--threads N``, else fastgraph's default, is given to fastgraph,
NumPy's BLAS and every peer.  A machine busy before the run, or rounds that spread widely, are
reported above the summary.  ``--quick`` runs small sizes and few rounds: its ratios are
indicative and are not judged against the full-size targets.  The peers come with
``pip install "fastgraph[bench]"``; missing ones are skipped and listed.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import io
import json
import os
import pkgutil
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from fastgraph.bench.timing import format_seconds
from fastgraph.cli import matplotlib_missing, output_file, thread_count

#: Suite order: workload name = module of :mod:`fastgraph.bench`.  Other modules there with a
#: ``run`` run after these, in name order.
SUITE = ("tape_scalar", "tape_vector", "mlp", "cnn", "rnn", "fused", "fused_vm", "call_overhead",
         "compile", "toposort", "numeric")
#: modules of the package that are not workloads (compare_builds times several builds;
#: distributed runs under mpirun: ``mpirun -n 2 python -m fastgraph.bench.distributed``)
NOT_WORKLOADS = ("timing", "report", "compare_builds", "distributed")

#: Peer libraries: import name -> distribution name (for versions and the "missing" list).
PEERS = {
    "numpy": "numpy",
    "numexpr": "numexpr",
    "torch": "torch",
    "jax": "jax",
    "tensorflow": "tensorflow-cpu",
    "autograd": "autograd",
    "igraph": "igraph",
    "rustworkx": "rustworkx",
    "networkx": "networkx",
}
_OTHER_DISTS = ("fastgraph", "scipy", "jaxlib", "tensorflow", "threadpoolctl", "matplotlib",
                "tqdm", "Cython")


# ---- the workloads ------------------------------------------------------------------------------
def discover() -> dict[str, str]:
    """Workload name -> module (``fastgraph.bench.<name>``), suite order first, then any other
    module of the package."""
    import fastgraph.bench as pkg

    present = {m.name for m in pkgutil.iter_modules(pkg.__path__)
               if not m.name.startswith("_") and m.name not in NOT_WORKLOADS}
    names = [n for n in SUITE if n in present] + sorted(present - set(SUITE))
    return {n: f"fastgraph.bench.{n}" for n in names}


def _summary_line(module: str) -> str:
    """The first line of a workload module's docstring, without importing it."""
    import ast

    spec = importlib.util.find_spec(module)
    try:
        with open(spec.origin, encoding="utf-8") as fh:
            doc = ast.get_docstring(ast.parse(fh.read())) or ""
    except (OSError, SyntaxError, AttributeError, TypeError):
        return ""
    return doc.strip().splitlines()[0].replace("``", "") if doc.strip() else ""


# ---- machine facts ------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def peer_status() -> tuple[dict[str, str], list[str]]:
    """(installed peer -> version, missing peers), without importing them."""
    installed, missing = {}, []
    for mod, dist in PEERS.items():
        if importlib.util.find_spec(mod) is None:
            missing.append(mod)
        else:
            installed[mod] = _version(dist) or _version(mod) or "?"
    return installed, missing


def machine_facts() -> dict[str, Any]:
    import fastgraph
    from fastgraph.cli import info

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    facts = info.collect()
    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "fastgraph": fastgraph.__version__,
        "fastgraph_threads": fastgraph.get_num_threads(),
        "openmp": facts.get("openmp"),
        "blas": facts.get("blas"),
        "versions": {d: v for d in (*PEERS.values(), *_OTHER_DISTS)
                     if (v := _version(d)) is not None},
    }


# ---- summary ------------------------------------------------------------------------------------
def headline(name: str, out: dict[str, Any]) -> list[dict[str, Any]]:
    """Ratio rows (fastgraph / peer) of one benchmark's output, each with its ``target`` (the
    ratio the module aims to stay at or under; None where it sets none):

    * the module's own ``headline`` list of rows when it gives one;
    * else every ratio of every result (``results``) against the non-fastgraph candidates; a
      result's ``targets`` (peer -> target, from the module's target constants) fills the rows'
      targets, and a fastgraph variant named there gets a row too (``fastgraph_1thread``: a
      thread-scaling target);
    * then the module's ``headline_extra`` rows: targets against something that is not a
      candidate of one result (the memory floor timed beside the candidates, first-run times).
    """
    if isinstance(out.get("headline"), list):
        rows = [dict(r) for r in out["headline"]]
    else:
        rows = _result_rows(name, out)
    rows += [dict(r) for r in out.get("headline_extra") or ()]
    for r in rows:
        r.setdefault("workload", name)
        r.setdefault("target", None)
    return rows


def _result_rows(name: str, out: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    probes = set(out.get("not_candidates", ()))     # reference rows timed beside the candidates
    for res in out.get("results", []):
        cands = res.get("candidates", {})
        ref = res.get("reference", "fastgraph")
        if ref not in cands:
            continue
        targets = res.get("targets") or {}
        for peer, ratio in (res.get("ratios") or {}).items():
            if peer in probes or (peer.startswith("fastgraph") and peer not in targets):
                continue
            case = str(res.get("name", name))
            if name.replace("_", " ").lower() not in case.replace("_", " ").lower():
                case = f"{name}: {case}"
            rows.append({"workload": name, "case": case, "fastgraph": ref,
                         "peer": peer, "fastgraph_s": cands[ref]["median_s"],
                         "peer_s": cands[peer]["median_s"],
                         "fastgraph_min_s": cands[ref]["min_s"],
                         "peer_min_s": cands[peer]["min_s"], "peer_max_s": cands[peer]["max_s"],
                         "ratio": ratio,
                         "ratio_min": cands[ref]["min_s"] / cands[peer]["min_s"],
                         "target": targets.get(peer)})
    return rows


def _fmt_ratio(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}x"


#: how every table of the suite (and the demo) names its ratio
RATIO_LEGEND = "time ratio fastgraph / peer (< 1: fastgraph faster)"


def format_summary(rows: list[dict[str, Any]], quick: bool = False) -> str:
    """The summary table: one row per ratio; the target column (full runs only) marks each
    target met (``<=``) or missed (``!>``)."""
    head = (f"{'case':<40} {'fastgraph':<19} {'peer':<16} {'fg median':>10} {'peer median':>12}"
            f" {'ratio':>8} {'min ratio':>10}" + ("" if quick else f" {'target':>7}"))
    lines = [head, "-" * len(head)]
    for r in rows:
        target = r.get("target")
        mark = ""
        if target is not None and not quick:
            mark = f"{'<=' if r['ratio'] <= target else '!>'}{target:.3g}"
        line = (f"{str(r.get('case', r['workload']))[:40]:<40} {r['fastgraph']:<19} "
                f"{r['peer']:<16} {format_seconds(r.get('fastgraph_s')):>10} "
                f"{format_seconds(r.get('peer_s')):>12} {r['ratio']:>7.3f}x "
                f"{_fmt_ratio(r.get('ratio_min')):>10}")
        lines.append(line if quick else f"{line} {mark:>7}")
    lines.append(f"ratio = {RATIO_LEGEND}, of the medians; min ratio = the same from each one's "
                 "fastest round" + ("" if quick else "; '!>' marks a missed target"))
    if quick:
        lines.append("--quick: small sizes and few rounds, so these ratios are indicative only "
                     "and are not judged against the targets (which are about the full sizes)")
    return "\n".join(lines)


def plot_ratios(rows: list[dict[str, Any]], path: str, title: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"--plot {path}: matplotlib is not installed (pip install matplotlib); "
              "no chart made.")
        return False
    rows = [r for r in rows if r.get("ratio") and r["ratio"] > 0]
    if not rows:
        print(f"--plot {path}: no ratios to plot.")
        return False
    labels = [f"{r.get('case', r['workload'])}\n{r['fastgraph']} vs {r['peer']}" for r in rows]
    ratios = [r["ratio"] for r in rows]
    colors = ["tab:green" if x <= 1 else "tab:red" for x in ratios]
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(rows) + 1.6))
    y = range(len(rows))
    ax.barh(list(y), ratios, color=colors)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", lw=1)
    for r_i, (x, r) in enumerate(zip(ratios, rows)):
        ax.annotate(f"{x:.3g}x", (x, r_i), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=7)
        if r.get("target"):
            ax.plot([r["target"]] * 2, [r_i - 0.4, r_i + 0.4], color="tab:blue", lw=1.5)
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("fastgraph time / peer time (log scale; < 1: fastgraph faster; "
                  "blue ticks: targets)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    print(f"ratio chart written to {path}")
    return True


# ---- the command --------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few rounds: a quick look whose ratios are "
                             "indicative only (no target verdicts)")
    parser.add_argument("--only", action="append", metavar="NAME", default=None,
                        help="run only these workloads (repeatable or comma-separated); "
                             "--list shows the names")
    parser.add_argument("--threads", type=thread_count, default=None,
                        help="threads for fastgraph, NumPy's BLAS and every peer (default: "
                             "fastgraph's default thread count, for all of them)")
    parser.add_argument("--json", metavar="FILE", default=None, type=output_file(),
                        help="write every figure plus the machine facts as JSON")
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        type=output_file(".png", ".pdf", ".svg"),
                        help="bar chart of the fastgraph/peer time ratios (needs matplotlib)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _call_run(module, quick: bool, threads: int | None) -> dict[str, Any]:
    params = inspect.signature(module.run).parameters
    kwargs: dict[str, Any] = {"quick": quick}
    if "verbose" in params:
        kwargs["verbose"] = True
    if "threads" in params and threads is not None:
        kwargs["threads"] = threads
    out = module.run(**kwargs)
    return out if isinstance(out, dict) else {"value": out}


def _progress(items, disable: bool):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(items, desc="bench", unit="workload", disable=disable, leave=False,
                dynamic_ncols=True)


def _select(workloads: dict[str, str], only: list[str] | None) -> list[str] | str:
    """The workloads to run, or the usage error to report."""
    if not only:
        return list(workloads)
    wanted = [w.strip() for item in only for w in item.split(",") if w.strip()]
    if not wanted:
        return f"--only names no workload; available: {', '.join(workloads)}"
    unknown = [w for w in wanted if w not in workloads]
    if unknown:
        return (f"unknown workload(s) {', '.join(unknown)}; available: "
                f"{', '.join(workloads)}")
    return [w for w in workloads if w in wanted]


def _all_results(outputs: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for out in outputs.values() for r in out.get("results") or ()
            if isinstance(r, dict)]


def main(args: argparse.Namespace) -> int:
    from fastgraph.bench.timing import machine_load, threads_for_everyone

    workloads = discover()
    if args.list:
        for name, mod in workloads.items():
            print(f"{name:<16} {_summary_line(mod)}")
        return 0
    selected = _select(workloads, args.only)
    if isinstance(selected, str):
        print(f"fastgraph bench: {selected}", file=sys.stderr)
        return 2
    if args.plot and matplotlib_missing():
        print(f"fastgraph bench: {matplotlib_missing()}", file=sys.stderr)
        return 2

    import fastgraph

    load = machine_load()                      # before any work of ours adds to it
    threads = args.threads or fastgraph.get_num_threads()
    with threads_for_everyone(threads) as blas_limited:
        return _run_suite(args, workloads, selected, load, threads, blas_limited)


def _run_suite(args: argparse.Namespace, workloads: dict[str, str], selected: list[str],
               load: dict[str, Any] | None, threads: int, blas_limited: bool) -> int:
    from fastgraph.bench.timing import load_warnings, machine_load, round_spread

    installed, missing = peer_status()
    facts = machine_facts()
    print(f"fastgraph bench{' --quick' if args.quick else ''}: {len(selected)} workload(s)")
    print(f"machine: {facts['cpu_model']}, {facts['cpus_usable']} usable CPU(s), "
          f"python {facts['python']}"
          + (f", load average {load['load_average'][0]:.1f}" if load else ""))
    print(f"threads: {threads} for fastgraph, NumPy's BLAS and every peer"
          + ("" if args.threads else " (fastgraph's default; --threads N to change)")
          + ("" if blas_limited else "; NumPy's BLAS keeps its own (no threadpoolctl)"))
    print("peers:   " + ", ".join(f"{k} {v}" for k, v in installed.items()))
    if missing:
        print(f"missing: {', '.join(missing)} (skipped; `pip install \"fastgraph[bench]\"`)")
    for line in load_warnings(load):
        print(line)
    print()

    outputs: dict[str, Any] = {}
    failures: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    # A bar only where someone watches: on a terminal (logs and pipes get the tables alone).
    bar = _progress(selected, disable=args.no_progress or not sys.stderr.isatty())
    write = print
    if bar is not None:
        from tqdm.auto import tqdm
        write = tqdm.write
    t_all = time.perf_counter()
    for name in (bar if bar is not None else selected):
        if bar is not None:
            bar.set_description(f"bench {name}")
        buf = io.StringIO()
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(workloads[name])
            with contextlib.redirect_stdout(buf):
                out = _call_run(module, args.quick, threads)
        except Exception as exc:  # one broken benchmark must not hide the others
            failures[name] = f"{type(exc).__name__}: {exc}"
            write(buf.getvalue().rstrip())
            write(f"!! {name} failed:\n{traceback.format_exc()}")
            continue
        out.setdefault("seconds", time.perf_counter() - t0)
        outputs[name] = out
        rows += headline(name, out)
        write(f"######## {name}  ({out['seconds']:.1f} s)")
        write(buf.getvalue().rstrip())
        write("")
    if bar is not None:
        bar.close()
    elapsed = time.perf_counter() - t_all

    spread = round_spread(_all_results(outputs))
    warnings = load_warnings(load, spread)
    print(f"======== summary: {RATIO_LEGEND}, medians of interleaved rounds ========")
    for line in warnings:
        print(line)
    print(format_summary(rows, quick=args.quick))
    for name, out in outputs.items():
        floors = out.get("memory_floor")
        if floors:
            parts = []
            for case, f in floors.items():
                fg_r = f.get("ratio", {}).get("fastgraph")
                parts.append(f"{case.replace('_', '+')} {1e3 * f['floor_s']:.2f} ms at "
                             f"{f['bandwidth_GBps']:.1f} GB/s"
                             + (f" (fastgraph {fg_r:.2f}x)" if fg_r is not None else ""))
            print(f"memory floor ({name}): " + "; ".join(parts))
    if failures:
        print("failed: " + "; ".join(f"{k}: {v}" for k, v in failures.items()))
    print(f"total {elapsed:.1f} s")

    if args.json:
        payload = {
            "quick": bool(args.quick),
            "threads": threads,
            "machine": facts,
            "load_average_start": load["load_average"] if load else None,
            "load_average_end": (machine_load() or {}).get("load_average"),
            "machine_busy": bool(load and load["busy"]),
            "round_spread": spread,
            "warnings": warnings,
            "peers_installed": installed,
            "peers_missing": missing,
            "summary": rows,
            "benchmarks": outputs,
            "failures": failures,
            "elapsed_s": elapsed,
        }
        with open(args.json, "w") as fh:
            json.dump(payload, fh, indent=2, default=_json_default)
        print(f"results written to {args.json}")
    if args.plot:
        title = (f"fastgraph / peer time ({'quick' if args.quick else 'full'} run; "
                 f"{facts['cpu_model']}, {facts['cpus_usable']} CPUs, {threads} thread(s))")
        plot_ratios(rows, args.plot, title)
    return 1 if failures else 0


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:
        pass
    if isinstance(o, Path):
        return str(o)
    return repr(o)
