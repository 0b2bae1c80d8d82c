"""fastgraph benchmarks: each ``bench_*.py`` exposes ``run(quick: bool) -> dict`` and also runs as a
script (``python benchmarks/bench_toposort.py``) or module (``python -m benchmarks.bench_toposort``).
All share the timing helper in :mod:`benchmarks._timing`."""
