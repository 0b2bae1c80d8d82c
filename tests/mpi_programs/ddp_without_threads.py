"""DistributedDataParallel where MPI does not allow threads (run with
MPI4PY_RC_THREAD_LEVEL=serialized): one bucket per parameter, the first ones non-blocking
allreduces, the last reduced in the training thread; every rank's .grad is the average of the
ranks' local gradients.  Prints "ok <rank>"."""
import numpy as np

import fastgraph as fg
import fastgraph.distributed as dist

w = dist.init()
rng = np.random.default_rng(0)
values = [rng.standard_normal(s) for s in [(3, 4), (4,), (4, 2)]]


def loss(ps, rank, step):
    x = fg.tensor(np.full((5, 3), 1.0 + rank + step))
    return (fg.tanh(x @ ps[0] + ps[1]) @ ps[2]).sum()


ps = [fg.tensor(v.copy(), requires_grad=True) for v in values]
ddp = dist.DistributedDataParallel(ps, bucket_bytes=1)
assert ddp._averager.sender is None, "MPI allows threads here: run with a lower thread level"
assert len(ddp._averager.buckets) == 3
for step in range(3):
    for p in ps:
        p.grad = None
    loss(ps, w.rank, step).backward()
    every = []
    for r in range(w.size):
        qs = [fg.tensor(v.copy(), requires_grad=True) for v in values]
        loss(qs, r, step).backward()
        every.append([q.grad.data for q in qs])
    for i, p in enumerate(ps):
        ref = sum(e[i] * (1.0 / w.size) for e in every)
        assert np.allclose(p.grad.data, ref), (i, p.grad.data, ref)
        assert not np.allclose(p.grad.data, every[w.rank][i]), "not averaged"
ddp.remove()
print("ok", w.rank)
