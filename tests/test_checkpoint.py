"""Checkpoints: ``fg.save``/``fg.load`` and ``fg.train.Saver`` over one file format (an ``.npz``
with a JSON manifest), written atomically, read without pickle, checked before restoring."""
from __future__ import annotations

import os
import pickle
import zipfile

import numpy as np
import pytest

import fastgraph as fg
from fastgraph._core import checkpoint as ckpt
from fastgraph._core.checkpoint import CheckpointError


# ---- fg.save / fg.load -------------------------------------------------------------------
def _same(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, fg.Tensor):
        assert a.requires_grad == b.requires_grad and a.dtype == b.dtype
        np.testing.assert_array_equal(a.data, b.data)
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, float) and a != a:
        assert b != b
    else:
        assert a == b


STRUCTURES = {
    "state dict": {"layer1.weight": fg.tensor(np.arange(6.0).reshape(2, 3)),
                   "layer1.bias": fg.tensor(np.zeros(3, np.float32), requires_grad=True)},
    "optimizer state": {"state": {0: {"step": 3, "exp_avg": np.ones((2, 2), np.float32)}},
                        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1],
                                          "nesterov": False, "name": None}]},
    "scalars": [1, -(2 ** 80), 1.5, float("inf"), float("nan"), 1 + 2j, True, None, "héllo",
                b"\x00\xff", np.float32(0.25), np.int16(-3), np.bool_(True)],
    "arrays": {"empty": np.zeros((0, 3)), "bools": np.array([True, False]),
               "strings": np.array(["a", "bcd"]), "bytes": np.array([b"x", b"yz"]),
               "ints": np.arange(5, dtype=np.uint8), "f16": np.ones(2, np.float16),
               "c128": np.array([1 + 1j]), "fortran": np.asfortranarray(np.ones((2, 3))),
               "zero-d": np.array(7.0)},
    "odd keys": {(1, "a"): 1, 2.5: "x", None: [], True: (), "a/b": {"": 0}, "__fastgraph__": 1},
    "bare tensor": fg.tensor([1.0, 2.0]),
}


@pytest.mark.parametrize("name", list(STRUCTURES))
def test_save_load_round_trip(tmp_path, name):
    path = tmp_path / "obj.npz"
    fg.save(STRUCTURES[name], path)
    _same(STRUCTURES[name], fg.load(path))


def test_the_file_is_an_npz_numpy_reads_without_pickle(tmp_path):
    path = tmp_path / "state.npz"
    fg.save({"layer1": {"W": fg.tensor(np.eye(2))}, "step": 4}, path)
    with np.load(path, allow_pickle=False) as z:
        np.testing.assert_array_equal(z["layer1/W"], np.eye(2))
        assert ckpt.MANIFEST in z.files


def test_loaded_tensors_are_new_leaves(tmp_path):
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    fg.save({"w": w}, tmp_path / "w.npz")
    got = fg.load(tmp_path / "w.npz")["w"]
    assert got.is_leaf and got.requires_grad and got.grad is None
    (got * 3).sum().backward()
    np.testing.assert_array_equal(got.grad.data, [3.0, 3.0])


@pytest.mark.parametrize("bad,match", [
    (np.array([object()], dtype=object), "object array"),
    ({"f": lambda: 0}, "type function at f"),
    ({"deep": [1, {"x": {1, 2}}]}, "type set at deep/1/x"),
    ({frozenset(): 1}, "dict key of type frozenset"),
])
def test_values_a_checkpoint_cannot_hold_are_refused(tmp_path, bad, match):
    path = tmp_path / "x.npz"
    with pytest.raises(CheckpointError, match=match):
        fg.save(bad, path)
    assert not path.exists() and os.listdir(tmp_path) == []


def test_graph_nodes_are_refused_with_advice(tmp_path):
    x = fg.placeholder(fg.float64, (2,), name="x")
    with pytest.raises(CheckpointError, match="graph node 'x'.*Saver"):
        fg.save({"x": x}, tmp_path / "x.npz")


# ---- atomic writes ---------------------------------------------------------------------------
def test_a_crash_mid_save_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "state.npz"
    fg.save({"a": np.zeros(3), "b": np.zeros(3)}, path)
    real = np.lib.format.write_array
    calls = []

    def crash_on_second_array(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:       # the manifest, array a, then array b: "the power fails"
            raise KeyboardInterrupt("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", crash_on_second_array)
    with pytest.raises(KeyboardInterrupt):
        fg.save({"a": np.ones(3), "b": np.ones(3)}, path)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["state.npz"]       # no temporary file left
    got = fg.load(path)
    np.testing.assert_array_equal(got["a"], np.zeros(3))
    np.testing.assert_array_equal(got["b"], np.zeros(3))


def test_atomic_write_fsyncs_and_renames(tmp_path, monkeypatch):
    synced, replaced = [], []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (replaced.append((a, b)),
                                                     real_replace(a, b))[1])
    ckpt.atomic_write(tmp_path / "f.bin", lambda f: f.write(b"abc"))
    assert (tmp_path / "f.bin").read_bytes() == b"abc"
    assert len(synced) == 2           # the file, then its directory
    (src, dst), = replaced
    assert os.path.dirname(src) == str(tmp_path) and dst == str(tmp_path / "f.bin")


# ---- files that are not what they claim ------------------------------------------------------
class _Boom:
    """Unpickling it would create a file: proof that code from the file ran."""
    marker = None

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _write_zip(path, members: dict):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _npy(arr, allow_pickle=False) -> bytes:
    import io
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=allow_pickle)
    return buf.getvalue()


def _manifest(tree) -> bytes:
    import json
    return _npy(np.array(json.dumps({"format": ckpt.FORMAT, "version": 1, "tree": tree})))


def test_a_pickled_array_is_refused_and_never_unpickled(tmp_path):
    marker = tmp_path / "pwned"
    _Boom.marker = str(marker)
    evil = np.empty(1, dtype=object)
    evil[0] = _Boom()
    path = tmp_path / "evil.npz"
    _write_zip(path, {ckpt.MANIFEST + ".npy": _manifest(
        {"t": "dict", "items": [[{"t": "str", "v": "w"},
                                 {"t": "array", "member": "w", "kind": "ndarray"}]]}),
        "w.npy": _npy(evil, allow_pickle=True)})
    with pytest.raises(CheckpointError, match="cannot read the array 'w'.*pickled"):
        fg.load(path)
    x = fg.Variable(np.zeros(1), name="w")
    with fg.Session() as sess:
        sess.run(x.initializer)
        with pytest.raises(fg.errors.InvalidArgumentError, match="pickled"):
            fg.train.Saver().restore(sess, str(path))
    assert not marker.exists()


def test_a_pickle_file_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    _Boom.marker = str(marker)
    path = tmp_path / "model.pt"
    path.write_bytes(pickle.dumps({"w": _Boom()}))
    with pytest.raises(CheckpointError, match="not an .npz archive.*never loads pickle"):
        fg.load(path)
    assert not marker.exists()


def test_changed_bytes_are_detected(tmp_path):
    path = tmp_path / "state.npz"
    fg.save({"w": np.arange(100.0)}, path)
    data = bytearray(path.read_bytes())
    at = data.find(np.arange(100.0).tobytes()[8 * 50:8 * 51])
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="'w'.*damaged"):
        fg.load(path)


@pytest.mark.parametrize("members,match", [
    ({"w.npy": _npy(np.ones(2))}, "no '__fastgraph__' member"),
    ({ckpt.MANIFEST + ".npy": _npy(np.array("not json"))}, "not valid JSON"),
    ({ckpt.MANIFEST + ".npy": _npy(np.arange(3))}, "manifest is not a string"),
    ({ckpt.MANIFEST + ".npy": _manifest({"t": "array", "member": "gone", "kind": "ndarray"})},
     "names an array 'gone'"),
    ({ckpt.MANIFEST + ".npy": _manifest({"t": "code", "v": "import os"})}, "type 'code'"),
    ({ckpt.MANIFEST + ".npy": _manifest({"t": "int", "v": "1e3"})}, "int entry"),
    ({ckpt.MANIFEST + ".npy": _npy(np.array('{"format": "fastgraph-checkpoint", '
                                            '"version": 99, "tree": {"t": "none"}}'))},
     "version 99"),
])
def test_malformed_files_raise_naming_the_problem(tmp_path, members, match):
    path = tmp_path / "bad.npz"
    _write_zip(path, members)
    with pytest.raises(CheckpointError, match=match):
        fg.load(path)


# ---- fg.train.Saver --------------------------------------------------------------------------
def _model():
    w = fg.Variable(np.arange(6.0).reshape(2, 3), name="layer1/W")
    b = fg.Variable(np.float32(0.5), name="layer1/b")
    n = fg.Variable(np.int64(7), name="count", trainable=False)
    return w, b, n


def _values(sess, vs):
    return [np.array(v) for v in sess.run(list(vs))]


def test_saver_round_trip_into_a_new_session(tmp_path):
    w, b, n = _model()
    saver = fg.train.Saver()
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        sess.run([w.assign(w * 2), n.assign_add(1)])
        want = _values(sess, (w, b, n))
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
    assert path == str(tmp_path / "model.ckpt")
    assert os.path.isfile(path + ".npz")
    with fg.Session() as sess:          # nothing initialised: the restore is the initializer
        saver.restore(sess, path)
        got = _values(sess, (w, b, n))
    for a, e in zip(got, want):
        assert a.dtype == e.dtype
        np.testing.assert_array_equal(a, e)


def test_saver_global_step_names_and_max_to_keep(tmp_path):
    w, b, n = _model()
    step = fg.train.get_or_create_global_step() if hasattr(fg.train, "get_or_create_global_step") \
        else fg.Variable(np.int64(0), name="global_step", trainable=False)
    saver = fg.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "model")
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        paths = [saver.save(sess, prefix, global_step=i) for i in (10, 20, 30)]
        sess.run(step.assign(40))
        paths.append(saver.save(sess, prefix, global_step=step))    # a node: its value
    assert paths == [f"{prefix}-10", f"{prefix}-20", f"{prefix}-30", f"{prefix}-40"]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-30.npz", "model-40.npz"]
    assert saver.last_checkpoints == paths[2:]
    assert fg.train.latest_checkpoint(str(tmp_path)) == paths[-1]
    state = fg.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == paths[-1]
    assert state.all_model_checkpoint_paths == paths[2:]
    assert (tmp_path / "checkpoint").read_text() == (
        'model_checkpoint_path: "model-40"\n'
        'all_model_checkpoint_paths: "model-30"\nall_model_checkpoint_paths: "model-40"\n')


def test_max_to_keep_none_keeps_everything_and_no_checkpoint_is_none(tmp_path):
    assert fg.train.latest_checkpoint(str(tmp_path)) is None
    _model()
    saver = fg.train.Saver(max_to_keep=None)
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        for i in range(7):
            saver.save(sess, str(tmp_path / "m"), global_step=i)
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".npz")]) == 7


def test_restore_checks_everything_before_changing_anything(tmp_path):
    w, b, n = _model()
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        before = _values(sess, (w, b, n))
        for bad, err, match in [
            ({"layer1/W": np.ones((2, 3)), "layer1/b": np.float32(9), "count": np.ones(2, int)},
             fg.errors.InvalidArgumentError, r"'count' has shape \(\) but the checkpoint .* "
                                             r"holds shape \(2,\)"),
            ({"layer1/W": np.ones((3, 2)), "layer1/b": np.float32(9), "count": np.int64(1)},
             fg.errors.InvalidArgumentError, r"'layer1/W' has shape \(2, 3\) but .* shape "
                                             r"\(3, 2\)"),
            ({"layer1/W": np.ones((2, 3)), "layer1/b": np.float64(9), "count": np.int64(1)},
             fg.errors.InvalidArgumentError, "'layer1/b' has dtype float32 .* dtype float64"),
            ({"layer1/W": np.ones((2, 3)), "count": np.int64(1)},
             fg.errors.NotFoundError, r"'layer1/b' \(shape \(\)\) is not in the checkpoint"),
        ]:
            fg.save(bad, tmp_path / "bad.npz")
            with pytest.raises(err, match=match):
                fg.train.Saver().restore(sess, str(tmp_path / "bad"))
            for a, e in zip(_values(sess, (w, b, n)), before):
                np.testing.assert_array_equal(a, e)


def test_restore_ignores_extra_entries_and_takes_a_name_map(tmp_path):
    w, b, n = _model()
    fg.save({"weights": np.full((2, 3), 5.0), "unused": np.zeros(9)}, tmp_path / "c.npz")
    with fg.Session() as sess:
        fg.train.Saver({"weights": w}).restore(sess, str(tmp_path / "c.npz"))
        np.testing.assert_array_equal(sess.run(w), np.full((2, 3), 5.0))
        with pytest.raises(fg.errors.FailedPreconditionError, match="layer1/b"):
            sess.run(b)


def test_saving_an_uninitialised_variable_raises_and_writes_nothing(tmp_path):
    w, b, n = _model()
    with fg.Session() as sess:
        sess.run(w.initializer)
        with pytest.raises(fg.errors.FailedPreconditionError, match="'layer1/b'"):
            fg.train.Saver().save(sess, str(tmp_path / "m"))
    assert os.listdir(tmp_path) == []


def test_a_crash_mid_save_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    w, b, n = _model()
    saver = fg.train.Saver()
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        first = saver.save(sess, str(tmp_path / "m"), global_step=1)
        sess.run(w.assign(w + 100))
        real = np.lib.format.write_array
        monkeypatch.setattr(np.lib.format, "write_array",
                            lambda f, a, **k: (_ for _ in ()).throw(OSError("disk full"))
                            if a.shape == (2, 3) else real(f, a, **k))
        with pytest.raises(OSError, match="disk full"):
            saver.save(sess, str(tmp_path / "m"), global_step=1)     # overwriting m-1
        with pytest.raises(OSError, match="disk full"):
            saver.save(sess, str(tmp_path / "m"), global_step=2)
        monkeypatch.undo()
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-1.npz"]
        assert fg.train.latest_checkpoint(str(tmp_path)) == first
        saver.restore(sess, first)
        np.testing.assert_array_equal(sess.run(w), np.arange(6.0).reshape(2, 3))


def test_training_resumes_exactly_from_a_checkpoint(tmp_path):
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((16, 3)), rng.standard_normal(16)
    x = fg.placeholder(fg.float64, (None, 3))
    y = fg.placeholder(fg.float64, (None,))
    w = fg.Variable(np.zeros(3), name="w")
    loss = fg.mean((x @ w - y) ** 2)
    train = fg.train.AdamOptimizer(0.1).minimize(loss)
    saver = fg.train.Saver()          # the Adam slots are variables too
    feed = {x: X, y: Y}
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        for _ in range(3):
            sess.run(train, feed)
        path = saver.save(sess, str(tmp_path / "adam"))
        for _ in range(3):
            sess.run(train, feed)
        want = sess.run(w)
    with fg.Session() as sess:
        saver.restore(sess, path)
        for _ in range(3):
            sess.run(train, feed)
        np.testing.assert_array_equal(sess.run(w), want)


@pytest.mark.parametrize("make,err,match", [
    (lambda: fg.train.Saver([1.0]), TypeError, "var_list holds a float"),
    (lambda: fg.train.Saver({"a": 1.0}), TypeError, "'a' maps to a float"),
    (lambda: fg.train.Saver(max_to_keep=-1), ValueError, "max_to_keep"),
    (lambda: fg.train.Saver([]), ValueError, "no variables"),
])
def test_saver_arguments_are_checked(make, err, match):
    fg.Variable(1.0)
    with pytest.raises(err, match=match):
        make()


def test_saver_path_errors(tmp_path):
    fg.Variable(1.0, name="v")
    saver = fg.train.Saver()
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        with pytest.raises(ValueError, match="Parent directory"):
            saver.save(sess, str(tmp_path / "missing" / "m"))
        with pytest.raises(fg.errors.NotFoundError, match="no checkpoint"):
            saver.restore(sess, str(tmp_path / "m"))
        with pytest.raises(ValueError, match="None"):
            saver.restore(sess, None)
        fg.save([1, 2], tmp_path / "list.npz")
        with pytest.raises(fg.errors.InvalidArgumentError, match="holds a list"):
            saver.restore(sess, str(tmp_path / "list"))
    with fg.Graph().as_default():
        with fg.Session() as other:
            with pytest.raises(ValueError, match="another graph"):
                saver.save(other, str(tmp_path / "m"))
