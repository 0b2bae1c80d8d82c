"""The checkpoint file format: nested structures of arrays, numbers and strings in one ``.npz``.

One format serves ``fg.train.Saver`` (a graph's variables), ``fg.save``/``fg.load`` (eager
values) and the PyTorch front-end's ``save``/``load`` (state dicts).  A file is a zip archive of
``.npy`` members, exactly what ``np.savez`` writes, so ``np.load(path)`` reads it without
fastgraph:

* one member per array, named after its place in the structure (``"layer1/W"``; a name that is
  not a plain path gets a numbered one);
* the member ``__fastgraph__``: a 0-d string array holding a JSON manifest, the structure (dicts
  with their key types, lists, tuples, numbers, strings, ``None``) and, for each array, its member
  and its kind (``"ndarray"``, ``"scalar"``, or a kind a caller encodes: a Tensor).

Reading never runs code from the file: every array is read with ``allow_pickle=False`` (an
object array is refused), the manifest is JSON, and anything unexpected raises
:class:`CheckpointError` naming the file.  Writing is atomic: the archive goes to a temporary
file in the same directory, which is flushed, ``fsync``-ed and renamed over the destination, and
the directory is ``fsync``-ed; a crash leaves the old file or the new one, never half of one.

    >>> save_tree("state.npz", {"w": np.ones(3), "step": 7})
    >>> load_tree("state.npz")["step"]
    7
"""
from __future__ import annotations

import json
import os
import re
import secrets
import zipfile
from typing import Callable

import numpy as np

__all__ = ["CheckpointError", "save_tree", "load_tree", "atomic_write", "FORMAT", "VERSION",
           "MANIFEST"]

FORMAT = "fastgraph-checkpoint"
VERSION = 1
#: the member holding the manifest
MANIFEST = "__fastgraph__"

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")


class CheckpointError(ValueError):
    """A file that is not a readable fastgraph checkpoint (damaged, tampered with, or another
    format), or a value that cannot be written to one."""


# ---- atomic writes ---------------------------------------------------------------------------
def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:     # (a platform without directory handles: the rename is what we have)
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, write: Callable) -> None:
    """Call ``write(file)`` on a new file and put it at ``path`` only once it is complete.

    The temporary file lives next to ``path`` (so the rename stays on one file system), is
    flushed and ``fsync``-ed, then renamed over ``path``; the directory is ``fsync``-ed after.
    If ``write`` raises, the temporary file is removed and ``path`` is untouched.

        >>> atomic_write("notes.txt", lambda f: f.write(b"done"))
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    # (os.open with 0o666 lets the umask decide the permissions, as open() would)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


# ---- encoding a structure ----------------------------------------------------------------------
def _default_encode(obj):
    if isinstance(obj, np.ndarray):
        return "ndarray", obj, None
    if isinstance(obj, np.generic):
        return "scalar", np.asarray(obj), None
    return None


def _default_decode(kind, array, extra):
    if kind == "ndarray":
        return array
    if kind == "scalar":
        return array[()]
    raise CheckpointError(f"an array of kind {kind!r} needs a loader that knows it")


class _Writer:
    def __init__(self, encode):
        self.encode = encode
        self.arrays: dict[str, np.ndarray] = {}

    def member(self, path: list) -> str:
        name = "/".join(path)
        if not name or not _PLAIN_NAME.match(name) or name == MANIFEST or name in self.arrays:
            name = f"#{len(self.arrays)}"
            while name in self.arrays:
                name += "_"
        return name

    def key(self, k, where):
        t = type(k)
        if k is None or t in (bool, int, float, str):
            return self.node(k, where)
        if t is tuple:
            return {"t": "tuple", "items": [self.key(e, where) for e in k]}
        raise CheckpointError(f"cannot save a dict key of type {t.__name__} at "
                              f"{_where(where)}: keys are strings, numbers, None or tuples "
                              f"of them")

    def node(self, obj, path: list):
        t = type(obj)
        if obj is None:
            return {"t": "none"}
        if t is bool:
            return {"t": "bool", "v": obj}
        if t is int:
            return {"t": "int", "v": str(obj)}
        if t is float:
            return {"t": "float", "v": repr(obj)}
        if t is complex:
            return {"t": "complex", "v": [repr(obj.real), repr(obj.imag)]}
        if t is str:
            return {"t": "str", "v": obj}
        if t is bytes:
            return {"t": "bytes", "v": obj.hex()}
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                sub = path + [k if isinstance(k, str) else str(k)]
                items.append([self.key(k, sub), self.node(v, sub)])
            return {"t": "dict", "items": items}
        if t in (list, tuple):
            return {"t": t.__name__,
                    "items": [self.node(v, path + [str(i)]) for i, v in enumerate(obj)]}
        enc = self.encode(obj) if self.encode is not None else None
        if enc is None:
            enc = _default_encode(obj)
        if enc is None:
            raise CheckpointError(f"cannot save an object of type {t.__name__} at "
                                  f"{_where(path)}: a checkpoint holds arrays, numbers, "
                                  f"strings, None, and dicts, lists and tuples of them")
        kind, array, extra = enc
        array = np.asarray(array)
        if array.dtype.hasobject:
            raise CheckpointError(f"cannot save an object array at {_where(path)}: a "
                                  f"checkpoint holds numeric, boolean and string arrays only "
                                  f"(no pickled objects)")
        name = self.member(path)
        self.arrays[name] = array
        out = {"t": "array", "member": name, "kind": kind}
        if extra:
            out["extra"] = extra
        return out


def _where(path) -> str:
    return "the top level" if not path else "/".join(map(str, path))


def save_tree(path, obj, encode: Callable | None = None) -> None:
    """Write ``obj`` (arrays, NumPy scalars, numbers, strings, bytes, ``None``, and dicts,
    lists and tuples of them, nested) to the checkpoint file ``path``, atomically.

    ``encode(value)``, when given, is asked first about every other value: it returns
    ``(kind, array, extra)`` (``extra`` a JSON-able dict or ``None``) or ``None`` (not one of
    its kinds).  A value nobody encodes is a :class:`CheckpointError` naming where it is.

        >>> save_tree("w.npz", {"layer1": {"W": np.eye(2)}})
    """
    writer = _Writer(encode)
    tree = writer.node(obj, [])
    manifest = json.dumps({"format": FORMAT, "version": VERSION, "tree": tree})

    def write(f):
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            _write_member(zf, MANIFEST, np.array(manifest))
            for name, array in writer.arrays.items():
                _write_member(zf, name, array)

    atomic_write(path, write)


def _write_member(zf, name: str, array: np.ndarray) -> None:
    with zf.open(name + ".npy", "w", force_zip64=array.nbytes >= (1 << 31)) as m:
        np.lib.format.write_array(m, np.asanyarray(array), allow_pickle=False)


# ---- reading ---------------------------------------------------------------------------------
def _read_member(zf, name: str, path) -> np.ndarray:
    try:
        with zf.open(name + ".npy") as m:
            return np.lib.format.read_array(m, allow_pickle=False)
    except KeyError:
        raise CheckpointError(f"{path}: the manifest names an array {name!r} the file does not "
                              f"hold (the file was changed or damaged)") from None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise CheckpointError(f"{path}: cannot read the array {name!r}: {e} (the file was "
                              f"changed or damaged; checkpoints never hold pickled "
                              f"objects)") from None


class _Reader:
    def __init__(self, zf, path, decode):
        self.zf, self.path, self.decode = zf, path, decode

    def bad(self, what):
        return CheckpointError(f"{self.path}: the manifest is not a fastgraph checkpoint's "
                               f"({what})")

    def items(self, node):
        items = node.get("items")
        if not isinstance(items, list):
            raise self.bad(f"{node.get('t')} without items")
        return items

    def key(self, node):
        if isinstance(node, dict) and node.get("t") == "tuple":
            return tuple(self.key(e) for e in self.items(node))
        k = self.node(node)
        if k is not None and type(k) not in (bool, int, float, str):
            raise self.bad("a dict key that is not a string, number or None")
        return k

    def node(self, node):
        if not isinstance(node, dict):
            raise self.bad(f"an entry of type {type(node).__name__}")
        t = node.get("t")
        v = node.get("v")
        try:
            if t == "none":
                return None
            if t == "bool" and type(v) is bool:
                return v
            if t == "int" and type(v) is str:
                return int(v)
            if t == "float" and type(v) is str:
                return float(v)
            if t == "complex" and isinstance(v, list) and len(v) == 2:
                return complex(float(v[0]), float(v[1]))
            if t == "str" and type(v) is str:
                return v
            if t == "bytes" and type(v) is str:
                return bytes.fromhex(v)
        except ValueError:
            raise self.bad(f"a {t} entry holding {v!r}") from None
        if t == "dict":
            out = {}
            for pair in self.items(node):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self.bad("a dict item that is not a key and a value")
                out[self.key(pair[0])] = self.node(pair[1])
            return out
        if t == "list":
            return [self.node(e) for e in self.items(node)]
        if t == "tuple":
            return tuple(self.node(e) for e in self.items(node))
        if t == "array":
            member, kind = node.get("member"), node.get("kind")
            if type(member) is not str or type(kind) is not str:
                raise self.bad("an array entry without a member and a kind")
            array = _read_member(self.zf, member, self.path)
            extra = node.get("extra") or {}
            if self.decode is not None:
                out = self.decode(kind, array, extra)
                if out is not NotImplemented:
                    return out
            return _default_decode(kind, array, extra)
        raise self.bad(f"an entry of type {t!r}")


def load_tree(path, decode: Callable | None = None):
    """Read the structure :func:`save_tree` wrote to ``path``; no code from the file runs.

    ``decode(kind, array, extra)``, when given, makes the value of each array of a kind it
    knows (it returns ``NotImplemented`` for the others: ``"ndarray"`` arrays come back as
    arrays, ``"scalar"`` ones as NumPy scalars).

        >>> load_tree("w.npz")["layer1"]["W"]
        array([[1., 0.], [0., 1.]])
    """
    path = os.fspath(path)
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise CheckpointError(f"{path}: not a fastgraph checkpoint (not an .npz archive; "
                              f"fastgraph never loads pickle files)") from None
    with zf:
        try:
            names = set(zf.namelist())
        except Exception as e:  # pragma: no cover - zipfile read its directory already
            raise CheckpointError(f"{path}: cannot list the archive: {e}") from None
        if MANIFEST + ".npy" not in names:
            raise CheckpointError(f"{path}: not a fastgraph checkpoint (no {MANIFEST!r} "
                                  f"member; a plain np.savez archive is read with np.load)")
        text = _read_member(zf, MANIFEST, path)
        if text.dtype.kind != "U" or text.ndim != 0:
            raise CheckpointError(f"{path}: the manifest is not a string")
        try:
            manifest = json.loads(str(text[()]))
        except ValueError as e:
            raise CheckpointError(f"{path}: the manifest is not valid JSON ({e})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise CheckpointError(f"{path}: not a fastgraph checkpoint (format "
                                  f"{manifest.get('format') if isinstance(manifest, dict) else None!r})")
        version = manifest.get("version")
        if type(version) is not int or version > VERSION or version < 1:
            raise CheckpointError(f"{path}: checkpoint format version {version!r}; this "
                                  f"fastgraph reads versions up to {VERSION}")
        return _Reader(zf, path, decode).node(manifest.get("tree"))
