"""Build the Cython extensions of fastgraph.

Every ``src/fastgraph/**/*.pyx`` becomes an extension module, compiled with ``-O3`` and OpenMP
(flags chosen per compiler), without debug information, the extensions compiled in parallel.
Metadata lives in ``pyproject.toml``.  The modules target the oldest NumPy the package supports
(``NPY_TARGET_VERSION``), so a build against any newer NumPy 2 runs on every supported release.

Environment:
    FASTGRAPH_OPENMP=0   build without OpenMP (kernels run single-threaded);
    FASTGRAPH_OPENMP=1   require OpenMP (fail if the compiler lacks it);
    unset                use OpenMP when the compiler supports it, warn loudly otherwise.
    FASTGRAPH_DEBUG_SYMBOLS=1   keep debug information (``-g``, not stripped at link): for
                         profilers and debuggers; the modules are about five times larger.

Developers rebuild in place with ``python setup.py build_ext --inplace``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
PKG = Path("src") / "fastgraph"
#: the C headers every extension may include (``#include "fg_*.h"``)
INCLUDE = PKG / "kernels" / "include"

# Set once here rather than in every .pyx file.
COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "embedsignature": True,
}


def _extensions() -> list[Extension]:
    exts = []
    for pyx in sorted((HERE / PKG).rglob("*.pyx")):
        rel = pyx.relative_to(HERE)
        modname = ".".join(rel.relative_to("src").with_suffix("").parts)
        exts.append(
            Extension(
                modname,
                [rel.as_posix()],
                # a change to a header rebuilds the modules that may include it
                depends=sorted(h.as_posix() for h in (HERE / INCLUDE).glob("*.h")),
                include_dirs=[numpy.get_include(), INCLUDE.as_posix()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
                               # the oldest NumPy in pyproject.toml's dependencies
                               ("NPY_TARGET_VERSION", "NPY_2_3_API_VERSION")],
                # libm for the fused kernels' transcendental functions (no-op where it is libc).
                libraries=[] if sys.platform == "win32" else ["m"],
            )
        )
    return exts


def _brew_prefix(formula: str) -> str | None:
    brew = shutil.which("brew")
    if not brew:
        return None
    try:
        out = subprocess.run([brew, "--prefix", formula], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    prefix = out.stdout.strip()
    return prefix if prefix and os.path.isdir(prefix) else None


def _openmp_flags(compiler_type: str) -> tuple[list[str], list[str]]:
    """(compile_args, link_args) that enable OpenMP for this compiler."""
    if compiler_type == "msvc":
        return ["/openmp"], []
    if sys.platform == "darwin":
        # Apple clang has no -fopenmp driver flag; it needs libomp (Homebrew) explicitly.
        cflags, ldflags = ["-Xpreprocessor", "-fopenmp"], ["-lomp"]
        prefix = _brew_prefix("libomp")
        if prefix:
            cflags.append(f"-I{prefix}/include")
            ldflags[:0] = [f"-L{prefix}/lib", f"-Wl,-rpath,{prefix}/lib"]
        return cflags, ldflags
    return ["-fopenmp"], ["-fopenmp"]


def _optimization_flags(compiler_type: str) -> list[str]:
    # -O3 but never -ffast-math: results must keep IEEE semantics (NaN, inf, signed zeros).
    if compiler_type == "msvc":
        return ["/O2"]
    return ["-O3"]


def _debug_symbols_wanted() -> bool:
    return os.environ.get("FASTGRAPH_DEBUG_SYMBOLS", "").strip().lower() in ("1", "true", "yes", "on")


def _debug_info_flags(compiler_type: str) -> tuple[list[str], list[str]]:
    """(compile_args, link_args) for debug information: none by default (Python's own CFLAGS
    usually carry ``-g``, which makes the modules about five times larger), all of it with
    FASTGRAPH_DEBUG_SYMBOLS=1.  MSVC writes debug information only when asked (/Zi)."""
    if compiler_type == "msvc":
        return ([], []) if not _debug_symbols_wanted() else (["/Zi"], ["/DEBUG"])
    if _debug_symbols_wanted():
        return ["-g"], []
    if sys.platform == "darwin":
        return ["-g0"], ["-Wl,-S"]           # ld64: -S leaves out the debug symbols
    return ["-g0"], ["-Wl,--strip-debug"]


class BuildExt(build_ext):
    """build_ext that picks optimisation and OpenMP flags for the compiler actually used."""

    def _compiles_with_openmp(self, cflags: list[str], ldflags: list[str]) -> bool:
        src = "#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n"
        with tempfile.TemporaryDirectory() as tmp:
            c_file = os.path.join(tmp, "omp_probe.c")
            with open(c_file, "w") as f:
                f.write(src)
            try:
                objs = self.compiler.compile([c_file], output_dir=tmp, extra_postargs=cflags)
                self.compiler.link_executable(
                    objs, "omp_probe", output_dir=tmp, extra_postargs=ldflags
                )
            except Exception:  # CompileError, LinkError, or a missing toolchain piece
                return False
        return True

    def build_extensions(self) -> None:
        ctype = self.compiler.compiler_type
        cflags = _optimization_flags(ctype)
        ldflags: list[str] = []
        debug_c, debug_l = _debug_info_flags(ctype)
        cflags += debug_c
        ldflags += debug_l

        mode = os.environ.get("FASTGRAPH_OPENMP", "").strip().lower()
        use_openmp = mode not in ("0", "false", "no", "off")
        if use_openmp:
            omp_c, omp_l = _openmp_flags(ctype)
            if self._compiles_with_openmp(omp_c, omp_l):
                cflags += omp_c
                ldflags += omp_l
            elif mode in ("1", "true", "yes", "on"):
                raise RuntimeError(
                    "FASTGRAPH_OPENMP=1 but the compiler cannot build OpenMP code "
                    f"(flags tried: {omp_c} / {omp_l}); on macOS run `brew install libomp`."
                )
            else:
                use_openmp = False
                print(
                    "\n*** WARNING: OpenMP is not available with this compiler; building "
                    "fastgraph single-threaded (set FASTGRAPH_OPENMP=0 to silence). ***\n",
                    file=sys.stderr,
                )
        print(f"fastgraph: compiler={ctype} openmp={'on' if use_openmp else 'off'} "
              f"debug_symbols={'on' if _debug_symbols_wanted() else 'off'}")
        if not self.parallel:  # pip passes no -j: compile the modules side by side anyway
            self.parallel = _nthreads()

        for ext in self.extensions:
            ext.extra_compile_args = list(ext.extra_compile_args or []) + cflags
            ext.extra_link_args = list(ext.extra_link_args or []) + ldflags
        super().build_extensions()


def _nthreads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


setup(
    ext_modules=cythonize(
        _extensions(),
        compiler_directives=COMPILER_DIRECTIVES,
        # Windows spawns workers that re-import setup.py; parallel cythonize is not worth it there.
        nthreads=0 if sys.platform == "win32" else _nthreads(),
    ),
    cmdclass={"build_ext": BuildExt},
)
