"""fastgraph's benchmark suite: fastgraph against NumPy and peer libraries, side by side.

Each workload is a module here (``tape_scalar``, ``mlp``, ``fused``, ...; ``python -m fastgraph
bench --list`` names them all) with ``run(quick=False, verbose=True) -> dict``; every one times
with :func:`fastgraph.bench.timing.compare`, which interleaves the candidates round by round, and
reports the time ratio fastgraph / peer (< 1: fastgraph faster).  Run the suite with
``python -m fastgraph bench`` (the peers come with ``pip install "fastgraph[bench]"``), or one
workload on its own with ``python -m fastgraph.bench.mlp [--quick] [--threads N]``.

>>> from fastgraph.cli.bench import discover
>>> "mlp" in discover()
True
"""
