"""Data-parallel training on MPI: scaling of the MLP step across ranks, and the cost of the
gradient allreduce, side by side with raw ``mpi4py`` and PyTorch DDP (gloo).

Run it under ``mpirun`` (one thread per rank), e.g. on one machine::

    FASTGRAPH_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        mpirun -n 2 python -m fastgraph.bench.distributed --json out.json

What it measures (every candidate interleaved round by round in one run):

* **MLP scaling**: the training step of ``fastgraph.bench.mlp`` (float32 MLP 784 -> 256 -> 256 ->
  10, ReLU, softmax cross-entropy, SGD) at a global batch of 1,024.  ``1 rank``: rank 0 alone
  steps on the whole batch while the other ranks sleep (they do not spin: the time is one
  process's on an otherwise idle allocation); ``N ranks``: every rank steps on its 1,024/N
  rows with the gradients averaged by ``DistributedOptimizer`` (eager, bucketed allreduces
  started by the tape's grad-ready hooks) or, static, by the graph's allreduce nodes;
  a step's time is the slowest rank's.  Scaling efficiency = t(1 rank) / (N x t(N ranks)).
  PyTorch: ``torch.optim.SGD`` alone against ``DistributedDataParallel`` over gloo, same model,
  same weights.  Targets: efficiency >= 0.9 at 2 ranks, and >= PyTorch DDP's.
* **allreduce**: averaging 1-64 MB of float32 gradients (8 parameters of equal size, fed to
  the DDP averager in backward order: scaled copies into 25 MB buckets, one allreduce per
  bucket, on the sending thread but for the last bucket's, wait) against raw ``mpi4py``
  ``Allreduce`` in place on one
  buffer of the same size,
  and ``fastgraph.distributed.allreduce`` (the differentiable op, with its shape/dtype check).
  Target: the bucketed averaging within 1.1x raw ``mpi4py``.
* the LeNet step of ``fastgraph.bench.cnn`` (eager) at a global batch of 256, 1 rank against N
  ranks, for the efficiency model of docs/distributed.md.

Under ``mpirun -n 1`` only the single-rank numbers are printed.
"""
from __future__ import annotations

import argparse
import random
import socket
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

GLOBAL_BATCH = 1024
MB_SIZES = (1, 4, 16, 64)
TARGETS = {"efficiency": 0.9, "allreduce": 1.1}


def _world():
    import fastgraph.distributed as dist
    return dist.init()


# ---- the MLP steps ------------------------------------------------------------------------------
def _data():
    from fastgraph.bench import mlp
    rng = np.random.default_rng(0)
    X = rng.standard_normal((GLOBAL_BATCH, mlp.SIZES[0])).astype(np.float32)
    y = rng.integers(0, mlp.SIZES[-1], GLOBAL_BATCH).astype(np.int64)
    _, _, params = mlp.make_data(0)
    return X, y, params


def _eager_step(params0, loss_of, lr: float, distributed: bool):
    """The eager SGD step of :func:`fastgraph.bench.timing.eager_sgd_step` over fresh copies of
    ``params0`` (``loss_of(params)`` the forward), through ``DistributedOptimizer`` when
    ``distributed``."""
    import fastgraph as fg
    import fastgraph.distributed as dist
    from fastgraph.bench.timing import eager_sgd_step
    params = [fg.tensor(p.copy(), requires_grad=True) for p in params0]
    return eager_sgd_step(params, lambda: loss_of(params), lr,
                          dist.DistributedOptimizer if distributed else None)


def fastgraph_eager_step(X, y, params0, distributed: bool):
    import fastgraph as fg
    from fastgraph.bench import mlp
    return _eager_step(params0, lambda p: fg.cross_entropy(mlp._mlp(fg, p, X), y), mlp.LR,
                       distributed)


CNN_GLOBAL_BATCH = 256


def cnn_eager_step(X, y, params0, distributed: bool):
    """The LeNet step of ``fastgraph.bench.cnn`` (eager, ``fg.optim.SGD``)."""
    import fastgraph as fg
    import fastgraph.nn_ops as N
    from fastgraph.bench import cnn
    return _eager_step(params0, lambda p: N.cross_entropy(cnn._fg_net(N, fg, p, X), y), cnn.LR,
                       distributed)


def _cnn_data():
    from fastgraph.bench import cnn
    rng = np.random.default_rng(1)
    X = rng.standard_normal((CNN_GLOBAL_BATCH, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, CNN_GLOBAL_BATCH).astype(np.int64)
    _, _, params = cnn.make_data(0)
    return X, y, params


def fastgraph_static_step(X, y, params0, distributed: bool):
    import fastgraph as fg
    import fastgraph.distributed as dist
    from fastgraph.bench import mlp
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(np.float32, shape=(None, mlp.SIZES[0]))
        labels = fg.placeholder(np.int64, shape=(None,))
        variables = [fg.Variable(p.copy()) for p in params0]
        loss = fg.cross_entropy(mlp._mlp(fg, variables, x), labels)
        opt = fg.train.GradientDescentOptimizer(mlp.LR)
        if distributed:
            opt = dist.DistributedOptimizer(opt)
        train = opt.minimize(loss)
        init = fg.global_variables_initializer()
    sess = fg.Session(graph=g)
    sess.run(init)
    feed = {x: X, labels: y}

    def step():
        return float(sess.run([train, loss], feed)[1])
    return step


def _torch_model(params0):
    import torch
    layers = []
    for i in range(0, len(params0), 2):
        W, b = params0[i], params0[i + 1]
        lin = torch.nn.Linear(W.shape[0], W.shape[1])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W.T.copy()))
            lin.bias.copy_(torch.from_numpy(b))
        layers += [lin, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def torch_step(X, y, params0, ddp: bool):
    import torch
    import torch.nn.functional as F
    from fastgraph.bench import mlp
    model = _torch_model(params0)
    if ddp:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=mlp.LR)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(Xt), yt)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def _init_gloo(w):
    """PyTorch's process group over gloo, its rendezvous at rank 0's address."""
    import torch.distributed as tdist
    if tdist.is_initialized():
        return
    host = socket.gethostname()
    if w.rank == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
    else:
        port = None
    host0, port = w.comm.bcast((host, port), root=0)
    same_host = all(h == host0 for h in w.comm.allgather(host))
    addr = "127.0.0.1" if same_host else host0
    tdist.init_process_group("gloo", init_method=f"tcp://{addr}:{port}", rank=w.rank,
                             world_size=w.size)


# ---- timing under MPI ---------------------------------------------------------------------------
def _alone(w, fn: Callable, number: int) -> float:
    """``number`` calls of ``fn`` on rank 0 while the other ranks sleep (a non-blocking barrier
    polled every half millisecond, so they take no CPU time from rank 0)."""
    if w.comm is not None and w.size > 1:
        w.comm.Barrier()
    if w.rank == 0:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        t = (time.perf_counter() - t0) / number
    else:
        t = 0.0
    if w.comm is not None and w.size > 1:
        req = w.comm.Ibarrier()
        while not req.Test():
            time.sleep(0.0005)
        t = w.comm.bcast(t, root=0)
    return t


def _together(w, fn: Callable, number: int) -> float:
    """``number`` calls of ``fn`` on every rank at once: the slowest rank's time per call."""
    if w.comm is not None and w.size > 1:
        w.comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    t = (time.perf_counter() - t0) / number
    if w.comm is not None and w.size > 1:
        t = w.comm.allreduce(t, op=w.MPI.MAX)
    return t


def _interleaved(w, jobs: dict[str, tuple[Callable, Callable, int]], rounds: int) -> dict:
    """Each job ``name: (timer, fn, number)`` once per round, in an order shuffled the same way
    on every rank; the medians (and every round's time) per job."""
    times: dict[str, list[float]] = {k: [] for k in jobs}
    order = list(jobs)
    rng = random.Random(0)
    for name, (timer, fn, number) in jobs.items():   # warm-up
        timer(w, fn, 1)
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            timer, fn, number = jobs[name]
            times[name].append(timer(w, fn, number))
    return {k: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v),
                "rounds": len(v)} for k, v in times.items()}


# ---- the allreduce microbenchmark -----------------------------------------------------------------
def _allreduce_jobs(w, mb: int):
    import fastgraph as fg
    import fastgraph.distributed as dist
    n = mb * 2 ** 20 // 4
    k = 8
    params = [fg.tensor(np.zeros(n // k, np.float32), requires_grad=True) for _ in range(k)]
    grads = [fg.tensor(np.random.default_rng(i).standard_normal(n // k).astype(np.float32))
             for i in range(k)]
    averager = dist._GradientAverager(params)
    for h in averager.handles:     # (fed by hand below, as the backward pass would)
        h.remove()

    def bucketed():
        for p, g in zip(reversed(params), reversed(grads)):
            averager._ready(p, g)

    flat = np.concatenate([g._ndarray for g in grads])
    work = flat.copy()

    def raw():
        w.comm.Allreduce(w.MPI.IN_PLACE, work, op=w.MPI.SUM)

    def op():
        dist.allreduce(flat, op="mean")

    number = max(1, 64 // mb)
    return {f"bucketed {mb} MB": (_together, bucketed, number),
            f"mpi4py {mb} MB": (_together, raw, number),
            f"fastgraph.distributed.allreduce {mb} MB": (_together, op, number)}


# ---- the run ------------------------------------------------------------------------------------
def run(quick: bool = False, torch_peer: bool = True) -> dict[str, Any]:
    from fastgraph.bench.timing import machine_load
    import fastgraph.distributed as dist
    w = _world()
    load = machine_load()
    X, y, params0 = _data()
    Xr, yr = dist.shard(X), dist.shard(y)
    rounds = 3 if quick else 11
    number = 2 if quick else 5
    jobs = {
        "fastgraph eager, 1 rank": (_alone, fastgraph_eager_step(X, y, params0, False), number),
        "fastgraph static, 1 rank": (_alone, fastgraph_static_step(X, y, params0, False), number),
    }
    if w.size > 1:
        jobs[f"fastgraph eager, {w.size} ranks"] = (
            _together, fastgraph_eager_step(Xr, yr, params0, True), number)
        jobs[f"fastgraph static, {w.size} ranks"] = (
            _together, fastgraph_static_step(Xr, yr, params0, True), number)
    CX, Cy, cparams = _cnn_data()
    jobs[f"cnn eager (batch {CNN_GLOBAL_BATCH}), 1 rank"] = (
        _alone, cnn_eager_step(CX, Cy, cparams, False), number)
    if w.size > 1:
        jobs[f"cnn eager (batch {CNN_GLOBAL_BATCH}), {w.size} ranks"] = (
            _together, cnn_eager_step(dist.shard(CX), dist.shard(Cy), cparams, True), number)
    has_torch = False
    if torch_peer:
        try:
            import torch
            torch.set_num_threads(1)
            has_torch = True
        except ImportError:
            pass
    if has_torch:
        jobs["torch, 1 rank"] = (_alone, torch_step(X, y, params0, False), number)
        if w.size > 1:
            _init_gloo(w)
            jobs[f"torch DDP (gloo), {w.size} ranks"] = (
                _together, torch_step(Xr, yr, params0, True), number)
    mlp = _interleaved(w, jobs, rounds)
    out: dict[str, Any] = {"benchmark": "distributed", "ranks": w.size,
                           "global_batch": GLOBAL_BATCH, "machine_load": load, "mlp": mlp,
                           "efficiency": {}, "allreduce": {}, "allreduce_ratio": {}}
    if w.size > 1:
        whos = ["fastgraph eager", "fastgraph static", f"cnn eager (batch {CNN_GLOBAL_BATCH})"]
        for who in whos + (["torch"] if has_torch else []):
            many = f"{who}, {w.size} ranks" if who != "torch" else \
                f"torch DDP (gloo), {w.size} ranks"
            out["efficiency"][who] = (mlp[f"{who}, 1 rank"]["median_s"]
                                      / (w.size * mlp[many]["median_s"]))
        for mb in (MB_SIZES[:2] if quick else MB_SIZES):
            res = _interleaved(w, _allreduce_jobs(w, mb), rounds)
            out["allreduce"].update(res)
            out["allreduce_ratio"][f"{mb} MB"] = {
                "bucketed/mpi4py": res[f"bucketed {mb} MB"]["median_s"]
                / res[f"mpi4py {mb} MB"]["median_s"],
                "op/mpi4py": res[f"fastgraph.distributed.allreduce {mb} MB"]["median_s"]
                / res[f"mpi4py {mb} MB"]["median_s"]}
    out["summary"] = summary_rows(out)
    if w.rank == 0:
        from fastgraph.cli.bench import machine_facts
        out["machine"] = machine_facts()
    return out


def summary_rows(out: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's rows: each scaling efficiency (against the ideal, 1.0) and each allreduce
    time ratio against raw mpi4py, with its target."""
    rows = [{"workload": "distributed", "case": f"scaling efficiency, {out['ranks']} ranks",
             "fastgraph": who, "peer": "ideal", "ratio": eff, "target": TARGETS["efficiency"],
             "higher_is_better": True}
            for who, eff in out["efficiency"].items()]
    rows += [{"workload": "distributed", "case": f"allreduce {mb}", "fastgraph": "bucketed",
              "peer": "mpi4py", "ratio": r["bucketed/mpi4py"], "target": TARGETS["allreduce"]}
             for mb, r in out["allreduce_ratio"].items()]
    return rows


def report(out: dict[str, Any], file=sys.stdout) -> None:
    load = out["machine_load"]
    print(f"distributed: {out['ranks']} rank(s), global batch {out['global_batch']}; load "
          f"average {load and load['load_average']} on {load and load['cpus']} CPUs"
          f"{' (BUSY: ratios are noisy)' if load and load['busy'] else ''}", file=file)
    for name, s in out["mlp"].items():
        print(f"  {name:<34} {s['median_s'] * 1e3:9.2f} ms/step  (min {s['min_s'] * 1e3:.2f}, "
              f"max {s['max_s'] * 1e3:.2f})", file=file)
    for who, e in out["efficiency"].items():
        print(f"  scaling efficiency {who:<26} {e:.3f}  (target >= {TARGETS['efficiency']}"
              f"{', and >= torch DDP' if who != 'torch' else ''})", file=file)
    for name, s in out["allreduce"].items():
        print(f"  {name:<44} {s['median_s'] * 1e3:9.3f} ms", file=file)
    for mb, r in out["allreduce_ratio"].items():
        print(f"  allreduce {mb:>6}: bucketed / mpi4py {r['bucketed/mpi4py']:.3f}  (target <= "
              f"{TARGETS['allreduce']}), op / mpi4py {r['op/mpi4py']:.3f}", file=file)


def main(argv: list[str] | None = None) -> int:
    from fastgraph.bench.timing import save_json
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and sizes")
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch DDP out")
    parser.add_argument("--json", help="write the results (rank 0) to this file")
    args = parser.parse_args(argv)
    out = run(quick=args.quick, torch_peer=not args.no_torch)
    if _world().rank == 0:
        report(out)
        if args.json:
            save_json(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
