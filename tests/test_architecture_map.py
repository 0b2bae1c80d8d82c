"""docs/architecture.md's file map stays true: every file it names exists, and every module of
the package is named by it (a file, or a folder row ending in ``/`` that covers it).

A newcomer reads the map to find where a concept lives; a module the map does not name is one
they cannot find, and a row naming a moved file sends them to nothing.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "fastgraph"
PAGE = ROOT / "docs" / "architecture.md"

pytestmark = pytest.mark.skipif(not (PKG / "__init__.py").is_file() or not PAGE.is_file(),
                                reason="no source tree and docs next to the tests")

#: module suffixes the map accounts for (generated ``.c`` and built ``.so`` files are not modules)
SOURCES = {".py", ".pyx", ".pxd", ".h"}


def _file_cells() -> list[str]:
    """The middle ("file") cell of every row of the file map's table."""
    section = PAGE.read_text().split("## File map", 1)[1].split("\n## ", 1)[0]
    cells = []
    for line in section.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if len(parts) == 3 and parts[1] not in ("file", "---"):
            cells.append(parts[1])
    return cells


def _named_paths(cell: str) -> list[str]:
    """The paths one cell names: ```kernels/conv.pyx`, `pool.pyx``` names ``kernels/conv.pyx``
    and ``kernels/pool.pyx`` (a bare name lives in the folder of the path before it, or at the
    top level when only the top level has it); a
    parenthesised list after a folder (```scipy/` (`special`, ...)``) names what is inside it."""
    cell = re.sub(r"\([^)]*\)", "", cell)       # "(`.pxd`)", "(`special`, ...)": details
    paths, folder = [], ""
    for token in re.findall(r"`([^`]+)`", cell):
        if "/" in token:
            folder = token.rsplit("/", 1)[0] + "/" if not token.endswith("/") else ""
            paths.append(token)
        elif "." in token or token.endswith("/"):
            # a top-level module beside a folder's files (`kernels/blas.pyx`, `_numpy_blas.py`)
            top_level = not (PKG / folder / token).exists() and (PKG / token).exists()
            paths.append(token if top_level else folder + token)
    return paths


def _covered(rel: str, named: set[str]) -> bool:
    if rel in named:
        return True
    if any(rel.startswith(p) for p in named if p.endswith("/")):
        return True
    # "kernels/include/*.h"
    return any("*" in p and Path(rel).match(p) for p in named)


def test_every_file_the_map_names_exists():
    missing = []
    for cell in _file_cells():
        for path in _named_paths(cell):
            hits = list(PKG.glob(path.rstrip("/"))) if "*" in path else [PKG / path.rstrip("/")]
            if not hits or not all(h.exists() for h in hits):
                missing.append(path)
    assert not missing, f"docs/architecture.md's file map names files that do not exist: {missing}"


def test_every_module_is_on_the_map():
    named = {p for cell in _file_cells() for p in _named_paths(cell)}
    assert len(named) > 40, f"the file map parsed to only {sorted(named)}"
    unnamed = []
    for path in sorted(PKG.rglob("*")):
        if path.suffix not in SOURCES or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(PKG).as_posix()
        if path.name == "__init__.py" and rel != "__init__.py":
            # a package's __init__ is on the map when its folder or any file in it is
            folder = rel.rsplit("/", 1)[0] + "/"
            if any(p.startswith(folder) for p in named):
                continue
        if path.suffix == ".pxd" and _covered(rel[:-4] + ".pyx", named):
            continue                                # a .pyx's declarations file
        if not _covered(rel, named):
            unnamed.append(rel)
    assert not unnamed, (f"modules missing from docs/architecture.md's file map (add a row, or "
                         f"name them in the row of their neighbours): {unnamed}")
