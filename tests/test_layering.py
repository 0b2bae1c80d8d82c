"""The layers of ``src/fastgraph`` import only downwards (docs/architecture.md, "Layers").

    kernels   <- core <- fused <- ops <- eager | static <- bridge <- front-ends

Every import of every module counts: ``import``/``from ... import`` anywhere in a ``.py`` file
(inside functions too: a deferred import is still a dependency), ``importlib.import_module`` with
a literal name, and ``cimport``/``import`` lines of ``.pyx``/``.pxd`` files.  ``eager`` and
``static`` are side by side: neither may import the other.  Kernels import no other layer.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PKG = SRC / "fastgraph"

# The rule is about the source tree; CI's second run tests an installed wheel from a directory
# that holds copies of the tests only (the first run, from the sources, checks the layering).
pytestmark = pytest.mark.skipif(not (PKG / "__init__.py").is_file(),
                                reason="no source tree next to the tests (testing an installed wheel)")

#: layer name -> rank: a module may import its own layer and layers of a smaller rank only
RANKS = {"kernels": 0, "core": 1, "fused": 2, "ops": 3, "eager": 4, "static": 4, "bridge": 5,
         "front-end": 6}

#: the BLAS library finder, at the package's top level, is a kernel (arrays only)
_TOP_LEVEL_KERNELS = {"_numpy_blas"}
_TOP_LEVEL_CORE = {"_core", "_version"}


def layer_of(module: str) -> str:
    """The layer of a module of the package (``fastgraph.ops.shape`` -> ``ops``)."""
    parts = module.split(".")
    assert parts[0] == "fastgraph", module
    if len(parts) == 1:
        return "front-end"
    head = parts[1]
    if head in RANKS and head != "front-end":
        return head
    if head in _TOP_LEVEL_KERNELS:
        return "kernels"
    if head in _TOP_LEVEL_CORE:
        return "core"
    return "front-end"


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of a relative import ``from .name`` (``level`` dots) in ``module``."""
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([name] if name else []))


def _python_imports(path: Path) -> list[tuple[int, str]]:
    module = _module_name(path)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node.level, node.module)
            # ``from . import ops``: each name may be a module of the package
            out += [(node.lineno, f"{target}.{a.name}" if target.startswith("fastgraph") and
                     _is_module(f"{target}.{a.name}") else target) for a in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.append((node.lineno, arg.value))
            elif (isinstance(arg, ast.BinOp) and isinstance(arg.left, ast.Name)
                  and arg.left.id == "__name__" and isinstance(arg.right, ast.Constant)):
                out.append((node.lineno, module + arg.right.value))
    return out


_CYTHON_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+c?import\b|c?import\s+([\w.]+))")


def _cython_imports(path: Path) -> list[tuple[int, str]]:
    module = _module_name(path)
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        m = _CYTHON_IMPORT.match(line)
        if not m:
            continue
        name = m.group(1) or m.group(2)
        if name.startswith("."):
            level = len(name) - len(name.lstrip("."))
            name = _resolve(module, False, level, name.lstrip(".") or None)
        out.append((i, name))
    return out


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return any((SRC / rel.with_suffix(s)).exists() for s in (".py", ".pyx", ".pxd")) or \
        (SRC / rel / "__init__.py").exists()


def _sources() -> list[Path]:
    return sorted(p for p in PKG.rglob("*") if p.suffix in (".py", ".pyx", ".pxd"))


def _violations() -> list[str]:
    bad = []
    for path in _sources():
        module = _module_name(path)
        layer = layer_of(module)
        imports = _python_imports(path) if path.suffix == ".py" else _cython_imports(path)
        for line, target in imports:
            if not (target == "fastgraph" or target.startswith("fastgraph.")):
                continue
            other = layer_of(target)
            if other == layer:
                continue
            if RANKS[other] >= RANKS[layer]:
                bad.append(f"{path.relative_to(SRC)}:{line}: {layer} imports {target} "
                           f"({other})")
    return bad


def test_every_layer_imports_only_layers_below_it():
    found = len(_sources())
    assert found > 20, f"the layering checker found only {found} sources under {PKG}"
    bad = _violations()
    assert not bad, "layering violations:\n" + "\n".join(bad)


def test_a_violation_is_reported(tmp_path, monkeypatch):
    """An upward import, even deferred inside a function, fails the rule (a checker that never
    fires would pass too)."""
    fake = tmp_path / "fastgraph" / "eager"
    fake.mkdir(parents=True)
    (fake / "x.py").write_text("def f():\n    from ..static import node\n")
    (tmp_path / "fastgraph" / "_core").mkdir()
    (tmp_path / "fastgraph" / "_core" / "y.pyx").write_text("from fastgraph.ops cimport z\n")
    this = sys.modules[__name__]
    monkeypatch.setattr(this, "SRC", tmp_path)
    monkeypatch.setattr(this, "PKG", tmp_path / "fastgraph")
    bad = _violations()
    assert any("eager/x.py:2: eager imports fastgraph.static" in v for v in bad), bad
    assert any("_core/y.pyx:1: core imports fastgraph.ops" in v for v in bad), bad


@pytest.mark.parametrize("module, layer", [
    ("fastgraph.kernels.elementwise", "kernels"), ("fastgraph.kernels.vm", "kernels"),
    ("fastgraph._numpy_blas", "kernels"),
    ("fastgraph._core.dispatch", "core"), ("fastgraph.fused.compiler", "fused"),
    ("fastgraph.ops.shape", "ops"), ("fastgraph.eager.tape", "eager"),
    ("fastgraph.static.node", "static"), ("fastgraph.bridge", "bridge"),
    ("fastgraph", "front-end"), ("fastgraph.numpy", "front-end"),
    ("fastgraph.cli.info", "front-end"),
])
def test_layer_of(module, layer):
    assert layer_of(module) == layer


def test_the_checker_sees_deferred_relative_and_cython_imports(tmp_path, monkeypatch):
    """The parser finds what the rule is about (a checker that found nothing would pass)."""
    (tmp_path / "fastgraph").mkdir()
    probe = tmp_path / "fastgraph" / "probe.py"
    probe.write_text("import importlib\nimportlib.import_module('fastgraph.static')\n"
                     "importlib.import_module(__name__ + '.part')\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    found = {t for _, t in _python_imports(probe)}
    assert {"fastgraph.static", "fastgraph.probe.part"} <= found     # importlib.import_module
    monkeypatch.undo()
    found = {t for _, t in _python_imports(PKG / "eager" / "tensor.py")}
    assert "fastgraph.eager.tape" in found and "fastgraph.ops" in found   # relative
    found = {t for _, t in _cython_imports(PKG / "eager" / "tape.pyx")}
    assert "fastgraph._core.dispatch" in found                  # cimport


def test_import_fastgraph_leaves_scipys_heavy_subpackages_until_first_use():
    # scipy.integrate drags in scipy.optimize and scipy.sparse (a third of the modules and
    # heap of a fresh `import fastgraph`); fastgraph.scipy.integrate imports it when first called
    import subprocess
    import sys

    code = ("import sys, fastgraph as fg; "
            "print(sorted(m for m in ('scipy.integrate', 'scipy.optimize', 'scipy.sparse') "
            "if m in sys.modules)); "
            "print(fg.scipy.integrate.quad(lambda t: t, 0.0, 1.0)[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert abs(float(out[1]) - 0.5) < 1e-12     # SciPy's own names still pass through
