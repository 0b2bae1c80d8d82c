"""The one timing helper every benchmark uses.

Candidates (fastgraph and its peers) are timed **side by side in one run**, interleaved round by
round, so drifting machine load affects all of them alike; speed claims are ratios of medians.

>>> from benchmarks._timing import compare
>>> res = compare("sum", {"fastgraph": lambda: sum(range(100)), "python": lambda: sum(range(100))},
...               rounds=3, number=10)
>>> round(res.ratio("fastgraph", "python"), 0) > 0
True
>>> print(res.table())                                     # doctest: +SKIP
>>> res.to_dict()["candidates"]["python"]["median_s"] > 0
True
"""
from __future__ import annotations

import gc
import importlib
import json
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

try:  # minor page faults are a POSIX notion
    import resource
except ImportError:  # Windows
    resource = None

__all__ = ["Stats", "Result", "compare", "peers", "print_results", "save_json"]

#: Optional peer libraries by the name benchmarks use for them -> module to import.
PEER_MODULES = {
    "numpy": "numpy",
    "numexpr": "numexpr",
    "torch": "torch",
    "jax": "jax",
    "tensorflow": "tensorflow",
    "autograd": "autograd",
    "igraph": "igraph",
    "rustworkx": "rustworkx",
    "networkx": "networkx",
    "graphlib": "graphlib",
}


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource else 0


@dataclass
class Stats:
    """Per-call timings (seconds) of one candidate, one entry per round."""

    name: str
    times: list[float] = field(default_factory=list)
    faults: list[float] = field(default_factory=list)  # minor page faults per call, per round

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def max(self) -> float:
        return max(self.times)

    @property
    def median_faults(self) -> float | None:
        return statistics.median(self.faults) if self.faults else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "median_s": self.median,
            "min_s": self.min,
            "max_s": self.max,
            "rounds": len(self.times),
            "times_s": list(self.times),
            "minor_faults_per_call": self.median_faults,
        }


@dataclass
class Result:
    """Outcome of :func:`compare`: stats per candidate plus free-form metadata."""

    name: str
    stats: dict[str, Stats]
    number: int
    reference: str = "fastgraph"
    meta: dict[str, Any] = field(default_factory=dict)

    def ratio(self, a: str = "fastgraph", b: str = "numpy") -> float:
        """Median time of ``a`` divided by that of ``b`` (< 1 means ``a`` is faster)."""
        return self.stats[a].median / self.stats[b].median

    def paired_ratio(self, a: str = "fastgraph", b: str = "numpy") -> float:
        """Median over rounds of ``a``'s time divided by ``b``'s in the same round: the two
        were timed back to back, so load that drifts between rounds cancels (on a shared machine
        this varies less from run to run than :meth:`ratio`)."""
        return statistics.median(x / y for x, y in zip(self.stats[a].times, self.stats[b].times))

    def ratios(self, reference: str | None = None) -> dict[str, float]:
        """Ratio of ``reference`` (default: fastgraph) to every other candidate."""
        ref = reference or self.reference
        if ref not in self.stats:
            return {}
        return {peer: self.ratio(ref, peer) for peer in self.stats if peer != ref}

    def table(self) -> str:
        """A fixed-width table: one row per candidate, fastest first."""
        ref = self.reference if self.reference in self.stats else None
        show_faults = any(s.faults for s in self.stats.values())
        head = f"{'candidate':<16}{'median':>12}{'min':>12}{'max':>12}"
        if ref:
            head += f"{ref + '/x':>16}"
        if show_faults:
            head += f"{'faults/call':>13}"
        lines = [f"== {self.name}" + (f"  ({_fmt_meta(self.meta)})" if self.meta else ""), head]
        for s in sorted(self.stats.values(), key=lambda s: s.median):
            row = f"{s.name:<16}{_fmt_time(s.median):>12}{_fmt_time(s.min):>12}{_fmt_time(s.max):>12}"
            if ref:
                row += f"{self.ratio(ref, s.name):>15.3f}x"
            if show_faults:
                row += f"{s.median_faults:>13.0f}" if s.faults else f"{'':>13}"
            lines.append(row)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary (times in seconds)."""
        return {
            "name": self.name,
            "number": self.number,
            "reference": self.reference,
            "meta": dict(self.meta),
            "candidates": {k: s.to_dict() for k, s in self.stats.items()},
            "ratios": self.ratios(),
        }


def _fmt_time(t: float) -> str:
    if not math.isfinite(t):
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def _fmt_meta(meta: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in meta.items())


#: ``compare(settle=...)`` for benchmarks whose candidates run thread pools (BLAS, OpenMP, XLA)
#: in blocks of tens of milliseconds: long enough for OpenBLAS's workers (~0.1 s of spinning after
#: a call) to go idle.  Not for short blocks: on this VM a sleeping vCPU comes back slowly, and a
#: 0.3 ms compiled graph run 10 times after the pause measured 1.1 ms (bench_compile keeps none)
SETTLE_S = 0.15


def compare(
    name: str,
    candidates: Mapping[str, Callable[[], Any]],
    *,
    rounds: int = 7,
    warmup: int = 1,
    number: int = 1,
    faults: bool = False,
    reference: str = "fastgraph",
    meta: Mapping[str, Any] | None = None,
    disable_gc: bool = True,
    settle: float = 0.0,
) -> Result:
    """Time zero-argument callables side by side.

    Each candidate is first called ``warmup`` times (imports, caches, JIT compilation), then, for
    each of ``rounds`` rounds, every candidate is timed over ``number`` back-to-back calls, in an
    order shuffled per round (seeded by the round, so runs repeat): none always runs on a cold or
    warm machine state, and none always follows the same one -- a library's threads keep
    spinning for a while after its calls (OpenBLAS's ~0.1 s, PyTorch's OpenMP pool) and slow
    whichever candidate comes next; with a fixed order that was always the same candidate.
    With ``faults=True`` the minor page faults per call are recorded as well (POSIX only): they
    reveal fresh allocations that a timing alone hides.  ``settle`` seconds of sleep before each
    timed block let the previous candidate's spinning threads go idle, so no candidate shares
    the cores with whichever ran before it; one untimed call then wakes the (virtual) CPU and
    the candidate's own threads -- without it, a short block paid the wake-up after the sleep
    (a 0.3 ms compiled graph measured at 1.2 ms).

    >>> r = compare("noop", {"fastgraph": lambda: None, "peer": lambda: None}, rounds=2)
    >>> sorted(r.stats)
    ['fastgraph', 'peer']
    """
    if not candidates:
        raise ValueError("compare() needs at least one candidate")
    if rounds < 1 or number < 1 or warmup < 0 or settle < 0:
        raise ValueError("rounds and number must be >= 1, warmup and settle >= 0")
    names = list(candidates)
    stats = {n: Stats(n) for n in names}
    for n in names:
        for _ in range(warmup):
            candidates[n]()
    gc_was_enabled = gc.isenabled()
    if disable_gc:
        gc.collect()  # a full collection once: with TF, torch and JAX loaded it costs ~0.4 s
    try:
        for r in range(rounds):
            for n in random.Random(r).sample(names, len(names)):
                fn = candidates[n]
                if settle > 0:
                    time.sleep(settle)
                    fn()        # untimed: wakes the machine and the candidate's own threads
                if disable_gc:
                    gc.collect(1)  # the young generations: what the rounds themselves left
                    gc.disable()
                f0 = _minor_faults()
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                t1 = time.perf_counter()
                f1 = _minor_faults()
                if disable_gc and gc_was_enabled:
                    gc.enable()
                stats[n].times.append((t1 - t0) / number)
                if faults and resource is not None:
                    stats[n].faults.append((f1 - f0) / number)
    finally:
        if gc_was_enabled:
            gc.enable()
    return Result(name, stats, number, reference, dict(meta or {}))


def peers(*names: str) -> tuple[dict[str, Any], list[str]]:
    """Import the optional peer libraries named (default: all known), returning
    ``(available: name -> module, missing: [name, ...])``.

    >>> available, missing = peers("numpy", "surely_not_installed")
    >>> "numpy" in available, missing
    (True, ['surely_not_installed'])
    """
    available: dict[str, Any] = {}
    missing: list[str] = []
    for n in names or tuple(PEER_MODULES):
        try:
            available[n] = importlib.import_module(PEER_MODULES.get(n, n))
        except Exception:  # ImportError, or a peer whose own import is broken
            missing.append(n)
    return available, missing


def print_results(results: Iterable[Result], missing: Iterable[str] = (), file=None) -> None:
    """Print each result's table, then the peers that were skipped."""
    file = file or sys.stdout
    for res in results:
        print(res.table(), file=file)
        print(file=file)
    missing = list(missing)
    if missing:
        print(f"skipped (not installed): {', '.join(missing)}", file=file)


def save_json(results: Iterable[Result] | Mapping[str, Any], path: str) -> None:
    """Write results (Result objects or already-converted dicts) as JSON."""
    if isinstance(results, Mapping):
        payload: Any = results
    else:
        payload = [r.to_dict() for r in results]
    with open(path, "w") as f:
        json.dump(payload, f, indent=2)


def script_main(run: Callable[..., dict], doc: str | None, quick_help: str = "smaller sizes",
                argv: list[str] | None = None) -> int:
    """The command line every ``bench_*.py`` shares: ``[--quick] [--json PATH]``.

    >>> # in a benchmark module:  if __name__ == "__main__": sys.exit(script_main(run, __doc__))
    """
    import argparse
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    out = run(quick=args.quick)
    if args.json:
        save_json(out, args.json)
    return 0
