"""Subcommands of ``python -m fastgraph``: one module per command, each with ``main(args)`` and an
optional ``add_arguments(parser)`` (see ``fastgraph.__main__``)."""
from __future__ import annotations

import argparse
import importlib.util
import os


def thread_count(text: str) -> int:
    """``--threads``: what ``fg.set_num_threads`` takes (checked before any work starts)."""
    from .._core.config import _validate
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    try:
        return _validate(n)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def output_file(*suffixes: str):
    """An output path option (``--plot``, ``--json``): its folder must exist and be writable
    and its suffix one of ``suffixes``, checked when the arguments are parsed, not after
    minutes of work."""
    def check(text: str) -> str:
        folder = os.path.dirname(os.path.abspath(text))
        if suffixes and not text.lower().endswith(suffixes):
            raise argparse.ArgumentTypeError(f"{text!r}: expected a {'/'.join(suffixes)} file")
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise argparse.ArgumentTypeError(f"{text!r}: cannot write into {folder!r}")
        return text
    return check


def matplotlib_missing() -> str | None:
    """Why ``--plot`` cannot work here (None when it can): checked before any work starts.

    >>> matplotlib_missing() in (None, "--plot needs matplotlib, which is not installed: "
    ...                          "pip install matplotlib")
    True
    """
    if importlib.util.find_spec("matplotlib") is None:
        return "--plot needs matplotlib, which is not installed: pip install matplotlib"
    return None
