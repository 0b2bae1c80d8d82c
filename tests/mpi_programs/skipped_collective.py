"""Run under ``mpirun -n 2`` by tests/test_distributed.py: rank 1 skips a collective that rank 0
waits in (and then sleeps far longer than the timeout, as a stuck rank would); the collectives'
deadline must abort the whole job within about the timeout, naming the collective and the
waiting rank.  ``sys.argv[1]`` picks the collective: ``allreduce`` (the timeout from
``FASTGRAPH_COLLECTIVE_TIMEOUT``), ``barrier`` or ``ddp`` (a backward pass rank 1 does not
make; the timeout given to ``init``)."""
import sys
import time

import numpy as np

import fastgraph as fg
import fastgraph.distributed as dist

case = sys.argv[1]
w = dist.init(timeout=1.0) if case != "allreduce" else dist.init()
if case == "ddp":
    p = fg.tensor(np.ones(4), requires_grad=True)
    ddp = dist.DistributedDataParallel([p])        # (both ranks: a broadcast and a check)
dist.allreduce(np.ones(2))                         # both ranks: this one completes
print(f"rank {w.rank} passed the first allreduce", flush=True)
if w.rank == 1:
    time.sleep(60)
    sys.exit(0)
if case == "allreduce":
    dist.allreduce(np.ones(3))
elif case == "barrier":
    dist.barrier()
else:
    (p * p).sum().backward()
print(f"rank {w.rank} passed the skipped {case}: the job was not aborted", flush=True)
