"""One LeNet training step: fastgraph eager and ``@fg.function`` vs PyTorch eager, torch.compile and JAX jit.

What it measures: milliseconds per full training step of a float32 LeNet-style network on a
batch of 64 images 1x28x28 -- conv 5x5 1->8 (padding 2), ReLU, max pool 2, conv 5x5 8->16, ReLU,
max pool 2, linear 400->120, ReLU, linear 120->10, mean softmax cross-entropy with integer
labels, plain SGD (lr 0.01) -- forward, backward and the parameter update, from the same seeded
weights and data for every candidate:

* ``torch``: PyTorch eager (oneDNN convolutions) with ``torch.optim.SGD``;
* ``torch_compile``: the same step under ``torch.compile`` (skipped with a note where it does not
  compile here);
* ``jax_jit``: ``jax.jit`` of a step returning the loss and the new parameters;
* ``fastgraph``: eager tensors through ``fastgraph.nn_ops`` (PyTorch's functional names and
  NCHW layout), ``backward()``, ``fg.optim.SGD``;
* ``fastgraph_function``: the whole step as one ``@fg.function`` returning the loss and the new
  parameters, the old ones donated (JAX's idiom), so the updates are written in place; its
  plan runs bias + ReLU inside the convolution (the ``fuse`` pass's epilogues);
* ``fastgraph_nn``: the same network as a ``fastgraph.torch.nn`` module (``nn.Sequential`` of
  ``Conv2d``, ``ReLU``, ``MaxPool2d``, ``Flatten``, ``Linear``), eager, ``fg.optim.SGD``;
* ``fastgraph_nn_function``: that module's step under ``@fg.function``: the parameters are the
  plan's variables (their own arrays), updated in place by the traced SGD assignments.

Targets: eager <= 1.0x PyTorch eager; ``@fg.function`` <= 0.8x PyTorch eager and <= 1.0x JAX jit;
the same for the module versions.

Method: ``fastgraph.bench.timing.compare``: rounds of 10 training steps per candidate, in a
shuffled order each round, after one warm-up round (JIT compilation), each block after a short
settle pause.  The first step's losses are checked to agree across candidates (same weights,
same data: the same work).

Run: ``python -m fastgraph bench --only cnn``, or on its own
``python -m fastgraph.bench.cnn [--threads N] [--quick] [--json out.json]``.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from fastgraph.bench.timing import (
    eager_sgd_step, module_eager_step, module_function_step, peers,
    print_training_steps, script_main, time_training_steps, training_steps_summary)

BATCH = 64
LR = 0.01
STEPS = 10
ROUNDS = 15
TARGETS = {("fastgraph", "torch"): 1.0, ("fastgraph_function", "torch"): 0.8,
           ("fastgraph_function", "jax_jit"): 1.0, ("fastgraph_nn", "torch"): 1.0,
           ("fastgraph_nn_function", "torch"): 0.8, ("fastgraph_nn_function", "jax_jit"): 1.0}
#: the summary's rows: every fastgraph candidate against every peer
HEADLINE_PAIRS = [(a, b) for a in ("fastgraph", "fastgraph_function", "fastgraph_nn",
                                   "fastgraph_nn_function")
                  for b in ("torch", "torch_compile", "jax_jit")]
#: parameter shapes in PyTorch's layout: conv weights (out, in, kh, kw), linear (out, in)
SHAPES = [(8, 1, 5, 5), (8,), (16, 8, 5, 5), (16,), (120, 400), (120,), (10, 120), (10,)]


def make_data(seed: int = 0):
    """Images, labels and PyTorch's default initialisation (uniform +-1/sqrt(fan_in)),
    seeded."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, BATCH).astype(np.int64)
    params = []
    for i in range(0, len(SHAPES), 2):
        w = SHAPES[i]
        bound = 1.0 / np.sqrt(np.prod(w[1:]))
        params.append(rng.uniform(-bound, bound, w).astype(np.float32))
        params.append(rng.uniform(-bound, bound, SHAPES[i + 1]).astype(np.float32))
    return X, y, params


# ---- PyTorch --------------------------------------------------------------------------------------
def _torch_net(F, p, x):
    h = F.max_pool2d(F.relu(F.conv2d(x, p[0], p[1], padding=2)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, p[2], p[3])), 2)
    h = F.relu(F.linear(h.reshape(h.shape[0], -1), p[4], p[5]))
    return F.linear(h, p[6], p[7])


def torch_step_fn(X, y, params0, compiled: bool = False):
    import torch
    import torch.nn.functional as F

    params = [torch.tensor(p.copy(), requires_grad=True) for p in params0]
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    opt = torch.optim.SGD(params, lr=LR)

    def loss_fn(x, labels):
        return F.cross_entropy(_torch_net(F, params, x), labels)

    if compiled:
        loss_fn = torch.compile(loss_fn)

    def step() -> float:
        opt.zero_grad()
        loss = loss_fn(Xt, yt)
        loss.backward()
        opt.step()
        return loss.item()

    return step


# ---- JAX ------------------------------------------------------------------------------------------
def jax_step_fn(X, y, params0):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def conv(x, w, b, pad):
        out = lax.conv_general_dilated(x, w, (1, 1), [(pad, pad), (pad, pad)],
                                       dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return out + b[None, :, None, None]

    def pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def loss_fn(p, x, labels):
        h = pool(jax.nn.relu(conv(x, p[0], p[1], 2)))
        h = pool(jax.nn.relu(conv(h, p[2], p[3], 0)))
        h = jax.nn.relu(h.reshape(h.shape[0], -1) @ p[4].T + p[5])
        logits = h @ p[6].T + p[7]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    @jax.jit
    def train_step(p, x, labels):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, labels)
        return loss, [w - LR * g for w, g in zip(p, grads)]

    params = [jnp.asarray(p) for p in params0]
    xj, yj = jnp.asarray(X), jnp.asarray(y)
    state = {"p": params}

    def step() -> float:
        loss, state["p"] = train_step(state["p"], xj, yj)
        return float(loss)

    return step


# ---- fastgraph ------------------------------------------------------------------------------------
def _fg_net(N, fg, p, x):
    h = N.max_pool2d(fg.relu(N.conv2d(x, p[0], p[1], padding=2)), 2)
    h = N.max_pool2d(fg.relu(N.conv2d(h, p[2], p[3])), 2)
    h = fg.relu(N.linear(fg.reshape(h, (h.shape[0], -1)), p[4], p[5]))
    return N.linear(h, p[6], p[7])


def fastgraph_eager_step_fn(X, y, params0):
    import fastgraph as fg
    import fastgraph.nn_ops as N

    params = [fg.tensor(p.copy(), requires_grad=True) for p in params0]
    return eager_sgd_step(params, lambda: N.cross_entropy(_fg_net(N, fg, params, X), y), LR)


def fastgraph_function_step_fn(X, y, params0):
    import fastgraph as fg
    import fastgraph.nn_ops as N

    def loss_fn(*args):
        p, x, labels = args[:8], args[8], args[9]
        return N.cross_entropy(_fg_net(N, fg, p, x), labels)

    def train_step(*args):
        loss, grads = fg.value_and_grad(loss_fn, argnums=tuple(range(8)))(*args)
        return loss, [w - LR * g for w, g in zip(args[:8], grads)]

    step_fn = fg.function(train_step, donate_argnums=tuple(range(8)))
    params = [p.copy() for p in params0]

    def step() -> float:
        loss, params[:] = step_fn(*params, X, y)
        return float(loss)

    return step


def lenet_module(params0):
    """The network as a ``fastgraph.torch.nn`` module holding ``params0`` (PyTorch's layout and
    parameter names, loaded through ``load_state_dict``)."""
    import fastgraph.torch.nn as nn

    model = nn.Sequential(nn.Conv2d(1, 8, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 10))
    keys = ["0.weight", "0.bias", "3.weight", "3.bias", "7.weight", "7.bias", "9.weight",
            "9.bias"]
    model.load_state_dict({k: p.copy() for k, p in zip(keys, params0)})
    return model


def candidates(X, y, params0) -> tuple[dict[str, Callable[[], float]], dict[str, str]]:
    """Step functions of every candidate available here, and why others are skipped."""
    import fastgraph.torch.nn.functional as F

    steps: dict[str, Callable[[], float]] = {}
    skipped: dict[str, str] = {}
    steps["fastgraph"] = fastgraph_eager_step_fn(X, y, params0)
    steps["fastgraph_function"] = fastgraph_function_step_fn(X, y, params0)
    # the module versions: each its own copy of the weights
    steps["fastgraph_nn"] = module_eager_step(lenet_module(params0), X, y, F.cross_entropy, LR)
    steps["fastgraph_nn_function"] = module_function_step(lenet_module(params0), X, y,
                                                          F.cross_entropy, LR)
    available, _ = peers("torch", "jax")
    if "torch" in available:
        steps["torch"] = torch_step_fn(X, y, params0)
        steps["torch_compile"] = torch_step_fn(X, y, params0, compiled=True)
    else:
        skipped["torch"] = skipped["torch_compile"] = "not installed"
    if "jax" in available:
        steps["jax_jit"] = jax_step_fn(X, y, params0)
    else:
        skipped["jax_jit"] = "not installed"
    return steps, skipped


def run(quick: bool = False, verbose: bool = True, threads: int | None = None) -> dict[str, Any]:
    """``quick``: 2 steps per round and 3 rounds instead of 10 and 15."""
    steps, skipped = candidates(*make_data())
    res, first = time_training_steps(
        "cnn", f"LeNet step batch {BATCH} 1x28x28 float32", steps, skipped,
        reference="fastgraph", required=["fastgraph"], steps_per_round=2 if quick else STEPS,
        rounds=3 if quick else ROUNDS, threads=threads, record_first_loss=True)
    missing = [k for k in skipped if k in ("torch", "jax_jit")]
    if verbose:
        print_training_steps(res, skipped, missing, TARGETS, quick,
                             [f"first-step loss (every candidate): {first['fastgraph']:.5f}"])
    summary = training_steps_summary("cnn", "LeNet training step", res, skipped, missing,
                                     TARGETS, quick, HEADLINE_PAIRS)
    return dict(summary, first_loss=first)


def main(argv: list[str] | None = None) -> int:
    return script_main(run, __doc__, "2 steps x 3 rounds", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
