"""The README and docs/*.md are for users and maintainers: their examples run as written and print
what they say, their links stay inside the repository, and they read as documentation, not a
diary.

Each file's ```python blocks run in order in one fresh namespace, as a reader would paste them.
A line ``print(expr)  # text`` whose output is one line must print a prefix of ``text`` (the rest
of the comment may explain it: ``# [1.0, 1.0]  (NumPy values)``); a plain ``` block right after a
python block shows what that block prints, abridged: its lines must appear in order in the
output (``...`` inside a line stands for text left out).
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
    """``print(a, b)  # text`` -> a check that what print shows starts ``text`` (then the print)."""
    out = []
    for line in code.splitlines():
        m = _PRINT_WITH_COMMENT.match(line)
        if m:
            indent, expr, text = m.groups()
            line = f"{indent}__check_print({text!r}, {expr})"
        out.append(line)
    return "\n".join(out)


def _check_print(text: str, *values) -> None:
    shown = " ".join(map(str, values))
    print(shown)
    if "\n" not in shown:      # a comment on a multi-line output describes it
        assert text.startswith(shown), f"prints {shown!r}; the comment says {text!r}"


def _docs_with_python() -> list[Path]:
    return [p for p in DOCS if any(lang == "python" for lang, _ in _blocks(p))]


def test_docs_have_examples():
    names = {p.name for p in _docs_with_python()}
    assert {"README.md", "guide.md", "static.md", "fusion.md"} <= names, names


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
        if i + 1 < len(blocks) and blocks[i + 1][0] == "":
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


# ---- links stay inside the repository --------------------------------------------------------------
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = _BLOCK.sub("", path.read_text())             # a '#' line inside a code block is no heading
    return {_anchor(m.group(1)) for m in re.finditer(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("path", [ROOT / "CHANGELOG.md", *DOCS], ids=lambda p: p.name)
def test_links_resolve_inside_the_repository(path: Path):
    if not path.exists():
        pytest.fail(f"{path.name} is missing")
    for target in _LINK.findall(_BLOCK.sub("", path.read_text())):
        if target.startswith(("http://", "https://")):
            assert path.name == "CHANGELOG.md", f"{path.name} links outside the repository: {target}"
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        assert dest.is_relative_to(ROOT), f"{path.name}: {target} points outside the repository"
        assert dest.exists(), f"{path.name}: {target} does not exist"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{path.name}: no heading for #{anchor} in {dest.name}"


# ---- documentation, not a diary ----------------------------------------------------------------------
#: every page, and the code whose docstrings and comments maintainers read: none cites sessions,
#: issue numbers, dates or files outside the repository (history goes in CHANGELOG.md,
#: measurements in JSON under benchmarks/results/)
DIARY_FREE = [p.relative_to(ROOT).as_posix() for p in (ROOT / "CHANGELOG.md", *DOCS)]
CODE_TREES = ("src", "benchmarks", "tests")
_DIARY = re.compile(r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|this|"
                    r"previous|last|next|earlier|later) session|\bissues? #\d+|"
                    r"(?:\bPR|\bsee|\() ?#\d+|DESIGN\.md|\.\./shared", re.I)
_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
_CODE_SUFFIXES = (".py", ".pyx", ".pxd", ".h")


def _diary_lines(path: Path, dates: bool = True) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
            for i, line in enumerate(path.read_text().splitlines(), 1)
            if _DIARY.search(line) or (dates and _DATE.search(line))]


@pytest.mark.parametrize("name", DIARY_FREE)
def test_docs_read_as_documentation_not_a_diary(name: str):
    found = _diary_lines(ROOT / name, dates=name != "CHANGELOG.md")  # release dates belong there
    assert not found, "cites sessions, issue numbers, dates or files outside the repo:\n" + \
        "\n".join(found)


@pytest.mark.parametrize("tree", CODE_TREES)
def test_code_reads_as_documentation_not_a_diary(tree: str):
    """Docstrings, comments and messages: the same rule as the docs."""
    if not (ROOT / tree).is_dir():
        pytest.skip(f"no {tree}/ next to the tests (testing an installed wheel)")
    files = sorted(p for p in (ROOT / tree).rglob("*") if p.suffix in _CODE_SUFFIXES)
    found = [line for p in files for line in _diary_lines(p)]
    assert not found, "cites sessions, issue numbers, dates or files outside the repo:\n" + \
        "\n".join(found)


def test_the_diary_check_fires():
    """The pattern catches what it is for (a check that never fires would pass too)."""
    for text in ("measured in the previous " "session", "see issue " "#12", "(" "#21)",
                 "DESIGN" ".md", ".." "/shared/x", "run on 2026-01" "-31"):
        assert _DIARY.search(text) or _DATE.search(text), text
    for text in ("argument #1 is 1j", "a Session of its own", "#define FG_OP"):
        assert not _DIARY.search(text), text


def test_readme_starts_with_the_set_up_commands():
    lang, code = _blocks(ROOT / "README.md")[0]
    lines = [ln.split("#")[0].strip() for ln in code.strip().splitlines()]
    assert lang == "bash" and len(lines) == 2, code
    assert lines[0].startswith("pip install .") and "fastgraph demo" in lines[0], lines[0]
    assert lines[1].startswith('pip install ".[test]"') and lines[1].endswith("pytest"), lines[1]


def test_readme_stays_short():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert 60 <= n <= 160, f"README.md has {n} lines; the details belong in docs/"
