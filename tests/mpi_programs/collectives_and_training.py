"""Run under ``mpirun -n 2`` by tests/test_distributed.py: the collectives' values and gradients
(eager, static, fg.function; allgather with a different first axis on each rank), mismatches
named on every rank, broadcast making ranks equal, data-parallel training (eager and static,
SGD and Adam, 20 steps) on half a batch per rank against one process on the whole batch, the
static optimizer's bucket count, DistributedSampler's parts across the ranks, and
DistributedDataParallel released without remove().  Prints ``ok <rank>`` at the end."""
import numpy as np

import fastgraph as fg
import fastgraph.distributed as dist

w = dist.init()
R, N = w.rank, w.size
assert N == 2, N
assert (dist.rank(), dist.size(), dist.local_rank()) == (R, 2, R)   # (one machine)
dist.barrier()
eq = np.testing.assert_array_equal


def close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=what)


def same_on_every_rank(a, what):
    """Bit for bit: every rank holds the same array."""
    rows = w.comm.allgather(np.ascontiguousarray(a))
    for r, row in enumerate(rows):
        assert row.dtype == rows[0].dtype and row.shape == rows[0].shape, what
        assert np.array_equal(row.view(np.uint8), rows[0].view(np.uint8)), \
            f"{what}: rank {r} differs from rank 0"


# ---- collectives: values --------------------------------------------------------------------
x = np.arange(6.0).reshape(2, 3) + 10 * R
eq(dist.allreduce(x), np.arange(6.0).reshape(2, 3) * 2 + 10)
eq(dist.allreduce(x, op="mean"), np.arange(6.0).reshape(2, 3) + 5)
eq(dist.allreduce(np.array([R + 1], np.int64)), [3])
eq(dist.allgather(x), np.concatenate([np.arange(6.0).reshape(2, 3),
                                      np.arange(6.0).reshape(2, 3) + 10]))
eq(dist.allgather(np.float64(R)), [0.0, 1.0])
eq(dist.reduce_scatter(np.arange(4.0) * (R + 1)), (np.arange(4.0) * 3)[2 * R:2 * R + 2])
eq(dist.broadcast(x, root=1), np.arange(6.0).reshape(2, 3) + 10)
eq(dist.reduce(x, root=0), (np.arange(6.0).reshape(2, 3) * 2 + 10) if R == 0 else np.zeros((2, 3)))
assert dist.allreduce(x.astype(np.float32)).dtype == np.float32

# ---- collectives: gradients, eager, static, fg.function --------------------------------------
c = np.array([1.0, 2.0, 3.0]) * (R + 1)          # each rank's own cotangent
c_sum = np.array([1.0, 2.0, 3.0]) * 3
v = np.array([0.5, -1.0, 2.0]) + R


def check_grad(fn, expected, what):
    t = fg.tensor(v, requires_grad=True)
    (fn(t) * c).sum().backward()
    close(t.grad.data, expected, f"{what} (eager)")
    ph = fg.placeholder("float64", (3,))
    dx, = fg.gradients((fn(ph) * c).sum(), [ph])
    with fg.Session() as sess:
        close(sess.run(dx, {ph: v}), expected, f"{what} (static)")
    f = fg.function(lambda a: (fn(a) * c).sum())
    close(fg.grad(f)(v), expected, f"{what} (fg.function)")
    close(f(v), float((fn(v) * c).sum()), f"{what} (fg.function value)")


check_grad(lambda a: dist.allreduce(a), c_sum, "allreduce sum")
check_grad(lambda a: dist.allreduce(a, op="mean"), c_sum / 2, "allreduce mean")
check_grad(lambda a: dist.broadcast(a, root=1), c_sum if R == 1 else np.zeros(3), "broadcast")
check_grad(lambda a: dist.reduce(a, root=0), np.array([1.0, 2.0, 3.0]), "reduce")  # (root's c)
# allgather: d/dx_r of sum_s <allgather(x), C_s> is block r of sum_s C_s
C = np.arange(12.0).reshape(4, 3) * (R + 1)
C_sum = np.arange(12.0).reshape(4, 3) * 3
t = fg.tensor(x, requires_grad=True)
(dist.allgather(t) * C).sum().backward()
close(t.grad.data, C_sum[2 * R:2 * R + 2], "allgather (eager)")
ph = fg.placeholder("float64", (2, 3))
dx, = fg.gradients((dist.allgather(ph) * C).sum(), [ph])
with fg.Session() as sess:
    close(sess.run(dx, {ph: x}), C_sum[2 * R:2 * R + 2], "allgather (static)")
# allgather with a different first axis on each rank (Horovod's): values, and gradients that
# split back to each rank's rows, eager, static and in fg.function
rows = 2 + R
u = np.arange(rows * 3.0).reshape(rows, 3) + 100 * R
both = np.concatenate([np.arange(6.0).reshape(2, 3), np.arange(9.0).reshape(3, 3) + 100])
eq(dist.allgather(u), both)
eq(dist.allgather(u.astype(np.int32)), both.astype(np.int32))
eq(dist.allgather(np.full((R, 2), 7.0)), np.full((1, 2), 7.0))       # rank 0 sends no rows
G = np.arange(15.0).reshape(5, 3) * (R + 1)
G_sum = np.arange(15.0).reshape(5, 3) * 3
mine = G_sum[:2] if R == 0 else G_sum[2:]
t = fg.tensor(u, requires_grad=True)
(dist.allgather(t) * G).sum().backward()
close(t.grad.data, mine, "uneven allgather (eager)")
ph = fg.placeholder("float64", (None, 3))
gathered = dist.allgather(ph)
assert tuple(gathered.shape) == (None, 3), gathered.shape
dx, = fg.gradients((gathered * G).sum(), [ph])
with fg.Session() as sess:
    close(sess.run(dx, {ph: u}), mine, "uneven allgather (static)")
f = fg.function(lambda a: (dist.allgather(a) * G).sum())
close(fg.grad(f)(u), mine, "uneven allgather (fg.function)")
close(f(u), float((both * G).sum()), "uneven allgather (fg.function value)")
# a rank with no rows, and 0-d values (one row each), differentiate too
t = fg.tensor(np.full((R, 2), 7.0), requires_grad=True)
(dist.allgather(t) * (np.array([[1.0, 2.0]]) * (R + 1))).sum().backward()
eq(t.grad.data, np.zeros((0, 2)) if R == 0 else np.array([[3.0, 6.0]]))
t = fg.tensor(float(R), requires_grad=True)
(dist.allgather(t) * (np.array([1.0, 2.0]) * (R + 1))).sum().backward()
assert t.grad.data.shape == () and float(t.grad.data) == 3.0 * (R + 1), t.grad
# second order: allgather's gradient is differentiable too (its VJP is allgather)
t = fg.tensor(u, requires_grad=True)
gx, = fg.autograd.grad((dist.allgather(t) ** 2 * G).sum() / 2, [t], create_graph=True)
close(gx.data, mine * u, "uneven allgather first derivative")
(gx * gx).sum().backward()
close(t.grad.data, 2 * mine * mine * u, "uneven allgather second derivative")
# every axis but the first must match, and the dtype, named before anything is sent
for bad, shown in [(np.ones((2, 3 + R)), ("float64 (*, 3)", "float64 (*, 4)")),
                   (np.ones((2, 3), np.float32 if R else np.float64),
                    ("float64 (*, 3)", "float32 (*, 3)")),
                   (np.float64(1.0) if R else np.ones(1), ("float64 (*,)", "float64 ()"))]:
    try:
        dist.allgather(bad)
    except dist.CollectiveMismatchError as e:
        msg = str(e)
        assert f"rank 0: ('allgather', '{shown[0]}')" in msg, msg
        assert f"rank 1: ('allgather', '{shown[1]}')" in msg, msg
        assert "beyond the first axis" in msg, msg
    else:
        raise AssertionError(f"a mismatched allgather did not raise ({shown})")
# without the checks the first axes are still exchanged
previous = dist.set_checks(False)
eq(dist.allgather(u), both)
t = fg.tensor(u, requires_grad=True)
(dist.allgather(t) * G).sum().backward()
close(t.grad.data, mine, "uneven allgather without the checks")
dist.set_checks(previous)

# second order through the collective: d2/dx2 of sum(allreduce(x)**3 * c) / 3 ... diagonal
t = fg.tensor(v, requires_grad=True)
gx, = fg.autograd.grad((dist.allreduce(t) ** 3 * c).sum() / 3, [t], create_graph=True)
total = v + (np.array([0.5, -1.0, 2.0]) + (1 - R))
close(gx.data, dist.allreduce(total ** 2 * c), "allreduce first derivative")
gx.sum().backward()
close(t.grad.data, dist.allreduce(dist.allreduce(2 * total * c)), "allreduce second derivative")

# ---- a mismatch is named on every rank ------------------------------------------------------
try:
    dist.allreduce(np.ones(3 + R))
except dist.CollectiveMismatchError as e:
    msg = str(e)
    assert "rank 0: ('allreduce', 'sum', 'float64 (3,)')" in msg, msg
    assert "rank 1: ('allreduce', 'sum', 'float64 (4,)')" in msg, msg
else:
    raise AssertionError("a mismatched allreduce did not raise")
try:
    dist.broadcast(np.ones(2, np.float32 if R else np.float64))
except dist.CollectiveMismatchError as e:
    assert "float32" in str(e) and "float64" in str(e), str(e)
else:
    raise AssertionError("a mismatched broadcast did not raise")

# ---- broadcast_parameters makes the ranks equal ----------------------------------------------
p = fg.tensor(np.random.default_rng(R).standard_normal((3, 2)), requires_grad=True)
dist.broadcast_parameters([p], root=1)
eq(p.data, np.random.default_rng(1).standard_normal((3, 2)))
same_on_every_rank(p.data, "broadcast_parameters")

# ---- data-parallel training: half a batch per rank == one process on the whole batch --------
data_rng = np.random.default_rng(42)
X = data_rng.standard_normal((64, 5))
Y = np.sin(X @ data_rng.standard_normal((5, 1)))


def init_values(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((5, 16)) * 0.5, np.zeros(16), rng.standard_normal((16, 1)) * 0.5]


def eager_loss(ps, xb, yb):
    w1, b1, w2 = ps
    h = fg.tanh(xb @ w1 + b1)
    return ((h @ w2 - yb) ** 2).mean()


def train_eager(make_opt, xb, yb, seed, distributed, steps=20):
    ps = [fg.tensor(a, requires_grad=True) for a in init_values(seed)]
    opt = make_opt(ps)
    if distributed:
        # several buckets: the first layer's gradients are a bucket of their own
        opt = dist.DistributedOptimizer(opt, bucket_bytes=5 * 16 * 8)
    for _ in range(steps):
        opt.zero_grad()
        eager_loss(ps, fg.tensor(xb), fg.tensor(yb)).backward()
        opt.step()
    return [p.data for p in ps]


for name, make_opt in [("SGD", lambda ps: fg.optim.SGD(ps, lr=0.1)),
                       ("SGD momentum", lambda ps: fg.optim.SGD(ps, lr=0.05, momentum=0.9)),
                       ("Adam", lambda ps: fg.optim.Adam(ps, lr=0.01))]:
    ref = train_eager(make_opt, X, Y, 0, distributed=False)
    got = train_eager(make_opt, dist.shard(X), dist.shard(Y), R, distributed=True)
    for a, b in zip(got, ref):
        same_on_every_rank(a, f"eager {name}")
        close(a, b, f"eager {name} against one process")
    assert not np.allclose(got[0], init_values(0)[0]), "training did not move"

# DistributedDataParallel around the parameters, a model called through
ps = [fg.tensor(a, requires_grad=True) for a in init_values(R)]
model = dist.DistributedDataParallel(ps)
opt = fg.optim.SGD(ps, lr=0.1)
for _ in range(20):
    opt.zero_grad()
    eager_loss(ps, fg.tensor(dist.shard(X)), fg.tensor(dist.shard(Y))).backward()
    opt.step()
ref = train_eager(lambda q: fg.optim.SGD(q, lr=0.1), X, Y, 0, distributed=False)
for a, b in zip(ps, ref):
    same_on_every_rank(a.data, "DistributedDataParallel")
    close(a.data, b, "DistributedDataParallel against one process")
model.remove()

# fastgraph.torch.optim's optimizers too, and each bucket's allreduce starts during the backward
# pass, as soon as its gradients are in (one bucket per parameter here: two sends, after the
# first and second parameter's gradient; the last bucket, complete with the pass, is reduced
# in the training thread once those two are done)
import fastgraph.torch.optim as topt  # noqa: E402
ps = [fg.tensor(a, requires_grad=True) for a in init_values(R)]
opt = dist.DistributedOptimizer(topt.SGD(ps, lr=0.1, momentum=0.9), bucket_bytes=1)
averager = opt._distributed._averager
sends, send = [], averager.sender.send
averager.sender.send = lambda buffer: (sends.append(len(averager.seen)), send(buffer))[1]
finishes, finish = [], averager._finish
averager._finish = lambda: (finishes.append((len(averager.seen), averager.next_bucket)),
                            finish())[1]
for _ in range(20):
    opt.zero_grad()
    eager_loss(ps, fg.tensor(dist.shard(X)), fg.tensor(dist.shard(Y))).backward()
    opt.step()
assert sends == [1, 2] * 20, sends
assert finishes == [(3, 2)] * 20, finishes
ref = train_eager(lambda q: fg.optim.SGD(q, lr=0.1, momentum=0.9), X, Y, 0, distributed=False)
for a, b in zip(ps, ref):
    same_on_every_rank(a.data, "fastgraph.torch.optim.SGD")
    close(a.data, b, "fastgraph.torch.optim.SGD against one process")
del opt, averager, send, finish

# parameters that differ between the ranks are named when the averaging is set up
try:
    dist.DistributedDataParallel([fg.tensor(np.ones(2 + R), requires_grad=True)],
                                 broadcast_from=None)
except dist.CollectiveMismatchError as e:
    assert "rank 0: ('float64 (2,)',)" in str(e) and "rank 1: ('float64 (3,)',)" in str(e), str(e)
else:
    raise AssertionError("mismatched DistributedDataParallel parameters did not raise")

# a parameter unused on one rank: step() completes the averaging (zeros for the missing one)
ps = [fg.tensor(np.ones(3), requires_grad=True), fg.tensor(np.ones(2), requires_grad=True)]
opt = dist.DistributedOptimizer(fg.optim.SGD(ps, lr=1.0), find_unused_parameters=True)
loss = (ps[0] * 2.0).sum() + ((ps[1] * 4.0).sum() if R == 0 else 0.0)
loss.backward()
opt.step()
eq(ps[0].data, np.ones(3) - 2.0)
eq(ps[1].data, np.ones(2) - 2.0)


def train_static(make_opt, xb, yb, seed, distributed, steps=20):
    with fg.Graph().as_default():
        vs = [fg.Variable(a) for a in init_values(seed)]
        xp = fg.placeholder("float64", (None, 5))
        yp = fg.placeholder("float64", (None, 1))
        h = fg.tanh(fg.matmul(xp, vs[0]) + vs[1])
        loss = fg.reduce_mean((fg.matmul(h, vs[2]) - yp) ** 2)
        opt = make_opt()
        if distributed:
            opt = dist.DistributedOptimizer(opt, bucket_bytes=5 * 16 * 8)
        train = opt.minimize(loss)
        with fg.Session() as sess:
            sess.run(fg.global_variables_initializer())
            if distributed:
                sess.run(dist.broadcast_global_variables(0))
            for _ in range(steps):
                sess.run(train, {xp: xb, yp: yb})
            return sess.run(vs)


for name, make_opt in [("GradientDescent", lambda: fg.train.GradientDescentOptimizer(0.1)),
                       ("Adam", lambda: fg.train.AdamOptimizer(0.01))]:
    ref = train_static(make_opt, X, Y, 0, distributed=False)
    got = train_static(make_opt, dist.shard(X), dist.shard(Y), R, distributed=True)
    for a, b in zip(got, ref):
        same_on_every_rank(a, f"static {name}")
        close(a, b, f"static {name} against one process")

# the static optimizer's graph holds one allreduce per bucket, not one per variable
with fg.Graph().as_default() as g:
    vs = [fg.Variable(a) for a in init_values(0)]
    loss = fg.reduce_sum(fg.matmul(fg.tanh(fg.matmul(np.ones((2, 5)), vs[0]) + vs[1]), vs[2]))
    dist.DistributedOptimizer(fg.train.AdamOptimizer(0.01)).minimize(loss)
    n_allreduce = sum(1 for n in g.nodes if getattr(getattr(n, "op", None), "name", "") == "allreduce")
    assert n_allreduce == 1, n_allreduce

# static: one allreduce per bucket of fused gradients, as many buckets as bucket_bytes makes
# (in reverse variable order: w2 (16 floats), b1 (16), w1 (80), a bucket closing when the next
# gradient would overflow it)
for bucket_bytes, expected in [(dist.BUCKET_BYTES, 1), (80 * 8, 2), (32 * 8, 2), (16 * 8, 3),
                               (1, 3)]:
    with fg.Graph().as_default() as g:
        vs = [fg.Variable(a) for a in init_values(0)]
        loss = fg.reduce_sum(fg.matmul(fg.tanh(fg.matmul(np.ones((2, 5)), vs[0]) + vs[1]),
                                       vs[2]))
        dist.DistributedOptimizer(fg.train.GradientDescentOptimizer(0.1),
                                  bucket_bytes=bucket_bytes).minimize(loss)
        n = sum(1 for n in g.nodes if getattr(getattr(n, "op", None), "name", "") == "allreduce")
        assert n == expected, (bucket_bytes, n, expected)

# DistributedSampler: the ranks' parts of an epoch are disjoint and cover the data set
for n_items, drop_last in [(10, False), (11, False), (11, True)]:
    sampler = dist.DistributedSampler(n_items, seed=5, drop_last=drop_last)
    assert (sampler.rank, sampler.num_replicas) == (R, N)
    sampler.set_epoch(2)
    parts = w.comm.allgather(list(sampler))
    assert len(parts[0]) == len(parts[1]) == len(sampler), parts
    flat = parts[0] + parts[1]
    if drop_last:
        assert len(set(flat)) == len(flat) == n_items // N * N, parts
    elif n_items % N == 0:
        assert sorted(flat) == list(range(n_items)), parts
    else:
        assert set(flat) == set(range(n_items)) and len(flat) == len(set(flat)) + 1, parts

# dropping a DistributedDataParallel (or its optimizer) without remove() releases its hooks
# and its sending thread, by reference counting alone
import gc  # noqa: E402
import threading  # noqa: E402


def senders():
    return [t for t in threading.enumerate() if t.name == "fastgraph-allreduce" and t.is_alive()]


gc.collect()
before = len(senders())
q = fg.tensor(np.ones(3) * (R + 1), requires_grad=True)
ddp = dist.DistributedDataParallel([q], broadcast_from=None)
assert len(senders()) == before + 1 and len(q._ready_hooks) == 1
(q * q).sum().backward()
eq(q.grad.data, np.ones(3) * 3.0)           # the average of 2 and 4
gc.disable()
del ddp
assert len(senders()) == before and q._ready_hooks == [], (senders(), q._ready_hooks)
q.grad = None
(q * q).sum().backward()
eq(q.grad.data, np.ones(3) * 2 * (R + 1))   # local again
dropped = dist.DistributedOptimizer(fg.optim.Adam([q], lr=0.1), broadcast_from=None)
assert len(senders()) == before + 1
del dropped
assert len(senders()) == before and q._ready_hooks == [], (senders(), q._ready_hooks)
gc.enable()
# one left for the end of the job: released at exit, the job ending cleanly
kept = dist.DistributedDataParallel([fg.tensor(np.ones(2), requires_grad=True)])

dist.barrier()
print("ok", R, flush=True)
