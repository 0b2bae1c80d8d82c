"""``python -m fastgraph bench``: the benchmark suite against every installed peer library.

Runs the modules ``benchmarks/bench_*.py`` (each exposes ``run(quick=False, verbose=True) ->
dict`` and uses the shared timing helper ``benchmarks._timing``: peers interleaved round by round,
medians with min/max), then prints one summary: the ratio of fastgraph's median time to each
peer's (< 1 means fastgraph is faster) with the module's target for it where it sets one (see
``headline``), and the memory floor where it applies.

The benchmarks are not part of the installed package (they need the peers, and their package
name ``benchmarks`` is too generic to install): they are found in the source checkout -- next to
an editable or in-place ``fastgraph``, in the current directory or one above it, or where
``FASTGRAPH_BENCHMARKS`` points.
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
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from fastgraph.cli import output_file, thread_count

#: Suite order: workload name -> module in ``benchmarks/``.  Other ``bench_*.py`` files found
#: there run after these, under their file name without the ``bench_`` prefix.
SUITE = {
    "tape_scalar": "bench_tape_scalar",
    "tape_vector": "bench_tape_vector",
    "mlp": "bench_mlp",
    "fused": "bench_fused",
    "fused_vm": "bench_fused_vm",
    "call_overhead": "bench_call_overhead",
    "compile": "bench_compile",
    "toposort": "bench_toposort",
    "numeric": "bench_numeric",
}

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


# ---- finding the benchmarks ---------------------------------------------------------------------
def find_benchmarks_dir() -> tuple[Path | None, list[Path]]:
    """The ``benchmarks`` directory (one that holds ``_timing.py``), and every place looked at."""
    import fastgraph

    looked: list[Path] = []
    env = os.environ.get("FASTGRAPH_BENCHMARKS")
    candidates: list[Path] = []
    if env:
        candidates.append(Path(env))
    pkg = Path(fastgraph.__file__).resolve().parent          # .../src/fastgraph
    candidates += [pkg.parent.parent / "benchmarks", pkg.parent / "benchmarks"]
    cwd = Path.cwd().resolve()
    candidates += [cwd / "benchmarks", cwd.parent / "benchmarks"]
    for c in candidates:
        c = c.resolve()
        if c in looked:
            continue
        looked.append(c)
        if (c / "_timing.py").is_file():
            return c, looked
    return None, looked


def discover(bench_dir: Path) -> dict[str, str]:
    """Workload name -> module name, suite order first, then any other ``bench_*.py``."""
    present = {p.stem for p in bench_dir.glob("bench_*.py")}
    found = {name: mod for name, mod in SUITE.items() if mod in present}
    for mod in sorted(present - set(SUITE.values())):
        found[mod[len("bench_"):]] = mod
    return found


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


def _fmt_s(t: float | None) -> str:
    if t is None:
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def _fmt_ratio(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}x"


def format_summary(rows: list[dict[str, Any]]) -> str:
    head = (f"{'case':<40} {'fastgraph':<19} {'peer':<16} {'fg median':>10} {'peer median':>12}"
            f" {'ratio':>8} {'min ratio':>10} {'target':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        target = r.get("target")
        mark = ""
        if target is not None:
            mark = f"{'<=' if r['ratio'] <= target else '!>'}{target:.3g}"
        lines.append(f"{str(r.get('case', r['workload']))[:40]:<40} {r['fastgraph']:<19} "
                     f"{r['peer']:<16} {_fmt_s(r.get('fastgraph_s')):>10} "
                     f"{_fmt_s(r.get('peer_s')):>12} {r['ratio']:>7.3f}x "
                     f"{_fmt_ratio(r.get('ratio_min')):>10} {mark:>7}")
    lines.append("ratio = fastgraph median / peer median (< 1: fastgraph faster); min ratio = the "
                 "same from each one's fastest round; '!>' marks a missed target")
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
                        help="small sizes and few rounds (the whole suite in about a minute)")
    parser.add_argument("--only", action="append", metavar="NAME", default=None,
                        help="run only these workloads (repeatable or comma-separated); "
                             "--list shows the names")
    parser.add_argument("--threads", type=thread_count, default=None,
                        help="threads for fastgraph, BLAS and the peers (default: fastgraph's)")
    parser.add_argument("--json", metavar="FILE", default=None, type=output_file(),
                        help="write every figure plus the machine facts as JSON")
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        type=output_file(".png", ".pdf", ".svg"),
                        help="bar chart of the fastgraph/peer ratios (needs matplotlib)")
    parser.add_argument("--list", action="store_true", help="list the workloads found and exit")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _set_threads(n: int) -> Any:
    """Apply one thread count everywhere we can; returns the threadpoolctl limiter (keep alive)."""
    import fastgraph

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMEXPR_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        os.environ[var] = str(n)
    if n == 1:  # XLA (JAX, TensorFlow jit) sizes its Eigen pool by the cores unless told
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_cpu_multi_thread_eigen" not in flags:
            os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()
    fastgraph.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(limits=n)


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


def main(args: argparse.Namespace) -> int:
    bench_dir, looked = find_benchmarks_dir()
    if bench_dir is None:
        print("fastgraph bench: cannot find the benchmark suite (a `benchmarks/` folder with "
              "`_timing.py`). It ships with the source, not the wheel: run this command from a "
              "checkout of fastgraph, or set FASTGRAPH_BENCHMARKS=/path/to/fastgraph/benchmarks."
              "\nLooked in:\n  " + "\n  ".join(map(str, looked)), file=sys.stderr)
        return 2
    workloads = discover(bench_dir)
    if args.list:
        for name, mod in workloads.items():
            print(f"{name:<16} {bench_dir / (mod + '.py')}")
        absent = [n for n in SUITE if n not in workloads]
        if absent:
            print(f"(not present in this checkout: {', '.join(absent)})")
        return 0
    selected = list(workloads)
    if args.only:
        wanted = [w.strip() for item in args.only for w in item.split(",") if w.strip()]
        if not wanted:
            print(f"fastgraph bench: --only names no workload; available: "
                  f"{', '.join(workloads)}", file=sys.stderr)
            return 2
        unknown = [w for w in wanted if w not in workloads]
        if unknown:
            print(f"fastgraph bench: unknown workload(s) {', '.join(unknown)}; available: "
                  f"{', '.join(workloads)}", file=sys.stderr)
            return 2
        selected = [w for w in workloads if w in wanted]

    limiter = _set_threads(args.threads) if args.threads is not None else None  # noqa: F841
    root = str(bench_dir.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    # The benchmarks import `benchmarks._timing`; make sure `benchmarks` is *this* folder.
    spec = importlib.util.find_spec("benchmarks")
    if spec is None or Path(spec.origin or "").resolve().parent != bench_dir:
        print(f"fastgraph bench: `import benchmarks` does not resolve to {bench_dir} "
              f"(found {spec.origin if spec else None})", file=sys.stderr)
        return 2

    installed, missing = peer_status()
    facts = machine_facts()
    print(f"fastgraph bench{' --quick' if args.quick else ''}: {len(selected)} workload(s) "
          f"from {bench_dir}")
    print(f"machine: {facts['cpu_model']}, {facts['cpus_usable']} usable CPU(s), "
          f"fastgraph threads {facts['fastgraph_threads']}, python {facts['python']}")
    print("peers:   " + ", ".join(f"{k} {v}" for k, v in installed.items()))
    if missing:
        print(f"missing: {', '.join(missing)} (skipped; `pip install \"fastgraph[bench]\"`)")
    absent = [n for n in SUITE if n not in workloads]
    if absent:
        print(f"not present in this checkout: {', '.join(absent)}")
    print()

    outputs: dict[str, Any] = {}
    failures: dict[str, str] = {}
    not_ready: list[str] = []
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
            module = importlib.import_module(f"benchmarks.{workloads[name]}")
            if not callable(getattr(module, "run", None)):
                not_ready.append(name)
                write(f"######## {name}: skipped (benchmarks/{workloads[name]}.py has no run() "
                      f"yet)\n")
                continue
            with contextlib.redirect_stdout(buf):
                out = _call_run(module, args.quick, args.threads)
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

    print("======== summary: fastgraph / peer (medians of interleaved rounds) ========")
    print(format_summary(rows))
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
    if not_ready:
        print(f"not ready (no run() yet): {', '.join(not_ready)}")
    if failures:
        print("failed: " + "; ".join(f"{k}: {v}" for k, v in failures.items()))
    print(f"total {elapsed:.1f} s")

    if args.json:
        payload = {
            "quick": bool(args.quick),
            "threads": args.threads or facts["fastgraph_threads"],
            "machine": facts,
            "peers_installed": installed,
            "peers_missing": missing,
            "workloads_absent": absent,
            "summary": rows,
            "benchmarks": outputs,
            "failures": failures,
            "not_ready": not_ready,
            "elapsed_s": elapsed,
        }
        with open(args.json, "w") as fh:
            json.dump(payload, fh, indent=2, default=_json_default)
        print(f"results written to {args.json}")
    if args.plot:
        title = (f"fastgraph / peer time ({'quick' if args.quick else 'full'} run; "
                 f"{facts['cpu_model']}, {facts['cpus_usable']} CPUs, "
                 f"{args.threads or facts['fastgraph_threads']} thread(s))")
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
