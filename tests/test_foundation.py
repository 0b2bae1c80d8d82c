"""Foundation: the compiled topological sort, thread settings, build facts and the CLI."""
from __future__ import annotations

import graphlib
import importlib.machinery
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import fastgraph
from fastgraph.kernels import toposort as _toposort
from fastgraph.utils import toposort


# ----------------------------------------------------------------------------- helpers

def random_dag(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    return fastgraph.utils.random_dag(n, m, seed=rng)


def assert_topological(order: np.ndarray, n: int, src, dst) -> None:
    assert order.dtype == np.int64
    assert order.shape == (n,)
    assert np.array_equal(np.sort(order), np.arange(n)), "every node exactly once"
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    assert np.all(pos[np.asarray(src)] < pos[np.asarray(dst)]), "each edge goes forward"


def graphlib_levels(n: int, src, dst) -> list[set[int]]:
    ts = graphlib.TopologicalSorter({v: set() for v in range(n)})
    for s, d in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()):
        ts.add(d, s)
    ts.prepare()
    levels = []
    while ts.is_active():
        ready = ts.get_ready()
        levels.append(set(ready))
        ts.done(*ready)
    return levels


def run_python(code: str, env_update: dict[str, str | None] | None = None) -> str:
    env = dict(os.environ)
    for k, v in (env_update or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


# ----------------------------------------------------------------------------- toposort

@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n,m", [(1, 0), (2, 1), (10, 20), (100, 400), (2000, 6000)])
def test_random_dag_order_is_valid(seed, n, m):
    rng = np.random.default_rng(seed)
    src, dst = random_dag(rng, n, m)
    order = toposort(n, src, dst)
    assert_topological(order, n, src, dst)


@pytest.mark.parametrize("seed", range(5))
def test_random_dag_agrees_with_graphlib(seed):
    # Topological orders are not unique, so compare what must agree: the nodes without
    # predecessors (graphlib's first "ready" batch) come first in both, and both orders are valid.
    rng = np.random.default_rng(100 + seed)
    n, m = 300, 900
    src, dst = random_dag(rng, n, m)
    order = toposort(n, src, dst)
    assert_topological(order, n, src, dst)
    levels = graphlib_levels(n, src, dst)
    assert sum(map(len, levels)) == n
    assert set(order[: len(levels[0])].tolist()) == levels[0]
    # graphlib's order is itself topological, so both are linear extensions of the same DAG.
    g_order = np.array([v for lvl in levels for v in sorted(lvl)], dtype=np.int64)
    assert_topological(g_order, n, src, dst)


def test_lowest_id_first_among_sources():
    # Deterministic tie-breaking: ready nodes leave the queue first-in-first-out by id.
    assert toposort(5, [], []).tolist() == [0, 1, 2, 3, 4]
    assert toposort(4, [3, 0, 1], [0, 1, 2]).tolist() == [3, 0, 1, 2]


def test_chain_of_a_million_nodes():
    n = 1_000_000
    perm = np.random.default_rng(0).permutation(n)
    src, dst = perm[:-1], perm[1:]
    order = toposort(n, src, dst)
    assert np.array_equal(order, perm)


def test_parallel_edges_and_empty_graph():
    assert toposort(2, [0, 0, 0], [1, 1, 1]).tolist() == [0, 1]
    assert toposort(0, [], []).tolist() == []
    assert toposort(0, np.array([], np.int64), np.array([], np.int64)).dtype == np.int64


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32,
                                   np.uint64])
def test_any_integer_dtype(dtype):
    src = np.array([2, 0], dtype=dtype)
    dst = np.array([0, 1], dtype=dtype)
    assert toposort(3, src, dst).tolist() == [2, 0, 1]


def test_non_contiguous_input():
    edges = np.array([[2, 0], [0, 1]], dtype=np.int64)
    assert toposort(3, edges[:, 0], edges[:, 1]).tolist() == [2, 0, 1]


@pytest.mark.parametrize(
    "n,src,dst,cycle",
    [
        (1, [0], [0], {0}),                                    # self-loop
        (2, [0, 1], [1, 0], {0, 1}),                            # two-cycle
        (5, [0, 1, 2, 3], [1, 2, 3, 1], {1, 2, 3}),             # cycle after a source
        (6, [0, 1, 2, 2, 3, 4], [1, 2, 3, 4, 1, 5], {1, 2, 3}),  # cycle with a tail hanging off it
    ],
)
def test_cycle_error_names_a_node_on_the_cycle(n, src, dst, cycle):
    with pytest.raises(ValueError, match="cycle") as info:
        toposort(n, src, dst)
    assert info.value.node in cycle
    assert f"node {info.value.node}" in str(info.value)


def test_cycle_in_large_random_graph():
    rng = np.random.default_rng(7)
    n = 50_000
    src, dst = random_dag(rng, n, 150_000)
    # Close a long cycle: a path through a random sample of nodes, then back to its start.
    ring = rng.choice(n, 1000, replace=False)
    src = np.concatenate([src, ring, ring[-1:]])
    dst = np.concatenate([dst, np.roll(ring, -1), ring[:1]])
    with pytest.raises(ValueError, match="cycle") as info:
        toposort(n, src, dst)
    node = info.value.node
    # The reported node must reach itself: check with a BFS over the edges.
    adj: dict[int, list[int]] = {}
    for s, d in zip(src.tolist(), dst.tolist()):
        adj.setdefault(s, []).append(d)
    frontier, seen = [node], set()
    while frontier:
        u = frontier.pop()
        for v in adj.get(u, ()):
            if v == node:
                return
            if v not in seen:
                seen.add(v)
                frontier.append(v)
    pytest.fail(f"reported node {node} is not on a cycle")


@pytest.mark.parametrize(
    "args,exc,match",
    [
        ((3, [0, 1], [1]), ValueError, "differ in length"),
        ((3, [0, 3], [1, 2]), ValueError, r"src\[1\] = 3"),
        ((3, [0, 1], [1, 7]), ValueError, r"dst\[1\] = 7"),
        ((3, [0, -1], [1, 2]), ValueError, r"src\[1\] = -1"),
        ((3, [0, 1], [-2, 2]), ValueError, r"dst\[0\] = -2"),
        ((-1, [], []), ValueError, "num_nodes"),
        ((3, [0.0, 1.0], [1, 2]), TypeError, "integer"),
        ((3, [0, 1], [1.5, 2]), TypeError, "integer"),
        ((3, [True, False], [1, 2]), TypeError, "integer"),
        ((3, ["a"], [1]), TypeError, "integer"),
        ((3.0, [0], [1]), TypeError, "num_nodes"),
        ((3, [[0, 1]], [[1, 2]]), ValueError, "one-dimensional"),
        ((3, np.array([2**63], dtype=np.uint64), [1]), ValueError, "too large"),
    ],
)
def test_bad_input(args, exc, match):
    with pytest.raises(exc, match=match):
        toposort(*args)


def test_bad_input_does_not_crash_in_native_helpers():
    # The Cython-level building blocks validate too (the planner calls them directly).
    with pytest.raises(ValueError, match="node id"):
        _toposort.edges_to_csr(2, np.array([0, 5]), np.array([1, 1]))
    with pytest.raises(ValueError, match="indptr"):
        _toposort.toposort_csr(np.array([0, 2, 1]), np.array([1, 0]))
    with pytest.raises(ValueError, match="node id"):
        _toposort.toposort_csr(np.array([0, 1, 1]), np.array([9]))
    with pytest.raises(ValueError, match="at least one"):
        _toposort.toposort_csr(np.array([], np.int64), np.array([], np.int64))


def test_csr_building_blocks():
    rng = np.random.default_rng(3)
    n = 500
    src, dst = random_dag(rng, n, 2000)
    indptr, indices = _toposort.edges_to_csr(n, src, dst)
    assert indptr.dtype == indices.dtype == np.int64
    assert indptr[0] == 0 and indptr[-1] == len(src)
    # Stable counting sort: successors of each node appear in edge order.
    for u in rng.choice(n, 20):
        assert indices[indptr[u]:indptr[u + 1]].tolist() == dst[src == u].tolist()
    order = _toposort.toposort_csr(indptr, indices)
    assert_topological(order, n, src, dst)
    assert np.array_equal(order, _toposort.toposort_edges(n, src, dst))
    with pytest.raises(ValueError, match="cycle"):
        _toposort.toposort_csr(np.array([0, 1, 2]), np.array([1, 0]))


def test_thread_count_does_not_change_the_result():
    # Large enough that building the CSR really splits the edges over several threads.
    rng = np.random.default_rng(11)
    n = 200_000
    src, dst = random_dag(rng, n, 1_200_000)
    ref = _toposort.toposort_edges(n, src, dst, 1)
    assert_topological(ref, n, src, dst)
    csr = _toposort.edges_to_csr(n, src, dst, 1)
    for threads in (2, 3, 8, 64):
        # A low per-thread minimum forces the parallel path at this modest size.
        assert np.array_equal(_toposort.toposort_edges(n, src, dst, threads, 1000), ref)
        for a, b in zip(_toposort.edges_to_csr(n, src, dst, threads, 1000), csr):
            assert np.array_equal(a, b)
    assert np.array_equal(_toposort.toposort_edges(n, src, dst, 8), ref)  # default minimum
    old = fastgraph.get_num_threads()
    try:
        fastgraph.set_num_threads(4)
        assert np.array_equal(toposort(n, src, dst), ref)
    finally:
        fastgraph.set_num_threads(old)
    with pytest.raises(ValueError, match="num_threads"):
        _toposort.toposort_edges(n, src, dst, 0)
    with pytest.raises(ValueError, match="min_edges_per_thread"):
        _toposort.toposort_edges(n, src, dst, 2, 0)


def test_bad_id_found_in_any_thread_chunk():
    rng = np.random.default_rng(12)
    n = 100_000
    src, dst = random_dag(rng, n, 600_000)
    dst = dst.copy()
    dst[-5] = n  # in the last thread's chunk
    with pytest.raises(ValueError, match=rf"dst\[{len(dst) - 5}\] = {n}"):
        _toposort.toposort_edges(n, src, dst, 4, 1000)


# ----------------------------------------------------------------------------- threads

def test_thread_settings_round_trip():
    old = fastgraph.get_num_threads()
    try:
        fastgraph.set_num_threads(3)
        assert fastgraph.get_num_threads() == 3
        fastgraph.set_num_threads(np.int64(1))
        assert fastgraph.get_num_threads() == 1
        for bad, exc in [(0, ValueError), (-2, ValueError), (1.5, TypeError), ("2", TypeError),
                         (True, TypeError), (None, TypeError)]:
            with pytest.raises(exc, match="positive integer"):
                fastgraph.set_num_threads(bad)
        assert fastgraph.get_num_threads() == 1, "a rejected value leaves the setting alone"
    finally:
        fastgraph.set_num_threads(old)


PRINT_THREADS = "import fastgraph; print(fastgraph.get_num_threads())"


@pytest.mark.parametrize(
    "env,expected",
    [
        ({"FASTGRAPH_NUM_THREADS": "3", "OMP_NUM_THREADS": "5"}, "3"),
        ({"FASTGRAPH_NUM_THREADS": None, "OMP_NUM_THREADS": "5"}, "5"),
        ({"FASTGRAPH_NUM_THREADS": None, "OMP_NUM_THREADS": "4,2"}, "4"),
        ({"FASTGRAPH_NUM_THREADS": "7", "OMP_NUM_THREADS": None}, "7"),
    ],
)
def test_threads_from_environment(env, expected):
    assert run_python(PRINT_THREADS, env).strip() == expected


def test_threads_default_is_usable_cpus():
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    out = run_python(PRINT_THREADS, {"FASTGRAPH_NUM_THREADS": None, "OMP_NUM_THREADS": None})
    assert out.strip() == str(cpus)


def test_bad_thread_environment_warns_and_falls_back():
    code = ("import warnings; warnings.simplefilter('error');\n"
            "try:\n import fastgraph\nexcept RuntimeWarning as w: print('warned', w)")
    out = run_python(code, {"FASTGRAPH_NUM_THREADS": "lots", "OMP_NUM_THREADS": "2"})
    assert "warned" in out and "FASTGRAPH_NUM_THREADS" in out
    out = run_python(PRINT_THREADS, {"FASTGRAPH_NUM_THREADS": "0", "OMP_NUM_THREADS": "2"})
    assert out.strip() == "2"


# ----------------------------------------------------------------------------- build facts, CLI

def test_compiled_modules_are_the_ones_imported():
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    from fastgraph.kernels import openmp as _openmp

    for mod in (_toposort, _openmp):
        assert mod.__file__.endswith(suffixes), mod.__file__
    assert fastgraph._core.toposort._toposort is _toposort


def test_openmp_enabled_in_default_build():
    # The default build uses OpenMP; a deliberate FASTGRAPH_OPENMP=0 build is the only exception.
    from fastgraph.kernels import openmp as _openmp

    if os.environ.get("FASTGRAPH_OPENMP", "").strip() == "0":
        assert _openmp.openmp_enabled() is False
        assert _openmp.omp_max_threads() == 1
    else:
        assert _openmp.openmp_enabled() is True
        assert _openmp.omp_max_threads() >= 1


def test_info_subprocess():
    out = subprocess.run([sys.executable, "-m", "fastgraph", "info"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"fastgraph {fastgraph.__version__}" in out.stdout
    assert "fastgraph.kernels.toposort" in out.stdout
    assert "OpenMP" in out.stdout and "threads" in out.stdout and "numpy" in out.stdout
    from fastgraph.kernels import vm
    assert f"fused VM  {vm.vec_isa()} loops" in out.stdout     # the path in use, named


def test_info_json_subprocess():
    out = subprocess.run([sys.executable, "-m", "fastgraph", "info", "--json"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "FASTGRAPH_NUM_THREADS": "2",
                              "FASTGRAPH_VEC_ISA": "baseline"})
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout)
    assert facts["fastgraph"] == fastgraph.__version__
    assert facts["num_threads"] == 2
    assert "fastgraph.kernels.toposort" in facts["extensions"]
    assert isinstance(facts["openmp"], bool)
    from fastgraph.kernels import vm
    assert facts["vec_isa"] == "baseline"               # FASTGRAPH_VEC_ISA chose it
    assert facts["vec_isas"] == list(vm.vec_isas())


def test_cli_without_command_prints_help():
    out = subprocess.run([sys.executable, "-m", "fastgraph"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert "info" in out.stdout


def test_fp_errors_may_raise_follows_errstate_and_warnings_filters():
    import warnings
    from fastgraph._core.config import fp_errors_may_raise as may_raise
    base = may_raise()
    with np.errstate(divide="raise"):
        assert may_raise()
    assert may_raise() == base
    # alternating blocks (a list id or a first entry reused at the same address must not match)
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert not may_raise() or base
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert may_raise()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        may_raise()
        warnings.filters[-1] = ("error", None, RuntimeWarning, None, 0)   # changed in place
        assert may_raise()
