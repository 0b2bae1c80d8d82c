"""``python -m fastgraph demo``: a short tour of eager and static modes, no download needed.

1. runs the two seed examples of the design (``import fastgraph as torch`` / ``as tf``);
2. trains one small classifier (an MLP on a seeded synthetic two-moons data set) three ways --
   eager (``fg.tensor`` + ``backward`` + ``fg.optim.SGD``), static (``fg.placeholder`` /
   ``fg.Variable`` / ``fg.train.GradientDescentOptimizer`` / ``fg.Session``) and ``@fg.function``
   -- from the same initial weights on the same full batch with the same SGD, so the three loss
   curves agree up to rounding; prints a side-by-side table (final loss, accuracy, ms per step,
   speed-up over eager);
3. prints ``sess.explain(...)`` of the static training plan.

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
from fastgraph.cli import output_file, thread_count
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
    return tqdm(iterable, desc=f"{desc:>9}", unit="step", leave=True, dynamic_ncols=True,
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
def seed_examples(available: dict[str, str | None]) -> None:
    print("== 1. The two seed examples (DESIGN.md section 1) ==")
    print(">>> import fastgraph as torch            # dynamic")
    torch = fg
    x = torch.tensor(1.0, requires_grad=True)
    y = torch.tensor(2.0, requires_grad=True)
    z = x + y
    z.backward()
    print(">>> z = x + y; z.backward(); print(x.grad)")
    print(x.grad)
    print()
    print(">>> import fastgraph as tf               # static")
    if available["static"]:
        print(f"    static mode: {available['static']}")
        print()
        return
    tf = fg
    with tf.Graph().as_default():
        x = tf.Variable(1.0)
        y = tf.Variable(2.0)
        z = x + y
        grads = tf.gradients(z, [x, y])
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        print(">>> grads = tf.gradients(x + y, [x, y]); print(sess.run(grads))")
        print(sess.run(grads))
        sess.close()
    print()


def format_table(results: list[RunResult]) -> str:
    base = next((r for r in results if r.mode == "eager"), None)
    head = (f"{'mode':<10} {'final loss':>12} {'accuracy':>9} {'ms/step':>9} "
            f"{'1st step ms':>12} {'vs eager':>9}")
    lines = [head, "-" * len(head)]
    for r in results:
        speed = (f"{base.ms_per_step / r.ms_per_step:8.2f}x"
                 if base is not None and r.ms_per_step > 0 else "")
        lines.append(f"{r.mode:<10} {r.final_loss:>12.6f} {100 * r.accuracy:>8.1f}% "
                     f"{r.ms_per_step:>9.3f} {r.first_step_ms:>12.2f} {speed:>9}")
    return "\n".join(lines)


def plot_losses(results: list[RunResult], path: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"--plot {path}: matplotlib is not installed (pip install matplotlib); no plot made.")
        return False
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
                        help="threads for fastgraph's kernels (fg.set_num_threads) and "
                             "NumPy's BLAS")
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        type=output_file(".png", ".pdf", ".svg"),
                        help="save the loss curves of the three modes (needs matplotlib)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def main(args: argparse.Namespace | None = None) -> int:
    if args is None:
        p = argparse.ArgumentParser()
        add_arguments(p)
        args = p.parse_args([])
    if args.steps < 2:
        print("fastgraph demo: --steps must be at least 2", file=sys.stderr)
        return 2
    limiter = None
    if args.threads is not None:
        fg.set_num_threads(args.threads)
        try:  # NumPy's BLAS too: the matmuls are half of each step
            from threadpoolctl import threadpool_limits
            limiter = threadpool_limits(limits=args.threads)
        except ImportError:
            pass
    available = available_modes()
    seed_examples(available)

    prob = make_problem()
    sizes = [prob.params0[0].shape[0]] + [w.shape[1] for w in prob.params0[::2]]
    print(f"== 2. One classifier, three ways: MLP {'-'.join(map(str, sizes))} (ReLU), "
          f"two moons, {len(prob.y)} points full batch, SGD lr={prob.lr}, {args.steps} steps, "
          f"{fg.get_num_threads()} thread(s) ==")
    results: list[RunResult] = []
    for mode, fn in MODES.items():
        if available[mode]:
            print(f"{mode:>9}: {available[mode]}")
            continue
        kwargs = {"explain": True} if mode == "static" else {}
        try:
            results.append(fn(prob, args.steps, progress=not args.no_progress, **kwargs))
        except Exception as exc:  # a mode still being built must not take the tour down
            print(f"{mode:>9}: failed: {type(exc).__name__}: {exc}")
    print()
    print(format_table(results))
    if len(results) > 1:
        spread = max(r.final_loss for r in results) - min(r.final_loss for r in results)
        print(f"(largest difference in final loss between modes: {spread:.2e})")
    missing = [m for m, why in available.items() if why]
    if missing:
        print(f"modes not available yet: {', '.join(missing)}")
    print("ms/step is the median after the first step; the first step includes tracing and "
          "compiling for static and function.")
    print()
    static = next((r for r in results if r.mode == "static"), None)
    print("== 3. The compiled static training plan: sess.explain([train_op, loss]) ==")
    if static is not None and "explain" in static.extra:
        print(static.extra["explain"])
    else:
        print("(static mode not available)")
    if args.plot:
        print()
        plot_losses(results, args.plot)
    if limiter is not None:
        limiter.restore_original_limits()
    return 0
