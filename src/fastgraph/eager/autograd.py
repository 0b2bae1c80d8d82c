"""``backward()`` and ``fg.autograd.grad``: the Python policy around the Cython tape walker.

The walker (:func:`fastgraph.eager.tape.walk`) owns the order and calls each op's VJP rules (on arrays,
or on Tensors when ``create_graph=True``); this module owns the user-facing policy: seeds, hooks,
``retain_grad``, accumulation into ``.grad``, and the ``fg.autograd.grad`` capture mode.
"""
from __future__ import annotations

import threading

import numpy as np

from ..ops.torch_methods import new_leaf_like
from .tape import TapeNode, TensorBase, walk
from .tape import is_grad_enabled as _is_enabled, set_grad_enabled as _set_enabled
from .tensor import Tensor

__all__ = ["backward", "grad", "array_grads"]

_ndarray = np.ndarray


class _Engine:
    """The policy the walker calls back into at the ends of the graph."""

    @staticmethod
    def node_hooks(node: TapeNode, g, create_graph: bool):
        return _run_hooks(node.hooks, g, create_graph, _face_of_node(node)) if node.hooks else g

    @staticmethod
    def leaf_ready(leaf, g, create_graph: bool):
        """A leaf's gradient is complete (mid-walk): run its own hooks, then its ready hooks
        (``hook(tensor, grad)``; a returned value replaces the gradient delivered)."""
        if leaf._hooks:
            g = _run_hooks(leaf._hooks, g, create_graph, leaf)
        for hook in list(leaf._ready_hooks):
            res = hook(leaf, g if create_graph else new_leaf_like(leaf, g))
            if res is not None:
                new = res if create_graph else (res._data if isinstance(res, Tensor)
                                                else np.asarray(res))
                if np.shape(new) != np.shape(g):
                    raise RuntimeError(f"grad-ready hook {getattr(hook, '__name__', hook)!r} "
                                       f"has changed the size of value: {np.shape(g)} -> "
                                       f"{np.shape(new)}")
                g = new
        return g

    @staticmethod
    def finish(tensors, grads, create_graph: bool, capture) -> None:
        """After a successful walk: run the leaves' hooks, then set every ``.grad`` (or, with
        ``capture``, store the leaves' gradients there).  A hook that raises leaves every
        ``.grad`` as it was."""
        grads = list(grads)
        for i, t in enumerate(tensors):
            # (non-leaf tensors ran theirs in the walk, and so did leaves with ready hooks)
            if t.grad_fn is None and t._hooks and (t._ready_hooks is None or capture is not None):
                grads[i] = _run_hooks(t._hooks, grads[i], create_graph, t)
        new = []
        for t, g in zip(tensors, grads):
            if capture is not None and t.grad_fn is None:
                continue
            new.append((t, _summed_grad(t, g, create_graph)))
        if capture is not None:
            for t, g in zip(tensors, grads):
                if t.grad_fn is None:
                    capture[id(t)] = g
        for t, g in new:  # (plain assignments: nothing here can fail half-way)
            t._grad = g


def _face_of_node(node: TapeNode):
    """A tensor with the face of ``node``'s output: an input of PyTorch's face if there is one
    (the recorder's rule), else any input."""
    tensors = [a for a in node.inputs or () if isinstance(a, TensorBase)]
    faced = [a for a in tensors if type(a)._face is not Tensor]
    return (faced or tensors or [None])[0]


def _run_hooks(hooks, g, create_graph, like):
    """Run ``hooks`` on the gradient ``g`` (a Tensor of ``like``'s face)."""
    for hook in list(hooks):
        res = hook(g if create_graph else _wrap_like(like, g))
        if res is not None:
            new = res if create_graph else (res._data if isinstance(res, Tensor) else np.asarray(res))
            if np.shape(new) != np.shape(g):
                raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} has changed the "
                                   f"size of value: {np.shape(g)} -> {np.shape(new)}")
            g = new
    return g


def _summed_grad(t: Tensor, g, create_graph: bool):
    """``t``'s ``.grad`` after adding ``g`` to it."""
    if create_graph:
        return g if t._grad is None else t._grad + g
    if isinstance(g, TensorBase):
        g = g._data
    if type(g) is _ndarray and not g.flags.writeable:
        g = g.copy()  # e.g. a broadcast view: .grad must be an ordinary array
    if t._grad is None:
        return new_leaf_like(t, g)
    return new_leaf_like(t, t._grad._data + g)


def _wrap_like(like, g):
    return Tensor(g) if like is None else new_leaf_like(like, g)


def _accumulate_grad(t: Tensor, g, create_graph: bool) -> None:
    t._grad = _summed_grad(t, g, create_graph)


_ENGINE = _Engine()
# One backward walk at a time across threads: a walk keeps its scratch (gradient sums, pending
# counts) in the nodes and leaves it reaches, and threads whose graphs share a leaf (a parameter
# used by several threads) would overwrite each other's.  Re-entrant for walks started inside
# a hook of the same thread.
_WALK_LOCK = threading.RLock()


def _seed(t: Tensor, gradient, create_graph: bool):
    if gradient is None:
        if t._data.size != 1:   # (not t.size: NumPy's count, without the PyTorch-callable int)
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        # (a 0-d output, the common case: its dtype's scalar one, without an array made)
        g = t.dtype.type(1) if t.ndim == 0 else np.ones(t.shape, dtype=t.dtype)
        return new_leaf_like(t, g) if create_graph else g
    given = gradient
    if isinstance(gradient, Tensor):
        gradient = gradient._data
    try:
        arr = np.asarray(gradient)
    except Exception as e:  # (ragged lists, objects NumPy cannot read)
        raise TypeError(f"gradient must be a Tensor, an array or numbers of the output's shape "
                        f"{t.shape}, not {type(given).__name__}: {e}") from e
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"gradient must be numeric (a Tensor, an array or numbers), got "
                        f"{type(given).__name__} of dtype {arr.dtype}")
    if arr.shape != t.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {arr.shape} and "
                           f"output has a shape of {t.shape}")
    if create_graph and isinstance(given, Tensor):  # (it may carry a graph of its own)
        return given
    g = np.array(arr, dtype=t.dtype)  # a copy: the walk may hand it to a leaf's .grad
    return new_leaf_like(t, g) if create_graph else g


def _root(t: Tensor):
    if not t.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                           "grad_fn")
    return t.grad_fn if t.grad_fn is not None else t


def backward(tensors, gradient=None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on."""
    if isinstance(tensors, Tensor):
        tensors, grads = [tensors], [gradient]
    else:
        tensors = list(tensors)
        grads = list(gradient) if gradient is not None else [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        with _WALK_LOCK:   # (the accumulation too: other threads may add to these .grad)
            results = grad(tensors, inputs, grads, retain_graph=retain_graph,
                           create_graph=create_graph, allow_unused=True)
            for x, g in zip(_as_list(inputs), results):
                if g is not None:
                    _accumulate_grad(x, g if create_graph else g._data, create_graph)
        return
    roots = [_root(t) for t in tensors]
    seeds = [_seed(t, g, create_graph) for t, g in zip(tensors, grads)]
    with _grad_mode_for(create_graph), _WALK_LOCK:
        walk(roots, seeds, bool(retain_graph), bool(create_graph), _ENGINE)


def _as_list(xs):
    return [xs] if isinstance(xs, Tensor) else list(xs)


class _grad_mode_for:
    """Record the backward pass only when building a graph of the gradients."""

    def __init__(self, create_graph: bool):
        self.mode = bool(create_graph)

    def __enter__(self):
        self.prev = _is_enabled()   # (the compiled switch grad_mode._state.enabled wraps)
        _set_enabled(self.mode)

    def __exit__(self, *exc):
        _set_enabled(self.prev)


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated).

        >>> x = fg.tensor(3.0, requires_grad=True)
        >>> fg.autograd.grad(x * x, x)
        (tensor(6.),)
    """
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outs)
    elif isinstance(grad_outputs, Tensor) or not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    if retain_graph is None:
        retain_graph = create_graph
    for x in ins:
        if not isinstance(x, Tensor) or not x.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    # (loops rather than comprehensions: each of those is a function call of its own)
    keys = []
    capture = {}
    for x in ins:
        k = id(x.grad_fn) if x.grad_fn is not None else id(x)
        keys.append(k)
        capture[k] = None
    roots = []
    for t in outs:
        roots.append(_root(t))
    seeds = []
    for t, g in zip(outs, grad_outputs):
        seeds.append(_seed(t, g, create_graph))
    prev = _is_enabled()
    _set_enabled(bool(create_graph))   # (what _grad_mode_for does, without its frames)
    try:
        with _WALK_LOCK:
            walk(roots, seeds, bool(retain_graph), bool(create_graph), _ENGINE, capture)
    finally:
        _set_enabled(prev)
    results = []
    for x, k in zip(ins, keys):
        g = capture[k]
        if g is None:
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
            results.append(None)
            continue
        if not create_graph:
            g = np.asarray(g) if type(g) is not _ndarray and not isinstance(g, np.generic) else g
            g = new_leaf_like(x, g)
        results.append(g)
    return tuple(results)


def array_grads(output: Tensor, leaves: list) -> list:
    """``grad(output, leaves, allow_unused=True)`` for a one-element ``output`` that requires
    grad and leaves (leaf Tensors that require grad, made by the caller: the transforms' watched
    arguments), without ``create_graph``: the same walk, the gradients as the walk leaves them
    (arrays or NumPy scalars; None for a leaf not reached) rather than wrapped in new leaves."""
    capture = {}
    for x in leaves:
        capture[id(x)] = None
    fn = output.grad_fn
    d = output._data
    seed = d.dtype.type(1) if d.ndim == 0 else np.ones(d.shape, dtype=d.dtype)   # (_seed's)
    prev = _is_enabled()
    _set_enabled(False)
    try:
        with _WALK_LOCK:
            walk([output if fn is None else fn], [seed], False, False, _ENGINE, capture)
    finally:
        _set_enabled(prev)
    out = []
    for x in leaves:   # (a loop: a comprehension is a frame of its own)
        out.append(capture[id(x)])
    return out
