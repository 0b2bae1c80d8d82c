"""Run under ``mpirun -n 2`` by tests/test_distributed.py: rank 1 raises while rank 0 waits in
an allreduce that rank 1 never joins; the fault handler must end the whole job quickly, with
rank 1's error shown.  ``sys.argv[1]``: ``main`` (rank 1's main thread raises) or ``thread``
(a thread of rank 1 raises while its main thread sleeps)."""
import sys
import threading
import time

import numpy as np

import fastgraph.distributed as dist

w = dist.init()
dist.set_timeout(0)             # (the fault handler must end the job, not the timeout)
if w.rank == 1:
    time.sleep(0.2)
    if sys.argv[1] == "main":
        raise ValueError("a deliberate failure on one rank")

    def fail():
        raise ValueError("a deliberate failure on one rank, in a thread")

    threading.Thread(target=fail, name="failing").start()
    time.sleep(60)              # (the main thread does not end: the thread's error must)
dist.allreduce(np.ones(3))      # never completes: rank 1 is gone (or never joins)
print(f"rank {w.rank} passed the allreduce: the job was not aborted", flush=True)
