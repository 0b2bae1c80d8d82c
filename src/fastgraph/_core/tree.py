"""Nested lists, tuples (namedtuples too) and dicts of values -- JAX's pytrees, autograd's lists
of ``(W, b)`` -- read one way by everyone who walks them: the transforms (arguments and
gradients), ``fg.function`` (differentiated arguments) and the NumPy protocols (arguments).

Anything that is not a list, tuple or dict is a leaf (arrays, Tensors, Nodes, numbers, None).
The tape's own packing test, which also reads NumPy object arrays and must stay in C, is
``fastgraph._core.dispatch.holds_graph_value``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable

_CONTAINERS = (list, tuple, dict)
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
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*[map_structure(fn, v) for v in tree])
    return type(tree)([map_structure(fn, v) for v in tree])


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
