"""Nested lists, tuples (namedtuples too) and dicts of values -- JAX's pytrees, autograd's lists
of ``(W, b)`` -- and every walker over them: the transforms (arguments and gradients), the NumPy
protocols (arguments), ``Session.run`` (fetches) and ``fg.function`` (arguments, outputs).

The rules, once:

* a list, tuple or dict -- or an instance of a subclass of one -- is a container; anything else
  is a leaf (arrays, Tensors, Nodes, numbers, strings).  A container is rebuilt with its own
  type: a namedtuple from its fields, a dict subclass by :func:`dict_like` (a defaultdict keeps
  its factory), another subclass from the list of its items;
* ``None`` is a leaf to :func:`map_structure` and :func:`find_leaf` (a function of the leaves
  decides what it means) and an empty structure to :func:`flatten` (nothing to compute);
* a *keyed* structure (:func:`key_of`: ``fg.function``'s arguments, whose key is part of a trace's
  signature) is walked only through the containers it can key and rebuild exactly, the types in
  :data:`KEYED` and namedtuples; an instance of another subclass is one leaf there, as
  ``jax.jit`` leaves a class it does not know.

The tape's own packing test, which also reads NumPy object arrays and must stay in C, is
``fastgraph._core.dispatch.holds_graph_value``.
"""
from __future__ import annotations

from collections import OrderedDict, defaultdict
from typing import Any, Callable

import numpy as np

_CONTAINERS = (list, tuple, dict)
#: the containers a keyed structure walks (with namedtuples)
KEYED = frozenset({list, tuple, dict, OrderedDict, defaultdict})
#: a leaf's place in a key
LEAF = "leaf"
_MAX_DEPTH = 64     # NumPy's dimension limit: deeper nesting is no array anyone can mean


def dict_like(template: dict, items) -> dict:
    """A dict of ``template``'s type holding ``items`` (a defaultdict keeps its factory)."""
    t = type(template)
    if t is dict:
        return dict(items)
    if isinstance(template, defaultdict):
        out = t(template.default_factory)
        out.update(items)
        return out
    return t(items)


def map_structure(fn: Callable[[Any], Any], tree):
    """``fn`` applied to every leaf of ``tree``, the containers rebuilt with their types.

        >>> map_structure(lambda v: v * 2, {"w": [1, 2], "b": (3,)})
        {'w': [2, 4], 'b': (6,)}
    """
    if not isinstance(tree, _CONTAINERS):
        return fn(tree)
    if isinstance(tree, dict):
        return dict_like(tree, [(k, map_structure(fn, v)) for k, v in tree.items()])
    return _rebuilt(tree, [map_structure(fn, v) for v in tree])


def _rebuilt(template, items: list):
    """A list or tuple of ``template``'s type holding ``items`` (a namedtuple from its fields)."""
    t = type(template)
    if t is list:
        return items
    if t is tuple:
        return tuple(items)
    if hasattr(template, "_fields"):
        return t(*items)
    return t(items)


def is_keyed(a) -> bool:
    """Whether a keyed structure walks into ``a`` (see the module docstring)."""
    kind = type(a)
    return kind in KEYED or (issubclass(kind, tuple) and hasattr(kind, "_fields"))


def flatten(tree, leaves: list, leaf: Callable[[Any], Any] = lambda v: v) -> Callable:
    """Append ``leaf(v)`` for each leaf ``v`` of ``tree`` to ``leaves``; return a function that
    rebuilds the structure from a sequence of values in the order of ``leaves``.  ``None`` is
    an empty structure (rebuilt as ``None``; nothing appended).

        >>> leaves = []; rebuild = flatten({"a": [1, 2], "b": None}, leaves); leaves
        [1, 2]
        >>> rebuild([10, 20])
        {'a': [10, 20], 'b': None}
    """
    if tree is None:
        return lambda vals: None
    t = type(tree)
    if not isinstance(tree, _CONTAINERS):
        leaves.append(leaf(tree))
        i = len(leaves) - 1
        return lambda vals: vals[i]
    if isinstance(tree, dict):
        keys = list(tree)
        subs = [flatten(tree[k], leaves, leaf) for k in keys]
        if t is dict:
            return lambda vals: {k: s(vals) for k, s in zip(keys, subs)}
        return lambda vals: dict_like(tree, zip(keys, (s(vals) for s in subs)))
    start = len(leaves)
    subs = [flatten(v, leaves, leaf) for v in tree]
    if t is list and len(leaves) - start == len(tree) and \
            all(v is not None and not isinstance(v, _CONTAINERS) for v in tree):
        end = len(leaves)       # a flat list of leaves: one slice
        return lambda vals: vals[start:end]
    return lambda vals: _rebuilt(tree, [s(vals) for s in subs])


def split_aux(out, has_aux: bool) -> tuple:
    """``(value, aux)`` from what a transformed function returned: with ``has_aux`` it must
    be that pair (JAX's rule), else ``out`` is the value and ``aux`` is None.

        >>> split_aux((1.0, {"n": 2}), True)
        (1.0, {'n': 2})
    """
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError("has_aux=True requires the function to return a pair (value, aux)")
    return out


def find_leaf(pred: Callable[[Any], bool], tree):
    """The first leaf of ``tree`` for which ``pred`` holds, or None.  Each container is walked
    once (one that contains itself, or is shared, is no trouble) and no deeper than NumPy's
    dimension limit.

        >>> find_leaf(lambda v: v > 2, [1, (2, {"k": 3})])
        3
    """
    if not isinstance(tree, _CONTAINERS):
        return tree if pred(tree) else None
    return _find(pred, tree, set(), 0)


def _find(pred, tree, seen: set, depth: int):
    seen.add(id(tree))
    for v in (tree.values() if isinstance(tree, dict) else tree):
        if isinstance(v, _CONTAINERS):
            if id(v) not in seen and depth < _MAX_DEPTH:
                found = _find(pred, v, seen, depth + 1)
                if found is not None:
                    return found
        elif pred(v):
            return v
    return None


# ---- keyed structures (fg.function's arguments) ----------------------------------------------
def key_of(a, leaves: list, depth: int = 0):
    """The structure key of ``a`` (a trace signature's part: types, lengths, dict keys, ``None``
    kept as a value); its leaves are appended to ``leaves``.  Only the containers whose
    structure the key says exactly are walked (:data:`KEYED`); an instance of another subclass of
    list, tuple or dict is a leaf, as ``jax.jit`` leaves a class it does not know.

        >>> leaves = []; key_of({"w": [1.0, 2.0], "b": None}, leaves); leaves
        [1.0, 2.0]
    """
    if depth > 100:
        raise ValueError("fg.function: an argument nests lists/tuples/dicts more than 100 deep "
                         "(does it contain itself?)")
    kind = type(a)
    if kind is dict or kind is OrderedDict or kind is defaultdict:
        keys = tuple(a)     # (typed too: {1: x} and {True: x} are different structures)
        factory = a.default_factory if kind is defaultdict else None
        return ("dict", kind, tuple([value_key(k) for k in keys]), keys,
                tuple([key_of(a[k], leaves, depth + 1) for k in keys]), factory)
    if kind is list or kind is tuple or (issubclass(kind, tuple) and hasattr(kind, "_fields")):
        return (kind, tuple([key_of(v, leaves, depth + 1) for v in a]))
    if a is None:
        return None
    leaves.append(a)
    return LEAF


def leaf_paths(key, prefix: str):
    """Where each leaf of a keyed structure sits, in leaf order: ``d['w']``, ``p[0].bias``."""
    if key is LEAF:
        yield prefix
    elif key is None:
        return
    elif key[0] == "dict":
        for k, kid in zip(key[3], key[4]):
            yield from leaf_paths(kid, f"{prefix}[{k!r}]")
    else:
        kind, kids = key
        fields = getattr(kind, "_fields", None)
        for i, kid in enumerate(kids):
            yield from leaf_paths(kid, f"{prefix}.{fields[i]}" if fields else f"{prefix}[{i}]")


def from_key(key, leaves):
    """The structure of ``key`` rebuilt from an iterator over its leaves (graph Nodes, when
    tracing)."""
    if key is LEAF:
        return next(leaves)
    if key is None:
        return None
    if key[0] == "dict":
        _, kind, _, keys, kids, factory = key
        values = [from_key(k, leaves) for k in kids]
        if kind is defaultdict:
            out = defaultdict(factory)
            out.update(zip(keys, values))
            return out
        return kind(zip(keys, values))
    kind, kids = key
    items = [from_key(k, leaves) for k in kids]
    if kind is list:
        return items
    if kind is tuple:
        return tuple(items)
    return kind(*items)  # a namedtuple


def value_key(v):
    """A hashable key for a value that is equal only for values a trace cannot tell apart (a
    keyword argument, a dict key): ``==`` says ``2 == 2.0 == True`` and ``0.0 == -0.0`` (different traces: dtypes,
    signs) and ``nan != nan`` (a retrace, and a new cache entry, on every call).  Floats are
    keyed by their bits (``float.hex``: -0.0 and 0.0 differ, every NaN is one key), NumPy
    scalars by dtype and bytes, tuples and lists element by element; other values by type and
    value (unhashable ones raise ``TypeError``: traced on every call)."""
    t = type(v)
    if t is float:
        return (t, v.hex())
    if t is int or t is bool or t is str or v is None:
        return (t, v)
    if t is complex:
        return (t, v.real.hex(), v.imag.hex())
    if t is tuple or t is list:
        return (t, tuple([value_key(x) for x in v]))
    if isinstance(v, np.generic):
        return (t, v.dtype.str, v.tobytes())
    hash(v)
    return (t, v)
