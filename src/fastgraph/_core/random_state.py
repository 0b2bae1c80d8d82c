"""The generators behind random values.

The eager generator (:func:`generator`, :func:`seed`): one seedable generator behind ``fg.rand``,
``fg.randn`` and the masks of ``fastgraph.nn_ops.dropout``; ``fg.random.seed(n)`` makes them
repeat.

Graph random ops (``random_normal`` and friends, TensorFlow 1's) draw from streams instead.

A random op in a graph owns a :class:`Stream`: its seeds, fixed when the op is built (from the
graph-level and op-level seeds, as TensorFlow 1 derives them).  Every run of a plan draws anew,
and each ``Session`` has its own generator per stream, so two sessions of one graph draw the
same sequence (TensorFlow 1's rule).  The executor says which session's store a run is over
(:func:`running_over`); a store without generators of its own (``fg.function``'s) draws from the
stream's own generator, so every call draws anew.

    >>> s = Stream((1, 2))
    >>> with running_over(Store()):
    ...     a = s.generator().standard_normal(3)
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

__all__ = ["Stream", "Store", "running_over", "in_run", "generator", "generator_for", "seed",
           "scratch"]

_local = threading.local()
_rng = np.random.default_rng()


def generator() -> np.random.Generator:
    """The eager generator (a new one after each :func:`seed`).

        >>> seed(0); a = generator().random()
        >>> seed(0); a == generator().random()
        True
    """
    g = getattr(_local, "scratch", None)
    return _rng if g is None else g


def generator_for(source=None) -> np.random.Generator:
    """The NumPy generator a ``generator=`` argument names: the eager one for None, a
    ``torch.Generator``'s (its ``_rng()``), or a NumPy ``Generator`` given directly."""
    if source is None:
        return generator()
    return source._rng() if hasattr(source, "_rng") else source


@contextlib.contextmanager
def scratch():
    """Inside the block, :func:`generator` on this thread is a throwaway one: a stateful op
    run on stand-in values (to learn its result's dtype) leaves the user's sequence alone."""
    prev = getattr(_local, "scratch", None)
    _local.scratch = np.random.default_rng(0)
    try:
        yield
    finally:
        _local.scratch = prev


def seed(value) -> None:
    """Seed the eager generator (reproducible results)."""
    global _rng
    _rng = np.random.default_rng(value)


class Store(list):
    """A Session's variable store (a list, by variable index), with the generators of the
    graph's random streams."""
    __slots__ = ("generators",)

    def __init__(self, *args):
        super().__init__(*args)
        self.generators = {}


@contextlib.contextmanager
def running_over(store):
    """Inside the block, random draws on this thread take their generators from ``store``."""
    prev = getattr(_local, "store", None)
    _local.store = store
    try:
        yield store
    finally:
        _local.store = prev


def in_run() -> bool:
    """Whether this thread is running a plan (random draws then draw for real)."""
    return getattr(_local, "store", None) is not None


class Stream:
    """The random sequence of one random op: ``seeds`` (a tuple of integers) start it."""
    __slots__ = ("seeds", "_own")

    def __init__(self, seeds):
        self.seeds = tuple(int(s) for s in seeds)
        self._own = None

    def generator(self) -> np.random.Generator:
        """The generator to draw from in the current run (see the module docstring)."""
        store = getattr(_local, "store", None)
        gens = getattr(store, "generators", None)
        if gens is None:
            g = self._own
            if g is None:
                g = self._own = np.random.default_rng(self.seeds)
            return g
        g = gens.get(self)
        if g is None:
            g = gens[self] = np.random.default_rng(self.seeds)
        return g

    def __repr__(self) -> str:
        return f"Stream(seeds={self.seeds})"
