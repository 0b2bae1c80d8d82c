"""``torch.utils.data``: ``Dataset``, ``TensorDataset``, ``Subset``, ``random_split``, the
samplers and ``DataLoader`` (batches, shuffling from a seeded generator, ``drop_last``, the
default collate of tensors, arrays, numbers, strings, tuples and dicts).

    >>> ds = TensorDataset(torch.arange(10.0), torch.arange(10))
    >>> loader = DataLoader(ds, batch_size=4, shuffle=True,
    ...                     generator=torch.Generator().manual_seed(0))
    >>> [len(y) for x, y in loader]
    [4, 4, 2]

Shuffled orders come from NumPy's generator (seeded runs repeat; they are not PyTorch's
orders).  Batches are made in this process: ``num_workers`` is accepted and the batches are
the same as with none.
"""
from __future__ import annotations

import collections.abc
import numbers

import numpy as np

from ...eager.tensor import Tensor
from .. import _functions as _T
from .._tensor import leaf as _leaf
from .._tensor import with_torch_face

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "BatchSampler", "DataLoader", "default_collate",
           "default_convert"]


class Dataset:
    """A map-style dataset: ``__getitem__(index)`` and ``__len__()``."""

    def __getitem__(self, index):
        raise NotImplementedError("a Dataset subclass defines __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read by iterating over it (``__iter__``)."""

    def __iter__(self):
        raise NotImplementedError("an IterableDataset subclass defines __iter__")


class TensorDataset(Dataset):
    """Samples are the ``index``-th rows of the tensors, as a tuple (the tensors' first
    dimensions must agree)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].shape[0] if tensors[0].ndim else None
        if any(t.ndim == 0 or t.shape[0] != n for t in tensors):
            raise ValueError(f"Size mismatch between tensors: first dimensions "
                             f"{[t.shape[0] if t.ndim else None for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The samples of several datasets, one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __len__(self):
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        k = int(np.searchsorted(self.cumulative_sizes, idx, side="right"))
        start = 0 if k == 0 else int(self.cumulative_sizes[k - 1])
        return self.datasets[k][idx - start]


def _rng(generator):
    return (generator if generator is not None else _T.default_generator)._rng()


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` at random into non-overlapping ``Subset``s of the given lengths (or
    fractions summing to 1, the remainder given out one by one from the first)."""
    n = len(dataset)
    lengths = list(lengths)
    if np.isclose(sum(lengths), 1) and sum(lengths) <= 1 and not all(
            isinstance(v, numbers.Integral) for v in lengths):
        counts = [int(np.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = _rng(generator).permutation(n).tolist()
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, perm[start:start + k]))
        start += k
    return out


# ---- samplers ------------------------------------------------------------------------------------
class Sampler:
    """Yields dataset indices."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices each epoch (or ``num_samples`` drawn with
    ``replacement``), from ``generator`` (the process's generator when None)."""

    def __init__(self, data_source, replacement: bool = False, num_samples=None,
                 generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        rng = _rng(self.generator)
        if self.replacement:
            return iter(rng.integers(0, n, size=self.num_samples).tolist())
        reps = -(-self.num_samples // n)
        order = np.concatenate([rng.permutation(n) for _ in range(reps)])[:self.num_samples]
        return iter(order.tolist())

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        self.indices = list(indices)
        self.generator = generator

    def __iter__(self):
        return iter([self.indices[i] for i in _rng(self.generator).permutation(len(self.indices))])

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups another sampler's indices in lists of ``batch_size``."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# ---- collate -------------------------------------------------------------------------------------
def default_collate(batch):
    """PyTorch's default collate: tensors and arrays stacked along a new first dimension,
    Python floats to a float64 tensor, ints to int64 (bools to bool), strings kept in a list,
    dicts collated key by key, tuples and lists element by element (a tuple gives a list, a
    named tuple a named tuple)."""
    elem = batch[0]
    if isinstance(elem, Tensor):   # (a batch has PyTorch's face, whatever the samples had)
        return with_torch_face(_T.stack(list(batch), 0))
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OSUV":
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, "
                            f"numbers, dicts or lists; found an array of dtype {elem.dtype}")
        return _T.stack([_leaf(np.asarray(b)) for b in batch], 0)
    if isinstance(elem, np.generic):
        return _leaf(np.array(batch))
    if isinstance(elem, bool):
        return _T.tensor(batch)
    if isinstance(elem, float):
        return _T.tensor(batch, dtype=np.float64)
    if isinstance(elem, numbers.Integral):
        return _T.tensor(batch, dtype=np.int64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"dicts or lists; found {type(elem).__name__}")


def default_convert(data):
    """What a loader without batching (``batch_size=None``) gives per sample: arrays and NumPy
    scalars as Tensors, inside dicts, tuples (given as lists) and lists."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if data.dtype.kind in "OSUV" else _leaf(data)
    if isinstance(data, np.generic):
        return _leaf(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return [default_convert(d) for d in data]
    return data


class DataLoader:
    """Batches of a dataset: ``batch_size``, ``shuffle`` (a new order each epoch, from
    ``generator`` or the process's generator), ``drop_last``, ``sampler``/``batch_sampler``,
    ``collate_fn`` (default :func:`default_collate`).

        >>> loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
        >>> for xb, yb in loader: ...
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative")
        self.dataset = dataset
        self.num_workers = num_workers
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 "option, but got shuffle=True")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 "sampler/batch_sampler option")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            self.batch_size = None
            self.drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle \
                else SequentialSampler(dataset)
        self.sampler = sampler
        if batch_sampler is None and self.batch_size is not None and not self._iterable:
            batch_sampler = BatchSampler(sampler, self.batch_size, drop_last)
        self.batch_sampler = batch_sampler
        self._auto_collation = self.batch_size is not None or batch_sampler is not None
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if self._auto_collation else default_convert)

    def __iter__(self):
        if self._iterable:
            return self._iter_iterable()
        if self.batch_sampler is None:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        return (self.collate_fn([self.dataset[i] for i in batch])
                for batch in self.batch_sampler)

    def _iter_iterable(self):
        if self.batch_size is None:
            for x in self.dataset:
                yield self.collate_fn(x)
            return
        batch = []
        for x in self.dataset:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
