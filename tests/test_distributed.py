"""fastgraph.distributed: in this process (a world of one, with or without mpi4py), and real
two-process jobs under ``mpirun -n 2`` (the programs in tests/mpi_programs/, skipped without
mpi4py and mpirun).  The collectives' size-1 values and gradients are also op-table lines
(tests/optable.py)."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.distributed as dist

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "mpi_programs"


def _mpirun():
    found = Path(sys.executable).parent / "mpirun"
    return str(found) if found.is_file() else shutil.which("mpirun")


needs_mpi = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or _mpirun() is None,
    reason="mpi4py and mpirun are not installed (pip install 'fastgraph[mpi]')")


def _launch(program: str, n: int = 2, timeout: float = 120, args=(), **environ):
    env = dict(os.environ)
    env.update(environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               FASTGRAPH_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(Path(fg.__file__).resolve().parent.parent)]
                                          + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    cmd = [_mpirun(), "--oversubscribe", "--bind-to", "none", "-n", str(n), sys.executable,
           str(PROGRAMS / program), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


# ---- under mpirun -n 2 -------------------------------------------------------------------------
@needs_mpi
def test_two_ranks_collectives_and_data_parallel_training():
    """Values and gradients of every collective (eager, static, fg.function), mismatches named,
    broadcast, and 20 steps of SGD/Adam, eager and static, on half a batch per rank: bit for bit
    equal across ranks and equal to one process on the whole batch."""
    res = _launch("collectives_and_training.py")
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(res.stdout.split("\n")[:-1]) == ["ok 0", "ok 1"], res.stdout + res.stderr


@needs_mpi
def test_two_ranks_data_parallel_where_mpi_allows_no_threads():
    """Without MPI_THREAD_MULTIPLE the buckets' allreduces are non-blocking ones but for the
    last, reduced in the training thread: the gradients are still the ranks' average."""
    res = _launch("ddp_without_threads.py", MPI4PY_RC_THREAD_LEVEL="serialized")
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(res.stdout.split("\n")[:-1]) == ["ok 0", "ok 1"], res.stdout + res.stderr


@needs_mpi
@pytest.mark.parametrize("where, error", [
    ("main", "ValueError: a deliberate failure on one rank"),
    ("thread", "ValueError: a deliberate failure on one rank, in a thread")])
def test_a_raising_rank_aborts_the_job_with_its_error(where, error):
    import time
    start = time.monotonic()
    res = _launch("raising_rank.py", timeout=60, args=[where])   # (a hang would time out here)
    took = time.monotonic() - start
    assert res.returncode != 0, res.stdout + res.stderr
    assert "passed the allreduce" not in res.stdout
    assert "rank 1 of 2 raised" in res.stderr, res.stderr
    assert f"[rank 1] {error}" in res.stderr, res.stderr
    assert took < 30, took             # (seconds: mpirun's start-up and the abort, no waiting)


@needs_mpi
@pytest.mark.parametrize("case, named", [
    ("allreduce", "allreduce (float64 (3,))"),
    ("barrier", "barrier"),
    ("ddp", "DistributedDataParallel's gradient allreduce (bucket 1 of 1, float64 (4,))")])
def test_a_skipped_collective_aborts_the_job_after_the_timeout(case, named):
    """Rank 1 skips a collective and sleeps a minute; rank 0 waits in it: the deadline (1 s)
    ends the whole job in seconds, naming the collective and rank 0."""
    import time
    start = time.monotonic()
    res = _launch("skipped_collective.py", timeout=50, args=[case],
                  FASTGRAPH_COLLECTIVE_TIMEOUT="1")       # (a hang would time out here)
    took = time.monotonic() - start
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert "rank 0 passed the first allreduce" in res.stdout, out
    assert "the job was not aborted" not in res.stdout, out
    assert f"rank 0 of 2 waited 1 s in {named} for the other ranks to join it" in res.stderr, out
    assert "FASTGRAPH_COLLECTIVE_TIMEOUT" in res.stderr, out
    assert took < 40, took                   # (rank 1 sleeps 60 s: it was ended, not waited for)


@pytest.mark.parametrize("value, expected", [
    ("2.5", 2.5), ("0", None), ("none", None), ("inf", None), ("", dist.DEFAULT_TIMEOUT),
    (None, dist.DEFAULT_TIMEOUT)])
def test_the_timeout_from_the_environment(value, expected):
    code = ("import fastgraph.distributed as d\n"
            "print(repr(d.collective_timeout()))\n"
            "print(repr(d.set_timeout(7))); d.init(timeout=0); print(repr(d.collective_timeout()))")
    env = dict(os.environ, PYTHONPATH=str(Path(fg.__file__).resolve().parent.parent))
    env.pop("FASTGRAPH_COLLECTIVE_TIMEOUT", None)
    if value is not None:
        env["FASTGRAPH_COLLECTIVE_TIMEOUT"] = value
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.stdout.split() == [repr(expected), repr(expected), "None"], res.stdout + res.stderr


def test_set_timeout_checks_its_argument():
    import datetime
    previous = dist.set_timeout(datetime.timedelta(minutes=2))
    try:
        assert dist.collective_timeout() == 120.0
        assert dist.set_timeout(None) == 120.0 and dist.collective_timeout() is None
        for bad, error, message in [(-1, ValueError, ">= 0"), ("soon", ValueError, "seconds"),
                                    (True, TypeError, "number of seconds"),
                                    (float("nan"), ValueError, ">= 0")]:
            with pytest.raises(error, match=message):
                dist.set_timeout(bad)
        with pytest.raises(ValueError, match="init: timeout: expected a number of seconds"):
            dist.init(timeout="later")
        assert dist.collective_timeout() is None        # (unchanged by a refused value)
    finally:
        dist.set_timeout(previous)


def test_a_dropped_ddp_releases_its_hooks():
    import gc
    import weakref
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    ddp = dist.DistributedDataParallel([w])
    averager = weakref.ref(ddp._averager)
    assert len(w._ready_hooks) == 1
    gc.disable()                  # (reference counting alone releases it)
    try:
        del ddp
        assert averager() is None and w._ready_hooks == []
        opt = dist.DistributedOptimizer(fg.optim.SGD([w], lr=0.5))
        averager = weakref.ref(opt._distributed._averager)
        (w * w).sum().backward()
        opt.step()
        del opt
        assert averager() is None and w._ready_hooks == []
    finally:
        gc.enable()
    np.testing.assert_array_equal(w.data, [0.0, 0.0])
    removed = dist.DistributedDataParallel([w])
    removed.remove()
    removed.remove()              # (a second remove, and then the finalizer, do nothing)
    assert w._ready_hooks == []


# ---- a world of one process ----------------------------------------------------------------
def test_alone_is_a_world_of_one():
    w = dist.init()
    assert (w.rank, w.size, w.local_rank) == (0, 1, 0)
    assert (dist.rank(), dist.size(), dist.local_rank()) == (0, 1, 0)
    dist.barrier()
    x = np.arange(6.0).reshape(2, 3)
    for f in (dist.allreduce, lambda a: dist.allreduce(a, op="mean"), dist.allgather,
              dist.reduce_scatter, dist.broadcast, dist.reduce):
        out = f(x)
        np.testing.assert_array_equal(out, x)
        assert out is not x
    assert dist.allgather(np.float64(2.0)).shape == (1,)


@pytest.mark.parametrize("call, message", [
    (lambda: dist.allreduce(np.ones(2), op="max"), "op must be one of"),
    (lambda: dist.allreduce(np.ones(2, np.int64), op="mean"), "op='mean' needs a floating"),
    (lambda: dist.broadcast(np.ones(2), root=1), "root must be a rank in [0, 1)"),
    (lambda: dist.reduce_scatter(np.float64(1.0)), "at least one dimension"),
    (lambda: dist.shard(np.ones(4), rank=2, size=2), "rank must be in [0, size)"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("[", r"\[").replace(
            "(", r"\(").replace(")", r"\)")):
        call()


def test_launched_by_mpirun_without_mpi4py_is_an_error_not_a_lone_run():
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "import numpy as np, fastgraph.distributed as d\n"
            "try:\n    d.allreduce(np.ones(2))\n"
            "except RuntimeError as e:\n    print('raised:', e)\n")
    env = dict(os.environ, OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_RANK="0",
               PYTHONPATH=str(Path(fg.__file__).resolve().parent.parent))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert "raised:" in res.stdout and "one of 2 processes" in res.stdout, res.stdout + res.stderr
    assert "fastgraph[mpi]" in res.stdout
    # one process alone, mpi4py or not, is a world of one
    env.pop("OMPI_COMM_WORLD_SIZE"), env.pop("OMPI_COMM_WORLD_RANK")
    res = subprocess.run([sys.executable, "-c", code.replace("try:", "print(d.size())\ntry:")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.stdout.strip() == "1", res.stdout + res.stderr


def _mlp_values(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((4, 8)), np.zeros(8), rng.standard_normal((8, 1))]


def _train(make_opt, wrap, steps=5):
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((16, 4)), rng.standard_normal((16, 1))
    ps = [fg.tensor(a, requires_grad=True) for a in _mlp_values()]
    opt = wrap(make_opt(ps))
    for _ in range(steps):
        opt.zero_grad()
        h = fg.tanh(fg.tensor(X) @ ps[0] + ps[1])
        ((h @ ps[2] - Y) ** 2).mean().backward()
        opt.step()
    return [p.data for p in ps]


@pytest.mark.parametrize("make_opt", [lambda ps: fg.optim.SGD(ps, lr=0.1, momentum=0.9),
                                      lambda ps: fg.optim.Adam(ps, lr=0.01)],
                         ids=["SGD", "Adam"])
@pytest.mark.parametrize("bucket_bytes", [1, 64, dist.BUCKET_BYTES])
def test_eager_distributed_optimizer_alone_is_the_optimizer(make_opt, bucket_bytes):
    """One bucket per parameter, a few, or one: the grad-ready hooks' averaging delivers the
    gradients unchanged in a world of one."""
    plain = _train(make_opt, lambda o: o)
    wrapped = _train(make_opt, lambda o: dist.DistributedOptimizer(o, bucket_bytes=bucket_bytes))
    for a, b in zip(wrapped, plain):
        np.testing.assert_array_equal(a, b)


def test_the_eager_distributed_optimizer_is_still_the_optimizer():
    import fastgraph.torch.optim as topt
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    inner = topt.SGD([w], lr=1.0)
    opt = dist.DistributedOptimizer(inner)
    assert isinstance(opt, topt.SGD) and opt.param_groups is inner.param_groups
    sched = topt.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    (w * w).sum().backward()
    opt.step()
    sched.step()
    np.testing.assert_array_equal(w.data, [-1.0, -2.0])
    assert opt.param_groups[0]["lr"] == 0.5
    with pytest.raises(TypeError, match="expected an optimizer"):
        dist.DistributedOptimizer(3)


def test_ddp_gradients_accumulate_over_two_backward_passes():
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    v = fg.tensor([3.0], requires_grad=True)
    dist.DistributedDataParallel([w, v], find_unused_parameters=True)
    (w * w).sum().backward()
    (w * 3.0).sum().backward()        # v unused twice: no gradient
    np.testing.assert_array_equal(w.grad.data, [5.0, 7.0])
    assert v.grad is None
    u = fg.tensor([1.0, 2.0], requires_grad=True)
    dist.DistributedDataParallel([u])
    (u * u).sum().backward()
    (u * 3.0).sum().backward()        # every parameter reached: each pass averaged in the walk
    np.testing.assert_array_equal(u.grad.data, [5.0, 7.0])


def test_ddp_unused_parameter_without_find_unused_parameters_is_an_error():
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    v = fg.tensor([3.0], requires_grad=True)
    opt = dist.DistributedOptimizer(fg.optim.SGD([w, v], lr=1.0))
    (w * w).sum().backward()
    with pytest.raises(RuntimeError, match=r"parameters \[1\] got no gradient on rank 0"):
        opt.step()


def test_ddp_unused_parameter_is_completed_by_synchronize():
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    v = fg.tensor([3.0], requires_grad=True)
    opt = dist.DistributedOptimizer(fg.optim.SGD([w, v], lr=1.0), find_unused_parameters=True)
    (w * w).sum().backward()
    opt.step()                       # v's missing gradient counts as zeros on this rank
    np.testing.assert_array_equal(w.data, [-1.0, -2.0])
    np.testing.assert_array_equal(v.data, [3.0])


def test_grad_ready_hooks_run_during_the_walk_after_the_tensor_hooks():
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    w.register_hook(lambda g: g * 10.0)
    h = w.register_grad_ready_hook(lambda t, g: (seen.append((t is w, g.data.tolist(),
                                                              w.grad)), g + 1.0)[1])
    (w * 3.0).sum().backward()
    assert seen == [(True, [30.0, 30.0], None)]     # before .grad was set
    np.testing.assert_array_equal(w.grad.data, [31.0, 31.0])
    g, = fg.autograd.grad((w * 3.0).sum(), [w])     # not for fg.autograd.grad
    np.testing.assert_array_equal(g.data, [30.0, 30.0])
    assert len(seen) == 1
    h.remove()
    w.grad = None
    (w * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad.data, [30.0, 30.0])
    with pytest.raises(RuntimeError, match="only a leaf"):
        (w * 2.0).register_grad_ready_hook(lambda t, g: None)


def test_a_raising_grad_ready_hook_leaves_the_gradients_as_they_were():
    w = fg.tensor([1.0, 2.0], requires_grad=True)

    def boom(t, g):
        raise KeyError("hook")

    w.register_grad_ready_hook(boom)
    with pytest.raises(KeyError):
        (w * 3.0).sum().backward()
    assert w.grad is None


def test_static_distributed_optimizer_alone_is_the_optimizer():
    def run(wrap):
        with fg.Graph().as_default() as g:
            vs = [fg.Variable(a) for a in _mlp_values()]
            x = fg.placeholder("float64", (None, 4))
            loss = fg.reduce_mean(fg.matmul(fg.tanh(fg.matmul(x, vs[0]) + vs[1]), vs[2]) ** 2)
            train = wrap(fg.train.AdamOptimizer(0.01)).minimize(loss)
            ops = [getattr(getattr(n, "op", None), "name", "") for n in g.nodes]
            with fg.Session() as sess:
                sess.run(fg.global_variables_initializer())
                sess.run(dist.broadcast_global_variables(0))
                for _ in range(5):
                    sess.run(train, {x: np.ones((3, 4))})
                return sess.run(vs), ops.count("allreduce")
    wrapped, n_buckets = run(dist.DistributedOptimizer)
    plain, n_plain = run(lambda o: o)
    assert (n_buckets, n_plain) == (1, 0)
    for a, b in zip(wrapped, plain):
        np.testing.assert_allclose(a, b, rtol=1e-14)


def test_shard_blocks_are_disjoint_and_cover():
    data = np.arange(11)
    parts = [dist.shard(data, r, 3) for r in range(3)]
    assert [len(p) for p in parts] == [4, 4, 3]
    np.testing.assert_array_equal(np.concatenate(parts), data)
    assert dist.shard(list(range(5)), 1, 2) == [3, 4]
    np.testing.assert_array_equal(dist.shard(data), data)     # the world's rank and size


@pytest.mark.parametrize("n, size, drop_last", [(12, 3, False), (10, 4, False), (10, 4, True)])
def test_distributed_sampler_parts_are_disjoint_equal_and_seeded(n, size, drop_last):
    for epoch in (0, 1):
        parts = []
        for r in range(size):
            s = dist.DistributedSampler(n, num_replicas=size, rank=r, seed=7,
                                        drop_last=drop_last)
            s.set_epoch(epoch)
            parts.append(list(s))
            assert len(parts[-1]) == len(s)
        flat = sorted(i for p in parts for i in p)
        if n % size == 0:
            assert flat == list(range(n))
        elif drop_last:
            assert len(set(flat)) == len(flat) == n // size * size
        else:
            assert set(flat) == set(range(n)) and len(flat) == -(-n // size) * size
        if epoch == 0:
            first = parts
    assert parts != first                     # a new permutation each epoch
    again = dist.DistributedSampler(n, size, 0, seed=7, drop_last=drop_last)
    again.set_epoch(1)
    assert list(again) == parts[0]


def test_zero_d_values_keep_their_shape():
    for f in (dist.allreduce, dist.broadcast, dist.reduce):
        assert f(np.float64(2.0)).shape == ()
        t = fg.tensor(2.0, requires_grad=True)
        f(t).backward()
        assert t.grad.data.shape == () and float(t.grad.data) == 1.0


def test_info_shows_mpi():
    from fastgraph.cli import info
    facts = info.collect()["mpi"]
    assert (facts["mpi4py"] is not None) == (importlib.util.find_spec("mpi4py") is not None)
    assert facts["launched_size"] is None
    out = subprocess.run([sys.executable, "-m", "fastgraph", "info"], capture_output=True,
                         text=True, timeout=120,
                         env=dict(os.environ,
                                  PYTHONPATH=str(Path(fg.__file__).resolve().parent.parent)))
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("MPI")]
    assert len(line) == 1, out.stdout + out.stderr
    assert ("mpi4py " + str(facts["mpi4py"])) in line[0] if facts["mpi4py"] else \
        "not available" in line[0]


def test_distributed_sampler_feeds_the_data_loader():
    from fastgraph.torch.utils.data import DataLoader, TensorDataset
    import fastgraph.torch as ftorch
    data = TensorDataset(ftorch.arange(10.0))
    seen = []
    for r in range(2):
        sampler = dist.DistributedSampler(data, num_replicas=2, rank=r, seed=3)
        sampler.set_epoch(1)
        batches = list(DataLoader(data, batch_size=2, sampler=sampler))
        assert [len(b[0]) for b in batches] == [2, 2, 1]
        seen += [float(v) for b in batches for v in b[0].data]
    assert sorted(seen) == [float(i) for i in range(10)]
    with pytest.raises(ValueError, match="rank must be in"):
        dist.DistributedSampler(data, num_replicas=2, rank=2)
