"""Run under ``mpirun -n 2`` by tests/test_distributed.py: rank 1 raises while rank 0 waits in
an allreduce that rank 1 never joins; the fault handler must end the whole job quickly, with
rank 1's error shown."""
import time

import numpy as np

import fastgraph.distributed as dist

w = dist.init()
if w.rank == 1:
    time.sleep(0.2)
    raise ValueError("a deliberate failure on one rank")
dist.allreduce(np.ones(3))      # never completes: rank 1 is gone
print("rank 0 passed the allreduce: the job was not aborted", flush=True)
