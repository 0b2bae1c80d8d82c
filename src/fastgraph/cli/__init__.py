"""Subcommands of ``python -m fastgraph``: one module per command, each with ``main(args)`` and an
optional ``add_arguments(parser)`` (see ``fastgraph.__main__``)."""
