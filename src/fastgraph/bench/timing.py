"""The one timing helper every benchmark uses.

Candidates (fastgraph and its peers) are timed **side by side in one run**, interleaved round by
round, so drifting machine load affects all of them alike; speed claims are ratios of medians.

>>> from fastgraph.bench.timing import compare
>>> res = compare("sum", {"fastgraph": lambda: sum(range(100)), "python": lambda: sum(range(100))},
...               rounds=3, number=10)
>>> round(res.ratio("fastgraph", "python"), 0) > 0
True
>>> print(res.table())                                     # doctest: +SKIP
>>> res.to_dict()["candidates"]["python"]["median_s"] > 0
True
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import json
import math
import os
import random
import statistics
import sys
import textwrap
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

try:  # minor page faults are a POSIX notion
    import resource
except ImportError:  # Windows
    resource = None

__all__ = ["Stats", "Result", "compare", "peers", "print_results", "save_json", "target_note",
           "threads_for_everyone", "machine_load", "round_spread", "load_warnings",
           "format_seconds"]

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


def format_seconds(t: float | None, micro: str = "us", missing: str = "") -> str:
    """A duration in seconds with three significant digits and the unit that suits it
    (``micro`` spells microseconds; ``missing`` stands for None or a non-finite value).

    >>> format_seconds(0.00123), format_seconds(4.5e-8), format_seconds(None, missing="n/a")
    ('1.23 ms', '45 ns', 'n/a')
    """
    if t is None or not math.isfinite(t):
        return missing
    for unit, scale in (("s", 1.0), ("ms", 1e-3), (micro, 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def _fmt_time(t: float) -> str:
    return format_seconds(t, missing="n/a")


def _fmt_meta(meta: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in meta.items())


#: ``compare(settle=...)`` for benchmarks whose candidates run thread pools (BLAS, OpenMP, XLA)
#: in blocks of tens of milliseconds: long enough for OpenBLAS's workers (~0.1 s of spinning after
#: a call) to go idle.  Not for short blocks: a sleeping (virtual) CPU comes back slowly, and a
#: block of a few short runs after the pause pays for the wake-up (``compile`` keeps none)
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


def target_note(ratio: float, target: float, quick: bool, at_least: bool = False) -> str:
    """How a benchmark speaks of a ratio against its target: a verdict at full size; at
    ``--quick`` sizes none (the targets are about the full-size workloads, and a quick run's few
    small rounds are indicative only).

    >>> target_note(0.3, 0.5, quick=False), target_note(0.7, 0.5, quick=False)
    ('meets the target of 0.5x', 'MISSES the target of 0.5x')
    >>> target_note(0.7, 0.5, quick=True)
    'indicative (--quick); the full-size target is 0.5x'
    """
    if quick:
        return f"indicative (--quick); the full-size target is {target}x"
    met = ratio >= target if at_least else ratio <= target
    return f"{'meets' if met else 'MISSES'} the target of {target}x"


_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "NUMEXPR_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS",
                     "XLA_FLAGS")


@contextlib.contextmanager
def threads_for_everyone(n: int):
    """The suite's thread policy, for the ``with`` block: one count for everyone.  fastgraph's
    kernels, NumPy's BLAS (through ``threadpoolctl``, when it is installed) and the peers (their
    environment variables, read when they are first imported; the modules also call
    ``torch.set_num_threads`` and friends) all get ``n`` threads.  Yields whether NumPy's BLAS
    could be limited; everything is as before afterwards.

    >>> import fastgraph
    >>> with threads_for_everyone(1):
    ...     fastgraph.get_num_threads()
    1
    """
    import fastgraph

    saved_env = {v: os.environ.get(v) for v in _THREAD_VARIABLES}
    saved_threads = fastgraph.get_num_threads()
    for var in _THREAD_VARIABLES[:-1]:
        os.environ[var] = str(n)
    if n == 1:  # XLA (JAX, TensorFlow jit) sizes its Eigen pool by the cores unless told
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_cpu_multi_thread_eigen" not in flags:
            os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()
    fastgraph.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        limiter = None
    else:
        limiter = threadpool_limits(limits=n)
    try:
        yield limiter is not None
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
        fastgraph.set_num_threads(saved_threads)
        for var, value in saved_env.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


#: a machine counts as busy when its 1-minute load average, taken before a run starts, is at
#: least this fraction of the CPUs the process may use (on 2 CPUs: one CPU's worth of other work)
BUSY_LOAD_FRACTION = 0.5
#: rounds count as unsteady when a candidate's slowest round is typically (the median over
#: candidates) at least this many times its fastest
UNSTEADY_SPREAD = 1.5


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def machine_load() -> dict[str, Any] | None:
    """The 1-, 5- and 15-minute load averages, the CPUs this process may use, and whether the
    1-minute load makes the machine busy (``BUSY_LOAD_FRACTION``); None where the system keeps
    no load average (Windows).  Taken before the timing starts, the load is other programs' work.

    >>> load = machine_load()
    >>> load is None or set(load) == {"load_average", "cpus", "busy"}
    True
    """
    try:
        averages = [float(x) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None
    cpus = usable_cpus()
    return {"load_average": averages, "cpus": cpus,
            "busy": averages[0] >= BUSY_LOAD_FRACTION * cpus}


def round_spread(results: Iterable[Mapping[str, Any]]) -> float | None:
    """The median over every candidate of its slowest round's time over its fastest, for
    results in :meth:`Result.to_dict` form (candidates timed in fewer than 3 rounds left out);
    None when there are none.  A steady machine keeps it near 1.

    >>> r = {"candidates": {"a": {"min_s": 1.0, "max_s": 1.2, "rounds": 5},
    ...                     "b": {"min_s": 1.0, "max_s": 3.0, "rounds": 5}}}
    >>> round_spread([r])
    2.1
    """
    spreads = [c["max_s"] / c["min_s"] for r in results
               for c in (r.get("candidates") or {}).values()
               if c.get("rounds", 0) >= 3 and c.get("min_s", 0) > 0]
    return statistics.median(spreads) if spreads else None


def load_warnings(load: Mapping[str, Any] | None, spread: float | None = None,
                  unit: str = "round") -> list[str]:
    """What to say above the results about how much they can be trusted: a busy machine
    (:func:`machine_load`) and unsteady timings (``spread``: how many times longer the slow
    rounds, or other ``unit``, took than the fast ones, as :func:`round_spread` gives it); empty
    when neither.  Each warning is one paragraph wrapped to 100 columns.

    >>> load_warnings({"load_average": [3.2, 2.0, 1.0], "cpus": 2, "busy": True}, 1.1)[0][:28]
    'WARNING: the machine is busy'
    >>> load_warnings({"load_average": [0.1, 0.1, 0.1], "cpus": 2, "busy": False}, 1.1)
    []
    """
    out = []
    if load and load["busy"]:
        out.append(f"WARNING: the machine is busy: load average {load['load_average'][0]:.1f} over the "
                   f"last minute on {load['cpus']} CPU(s) before the run started. Other work "
                   "shares the cores, so times are inflated and ratios can move by tens of "
                   "percent from run to run; rerun on a quiet machine for figures to quote.")
    if spread is not None and spread >= UNSTEADY_SPREAD:
        out.append(f"WARNING: the timings were unsteady: the slow {unit}s took {spread:.1f}x as "
                   f"long as the fast ones (a quiet machine stays under {UNSTEADY_SPREAD}x); "
                   "treat the ratios as rough.")
    return [textwrap.fill(w, 100) for w in out]


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
    """The command line every benchmark module shares: ``[--quick] [--threads N] [--json PATH]``,
    under the suite's thread policy (:func:`threads_for_everyone`, by default with fastgraph's
    default count), as ``python -m fastgraph bench`` runs it.

    >>> # in a benchmark module:  if __name__ == "__main__": sys.exit(script_main(run, __doc__))
    """
    import argparse
    import inspect

    import fastgraph

    parser = argparse.ArgumentParser(
        description=(doc or "").strip().splitlines()[0].replace("``", "") if doc else None)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for fastgraph, NumPy's BLAS and the peers "
                             "(default: fastgraph's default)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    threads = args.threads or fastgraph.get_num_threads()
    kwargs = {"threads": threads} if "threads" in inspect.signature(run).parameters else {}
    with threads_for_everyone(threads):
        out = run(quick=args.quick, **kwargs)
    if args.json:
        save_json(out, args.json)
    return 0


# ---- training steps shared by the model workloads (mlp, cnn, distributed) --------------------
def repeated(step: Callable[[], Any], n: int) -> Callable[[], None]:
    """``step`` called ``n`` times: one timed sample of a training-step candidate."""
    def many():
        for _ in range(n):
            step()
    return many


def eager_sgd_step(params, loss_of: Callable[[], Any], lr: float,
                   wrap_optimizer: Callable | None = None) -> Callable[[], float]:
    """One eager SGD step over ``params`` (Tensors that require grad): ``zero_grad``,
    ``loss_of()`` (the forward, returning the loss), ``backward``, ``fg.optim.SGD.step``;
    returns the loss.  ``wrap_optimizer`` wraps the SGD optimizer (the distributed workload's
    ``DistributedOptimizer``).

    >>> import fastgraph as fg
    >>> w = fg.tensor([1.0], requires_grad=True)
    >>> step = eager_sgd_step([w], lambda: (w * w).sum(), lr=0.25)
    >>> step(), w.item()
    (1.0, 0.5)
    """
    import fastgraph as fg

    opt = fg.optim.SGD(list(params), lr=lr)
    if wrap_optimizer is not None:
        opt = wrap_optimizer(opt)

    def step() -> float:
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        opt.step()
        return float(loss.item())

    return step


def module_eager_step(model, X, y, loss_fn: Callable, lr: float) -> Callable[[], float]:
    """One eager SGD step of a ``fastgraph.torch.nn`` module (:func:`eager_sgd_step` of
    ``loss_fn(model(X), y)`` over its parameters); returns the loss."""
    return eager_sgd_step(model.parameters(), lambda: loss_fn(model(X), y), lr)


def module_function_step(model, X, y, loss_fn: Callable, lr: float) -> Callable[[], float]:
    """The same SGD step compiled by ``@fg.function``: the module's parameters are the trace's
    variables, updated in place by ``fg.assign``; returns the loss."""
    import fastgraph as fg

    @fg.function
    def train_step(x, labels):
        loss = loss_fn(model(x), labels)
        params = list(model.parameters())     # the trace's variables
        for p, g in zip(params, fg.gradients(loss, params)):
            fg.assign(p, p - lr * g)
        return loss

    return lambda: float(train_step(X, y))


def time_training_steps(bench: str, title: str, steps: dict[str, Callable[[], Any]],
                        skipped: dict[str, str], *, reference: str, required: Iterable[str],
                        unchecked: Iterable[str] = (), steps_per_round: int, rounds: int,
                        threads: int | None = None, record_first_loss: bool = False
                        ) -> tuple[Result, dict[str, Any]]:
    """The model workloads' harness: each step run once untimed, then timed side by side.

    The first run of each step returns its loss: a step that raises is moved to ``skipped``
    (unless it is ``required``), and every loss but the ``unchecked`` steps' must agree with
    ``reference``'s (same weights, same data: else the candidates would time different work).
    Then :func:`compare` over blocks of ``steps_per_round`` steps, ``rounds`` rounds after one
    warm-up, each block after a ``SETTLE_S`` pause; the times are reported per training step.
    PyTorch, when a candidate, gets ``threads`` threads (by default fastgraph's count); the
    result's metadata has the steps per round, the threads, the pause and
    (``record_first_loss``) the reference's first loss.
    Returns the result and the first losses.

    >>> import fastgraph as fg
    >>> w = fg.tensor([1.0], requires_grad=True)
    >>> steps = {"fastgraph": eager_sgd_step([w], lambda: (w * w).sum(), lr=0.0),
    ...          "python": lambda: 1.0}
    >>> res, first = time_training_steps("demo", "w * w", steps, {}, reference="fastgraph",
    ...                                  required=["fastgraph"], steps_per_round=2, rounds=2,
    ...                                  threads=1)
    >>> first, res.meta["steps_per_round"]
    ({'fastgraph': 1.0, 'python': 1.0}, 2)
    """
    import numpy as np

    import fastgraph

    threads = threads or fastgraph.get_num_threads()
    if "torch" in steps:
        import torch
        torch.set_num_threads(threads)
    required, unchecked = set(required), set(unchecked)
    first: dict[str, Any] = {}
    for k, s in list(steps.items()):
        try:
            first[k] = s()
        except Exception as exc:
            if k in required:
                raise
            why = (str(exc).splitlines() or [""])[0][:200]
            skipped[k] = f"failed: {type(exc).__name__}: {why}"
            del steps[k]
    ref = first[reference]
    for k, v in first.items():
        if k not in unchecked and not np.isclose(v, ref, rtol=1e-4):
            raise AssertionError(f"bench_{bench}: {k} first loss {v} != {reference}'s {ref}")
    n = steps_per_round
    meta = {"steps_per_round": n, "threads": threads, "settle_s": SETTLE_S}
    if record_first_loss:
        meta["first_loss"] = ref
    res = compare(title, {k: repeated(s, n) for k, s in steps.items()}, rounds=rounds,
                  warmup=1, number=1, settle=SETTLE_S, meta=meta)
    for st in res.stats.values():
        st.times = [t / n for t in st.times]
    return res, first


def ms_per_step(res: Result) -> dict[str, float]:
    """Each candidate's median time in milliseconds."""
    return {k: 1e3 * st.median for k, st in res.stats.items()}


def print_training_steps(res: Result, skipped: Mapping[str, str], missing: Iterable[str],
                         targets: Mapping[tuple[str, str], float], quick: bool,
                         notes: Iterable[str] = ()) -> None:
    """The model workloads' report: the table, the peers ``missing``, the ``notes`` lines, why
    each candidate in ``skipped`` was, and each target ratio (``(a, b) -> target`` for ``a``'s
    time over ``b``'s) with its verdict (:func:`target_note`) and its paired ratio."""
    print_results([res], missing)
    for line in notes:
        print(line)
    for k, why in skipped.items():
        print(f"skipped {k}: {why}")
    ms = ms_per_step(res)
    for (a, b), target in targets.items():
        if a in ms and b in ms:
            r = ms[a] / ms[b]
            print(f"{a}/{b} = {r:.3f} ({target_note(r, target, quick)}; "
                  f"median of per-round ratios {res.paired_ratio(a, b):.3f})")


def headline_rows(case: str, res: Result, pairs: Iterable[tuple[str, str]],
                  targets: Mapping[tuple[str, str], float]) -> list[dict[str, Any]]:
    """One row of the suite's headline table per pair ``(a, b)`` of candidates both timed: the
    medians (seconds), their ratio, the minimums and theirs, the paired ratio, the target."""
    rows = []
    for a, b in pairs:
        if a in res.stats and b in res.stats:
            ma, mb = res.stats[a].median, res.stats[b].median
            fa, fb = res.stats[a].min, res.stats[b].min
            rows.append({"case": case, "fastgraph": a, "peer": b, "fastgraph_s": ma,
                         "peer_s": mb, "ratio": ma / mb, "fastgraph_min_s": fa,
                         "peer_min_s": fb, "ratio_min": fa / fb,
                         "ratio_paired": res.paired_ratio(a, b), "target": targets.get((a, b))})
    return rows


def training_steps_summary(bench: str, case: str, res: Result, skipped: Mapping[str, str],
                           missing: list[str], targets: Mapping[tuple[str, str], float],
                           quick: bool, pairs: Iterable[tuple[str, str]],
                           **extra: Any) -> dict[str, Any]:
    """What a model workload's ``run`` returns (the suite's JSON): its headline rows (one per
    pair of candidates, :func:`headline_rows`), the result, who was skipped and why,
    milliseconds per step, the target ratios and targets (``"a/b"`` keys), and the workload's
    ``extra`` entries."""
    ms = ms_per_step(res)
    return {
        "benchmark": bench,
        "headline": headline_rows(case, res, pairs, targets),
        "quick": quick,
        "results": [res.to_dict()],
        "missing": missing,
        "skipped": dict(skipped),
        "ms_per_step": ms,
        "target_ratios": {f"{a}/{b}": ms[a] / ms[b] for (a, b) in targets
                          if a in ms and b in ms},
        "targets": {f"{a}/{b}": t for (a, b), t in targets.items()},
        **extra,
    }
