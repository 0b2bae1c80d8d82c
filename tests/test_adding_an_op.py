"""docs/adding-an-op.md, proven by its own example.

The page says an op is one declaration and one line of the op table.  These tests do exactly
that to a copy of the package under test (the declaration appended to ``ops/elementwise.py``,
the line added to a copy of ``tests/optable.py``), then, in fresh interpreters on the copy: run
the table tests for the new op, run the page's "try it" block (its printed values checked as the
docs' examples are), and compare the generated namespaces with those of the copy before the two
edits.  The page's op is one fastgraph has (NumPy's namespace is covered): the copy first loses
its real declaration and table line, so that the page's two edits are all that bring it back.  A fused op's new
opcode row needs a rebuild of the VM, so the fused path is checked with an op declared in the
copy whose row exists already.
"""
from __future__ import annotations

import ast
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fastgraph
from fastgraph._core import API

from test_docs import _check_print, _instrument

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "adding-an-op.md"

# CI's second run tests an installed wheel from a directory holding copies of the tests only
pytestmark = pytest.mark.skipif(not PAGE.is_file(), reason="no docs next to the tests")

#: the op the page adds (its declaration and table line are read from the page)
NEW_OP = "cbrt"

#: an op declared in the copy with an existing VM row: the fuse pass must take it on its
#: declaration alone
ALIAS = '''
sqrt_by_its_row = defop("sqrt_by_its_row", np.sqrt, lambda g, ans, x: g * 0.5 / ans,
                        elementwise=True, opcode="sqrt")
'''


def _page_blocks() -> dict[str, str]:
    """The page's ``py`` blocks by their first line (a comment saying where the code goes)."""
    blocks = {}
    for m in re.finditer(r"^```py\n(.*?)^```", PAGE.read_text(), re.S | re.M):
        first, _, rest = m.group(1).partition("\n")
        blocks[first.lstrip("# ").strip()] = rest
    return blocks


def _remove_declaration(pkg: Path, name: str) -> None:
    """Delete the top-level ``name = defop("name", ...)`` statement from the ops modules."""
    for path in sorted((pkg / "ops").glob("*.py")):
        lines = path.read_text().splitlines(True)
        for node in ast.parse("".join(lines)).body:
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and getattr(node.value.func, "id", None) == "defop"
                    and [getattr(t, "id", None) for t in node.targets] == [name]):
                del lines[node.lineno - 1:node.end_lineno]
                path.write_text("".join(lines))
                return


def _remove_table_lines(tests: Path, name: str) -> None:
    """Delete the op table's one-line entries for ``name`` (``("name", ...),``)."""
    for path in sorted(tests.glob("*table*.py")):
        text = path.read_text()
        kept = [ln for ln in text.splitlines(True) if not ln.lstrip().startswith(f'("{name}",')]
        path.write_text("".join(kept))


_NAMESPACES = textwrap.dedent("""
    import json
    import fastgraph as fg, fastgraph.numpy as fnp
    from fastgraph._core import REGISTRY, method_forms, namespace, numpy_routes
    ufuncs, functions = numpy_routes()
    print(json.dumps({"fastgraph": sorted(namespace("fastgraph")),
                      "numpy": sorted(namespace("numpy")), "ufuncs": sorted(ufuncs),
                      "functions": len(functions), "methods": sorted(method_forms()),
                      "registry": sorted(REGISTRY),
                      "attributes": [hasattr(fg, "cbrt"), hasattr(fnp, "cbrt"),
                                     hasattr(fg.Tensor, "cbrt"), hasattr(fg.Node, "cbrt"),
                                     "cbrt" in fnp.__all__, hasattr(fg.ops, "cbrt")],
                      "fnp_is_numpy": getattr(fnp, "cbrt", None) is __import__("numpy").cbrt}))
""")


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """A copy of the package and of the tests without the page's op, then edited as the page
    says (``copy / "before.json"``: the generated namespaces in between)."""
    blocks = _page_blocks()
    declaration = blocks["src/fastgraph/ops/elementwise.py"]
    table_line = blocks["tests/optable.py, in UNARY"].strip()
    root = tmp_path_factory.mktemp("added_op")
    pkg = root / "pkg" / "fastgraph"
    installed = Path(fastgraph.__file__).parent
    shutil.copytree(installed, pkg, ignore=shutil.ignore_patterns("*.c", "__pycache__"))
    # a repaired wheel's extensions load their vendored libraries (libgomp) from a sibling
    # directory by a relative RPATH: the copy needs it beside it too
    vendored = installed.parent / "fastgraph.libs"
    if vendored.is_dir():
        shutil.copytree(vendored, pkg.parent / vendored.name)
    tests = root / "tests"
    shutil.copytree(ROOT / "tests", tests, ignore=shutil.ignore_patterns("__pycache__"))
    _remove_declaration(pkg, NEW_OP)
    _remove_table_lines(tests, NEW_OP)
    before = _run(root, _NAMESPACES)
    assert NEW_OP not in json.loads(before)["registry"], f"{NEW_OP} is still declared in the copy"
    (root / "before.json").write_text(before)
    with open(pkg / "ops" / "elementwise.py", "a") as f:
        f.write("\n\n" + declaration + ALIAS)
    table = (tests / "optable.py").read_text()
    assert table.count("\nUNARY = [\n") == 1, "the op table's UNARY list moved"
    (tests / "optable.py").write_text(
        table.replace("\nUNARY = [\n", f"\nUNARY = [\n    {table_line}\n", 1))
    return root


def _python(copy: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(copy / "pkg"), str(copy / "tests")]),
               PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, *args], cwd=copy / "tests", env=env,
                          capture_output=True, text=True, timeout=timeout)


def _run(copy: Path, code: str) -> str:
    done = _python(copy, "-c", code)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_copy_is_the_edited_package(copy):
    out = _run(copy, "import fastgraph, json; print(json.dumps(fastgraph.__file__))")
    assert Path(json.loads(out)).is_relative_to(copy), out


def test_the_op_table_tests_pass_for_the_new_op(copy):
    done = _python(copy, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-k", NEW_OP,
                   "test_ops_systematic.py", "test_static_ops.py", "test_fuse_pass.py")
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    passed = {(f, t) for f, t, case in re.findall(r"^(test_\w+)\.py::(\w+)\[([^\]]*)\] PASSED",
                                                  log, re.M) if NEW_OP in case}
    # eager values, float32, gradients against finite differences, second order; static
    # against eager with the passes on and off
    for want in [("test_ops_systematic", "test_forward_matches_reference"),
                 ("test_ops_systematic", "test_grad_matches_finite_differences"),
                 ("test_ops_systematic", "test_second_order_matches_finite_differences"),
                 ("test_ops_systematic", "test_float32_stays_float32"),
                 ("test_static_ops", "test_static_equals_eager"),
                 ("test_static_ops", "test_static_all_passes_off")]:
        assert want in passed, f"{want} did not pass for {NEW_OP}:\n{log[-3000:]}"


def test_the_pages_example_runs_on_the_copy(copy):
    """The "try it" block, its ``print(...)  # text`` lines checked as the docs' examples are."""
    code = (inspect.getsource(_check_print) + "\n__check_print = _check_print\n"
            + _instrument(_page_blocks()["try it"]))
    out = _run(copy, code)
    assert "[1.0, 2.0, 4.0]" in out and "0.04166667" in out, out   # eager, and the Session


def test_the_new_op_is_in_the_generated_namespaces_and_only_there(copy):
    got = json.loads(_run(copy, _NAMESPACES))
    before = json.loads((copy / "before.json").read_text())
    for table in ("fastgraph", "numpy", "ufuncs", "methods"):
        assert set(got[table]) - set(before[table]) == {NEW_OP}, table
        assert set(before[table]) <= set(got[table]), table
    assert got["functions"] == before["functions"]
    assert set(got["registry"]) - set(before["registry"]) == {NEW_OP, "sqrt_by_its_row"}
    assert all(got["attributes"]), got["attributes"]
    # (fastgraph.numpy has every NumPy name: NumPy's own cbrt before, the op's after)
    assert before["attributes"] == [False, True, False, False, False, False], before
    assert got["fnp_is_numpy"] is False and before["fnp_is_numpy"] is True


def test_an_op_with_an_existing_row_fuses_on_its_declaration_alone(copy):
    out = _run(copy, textwrap.dedent("""
        import numpy as np
        import fastgraph as fg
        from fastgraph.ops.elementwise import sqrt_by_its_row
        from fastgraph.static.passes.fuse import cost
        cost.ALWAYS = True        # fuse however small the region
        a = fg.placeholder("float64", (1000,))
        b = fg.placeholder("float64", (1000,))
        out = sqrt_by_its_row(a * b + 1.0)
        feed = {a: np.linspace(0, 2, 1000), b: np.linspace(1, 3, 1000)}
        fused, plain = fg.Session(), fg.Session(disable=("fuse",))
        explain = fused.explain(out, feed)
        assert "fused kernel" in explain and "= sqrt(" in explain, explain
        assert "fused kernel" not in plain.explain(out, feed)
        np.testing.assert_allclose(fused.run(out, feed), plain.run(out, feed),
                                   rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(fused.run(out, feed),
                                   np.sqrt(feed[a] * feed[b] + 1.0), rtol=1e-12)
        print("ok")
    """))
    assert out.strip() == "ok"


#: public differentiable ops whose checks live outside the op tables (this list only shrinks)
OUTSIDE_THE_TABLE = {"copy", "floor_divide"}


def _op_tables() -> list:
    """The op-table modules next to this file (``optable.py``, ``linalg_table.py``,
    ``tf1_cases.py``, ...)."""
    import importlib
    here = Path(__file__).resolve().parent
    names = ["optable"] + sorted(p.stem for pattern in ("*_table.py", "*_cases.py")
                                 for p in here.glob(pattern) if not p.stem.startswith("test_"))
    return [importlib.import_module(n) for n in names]


def _names_in_a_table(api) -> set[str]:
    """The names a table case may give an op: its own, its exported names, and for the
    ``linalg``/``scipy.*`` namespaces the prefixed ones (``"special.erf"``, ``"scipy.det"``)."""
    names = {api.name, *api.names_in("fastgraph"), *api.names_in("numpy")}
    for alias in api.names_in("linalg"):
        names |= {alias, f"linalg.{alias}"}
    for ns in ("scipy.special", "scipy.linalg", "scipy.signal"):
        for alias in api.names_in(ns):
            names |= {f"scipy.{alias}", f"{ns.split('.')[1]}.{alias}"}
    return names


def test_every_public_differentiable_op_has_a_line_in_an_op_table():
    """The page's second edit is not optional: an op without a table line has no value, gradient
    or static checks."""
    covered = {getattr(c, "op", c.name) for table in _op_tables() for c in table.CASES}
    public = {api.op.name: api for api in API.values()
              if api.op is not None and api.exports and api.op.differentiable}
    missing = sorted(n for n, api in public.items()
                     if not _names_in_a_table(api) & covered and n not in OUTSIDE_THE_TABLE)
    assert not missing, f"declared ops without a case in an op table (tests/optable.py): {missing}"
    listed = sorted(n for n in OUTSIDE_THE_TABLE
                    if n not in public or _names_in_a_table(public[n]) & covered)
    assert not listed, f"listed as outside the tables but covered (or gone): drop {listed}"
