"""The Python examples in README.md and docs/*.md run as written and print what they say.

Each file's ```python blocks run in order in one fresh namespace, as a reader would paste them.
A line ``print(expr)  # text`` whose comment starts with a value (``12.0``, ``[1.0, 1.0]``,
``tensor(...)``) must print a prefix of ``text`` (the rest of the comment may explain it); the README's abridged ``explain()`` listing, the plain block after the example that
prints it, must appear line by line (in order) in what the example prints.
"""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_PRINT_WITH_COMMENT = re.compile(r"^(\s*)print\((.*)\)\s+# (.*)$")


def _blocks(path: Path) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(path.read_text())]


def _instrument(code: str) -> str:
    """``print(e)  # text`` -> a check that ``str(e)`` starts ``text`` (then the print)."""
    out = []
    for line in code.splitlines():
        m = _PRINT_WITH_COMMENT.match(line)
        if m:
            indent, expr, text = m.groups()
            line = f"{indent}__check_print(({expr}), {text!r})"
        out.append(line)
    return "\n".join(out)


_SHOWS_A_VALUE = re.compile(r"^([-\d\[({'\"]|\w+\()")   # 12.0, [1.0, ...], tensor(...)


def _check_print(value, text: str) -> None:
    shown = str(value)
    print(shown)
    if "\n" not in shown and _SHOWS_A_VALUE.match(text):     # not a comment about the output
        assert text.startswith(shown), f"prints {shown!r}; the comment says {text!r}"


def _docs_with_python() -> list[Path]:
    return [p for p in DOCS if any(lang == "python" for lang, _ in _blocks(p))]


def test_docs_have_examples():
    names = {p.name for p in _docs_with_python()}
    assert {"README.md", "static.md", "fusion.md", "fused.md"} <= names, names


@pytest.mark.parametrize("path", _docs_with_python(), ids=lambda p: p.name)
def test_doc_examples_run_and_print_what_they_say(path: Path):
    namespace: dict = {"__name__": f"doc_{path.stem}", "__check_print": _check_print}
    blocks = _blocks(path)
    for i, (lang, code) in enumerate(blocks):
        if lang != "python":
            continue
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(_instrument(code), f"{path.name}[block {i}]", "exec"), namespace)
        printed = buf.getvalue()
        if i + 1 < len(blocks) and blocks[i + 1][0] == "" and "explain(" in code:
            _assert_listing_in(blocks[i + 1][1], printed)


def _assert_listing_in(listing: str, printed: str) -> None:
    """Every line of the abridged listing appears in order; ``...`` in a line stands for text
    left out."""
    lines = printed.splitlines()
    pos = 0
    for want in listing.splitlines():
        for k in range(pos, len(lines)):
            if _abridges(want.rstrip(), lines[k].rstrip()):
                pos = k + 1
                break
        else:
            raise AssertionError(f"listing line {want!r} is not printed (in order):\n{printed}")


def _abridges(want: str, got: str) -> bool:
    first, *rest = want.split("...")
    if not got.startswith(first):
        return False
    at = len(first)
    for part in rest:
        at = got.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return not rest or got.endswith(rest[-1])
