"""``torch.save`` and ``torch.load`` for state dicts: fastgraph's checkpoint format (an ``.npz``
archive with a JSON manifest, written atomically, read without pickle)."""
from __future__ import annotations

import os

from ..serialize import CheckpointError, load as _load, save as _save

__all__ = ["save", "load", "CheckpointError"]


def _path(f, op):
    if isinstance(f, (str, bytes, os.PathLike)):
        return f
    raise TypeError(f"{op}(): f must be a file path (str or os.PathLike), not "
                    f"{type(f).__name__}: fastgraph's checkpoints are written atomically by "
                    f"name")


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Write ``obj`` (a state dict: nested dicts, lists and tuples of Tensors, arrays, numbers,
    strings and ``None``) to the file ``f``, atomically.  Objects that are not data (modules,
    functions, arbitrary classes) raise ``CheckpointError``: save their ``state_dict()``.

        >>> torch.save({"w": torch.ones(2), "epoch": 3}, "ckpt.pt")
        >>> torch.load("ckpt.pt")["epoch"]
        3
    """
    if pickle_module is not None:
        raise TypeError("save(): pickle_module is not supported (fastgraph's checkpoints hold "
                        "no pickled objects)")
    _save(obj, _path(f, "save"))


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **kwargs):
    """Read what :func:`save` wrote.  No code from the file ever runs, so ``weights_only``
    (``True`` or ``False``) changes nothing; ``map_location`` may only name the CPU.

        >>> torch.load("ckpt.pt", weights_only=True)["w"]
        tensor([1., 1.], dtype=float32)
    """
    if map_location is not None and not callable(map_location) and not isinstance(
            map_location, dict):
        from ..ops.torch_methods import Device
        Device(map_location)
    if pickle_module is not None:
        raise TypeError("load(): pickle_module is not supported")
    from ._tensor import with_torch_face
    return with_torch_face(_load(_path(f, "load")))
