"""Topological sort: fastgraph vs igraph, rustworkx, graphlib and networkx.

Graph: a random DAG of 1,000,000 nodes and 3,000,000 edges (edges go from a lower to a higher
rank; node ids are then relabelled by a random permutation, so id order says nothing about
topological order). Timed: the sort only. fastgraph starts from the raw ``int64`` edge arrays, so
its time *includes* validating them and the counting-sort conversion to CSR; the peers get their
own prebuilt graph objects (building those is not timed). graphlib and networkx are pure Python and
need minutes and gigabytes at full size, so they run on a 10x smaller graph, compared with
fastgraph on that same graph.

Target: fastgraph at most 0.25x igraph's time.

Run: ``python -m fastgraph bench --only toposort``, or on its own
``python -m fastgraph.bench.toposort [--quick] [--threads N] [--json out.json]``.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from fastgraph.bench.timing import (
    Result, compare, peers, print_results, script_main, target_note)
from fastgraph.utils import random_dag

TARGET_RATIO_IGRAPH = 0.25


def _check(order: np.ndarray, n: int, src: np.ndarray, dst: np.ndarray) -> None:
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    if order.shape != (n,) or not np.all(pos[src] < pos[dst]):
        raise AssertionError("fastgraph returned an invalid topological order")


def _fastgraph_candidate(n: int, src: np.ndarray, dst: np.ndarray):
    from fastgraph.utils import toposort

    _check(toposort(n, src, dst), n, src, dst)
    return lambda: toposort(n, src, dst)


def bench_compiled_peers(n: int, m: int, rounds: int) -> tuple[Result, list[str]]:
    """fastgraph vs the compiled graph libraries (igraph, rustworkx) at full size."""
    src, dst = random_dag(n, m)
    available, missing = peers("igraph", "rustworkx")
    cands = {"fastgraph": _fastgraph_candidate(n, src, dst)}
    if "igraph" in available:
        g = available["igraph"].Graph(n=n, edges=np.column_stack([src, dst]), directed=True)
        cands["igraph"] = g.topological_sorting
    if "rustworkx" in available:
        rx = available["rustworkx"]
        G = rx.PyDiGraph(multigraph=True)
        G.add_nodes_from(range(n))
        G.add_edges_from_no_data(list(zip(src.tolist(), dst.tolist())))
        cands["rustworkx"] = lambda: rx.topological_sort(G)
    meta = {"nodes": n, "edges": int(src.size)}
    return compare(f"toposort {n:,} nodes / {src.size:,} edges", cands, rounds=rounds,
                   warmup=1, faults=True, meta=meta), missing


def bench_python_peers(n: int, m: int, rounds: int) -> tuple[Result, list[str]]:
    """fastgraph vs the pure-Python sorters (graphlib, networkx) on a smaller graph."""
    src, dst = random_dag(n, m, seed=1)
    available, missing = peers("graphlib", "networkx")
    cands = {"fastgraph": _fastgraph_candidate(n, src, dst)}
    if "graphlib" in available:
        graphlib = available["graphlib"]
        preds: dict[int, list[int]] = {v: [] for v in range(n)}
        for s, d in zip(src.tolist(), dst.tolist()):
            preds[d].append(s)
        cands["graphlib"] = lambda: list(graphlib.TopologicalSorter(preds).static_order())
    if "networkx" in available:
        nx = available["networkx"]
        G = nx.DiGraph()
        G.add_nodes_from(range(n))
        G.add_edges_from(zip(src.tolist(), dst.tolist()))
        cands["networkx"] = lambda: list(nx.topological_sort(G))
    meta = {"nodes": n, "edges": int(src.size)}
    return compare(f"toposort {n:,} nodes / {src.size:,} edges", cands, rounds=rounds,
                   warmup=1, meta=meta), missing


def run(quick: bool = False, verbose: bool = True) -> dict[str, Any]:
    """Run the benchmark; ``quick`` uses 10x smaller graphs. Returns a JSON-able dict."""
    scale = 10 if quick else 1
    big_n, small_n = 1_000_000 // scale, 100_000 // scale
    big, missing_big = bench_compiled_peers(big_n, 3 * big_n, rounds=5 if quick else 7)
    small, missing_small = bench_python_peers(small_n, 3 * small_n, rounds=3)
    missing = missing_big + missing_small
    if verbose:
        print_results([big, small], missing)
    out: dict[str, Any] = {
        "benchmark": "toposort",
        "quick": quick,
        # the target rides on its result, for the suite's summary rows
        "results": [{**big.to_dict(), "targets": {"igraph": TARGET_RATIO_IGRAPH}},
                    small.to_dict()],
        "missing": missing,
    }
    if "igraph" in big.stats:
        ratio = big.ratio("fastgraph", "igraph")
        out["ratio_vs_igraph"] = ratio
        out["target_ratio_vs_igraph"] = TARGET_RATIO_IGRAPH
        out["meets_target"] = ratio <= TARGET_RATIO_IGRAPH
        if verbose:
            print(f"fastgraph/igraph = {ratio:.3f} "
                  f"({target_note(ratio, TARGET_RATIO_IGRAPH, quick)})")
    return out


def main(argv: list[str] | None = None) -> int:
    return script_main(run, __doc__, '10x smaller graphs', argv=argv)


if __name__ == "__main__":
    sys.exit(main())
