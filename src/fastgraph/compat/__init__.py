"""``fg.compat``: ``fg.compat.v1`` is TensorFlow 1's namespace (``tf.compat.v1``).

:func:`name_table` writes the table of TensorFlow 1's names that the guide's "Coming from
TensorFlow 1" page shows (``docs/tensorflow1.md``), from the registry.

    >>> print(name_table().splitlines()[0])
    | where | names |
"""

from . import v1
from .._core import LOSSES as _LOSSES
from .._core import NN as _NN
from .._core import TF as _TF
from .._core import namespace as _namespace
from .._core.dtypes import TF_DTYPES as _TF_DTYPES

__all__ = ["v1", "name_table"]


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in sorted(names))


def name_table() -> str:
    """The Markdown table of TensorFlow 1's operation names: those ``fastgraph``'s top level has
    with TensorFlow's meaning, those whose top-level meaning is NumPy's (TensorFlow's is in
    ``fg.compat.v1``), those only ``fg.compat.v1`` has, ``fg.nn``, ``fg.losses`` and the
    dtypes."""
    import fastgraph
    ops, top = _namespace(_TF), _namespace("fastgraph")
    same = [n for n in ops if top.get(n) is ops[n]]
    numpy_at_top = [n for n in ops if n not in same and hasattr(fastgraph, n)]
    compat_only = [n for n in ops if n not in same and n not in numpy_at_top]
    rows = [
        ("`fastgraph` and `fg.compat.v1`, one meaning", same),
        ("NumPy's meaning in `fastgraph`, TensorFlow's in `fg.compat.v1`", numpy_at_top),
        ("`fg.compat.v1` only", compat_only),
        ("`fg.nn` (and `fg.compat.v1.nn`)", _namespace(_NN)),
        ("`fg.losses` (and `fg.compat.v1.losses`)", _namespace(_LOSSES)),
        ("dtypes, in both", _TF_DTYPES),
    ]
    lines = ["| where | names |", "|---|---|"]
    for where, names in rows:
        lines.append(f"| {where} | {_names(names)} |")
    return "\n".join(lines) + "\n"


