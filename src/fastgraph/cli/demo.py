"""``python -m fastgraph demo``: a short tour of eager and static modes, no download needed.

1. trains one small classifier (an MLP on a seeded synthetic two-moons data set) three ways --
   eager (``fg.tensor`` + ``backward`` + ``fg.optim.SGD``), static (``fg.placeholder`` /
   ``fg.Variable`` / ``fg.train.GradientDescentOptimizer`` / ``fg.Session``) and ``@fg.function``
   -- from the same initial weights on the same full batch with the same SGD, so the three loss
   curves agree up to rounding, and prints the results side by side first (final loss,
   accuracy, ms per step, time ratio to eager);
2. summarises in a few lines what the static training plan compiled (``sess.explain`` in full
   with ``--explain``);
3. runs the two seed examples (``import fastgraph as torch`` / ``as tf``).

Threads: one for fastgraph's kernels and NumPy's BLAS unless ``--threads`` says otherwise.  The
problem is small (products of 512 x 32), where a second thread buys nothing and BLAS threads
spinning beside fastgraph's and other programs' make step times erratic on a busy machine.
A machine busy before the run, or step times that spread widely, are reported above the table.

The training functions (:func:`train_eager`, :func:`train_static`, :func:`train_function`) are
importable so tests can check that the three modes reach the same loss.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

import fastgraph as fg
from fastgraph.cli import matplotlib_missing, output_file, thread_count
from fastgraph.demo_data import init_mlp, two_moons

__all__ = ["DemoProblem", "RunResult", "make_problem", "available_modes", "train_eager",
           "train_static", "train_function", "MODES", "main"]


# ---- the problem -------------------------------------------------------------------------------
@dataclass
class DemoProblem:
    """Full-batch data, initial weights and SGD settings shared by every mode."""

    X: np.ndarray
    y: np.ndarray
    params0: list[np.ndarray]
    lr: float = 0.5

    @property
    def n_layers(self) -> int:
        return len(self.params0) // 2


def make_problem(n: int = 512, hidden: Sequence[int] = (32, 32), lr: float = 0.5,
                 seed: int = 0) -> DemoProblem:
    """Two moons (``n`` points, 2 features, 2 classes) and a 2-hidden-layer ReLU MLP, seeded."""
    X, y = two_moons(n, seed=seed)
    params0 = init_mlp((2, *hidden, 2), seed=seed + 1)
    return DemoProblem(X, y, params0, lr)


def numpy_loss_accuracy(params: Sequence[np.ndarray], X: np.ndarray,
                        y: np.ndarray) -> tuple[float, float]:
    """Cross-entropy and accuracy of the MLP ``params`` on ``(X, y)``, in plain NumPy (the judge
    every mode is scored by)."""
    h = X
    for i in range(0, len(params) - 2, 2):
        h = np.maximum(h @ params[i] + params[i + 1], 0.0)
    logits = h @ params[-2] + params[-1]
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -logp[np.arange(len(y)), y].mean()
    acc = (logits.argmax(axis=1) == y).mean()
    return float(loss), float(acc)


def mlp(params, x):
    """The forward pass, written once with ``fg`` operations: it serves eager ``Tensor``s, static
    ``Node``s and ``@fg.function`` tracing alike."""
    h = x
    for i in range(0, len(params) - 2, 2):
        h = fg.relu(fg.matmul(h, params[i]) + params[i + 1])
    return fg.matmul(h, params[-2]) + params[-1]


@dataclass
class RunResult:
    mode: str
    losses: list[float]                 # loss before each SGD step
    params: list[np.ndarray]            # final weights
    seconds: list[float]                # wall time of each step
    final_loss: float = float("nan")    # NumPy-evaluated on the final weights
    accuracy: float = float("nan")
    extra: dict = field(default_factory=dict)

    @property
    def first_step_ms(self) -> float:
        return 1e3 * self.seconds[0] if self.seconds else float("nan")

    @property
    def ms_per_step(self) -> float:
        """Median step time after the first (which includes tracing/compiling for static modes)."""
        s = self.seconds[1:] or self.seconds
        return 1e3 * float(np.median(s)) if s else float("nan")


def _bar(iterable, desc: str, progress: bool):
    if not progress:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is a dependency, but the demo must not die without it
        return iterable
    return tqdm(iterable, desc=f"{desc:>9}", unit="step", leave=False, dynamic_ncols=True,
                mininterval=0.2)


def _finish(res: RunResult, prob: DemoProblem) -> RunResult:
    res.final_loss, res.accuracy = numpy_loss_accuracy(res.params, prob.X, prob.y)
    return res


# ---- mode 1: eager -----------------------------------------------------------------------------
def train_eager(prob: DemoProblem, steps: int, progress: bool = False) -> RunResult:
    """Define-by-run: every step records a fresh tape, ``backward()`` walks it, SGD updates."""
    params = [fg.tensor(p.copy(), requires_grad=True) for p in prob.params0]
    opt = fg.optim.SGD(params, lr=prob.lr)
    X, y = prob.X, prob.y
    losses, secs = [], []
    clock = time.perf_counter
    for _ in _bar(range(steps), "eager", progress):
        t0 = clock()
        opt.zero_grad()
        loss = fg.cross_entropy(mlp(params, X), y)
        loss.backward()
        opt.step()
        secs.append(clock() - t0)
        losses.append(float(loss.item()))
    return _finish(RunResult("eager", losses, [p.detach().numpy().copy() for p in params], secs),
                   prob)


# ---- mode 2: static ----------------------------------------------------------------------------
def build_static(prob: DemoProblem):
    """Build the TensorFlow-1-style graph once: placeholders, variables, loss, train op."""
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(prob.X.dtype, shape=(None, prob.X.shape[1]), name="x")
        y = fg.placeholder(prob.y.dtype, shape=(None,), name="labels")
        variables = []
        for i, p in enumerate(prob.params0):
            kind = "W" if i % 2 == 0 else "b"
            variables.append(fg.Variable(p.copy(), name=f"{kind}{i // 2 + 1}"))
        loss = fg.cross_entropy(mlp(variables, x), y)
        train_op = fg.train.GradientDescentOptimizer(prob.lr).minimize(loss)
        init = fg.global_variables_initializer()
    return g, x, y, variables, loss, train_op, init


def train_static(prob: DemoProblem, steps: int, progress: bool = False,
                 explain: bool = False) -> RunResult:
    """Define-then-run: the graph is differentiated and compiled once; each step is one
    ``sess.run`` of the cached plan."""
    g, x, y, variables, loss, train_op, init = build_static(prob)
    feed = {x: prob.X, y: prob.y}
    losses, secs = [], []
    clock = time.perf_counter
    with fg.Session(graph=g) as sess:
        sess.run(init)
        for _ in _bar(range(steps), "static", progress):
            t0 = clock()
            _, lval = sess.run([train_op, loss], feed_dict=feed)
            secs.append(clock() - t0)
            losses.append(float(lval))
        final = [np.array(v, copy=True) for v in sess.run(variables)]
        res = RunResult("static", losses, final, secs)
        if explain:
            res.extra["explain"] = str(sess.explain([train_op, loss], feed_dict=feed))
    return _finish(res, prob)


# ---- mode 3: @fg.function ----------------------------------------------------------------------
def train_function(prob: DemoProblem, steps: int, progress: bool = False) -> RunResult:
    """The bridge: an eager-style loss, differentiated by ``fg.value_and_grad`` and traced once by
    ``@fg.function`` into an optimised, fused plan; SGD updates the NumPy weights in place."""
    n = len(prob.params0)

    def loss_fn(*args):
        *params, X, y = args
        return fg.cross_entropy(mlp(params, X), y)

    step_fn = fg.function(fg.value_and_grad(loss_fn, argnums=tuple(range(n))))
    params = [p.copy() for p in prob.params0]
    X, y, lr = prob.X, prob.y, prob.lr
    losses, secs = [], []
    clock = time.perf_counter
    for _ in _bar(range(steps), "function", progress):
        t0 = clock()
        lval, grads = step_fn(*params, X, y)
        for p, gr in zip(params, grads):
            p -= lr * np.asarray(gr)
        secs.append(clock() - t0)
        losses.append(float(lval))
    return _finish(RunResult("function", losses, params, secs), prob)


MODES: dict[str, Callable] = {"eager": train_eager, "static": train_static,
                              "function": train_function}

_STATIC_NAMES = ("Graph", "Session", "placeholder", "Variable", "gradients", "train",
                 "global_variables_initializer")


def available_modes() -> dict[str, str | None]:
    """``{mode: None}`` when usable, else ``{mode: "why not"}``."""
    missing_static = [n for n in _STATIC_NAMES if not hasattr(fg, n)]
    out: dict[str, str | None] = {"eager": None}
    out["static"] = (f"not available yet in this build (missing fg.{', fg.'.join(missing_static)})"
                     if missing_static else None)
    out["function"] = None if hasattr(fg, "function") else \
        "not available yet in this build (missing fg.function)"
    return out


# ---- the tour ----------------------------------------------------------------------------------
#: the demo's thread count unless --threads is given (module docstring: why one)
DEFAULT_THREADS = 1


def seed_examples(available: dict[str, str | None]) -> list[str]:
    """The two seed examples, run, as the lines to print."""
    lines = [">>> import fastgraph as torch            # dynamic",
             ">>> x = torch.tensor(1.0, requires_grad=True); y = torch.tensor(2.0, "
             "requires_grad=True)",
             ">>> z = x + y; z.backward(); print(x.grad)"]
    torch = fg
    x = torch.tensor(1.0, requires_grad=True)
    y = torch.tensor(2.0, requires_grad=True)
    z = x + y
    z.backward()
    lines.append(str(x.grad))
    lines.append(">>> import fastgraph as tf               # static")
    if available["static"]:
        return lines + [f"    static mode: {available['static']}"]
    tf = fg
    with tf.Graph().as_default():
        x = tf.Variable(1.0)
        y = tf.Variable(2.0)
        z = x + y
        grads = tf.gradients(z, [x, y])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            lines += [">>> x = tf.Variable(1.0); y = tf.Variable(2.0); z = x + y",
                      ">>> grads = tf.gradients(z, [x, y])",
                      ">>> sess = tf.Session(); sess.run(tf.global_variables_initializer())",
                      ">>> print(sess.run(grads))", str(sess.run(grads))]
    return lines


#: the table's legend: what each column's numbers are
TABLE_LEGEND = ("ms/step: the median step after the first; 1st step ms: the first step, with "
                "tracing and\ncompiling for static and function; time/eager: ms/step over "
                "eager's, a time ratio (< 1: faster)")


def format_table(results: list[RunResult]) -> str:
    base = next((r for r in results if r.mode == "eager"), None)
    head = (f"{'mode':<10} {'final loss':>12} {'accuracy':>9} {'ms/step':>9} "
            f"{'1st step ms':>12} {'time/eager':>11}")
    lines = [head, "-" * len(head)]
    for r in results:
        ratio = (f"{r.ms_per_step / base.ms_per_step:10.3f}x"
                 if base is not None and base.ms_per_step > 0 else "")
        lines.append(f"{r.mode:<10} {r.final_loss:>12.6f} {100 * r.accuracy:>8.1f}% "
                     f"{r.ms_per_step:>9.3f} {r.first_step_ms:>12.2f} {ratio:>11}")
    return "\n".join(lines)


def plan_summary(explain: str) -> list[str]:
    """A few lines out of ``sess.explain()``: the plan's size and each pass's closing count
    (every pass ends its part of the account with one), passes that changed nothing left out.

    >>> plan_summary("[fuse]\\n  k0 ...\\n  2 kernel(s) replacing 5 op(s)\\n[merge]\\n  0 node(s) "
    ...              "merged\\n[plan] 9 step(s), generated code\\n  a = feed")
    ['9 step(s), generated code', '2 kernel(s) replacing 5 op(s)']
    """
    sections: dict[str, list[str]] = {}
    current = None
    for line in explain.splitlines():
        if line.startswith("["):
            name, _, rest = line[1:].partition("]")
            current = None if name in sections else name   # a second [buffers]: the list
            if current is not None:
                sections[name] = [rest.strip()] if rest.strip() else []
        elif current is not None and line.strip():
            sections[current].append(line.strip())
    plan = sections.pop("plan", [])
    counts = [entries[-1] for entries in sections.values()
              if entries and not entries[-1].startswith("0 ")]
    return plan[:1] + counts


def _step_spread(results: list[RunResult]) -> float | None:
    """The median over modes of the upper quartile of step times over the lower one (after the
    first step): near 1 on a steady machine, whatever a rare slow step (a garbage collection)
    costs; well above it when other work takes the cores for a good part of the steps."""
    spreads = []
    for r in results:
        s = np.asarray(r.seconds[1:])
        if len(s) >= 10:
            lo, hi = np.percentile(s, [25, 75])
            if lo > 0:
                spreads.append(hi / lo)
    return float(np.median(spreads)) if spreads else None


def plot_losses(results: list[RunResult], path: str) -> bool:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    styles = {"eager": "-", "static": "--", "function": ":"}
    for r in results:
        ax.plot(np.arange(1, len(r.losses) + 1), r.losses, styles.get(r.mode, "-"), lw=2,
                label=f"{r.mode} ({r.ms_per_step:.2f} ms/step)")
    ax.set_xlabel("SGD step (full batch)")
    ax.set_ylabel("cross-entropy loss")
    ax.set_yscale("log")
    ax.set_title("fastgraph demo: the same MLP trained three ways")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"loss curves written to {path}")
    return True


def _steps(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2, got {n}")
    return n


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--steps", type=_steps, default=300,
                        help="SGD steps per mode (default 300, at least 2)")
    parser.add_argument("--threads", type=thread_count, default=None,
                        help=f"threads for fastgraph's kernels and NumPy's BLAS (default "
                             f"{DEFAULT_THREADS}: the steady choice for a problem this small)")
    parser.add_argument("--explain", action="store_true",
                        help="print the whole compiled static plan (sess.explain) at the end")
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        type=output_file(".png", ".pdf", ".svg"),
                        help="save the loss curves of the three modes (needs matplotlib)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def main(args: argparse.Namespace | None = None) -> int:
    from fastgraph.bench.timing import machine_load, threads_for_everyone

    if args is None:
        p = argparse.ArgumentParser()
        add_arguments(p)
        args = p.parse_args([])
    if args.steps < 2:
        print("fastgraph demo: --steps must be at least 2", file=sys.stderr)
        return 2
    if args.plot and matplotlib_missing():
        print(f"fastgraph demo: {matplotlib_missing()}", file=sys.stderr)
        return 2
    load = machine_load()                      # before any work of ours adds to it
    threads = args.threads or DEFAULT_THREADS
    with threads_for_everyone(threads) as blas_limited:
        return _tour(args, load, threads, blas_limited)


def _tour(args: argparse.Namespace, load, threads: int, blas_limited: bool) -> int:
    from fastgraph.bench.timing import load_warnings

    available = available_modes()
    prob = make_problem()
    sizes = [prob.params0[0].shape[0]] + [w.shape[1] for w in prob.params0[::2]]
    results: list[RunResult] = []
    failed = []
    for mode, fn in MODES.items():
        if available[mode]:
            continue
        kwargs = {"explain": True} if mode == "static" else {}
        try:
            results.append(fn(prob, args.steps, progress=not args.no_progress, **kwargs))
        except Exception as exc:  # a mode still being built must not take the tour down
            failed.append(f"{mode}: failed: {type(exc).__name__}: {exc}")

    print(f"fastgraph demo: an MLP {'-'.join(map(str, sizes))} (ReLU) trained three ways on two "
          f"moons ({len(prob.y)} points, full batch),\nSGD lr={prob.lr}, {args.steps} steps, "
          + (f"{threads} thread(s) for fastgraph and NumPy's BLAS" if blas_limited else
             f"{threads} thread(s) for fastgraph (NumPy's BLAS keeps its own: no threadpoolctl)"))
    for line in load_warnings(load, _step_spread(results), unit="step"):
        print(line)
    print()
    print(format_table(results))
    print(TABLE_LEGEND)
    if len(results) > 1:
        spread = max(r.final_loss for r in results) - min(r.final_loss for r in results)
        print(f"The modes' final losses differ by at most {spread:.1e} (same weights, data "
              "and SGD).")
    for line in failed + [f"{m}: {why}" for m, why in available.items() if why]:
        print(line)
    static = next((r for r in results if r.mode == "static"), None)
    if static is not None and "explain" in static.extra:
        print()
        print("What the static training plan compiled (sess.explain(); --explain prints it all):")
        for line in plan_summary(static.extra["explain"]):
            print(f"  {line}")
    print()
    print("The two seed examples:")
    for line in seed_examples(available):
        print(line)
    if args.explain and static is not None and "explain" in static.extra:
        print()
        print("== sess.explain([train_op, loss]) ==")
        print(static.extra["explain"])
    if args.plot:
        print()
        plot_losses(results, args.plot)
    else:
        print()
        print("More: --explain (the whole plan), --plot FILE.png (loss curves), --threads N, "
              "--steps N")
    return 0
