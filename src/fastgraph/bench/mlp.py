"""One MLP training step: fastgraph eager / static / ``@fg.function`` vs NumPy by hand and PyTorch.

What it measures: milliseconds per full training step of a float32 MLP 784 -> 256 -> 256 -> 10
(ReLU, mean softmax cross-entropy with integer labels, plain SGD lr 0.01) on a batch of 128 --
forward, backward and the parameter update -- from the same initial weights and data for every
candidate:

* ``numpy``: a hand-written forward + backward + in-place update (the reference: BLAS GEMMs plus
  a few elementwise passes, with as few temporaries as plain NumPy allows);
* ``torch``: PyTorch eager with ``torch.optim.SGD`` (same thread count as fastgraph);
* ``fastgraph``: eager tensors, ``backward()``, ``fg.optim.SGD``;
* ``fastgraph_static``: a ``fg.Session`` running a ``GradientDescentOptimizer`` train op;
* ``fastgraph_function``: the whole step as one ``@fg.function`` returning the loss and the new
  parameters, with the old ones donated (``donate_argnums``: JAX's idiom), so the updates are
  written in place;
* ``fastgraph_function_grads`` (no target): ``@fg.function(fg.value_and_grad(loss))`` returning
  the gradients, and NumPy's ``p -= lr * g`` outside;
* ``fastgraph_nn``: the eager step with the MLP written as ``fastgraph.torch.nn`` modules
  (``nn.Linear``, weights in PyTorch's ``(out, in)`` layout), ``fg.optim.SGD``;
* ``fastgraph_nn_function``: that module's step under ``@fg.function``, its parameters the
  plan's variables updated in place by the traced SGD assignments;
* ``numpy_gemms_only`` (not a step): the hand-written step's 8 matrix products alone -- the
  floor below which no candidate making NumPy's products can go.

Why it matters: at this size the GEMMs cost about as much as everything else together, so the
gap to the hand-written NumPy step *is* the framework's overhead (tape, temporaries, dispatch).
Targets: eager <= 0.9x PyTorch eager; static <= 1.0x NumPy; ``@fg.function`` <= 0.9x NumPy; the
module versions within 5% of the functional ones (``fastgraph_nn`` / ``fastgraph`` and
``fastgraph_nn_function`` / ``fastgraph_function`` <= 1.05).

Method: ``fastgraph.bench.timing.compare``: 21 rounds of 50 training steps per candidate, in a
shuffled order each round, after one warm-up round; each block starts after a 0.15 s pause and
one untimed step (``settle``), so no candidate shares the cores with the previous one's spinning
BLAS/OpenMP threads.  Ratios are printed from the medians and as the median of per-round ratios.
The losses of the first step are checked to agree across candidates.

Where the time goes: the 8 GEMMs are most of NumPy by hand's step, and every fastgraph mode
makes exactly NumPy's calls (OpenBLAS's bits depend on how a product is partitioned, so eager,
static and ``np.matmul`` agree only that way); the ``numpy_gemms_only`` row is that floor.  The
candidates differ in the ~15 small steps around the products: bias + ReLU in one C broadcast
kernel, one C pass each for the cross-entropy's loss and gradient, the ReLU masks and the small
SGD updates one VM instruction each, updates written into the parameters; W1's update is a BLAS
``gemm`` scaled by the learning rate and an ``axpy`` (the ``blas`` pass).  What was tried and
dropped, and why, is in docs/decisions.md.

Run: ``python -m fastgraph bench --only mlp``, or on its own
``python -m fastgraph.bench.mlp [--threads N] [--quick] [--json out.json]``.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from fastgraph.bench.timing import (
    eager_sgd_step, module_eager_step, module_function_step, ms_per_step, peers,
    print_training_steps, script_main, time_training_steps, training_steps_summary)

SIZES = (784, 256, 256, 10)
BATCH = 128
LR = 0.01
STEPS = 50
#: not a training step: the step's 8 matrix products alone (see ``numpy_gemms_fn``)
GEMMS_ONLY = "numpy_gemms_only"
TARGETS = {("fastgraph", "torch"): 0.9, ("fastgraph_static", "numpy"): 1.0,
           ("fastgraph_function", "numpy"): 0.9, ("fastgraph_nn", "fastgraph"): 1.05,
           ("fastgraph_nn_function", "fastgraph_function"): 1.05}
#: the summary's rows: every candidate against NumPy and PyTorch, and the module versions
#: against the functional steps they must stay within 5% of
HEADLINE_PAIRS = [(a, b) for a in ("fastgraph", "fastgraph_static", "fastgraph_function",
                                   "fastgraph_function_grads", "fastgraph_nn",
                                   "fastgraph_nn_function")
                  for b in ("numpy", "torch")]
HEADLINE_PAIRS += [ab for ab in TARGETS if ab not in HEADLINE_PAIRS]


def make_data(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int64)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        params.append((rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in))
                      .astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    return X, y, params


# ---- the reference: NumPy by hand ---------------------------------------------------------------
def numpy_step_fn(X: np.ndarray, y: np.ndarray, params0: list[np.ndarray]) -> Callable[[], float]:
    """A careful hand-written step: preallocated activations, in-place ReLU and softmax, the
    ReLU backward as one masked multiply, in-place updates. Returns the loss before the update."""
    W1, b1, W2, b2, W3, b3 = (p.copy() for p in params0)
    n = X.shape[0]
    rows = np.arange(n)
    lr = np.float32(LR)
    inv_n = np.float32(1.0 / n)
    h1 = np.empty((n, SIZES[1]), np.float32)
    h2 = np.empty((n, SIZES[2]), np.float32)
    z = np.empty((n, SIZES[3]), np.float32)
    d2 = np.empty_like(h2)
    d1 = np.empty_like(h1)
    gW1, gW2, gW3 = np.empty_like(W1), np.empty_like(W2), np.empty_like(W3)
    Xt = np.ascontiguousarray(X.T)

    def step() -> float:
        # (closures: only out= writes here, no augmented assignment to captured names)
        # forward
        np.matmul(X, W1, out=h1); np.add(h1, b1, out=h1); np.maximum(h1, 0, out=h1)
        np.matmul(h1, W2, out=h2); np.add(h2, b2, out=h2); np.maximum(h2, 0, out=h2)
        np.matmul(h2, W3, out=z); np.add(z, b3, out=z)
        np.subtract(z, z.max(axis=1, keepdims=True), out=z)
        np.exp(z, out=z)
        s = z.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(s[:, 0]) - np.log(z[rows, y])))
        # backward: dlogits = (softmax - onehot) / n, computed in place in z
        np.divide(z, s, out=z)
        z[rows, y] -= 1.0
        np.multiply(z, inv_n, out=z)
        np.matmul(h2.T, z, out=gW3); gb3 = z.sum(axis=0)
        np.matmul(z, W3.T, out=d2); np.multiply(d2, h2 > 0, out=d2)
        np.matmul(h1.T, d2, out=gW2); gb2 = d2.sum(axis=0)
        np.matmul(d2, W2.T, out=d1); np.multiply(d1, h1 > 0, out=d1)
        np.matmul(Xt, d1, out=gW1); gb1 = d1.sum(axis=0)
        # SGD, in place
        for p, g in ((W1, gW1), (b1, gb1), (W2, gW2), (b2, gb2), (W3, gW3), (b3, gb3)):
            np.multiply(g, lr, out=g)
            np.subtract(p, g, out=p)
        return loss

    return step


def numpy_gemms_fn(X: np.ndarray, y: np.ndarray, params0: list[np.ndarray]) -> Callable[[], None]:
    """Only the hand-written step's 8 matrix products, on the same shapes and buffers: the
    floor for any candidate whose products are NumPy's own (every fastgraph mode: they must be,
    so that eager, static and ``@fg.function`` give the same bits as ``np.matmul``)."""
    W1, _, W2, _, W3, _ = (p.copy() for p in params0)
    n = X.shape[0]
    h1 = np.maximum(X @ W1, 0)
    h2 = np.maximum(h1 @ W2, 0)
    z = np.empty((n, SIZES[3]), np.float32)
    dz = np.full_like(z, 1.0 / (n * SIZES[3]))
    d2, d1 = np.empty_like(h2), np.empty_like(h1)
    gW1, gW2, gW3 = np.empty_like(W1), np.empty_like(W2), np.empty_like(W3)
    Xt = np.ascontiguousarray(X.T)

    def step() -> None:
        np.matmul(X, W1, out=d1); np.matmul(h1, W2, out=d2); np.matmul(h2, W3, out=z)
        np.matmul(h2.T, dz, out=gW3); np.matmul(dz, W3.T, out=d2)
        np.matmul(h1.T, d2, out=gW2); np.matmul(d2, W2.T, out=d1)
        np.matmul(Xt, d1, out=gW1)

    return step


# ---- PyTorch eager -------------------------------------------------------------------------------
def torch_step_fn(X, y, params0):
    import torch
    import torch.nn.functional as F

    params = [torch.tensor(p.copy(), requires_grad=True) for p in params0]
    W1, b1, W2, b2, W3, b3 = params
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    opt = torch.optim.SGD(params, lr=LR)

    def step() -> float:
        opt.zero_grad()
        h = F.relu(Xt @ W1 + b1)
        h = F.relu(h @ W2 + b2)
        loss = F.cross_entropy(h @ W3 + b3, yt)
        loss.backward()
        opt.step()
        return loss.item()

    return step


# ---- fastgraph, three ways -----------------------------------------------------------------------
def _mlp(fg, params, x):
    h = x
    for i in range(0, len(params) - 2, 2):
        h = fg.relu(fg.matmul(h, params[i]) + params[i + 1])
    return fg.matmul(h, params[-2]) + params[-1]


def _mlp_loss(W1, b1, W2, b2, W3, b3, x, labels):
    """The loss as a function of the parameters (for ``fg.value_and_grad``)."""
    import fastgraph as fg
    return fg.cross_entropy(_mlp(fg, (W1, b1, W2, b2, W3, b3), x), labels)


def fastgraph_eager_step_fn(X, y, params0):
    import fastgraph as fg

    params = [fg.tensor(p.copy(), requires_grad=True) for p in params0]
    return eager_sgd_step(params, lambda: fg.cross_entropy(_mlp(fg, params, X), y), LR)


def fastgraph_static_step_fn(X, y, params0):
    import fastgraph as fg

    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(np.float32, shape=(None, SIZES[0]), name="x")
        labels = fg.placeholder(np.int64, shape=(None,), name="labels")
        variables = [fg.Variable(p.copy()) for p in params0]
        loss = fg.cross_entropy(_mlp(fg, variables, x), labels)
        train = fg.train.GradientDescentOptimizer(LR).minimize(loss)
        init = fg.global_variables_initializer()
    sess = fg.Session(graph=g)
    sess.run(init)
    feed = {x: X, labels: y}
    fetches = [train, loss]

    def step() -> float:
        return float(sess.run(fetches, feed_dict=feed)[1])

    return step


def fastgraph_function_step_fn(X, y, params0):
    """The whole training step in one ``@fg.function`` -- JAX's idiom: it returns the loss and
    the updated parameters, and donates the old ones, so the updates are fused kernels writing
    into the parameters' arrays (the plan of the static train op, without a Session)."""
    import fastgraph as fg

    def train_step(W1, b1, W2, b2, W3, b3, x, labels):
        params = (W1, b1, W2, b2, W3, b3)
        loss, grads = fg.value_and_grad(_mlp_loss, argnums=(0, 1, 2, 3, 4, 5))(*params, x, labels)
        return loss, [p - LR * g for p, g in zip(params, grads)]

    step_fn = fg.function(train_step, donate_argnums=(0, 1, 2, 3, 4, 5))
    params = [p.copy() for p in params0]

    def step() -> float:
        loss, params[:] = step_fn(*params, X, y)
        return float(loss)

    return step


def fastgraph_function_grads_step_fn(X, y, params0):
    """``@fg.function(fg.value_and_grad(loss))`` returning the gradients, then NumPy's update
    (``p -= lr * g``) outside -- the autograd-style use of the bridge."""
    import fastgraph as fg

    vg = fg.function(fg.value_and_grad(_mlp_loss, argnums=(0, 1, 2, 3, 4, 5)))
    params = [p.copy() for p in params0]
    lr = np.float32(LR)

    def step() -> float:
        loss, grads = vg(*params, X, y)
        for p, gr in zip(params, grads):
            p -= lr * gr
        return float(loss)

    return step


def mlp_module(params0):
    """The MLP as ``fastgraph.torch.nn`` modules holding ``params0`` (transposed into
    ``nn.Linear``'s ``(out, in)`` weights)."""
    import fastgraph.torch.nn as nn

    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        layers.append(nn.Linear(fan_in, fan_out))
        if i < len(SIZES) - 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    state = {}
    for j, k in enumerate(range(0, len(layers), 2)):
        state[f"{k}.weight"] = np.ascontiguousarray(params0[2 * j].T)
        state[f"{k}.bias"] = params0[2 * j + 1].copy()
    model.load_state_dict(state)
    return model


def fastgraph_nn_eager_step_fn(X, y, params0):
    import fastgraph as fg
    return module_eager_step(mlp_module(params0), X, y, fg.cross_entropy, LR)


def fastgraph_nn_function_step_fn(X, y, params0):
    import fastgraph as fg
    return module_function_step(mlp_module(params0), X, y, fg.cross_entropy, LR)


def candidates(X, y, params0) -> tuple[dict[str, Callable[[], float]], dict[str, str]]:
    """Step functions of every candidate available here, and why others are skipped."""
    import fastgraph as fg

    steps: dict[str, Callable[[], float]] = {}
    skipped: dict[str, str] = {}
    steps["fastgraph"] = fastgraph_eager_step_fn(X, y, params0)
    steps["numpy"] = numpy_step_fn(X, y, params0)
    steps[GEMMS_ONLY] = numpy_gemms_fn(X, y, params0)
    available, _ = peers("torch")
    if "torch" in available:
        steps["torch"] = torch_step_fn(X, y, params0)
    else:
        skipped["torch"] = "not installed"
    if all(hasattr(fg, n) for n in ("Session", "placeholder", "Variable", "train")):
        try:
            steps["fastgraph_static"] = fastgraph_static_step_fn(X, y, params0)
        except Exception as exc:  # static mode still in progress
            skipped["fastgraph_static"] = f"failed: {type(exc).__name__}: {exc}"
    else:
        skipped["fastgraph_static"] = "static mode not available in this build"
    steps["fastgraph_nn"] = fastgraph_nn_eager_step_fn(X, y, params0)
    for name, make in (("fastgraph_function", fastgraph_function_step_fn),
                       ("fastgraph_function_grads", fastgraph_function_grads_step_fn),
                       ("fastgraph_nn_function", fastgraph_nn_function_step_fn)):
        if hasattr(fg, "function"):
            try:
                steps[name] = make(X, y, params0)
            except Exception as exc:
                skipped[name] = f"failed: {type(exc).__name__}: {exc}"
        else:
            skipped[name] = "fg.function not available in this build"
    return steps, skipped


def run(quick: bool = False, verbose: bool = True, threads: int | None = None) -> dict[str, Any]:
    """``quick``: 5 steps per round and 3 rounds instead of 50 and 21."""
    steps, skipped = candidates(*make_data())
    res, _ = time_training_steps(
        "mlp", f"MLP step {'-'.join(map(str, SIZES))} batch {BATCH} float32", steps, skipped,
        reference="numpy", required=["numpy", "fastgraph"], unchecked=[GEMMS_ONLY],
        steps_per_round=5 if quick else STEPS, rounds=3 if quick else 21, threads=threads)
    ms = ms_per_step(res)
    missing = [k for k in skipped if k == "torch"]
    if verbose:
        print_training_steps(res, skipped, missing, TARGETS, quick)
    floor = {}
    if GEMMS_ONLY in ms:
        # The products are the same calls in every candidate, so the share of NumPy by hand's
        # step they take bounds every ratio from below; what a framework can remove is the rest.
        gem = ms[GEMMS_ONLY]
        floor = {"gemms_ms": gem, "gemms/numpy": gem / ms["numpy"],
                 "gemms/numpy_paired": res.paired_ratio(GEMMS_ONLY, "numpy")}
        for a in ("fastgraph_static", "fastgraph_function"):
            if a in ms and ms["numpy"] > gem:
                floor[f"{a}_rest/numpy_rest"] = (ms[a] - gem) / (ms["numpy"] - gem)
        if verbose:
            print(f"GEMM floor: {GEMMS_ONLY}/numpy = {floor['gemms/numpy']:.3f} (median of "
                  f"per-round ratios {floor['gemms/numpy_paired']:.3f}): no candidate computing "
                  f"NumPy's products can go below it")
            for a in ("fastgraph_static", "fastgraph_function"):
                if f"{a}_rest/numpy_rest" in floor:
                    print(f"  {a}: time outside the products {ms[a] - gem:.3f} ms against "
                          f"NumPy by hand's {ms['numpy'] - gem:.3f} ms "
                          f"({floor[f'{a}_rest/numpy_rest']:.2f}x)")
    return training_steps_summary("mlp", "MLP training step", res, skipped, missing, TARGETS,
                                  quick, HEADLINE_PAIRS, gemm_floor=floor)


def main(argv: list[str] | None = None) -> int:
    return script_main(run, __doc__, "5 steps x 3 rounds", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
