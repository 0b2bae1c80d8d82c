"""``fg.save`` and ``fg.load``: eager values to and from a checkpoint file.

The file format is the one ``fg.train.Saver`` writes (:mod:`fastgraph._core.checkpoint`: an
``.npz`` archive with a JSON manifest, written atomically, read without pickle).
"""
from __future__ import annotations

import numpy as np

from ._core.checkpoint import CheckpointError, load_tree, save_tree
from ._core.dispatch import is_tensor
from .eager.tensor import tensor as _tensor

__all__ = ["save", "load", "CheckpointError"]


def _encode(obj):
    if is_tensor(obj):
        return "tensor", obj._ndarray, {"requires_grad": bool(obj.requires_grad)}
    if hasattr(obj, "graph") and hasattr(obj, "op") and hasattr(obj, "inputs"):
        raise CheckpointError(f"cannot save the graph node {getattr(obj, 'name', obj)!r}: it "
                              f"has no value outside a Session (save sess.run(node), or the "
                              f"variables with fg.train.Saver)")
    return None


def _decode(kind, array, extra):
    if kind == "tensor":
        return _tensor(array, requires_grad=bool(extra.get("requires_grad", False)))
    return NotImplemented


def save(obj, path) -> None:
    """Write ``obj`` to the file ``path``, atomically (a crash leaves the old file or the new
    one): Tensors, NumPy arrays and scalars, Python numbers, strings, bytes and ``None``, in
    dicts, lists and tuples nested as deep as you like.

    The file is an ``.npz`` archive (``np.load(path)`` lists the arrays by their place in
    ``obj``); object arrays, and any value not listed above, raise ``CheckpointError``.

        >>> fg.save({"w": fg.tensor([1.0, 2.0]), "step": 3}, "state.npz")
        >>> fg.load("state.npz")["step"]
        3
    """
    save_tree(path, obj, _encode)


def load(path):
    """Read what :func:`save` (or ``fg.train.Saver``) wrote to ``path``: the same structure,
    with Tensors as new leaf Tensors (``requires_grad`` as saved), arrays as arrays.  No code
    from the file ever runs (no pickle); a damaged or foreign file raises ``CheckpointError``
    naming it.

        >>> state = fg.load("state.npz"); state["w"]
        tensor([1., 2.])
    """
    return load_tree(path, _decode)
