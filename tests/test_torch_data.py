"""``fastgraph.torch.utils.data`` against PyTorch 2.13: the default collate (values, dtypes,
structure), unshuffled loaders batch for batch, lengths with and without ``drop_last``,
shuffling (every sample once per epoch, seeded generators repeat), ``random_split``."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import fastgraph.torch as ftorch
from fastgraph.torch.utils import data as fdata

torch = pytest.importorskip("torch")
from torch.utils import data as tdata  # noqa: E402

Point = collections.namedtuple("Point", "x y")


def _same(ours, theirs, where="batch"):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, ftorch.Tensor), where
        assert str(theirs.dtype).replace("torch.", "") == str(ours.dtype), (where, ours.dtype)
        np.testing.assert_array_equal(np.asarray(ours.data), theirs.numpy(), err_msg=where)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), where
        for k in theirs:
            _same(ours[k], theirs[k], f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) or (hasattr(theirs, "_fields") and
                                              ours._fields == theirs._fields), (where, type(ours))
        assert len(ours) == len(theirs), where
        for i, (o, t) in enumerate(zip(ours, theirs)):
            _same(o, t, f"{where}[{i}]")
    else:
        assert ours == theirs, where


# (name, a batch given with the module `m`); collated by both and compared
COLLATE = [
    ("floats", lambda m: [1.5, 2.0, -3.0]),
    ("ints", lambda m: [1, 2, 3]),
    ("bools", lambda m: [True, False]),
    ("strings", lambda m: ["a", "bc"]),
    ("numpy scalars", lambda m: [np.float32(1.5), np.float32(2.0)]),
    ("numpy int scalars", lambda m: [np.int16(1), np.int16(2)]),
    ("arrays", lambda m: [np.ones((2, 3)), np.zeros((2, 3))]),
    ("float32 arrays", lambda m: [np.ones(2, np.float32), np.arange(2, dtype=np.float32)]),
    ("tensors", lambda m: [m.ones(3), m.zeros(3)]),
    ("tuples", lambda m: [(m.ones(2), 1), (m.zeros(2), 0)]),
    ("lists", lambda m: [[1.0, 2], [3.0, 4]]),
    ("dicts", lambda m: [{"x": m.ones(2), "label": 3, "name": "a"},
                         {"x": m.zeros(2), "label": 4, "name": "b"}]),
    ("nested", lambda m: [{"pair": (1.0, {"k": [1, 2]})}, {"pair": (2.0, {"k": [3, 4]})}]),
    ("named tuples", lambda m: [Point(m.ones(2), 1.0), Point(m.zeros(2), 2.0)]),
]


@pytest.mark.parametrize("name, batch", COLLATE, ids=[c[0] for c in COLLATE])
def test_default_collate(name, batch):
    _same(fdata.default_collate(batch(ftorch)), tdata.default_collate(batch(torch)), name)


class Squares:
    """A dataset both modules read: ``(x, {"y": ..., "i": index})``."""

    def __init__(self, m, n=11):
        self.m, self.n = m, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = self.m.tensor([float(i), float(i) ** 2])
        return x, {"y": float(i) / 2, "i": i}


LOADERS = [
    ("batch 4", dict(batch_size=4)),
    ("batch 4 drop_last", dict(batch_size=4, drop_last=True)),
    ("batch 1", dict()),
    ("batch 11", dict(batch_size=11)),
    ("batch 20", dict(batch_size=20)),
    ("no batching", dict(batch_size=None)),
]


@pytest.mark.parametrize("name, kw", LOADERS, ids=[c[0] for c in LOADERS])
def test_loader_batches_match_torch(name, kw):
    ours = list(fdata.DataLoader(Squares(ftorch), **kw))
    theirs = list(tdata.DataLoader(Squares(torch), **kw))
    assert len(ours) == len(theirs)
    assert len(fdata.DataLoader(Squares(ftorch), **kw)) == len(tdata.DataLoader(Squares(torch), **kw))
    _same(ours, theirs, name)


def test_tensor_dataset_and_shuffle():
    x = ftorch.arange(10.0).view(10, 1)
    y = ftorch.arange(10)
    ds = fdata.TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3

    def epochs(seed, n=3):
        g = ftorch.Generator().manual_seed(seed)
        loader = fdata.DataLoader(ds, batch_size=3, shuffle=True, generator=g)
        return [[yb.tolist() for _, yb in loader] for _ in range(n)]
    a, b = epochs(0), epochs(0)
    assert a == b                                    # a seeded generator repeats
    for epoch in a:
        assert [len(bt) for bt in epoch] == [3, 3, 3, 1]
        assert sorted(sum(epoch, [])) == list(range(10))   # every sample once per epoch
    assert a[0] != a[1]                              # a new order each epoch
    assert epochs(1) != a
    ftorch.manual_seed(7)
    c = [yb.tolist() for _, yb in fdata.DataLoader(ds, batch_size=5, shuffle=True)]
    ftorch.manual_seed(7)
    assert c == [yb.tolist() for _, yb in fdata.DataLoader(ds, batch_size=5, shuffle=True)]
    dl = fdata.DataLoader(ds, batch_size=3, shuffle=True, drop_last=True)
    assert len(dl) == 3 and all(len(yb) == 3 for _, yb in dl)
    with pytest.raises(ValueError, match="Size mismatch"):
        fdata.TensorDataset(x, ftorch.arange(3))


def test_random_split_and_subsets():
    ds = fdata.TensorDataset(ftorch.arange(10))
    for lengths in ([3, 7], [0.3, 0.7], [0.25, 0.25, 0.5], [0.33, 0.33, 0.34]):
        ours = fdata.random_split(ds, lengths, generator=ftorch.Generator().manual_seed(0))
        theirs = tdata.random_split(tdata.TensorDataset(torch.arange(10)), lengths,
                                    generator=torch.Generator().manual_seed(0))
        assert [len(s) for s in ours] == [len(s) for s in theirs], lengths
        got = sorted(int(s[i][0].item()) for s in ours for i in range(len(s)))
        assert got == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths"):
        fdata.random_split(ds, [3, 3])
    both = fdata.ConcatDataset([ds, fdata.Subset(ds, [9, 8])])
    assert len(both) == 12 and both[10][0].item() == 9 and both[-1][0].item() == 8


def test_iterable_dataset_and_custom_collate():
    class Stream(fdata.IterableDataset):
        def __iter__(self):
            return iter(range(7))
    got = [b.tolist() for b in fdata.DataLoader(Stream(), batch_size=3)]
    assert got == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="shuffle"):
        fdata.DataLoader(Stream(), shuffle=True)
    loader = fdata.DataLoader(list(range(5)), batch_size=2, collate_fn=lambda b: sum(b))
    assert list(loader) == [1, 5, 4]
