"""``fg.train.Saver``: a graph's variables saved to and restored from checkpoint files.

A checkpoint is one file, ``<prefix>.npz`` (the format of :mod:`fastgraph._core.checkpoint`:
``np.load`` reads it, each variable an array named after the variable), written atomically; the
directory's ``checkpoint`` file names the newest, as TensorFlow's does, so
:func:`latest_checkpoint` finds it.  A restore checks every variable (present, same shape, same
dtype) before it sets any: a checkpoint that does not match leaves the session as it was.

    >>> saver = fg.train.Saver()
    >>> path = saver.save(sess, "/tmp/model.ckpt", global_step=100)   # "/tmp/model.ckpt-100"
    >>> saver.restore(sess, fg.train.latest_checkpoint("/tmp"))
"""
from __future__ import annotations

import collections
import json
import os
import re

import numpy as np

from .._core.checkpoint import CheckpointError, atomic_write, load_tree, save_tree
from .errors import InvalidArgumentError, NotFoundError
from .graph import get_default_graph
from .node import NODE_TYPES
from .variables import Variable

__all__ = ["Saver", "latest_checkpoint", "get_checkpoint_state", "checkpoint_exists",
           "CheckpointState", "CHECKPOINT_SUFFIX", "STATE_FILE"]

#: the file name a checkpoint prefix gets
CHECKPOINT_SUFFIX = ".npz"
#: the file in a checkpoint directory naming its checkpoints (TensorFlow's name and layout)
STATE_FILE = "checkpoint"

#: ``get_checkpoint_state``'s answer: the newest checkpoint and all kept ones, oldest first
CheckpointState = collections.namedtuple("CheckpointState",
                                         ["model_checkpoint_path", "all_model_checkpoint_paths"])


def _var_dict(var_list, graph) -> dict:
    if var_list is None:
        var_list = list(graph.variables)
    if isinstance(var_list, dict):
        items = list(var_list.items())
    else:
        if isinstance(var_list, Variable):
            var_list = [var_list]
        items = []
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"Saver: var_list holds a {type(v).__name__} "
                                f"({getattr(v, 'name', v)!r}); give Variables, or a dict of "
                                f"names to Variables")
            items.append((v.name, v))
    out = {}
    for name, v in items:
        if not isinstance(name, str) or not name:
            raise TypeError(f"Saver: a checkpoint name must be a non-empty string, got {name!r}")
        if not isinstance(v, Variable):
            raise TypeError(f"Saver: {name!r} maps to a {type(v).__name__}, not a Variable")
        if name in out:
            raise ValueError(f"Saver: two variables are saved under the name {name!r}")
        out[name] = v
    graphs = {v.graph for v in out.values()}
    if len(graphs) > 1:
        raise ValueError("Saver: the variables belong to more than one graph")
    return out


def _data_file(prefix: str) -> str:
    return prefix + CHECKPOINT_SUFFIX


def _existing_data_file(path: str) -> str | None:
    """The checkpoint file a ``restore`` path names: ``<prefix>.npz``, or the file itself."""
    for cand in (_data_file(path), path):
        if os.path.isfile(cand):
            return cand
    return None


def checkpoint_exists(checkpoint_prefix) -> bool:
    """Whether a checkpoint was saved under ``checkpoint_prefix`` (TensorFlow's
    ``tf.train.checkpoint_exists``).

        >>> fg.train.checkpoint_exists("/tmp/model.ckpt-100")
        True
    """
    return _existing_data_file(os.fspath(checkpoint_prefix)) is not None


class Saver:
    """Saves and restores variables (TensorFlow 1's ``tf.train.Saver``).

    ``var_list``: the variables (a list, or a dict of names to variables); ``None``, every
    variable of the default graph made so far, optimizer slots and the global step included.
    ``max_to_keep``: how many of its newest checkpoints this saver keeps (older ones are
    deleted when a new one is written); ``None`` or 0 keeps all.

        >>> saver = fg.train.Saver(max_to_keep=2)
        >>> for step in range(3):
        ...     saver.save(sess, "ckpt/model", global_step=step)    # keeps model-1, model-2
    """

    def __init__(self, var_list=None, max_to_keep=5, name=None, allow_empty=False,
                 keep_checkpoint_every_n_hours=10000.0, save_relative_paths=True):
        graph = get_default_graph()
        self._vars = _var_dict(var_list, graph)
        if not self._vars and not allow_empty:
            raise ValueError("Saver: no variables to save")
        self._graph = next(iter(self._vars.values())).graph if self._vars else graph
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep < 0):
            raise ValueError(f"Saver: max_to_keep must be None or an integer >= 0, got "
                             f"{max_to_keep!r}")
        self._max_to_keep = max_to_keep or 0
        self._last: list[str] = []        # this saver's checkpoints, oldest first
        self.name = name

    @property
    def last_checkpoints(self) -> list:
        """This saver's kept checkpoints, oldest first."""
        return list(self._last)

    def _check_session(self, sess, what):
        if sess is None:
            raise ValueError(f"Saver.{what}: a Session is needed")
        if sess.graph is not self._graph and self._vars:
            raise ValueError(f"Saver.{what}: the session runs another graph than the saver's "
                             f"variables")

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             write_state=True, **_ignored_tf_options) -> str:
        """Write the variables' values in ``sess`` to ``<save_path>[-<global_step>].npz``;
        returns the checkpoint's prefix (what :meth:`restore` and :func:`latest_checkpoint`
        take).  An uninitialised variable raises ``FailedPreconditionError`` naming it, and no
        file is written.

            >>> saver.save(sess, "/tmp/model.ckpt", global_step=step)
            '/tmp/model.ckpt-1000'
        """
        self._check_session(sess, "save")
        save_path = os.fspath(save_path)
        if global_step is not None:
            if type(global_step) in NODE_TYPES:
                global_step = sess.run(global_step)
            try:
                step = int(global_step)
            except (TypeError, ValueError):
                raise TypeError(f"Saver.save: global_step must be an integer or a node of "
                                f"one, got {global_step!r}") from None
            prefix = f"{save_path}-{step}"
        else:
            prefix = save_path
        directory = os.path.dirname(os.path.abspath(prefix))
        if not os.path.isdir(directory):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        names = list(self._vars)
        values = sess._variable_values([self._vars[n] for n in names])
        save_tree(_data_file(prefix), dict(zip(names, values)))
        if prefix in self._last:
            self._last.remove(prefix)
        self._last.append(prefix)
        dropped = []
        if self._max_to_keep:
            while len(self._last) > self._max_to_keep:
                dropped.append(self._last.pop(0))
        if write_state:
            _write_state(directory, prefix, self._last, latest_filename or STATE_FILE)
        for old in dropped:         # (after the state file stops naming them)
            try:
                os.unlink(_data_file(old))
            except FileNotFoundError:
                pass
        return prefix

    def restore(self, sess, save_path) -> None:
        """Set the variables in ``sess`` to the values saved under ``save_path`` (a prefix
        :meth:`save` returned, or the ``.npz`` file itself).

        Every variable is checked first: one missing from the checkpoint raises
        ``NotFoundError``, one of another shape or dtype ``InvalidArgumentError``, each naming
        the variable (and both shapes); then all are set at once, so a failed restore changes
        nothing.  Values the checkpoint holds for other variables are ignored.
        """
        self._check_session(sess, "restore")
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        path = _existing_data_file(save_path)
        if path is None:
            raise NotFoundError(f"Saver.restore: no checkpoint at {save_path!r} (looked for "
                                f"{_data_file(save_path)!r})")
        try:
            saved = load_tree(path)
        except CheckpointError as e:
            raise InvalidArgumentError(f"Saver.restore: {e}") from None
        if not isinstance(saved, dict) or not all(isinstance(k, str) for k in saved):
            raise InvalidArgumentError(f"Saver.restore: {path} holds a "
                                       f"{type(saved).__name__}, not a checkpoint of "
                                       f"variables by name")
        pairs = []
        for name, v in self._vars.items():
            if name not in saved:
                raise NotFoundError(f"Saver.restore: variable {name!r} (shape {v.shape}) is not "
                                    f"in the checkpoint {path} (it holds "
                                    f"{_names_preview(saved)})", v)
            arr = saved[name]
            if isinstance(arr, np.generic):     # (a NumPy scalar fg.save wrote)
                arr = np.asarray(arr)
            if not isinstance(arr, np.ndarray):
                raise InvalidArgumentError(f"Saver.restore: {path} holds a "
                                           f"{type(arr).__name__} for variable {name!r}, not "
                                           f"an array", v)
            if arr.shape != tuple(v.shape):
                raise InvalidArgumentError(
                    f"Saver.restore: variable {name!r} has shape {tuple(v.shape)} but the "
                    f"checkpoint {path} holds shape {arr.shape} for it", v)
            if arr.dtype != v.dtype:
                raise InvalidArgumentError(
                    f"Saver.restore: variable {name!r} has dtype {v.dtype} but the checkpoint "
                    f"{path} holds dtype {arr.dtype} for it", v)
            pairs.append((v, arr))
        sess._set_variables(pairs)

    def recover_last_checkpoints(self, checkpoint_paths) -> None:
        """Adopt ``checkpoint_paths`` (oldest first) as this saver's kept checkpoints, e.g.
        ``get_checkpoint_state(dir).all_model_checkpoint_paths`` after a restart."""
        self._last = [os.fspath(p) for p in checkpoint_paths if checkpoint_exists(p)]


def _names_preview(saved) -> str:
    names = sorted(saved)
    if not names:
        return "no variables"
    shown = ", ".join(repr(n) for n in names[:8])
    return shown + (f" and {len(names) - 8} more" if len(names) > 8 else "")


# ---- the state file --------------------------------------------------------------------------
def _quote(s: str) -> str:
    return json.dumps(s)


def _write_state(directory, newest, kept, filename) -> None:
    def rel(p):
        p = os.path.abspath(p)
        return os.path.relpath(p, directory) if os.path.dirname(p) == directory else p

    lines = [f"model_checkpoint_path: {_quote(rel(newest))}"]
    lines += [f"all_model_checkpoint_paths: {_quote(rel(p))}" for p in kept]
    text = ("\n".join(lines) + "\n").encode()
    atomic_write(os.path.join(directory, filename), lambda f: f.write(text))


_STATE_LINE = re.compile(r'^\s*(model_checkpoint_path|all_model_checkpoint_paths)\s*:\s*(".*")\s*$')


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The ``checkpoint`` file of ``checkpoint_dir`` as a :data:`CheckpointState` (paths made
    absolute against the directory), or ``None`` when there is none.

        >>> fg.train.get_checkpoint_state("/tmp").all_model_checkpoint_paths
        ['/tmp/model.ckpt-900', '/tmp/model.ckpt-1000']
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = os.path.join(checkpoint_dir, latest_filename or STATE_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    newest, kept = None, []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _STATE_LINE.match(line)
        if m is None:
            raise ValueError(f"{path}: not a checkpoint state file (line {line!r})")
        try:
            value = json.loads(m.group(2))
        except ValueError:
            raise ValueError(f"{path}: cannot read the path in line {line!r}") from None
        value = value if os.path.isabs(value) else os.path.join(checkpoint_dir, value)
        if m.group(1) == "model_checkpoint_path":
            newest = value
        else:
            kept.append(value)
    if newest is None:
        return None
    return CheckpointState(newest, kept)


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint saved in ``checkpoint_dir`` (for
    :meth:`Saver.restore`), or ``None`` when there is none.

        >>> saver.restore(sess, fg.train.latest_checkpoint("/tmp"))
    """
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not checkpoint_exists(state.model_checkpoint_path):
        return None
    return state.model_checkpoint_path
