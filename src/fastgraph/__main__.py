"""Command-line entry point: ``python -m fastgraph <command>`` (also installed as ``fastgraph``).

Commands: ``info`` (build facts), ``demo`` and ``bench``.  Each lives in ``fastgraph.cli.<name>``
and is imported only when used, so ``info`` stays fast and works even if a heavier command's
optional dependencies are missing.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

#: what --help says first (plain text: help is no place for reST markup)
DESCRIPTION = "fastgraph's command line: build facts, a guided demo and the benchmark suite."

# name -> one-line help; the module fastgraph.cli.<name> provides add_arguments(parser) (optional)
# and main(args) -> int | None.
COMMANDS = {
    "info": "print version, compiled extensions, OpenMP, threads and NumPy/BLAS facts",
    "demo": "train one small model eagerly, statically and with fg.function, side by side",
    "bench": "run the benchmarks against NumPy and peer libraries",
}


def _load(name: str):
    try:
        return importlib.import_module(f"fastgraph.cli.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"fastgraph.cli.{name}":
            raise  # the command exists but one of its own imports failed: show the real error
        return None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fastgraph", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", metavar="command")
    for name, help_text in COMMANDS.items():
        # Options belong to each command's module and are parsed only once it is imported, so a
        # missing or broken command cannot break the others; add_help=False passes -h through.
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns, rest = parser.parse_known_args(argv)
    if ns.command is None:
        parser.print_help()
        return 2
    module = _load(ns.command)
    if module is None:
        print(
            f"fastgraph {ns.command}: not available yet in this version "
            f"(module fastgraph.cli.{ns.command} is missing).",
            file=sys.stderr,
        )
        return 1
    sub = argparse.ArgumentParser(prog=f"python -m fastgraph {ns.command}",
                                  description=COMMANDS[ns.command])
    if hasattr(module, "add_arguments"):
        module.add_arguments(sub)
    args = sub.parse_args(rest)
    try:
        rc = module.main(args)
    except BrokenPipeError:   # output piped into `head` and closed: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
