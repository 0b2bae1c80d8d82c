"""Static-graph call overhead: fastgraph ``Session.run`` vs JAX's jitted call and TensorFlow 1's
``Session.run``.

What it measures: a scalar float64 placeholder ``x`` and 10 chained elementwise operations
(``sin, *1.1, +0.2, tanh, *0.9, exp, -0.1, cos, *2, +1``); microseconds per call of the compiled
function with a fresh Python float fed each time.  With 0-d data the arithmetic is free, so this is
the per-call cost of the runtime: plan lookup, feed validation, stepping, result conversion.

Why it matters: small static graphs run in loops (optimisers, simulators) are bound by it.

Method: ``fastgraph.bench.timing.compare`` (interleaved rounds, medians), 2,000 calls per round.
Targets: <= 0.5x JAX's jitted call and <= 0.02x TensorFlow 1's ``Session.run``.

Run: ``python -m fastgraph bench --only call_overhead``, or on its own
``python -m fastgraph.bench.call_overhead [--quick] [--threads N] [--json out.json]``.
"""
from __future__ import annotations

import math
import sys
from typing import Any

from fastgraph.bench.timing import compare, peers, print_results, script_main, target_note

TARGETS = {"jax": 0.5, "tensorflow": 0.02}
X = 0.5


def _chain(x, sin, tanh, exp, cos):
    y = sin(x)
    y = y * 1.1
    y = y + 0.2
    y = tanh(y)
    y = y * 0.9
    y = exp(y)
    y = y - 0.1
    y = cos(y)
    y = y * 2.0
    y = y + 1.0
    return y


def _reference():
    return _chain(X, math.sin, math.tanh, math.exp, math.cos)


def _fastgraph():
    import fastgraph as fg
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(fg.float64, (), name="x")
        y = _chain(x, fg.sin, fg.tanh, fg.exp, fg.cos)
        sess = fg.Session(g)
    run = sess.run
    return lambda: run(y, {x: X})


def _jax():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    f = jax.jit(lambda x: _chain(x, jnp.sin, jnp.tanh, jnp.exp, jnp.cos))
    return lambda: f(X).block_until_ready()


def _tf1():
    import tensorflow as tf
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float64, ())
        y = _chain(x, tf.sin, tf.tanh, tf.exp, tf.cos)
    sess = tf.compat.v1.Session(graph=g)
    return lambda: sess.run(y, {x: X})


def run(quick: bool = False, verbose: bool = True) -> dict[str, Any]:
    available, missing = peers("jax", "tensorflow")
    cands = {"fastgraph": _fastgraph()}
    if "jax" in available:
        cands["jax"] = _jax()
    if "tensorflow" in available:
        cands["tensorflow"] = _tf1()
    ref = _reference()
    for name, f in cands.items():
        if abs(float(f()) - ref) > 1e-9:
            raise AssertionError(f"{name} computes {float(f())}, expected {ref}")
    number = 200 if quick else 2000
    res = compare("call overhead (10 scalar ops)", cands, rounds=5 if quick else 7,
                  number=number, warmup=3, meta={"ops": 10})
    per_call = {k: 1e6 * s.median for k, s in res.stats.items()}
    ratios = {k: per_call["fastgraph"] / v for k, v in per_call.items() if k != "fastgraph"}
    if verbose:
        print_results([res], missing)
        for k, v in per_call.items():
            print(f"  {k:<12}{v:10.2f} us/call")
        for k, t in TARGETS.items():
            if k in ratios:
                print(f"  fastgraph/{k} = {ratios[k]:.3f} "
                      f"({target_note(ratios[k], t, quick)})")
    # the targets ride on the result, for the suite's summary rows (fastgraph.cli.bench.headline)
    return {"benchmark": "call_overhead", "quick": quick,
            "results": [{**res.to_dict(), "targets": dict(TARGETS)}],
            "missing": missing, "per_call_us": per_call, "ratios": ratios,
            "targets": {k: v for k, v in TARGETS.items() if k in ratios},
            "meets_targets": {k: ratios[k] <= v for k, v in TARGETS.items() if k in ratios}}


def main(argv: list[str] | None = None) -> int:
    return script_main(run, __doc__, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
