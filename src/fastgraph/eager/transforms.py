"""The eager half of the functional transforms (``fg.grad``, ``fg.value_and_grad``,
``fg.jacobian`` and those built on them): the function runs on watched Tensors and the gradients
come from the tape.  The public transforms (``fastgraph.bridge.transforms``) call these unless
the arguments are graph Nodes.

An argument differentiated may be a list, tuple or dict of arrays (autograd's list of ``(W, b)``
pairs, a dict of parameters), nested: each array in it is differentiated and the gradient comes
back in the same structure, as autograd and JAX return it.

They compose (``fg.grad(fg.grad(f))``): when called on Tensors that require grad (that is, from
inside another transform) they build their gradients with ``create_graph=True`` and return Tensors
connected to the outer computation.
"""
from __future__ import annotations

import numpy as np

from .. import ops as F
from . import grad_mode as _gm
from .autograd import array_grads as _array_grads, grad as _autograd_grad
from .tape import is_grad_enabled as _is_enabled, set_grad_enabled as _set_enabled
from .tensor import Tensor
from .._core.tree import find_leaf, flatten, map_structure, split_aux

_ndarray = np.ndarray

__all__ = ["value_and_grad", "jacobian", "linearize", "inside_transform"]


def _is_traced(x) -> bool:
    return isinstance(x, Tensor) and x.requires_grad


class _scope:
    """While a transform evaluates its function: record (even inside ``no_grad``), and let
    transforms called inside it build connected gradients even when their own arguments are
    plain arrays -- the outer one may reach them through a closure:
    ``fg.grad(lambda a: fg.grad(lambda x: (a * x * x).sum())(w).sum())``."""

    def __init__(self, fun):
        name = getattr(fun, "__name__", None)      # (named in error messages; repr only when
        self._transformed = repr(fun) if name is None else name   # needed: it costs a call)

    def __enter__(self):
        st = _gm._state
        # (the compiled recording switch itself, which the state's ``enabled`` property wraps)
        self._prev = _is_enabled(), st.transformed
        _set_enabled(True)
        st.transformed = self._transformed
        st.transform_depth += 1

    def __exit__(self, *exc):
        st = _gm._state
        st.transform_depth -= 1
        enabled, st.transformed = self._prev
        _set_enabled(enabled)


def inside_transform() -> bool:
    """Whether a transform is evaluating its function in this thread."""
    return _gm._state.transform_depth > 0


def _watch(x):
    """A tensor to differentiate with respect to: connected to ``x`` if ``x`` is being traced."""
    if _is_traced(x):
        return F.identity(x)
    like = x
    if isinstance(x, Tensor):
        x = x._ndarray
    arr = np.asarray(x)
    if arr.dtype.kind not in "fc":
        if arr.dtype.kind not in "biu":
            raise TypeError(f"can only differentiate with respect to numeric inputs, got dtype "
                            f"{arr.dtype}")
        arr = arr.astype(np.float64)
    return _leaf_like(like, arr, True)


def _leaf_like(like, arr, requires_grad=False) -> Tensor:
    """A new leaf holding ``arr`` with the face of ``like`` (PyTorch's for a tensor of
    ``fastgraph.torch``, whose methods then mean PyTorch's inside the function; NumPy's for
    anything else)."""
    face = type(like)._face if isinstance(like, Tensor) else Tensor
    return type.__call__(face, arr, requires_grad)


def _watch_args(args: tuple, nums: tuple) -> tuple[list, list]:
    """``args`` with the differentiated positions replaced by watched tensors (each array of a
    list, tuple or dict argument watched on its own), and the watched tensors, in order."""
    args = list(args)
    watched: list = []

    def watch(leaf):
        if leaf is None:      # an empty leaf (JAX's None subtree): no gradient, None back
            return None
        w = _watch(leaf)
        watched.append(w)
        return w

    for i in nums:
        args[i] = map_structure(watch, args[i])
    return args, watched


def _any_traced(x) -> bool:
    """Whether ``x``, or an array of a list, tuple or dict ``x``, is being traced."""
    return find_leaf(_is_traced, x) is not None


def _unflatten(templates, flat) -> tuple:
    """``flat`` (one value per watched tensor, in order) put back into the structures of the
    differentiated arguments ``templates``."""
    it = iter(flat)
    return tuple(map_structure(lambda v: None if v is None else next(it), t)
                 for t in templates)


def _numpy(v):
    """Tensors -> NumPy values (0-d as NumPy scalars), through lists, tuples and dicts; a Tensor
    of PyTorch's face stays one (detached): a PyTorch program reads it as PyTorch's."""
    return map_structure(_numpy_leaf, v)


def _numpy_leaf(v):
    if isinstance(v, Tensor):
        if v._face is not Tensor:
            return v.detach() if v._requires_grad else v
        d = v._data
        if type(d) is not np.ndarray:
            d = v._ndarray   # (the property makes an ndarray of anything else)
        return d[()] if d.ndim == 0 else d
    return v


def _zeros_like(x):
    return _leaf_like(x, np.zeros(x.shape, dtype=x.dtype))


def _plain_float_arrays(args: tuple, nums: tuple) -> bool:
    """Whether every differentiated argument is a floating-point or complex ndarray (an
    optimiser's call), each differentiated once: each is then watched as it is, without
    walking structures."""
    if len(nums) > 1 and len(set(nums)) != len(nums):
        return False
    for i in nums:
        a = args[i]
        if type(a) is not np.ndarray or a.dtype.kind not in "fc":
            return False
    return True


def value_and_grad(fun, args, kwargs, nums, single: bool, has_aux: bool):
    """``(fun(*args), d fun / d args[nums])`` on the tape: NumPy values back, or Tensors
    connected to an enclosing transform's computation (``single``: one gradient, not a tuple;
    ``has_aux``: ``fun`` returns ``(value, aux)``)."""
    if len(nums) == 1:   # (_plain_float_arrays of one argument, inline)
        a = args[nums[0]]
        if type(a) is _ndarray and a.dtype.kind in "fc":
            return _value_and_grad_of_arrays(fun, args, kwargs, nums, single, has_aux)
    elif _plain_float_arrays(args, nums):
        return _value_and_grad_of_arrays(fun, args, kwargs, nums, single, has_aux)
    nested = inside_transform() or any(_any_traced(args[i]) for i in nums)
    templates = [args[i] for i in nums]
    with _scope(fun):
        args, watched = _watch_args(args, nums)
        out, aux = split_aux(fun(*args, **kwargs), has_aux)
        out = _output_tensor(out, fun, "grad")
        if out.size != 1:
            raise TypeError(f"grad requires a scalar-output function; got an output of "
                            f"shape {out.shape}")
        if out.requires_grad and watched:
            grads = _autograd_grad(out, watched, create_graph=nested, allow_unused=True)
        else:
            grads = (None,) * len(watched)
        grads = _unflatten(templates, [_zeros_like(w) if g is None else g
                                       for w, g in zip(watched, grads)])
    result = grads[0] if single else grads
    value = (out, aux) if has_aux else out
    if nested:
        return value, result
    return _numpy(value), _numpy(result)


def _value_and_grad_of_arrays(fun, args, kwargs, nums, single: bool, has_aux: bool):
    """:func:`value_and_grad` where every differentiated argument is a float ndarray: what the
    general path does on such arguments (nothing of them is traced; each is watched as it is
    and its gradient is a leaf of no structure), without its structure walks -- and, outside
    other transforms, with the gradients taken from the walk as arrays rather than as Tensors
    unwrapped again (an optimiser calls this once per step: every frame saved counts)."""
    st = _gm._state
    nested = st.transform_depth > 0   # (inside_transform())
    args = list(args)
    watched = []
    for i in nums:
        w = args[i] = Tensor(args[i], requires_grad=True)
        watched.append(w)
    # (what ``with _scope(fun):`` does, without its three frames)
    name = getattr(fun, "__name__", None)
    prev = _is_enabled(), st.transformed
    _set_enabled(True)
    st.transformed = repr(fun) if name is None else name
    st.transform_depth += 1
    try:
        out = fun(*args, **kwargs)
        out, aux = split_aux(out, True) if has_aux else (out, None)
        if type(out) is not Tensor or out._data.dtype.kind not in "fc":
            out = _output_tensor(out, fun, "grad")
        if out._data.size != 1:
            raise TypeError(f"grad requires a scalar-output function; got an output of "
                            f"shape {out.shape}")
        if not nested:
            flat = (_array_grads(out, watched) if out._requires_grad
                    else [None] * len(watched))
        else:
            grads = (_autograd_grad(out, watched, create_graph=True, allow_unused=True)
                     if out._requires_grad else (None,) * len(watched))
            for g in grads:   # (a loop: `None in grads` would compare Tensors with ==)
                if g is None:
                    grads = tuple([_zeros_like(w) if g is None else g
                                   for w, g in zip(watched, grads)])
                    break
    finally:
        st.transform_depth -= 1
        enabled, st.transformed = prev
        _set_enabled(enabled)
    if nested:
        return ((out, aux) if has_aux else out), (grads[0] if single else grads)
    # NumPy values, as _numpy_leaf gives them for the leaves' gradients: an array, a NumPy
    # scalar for a 0-d argument, zeros where the output does not depend on an argument
    for k, g in enumerate(flat):
        if g is None:
            g = np.zeros(watched[k]._data.shape, dtype=watched[k]._data.dtype)
        elif type(g) is not _ndarray:
            g = np.asarray(g)
        flat[k] = g[()] if g.ndim == 0 else g
    if has_aux:
        value = _numpy((out, aux))
    else:
        d = out._data
        if type(out) is not Tensor:
            value = _numpy_leaf(out)
        elif type(d) is _ndarray:
            value = d[()] if d.ndim == 0 else d
        else:   # (a 0-d result is kept as a NumPy scalar: _numpy_leaf's value)
            value = d if isinstance(d, np.generic) else _numpy_leaf(out)
    return value, (flat[0] if single else tuple(flat))


def jacobian(fun, args, kwargs, nums, single: bool):
    """The Jacobian of ``fun`` at ``args`` with respect to ``args[nums]``, row by row on the
    tape, keeping the output's structure (as JAX does: a list of outputs gives a list of
    Jacobians)."""
    nested = inside_transform() or any(_any_traced(args[i]) for i in nums)
    templates = [args[i] for i in nums]
    with _scope(fun):
        args, watched = _watch_args(args, nums)
        # (inside a trace, a closure may hold the trace's Nodes: the MixedKindsError that
        # raises sends the outermost transform down the symbolic path)
        out = fun(*args, **kwargs)

        def jac(o):
            o = _output_tensor(o, fun, "jacobian")
            flat = F.reshape(o, (-1,))
            rows: list[list] = [[] for _ in watched]
            for k in range(flat.shape[0]):
                grads = (_autograd_grad(flat[k], watched, retain_graph=True,
                                        create_graph=nested, allow_unused=True)
                         if flat.requires_grad and watched else (None,) * len(watched))
                for r, w, g in zip(rows, watched, grads):
                    r.append(_zeros_like(w) if g is None else g)
            jacs = tuple(
                F.reshape(F.stack(r), tuple(o.shape) + tuple(w.shape)) if r else
                _leaf_like(w, np.zeros(tuple(o.shape) + tuple(w.shape), dtype=w.dtype))
                for r, w in zip(rows, watched))
            jacs = _unflatten(templates, jacs)
            return jacs[0] if single else jacs

        result = map_structure(jac, out)
    return result if nested else _numpy(result)


class Linearized:
    """``fun`` evaluated at its primals, with the graph of its vector-Jacobian product kept, so
    that Jacobian-vector products come by differentiating that product with respect to its
    cotangent (it is linear in the cotangent: the transpose of the transpose is the Jacobian).
    ``out`` and ``aux`` are the raw results (Tensors); ``push(tangents)`` takes one tangent per
    differentiated array, in order, and gives the output's tangents in the output's structure;
    ``export`` turns results into what the transform returns (NumPy values unless nested)."""

    def __init__(self, fun, outs, rebuild, aux, push_flat, watched, nested):
        self.fun, self.outs, self.rebuild, self.aux = fun, outs, rebuild, aux
        self.out = rebuild(outs)
        self.push_flat, self.watched, self.nested = push_flat, watched, nested

    def push(self, tangents):
        """The output's tangents for ``tangents`` (one per differentiated array, in order;
        None for a zero tangent)."""
        return self.rebuild(self.push_flat(tangents))

    def export(self, v):
        return v if self.nested else _numpy(v)


def linearize(fun, args, kwargs, nums, has_aux: bool = False, transform: str = "jvp"):
    """``fun`` at ``args`` linearized in ``args[nums]`` (see :class:`Linearized`): one forward
    pass and one backward pass with ``create_graph=True`` taking the cotangents as inputs that
    require grad; each ``push`` is then one more backward pass, from the cotangents' gradient
    seeded with the tangents, through the graph the first one recorded."""
    nested = inside_transform() or any(_any_traced(args[i]) for i in nums)
    with _scope(fun):
        args, watched = _watch_args(args, nums)
        out, aux = split_aux(fun(*args, **kwargs), has_aux)
        leaves: list = []
        rebuild = flatten(out, leaves)
        outs = [_output_tensor(o, fun, transform) for o in leaves]
        cotangents = [_leaf_like(o, np.zeros(o.shape, dtype=o.dtype), True) for o in outs]
        live = [k for k, o in enumerate(outs) if o.requires_grad]
        if live and watched:
            vjps = _autograd_grad([outs[k] for k in live], watched,
                                  grad_outputs=[cotangents[k] for k in live],
                                  create_graph=True, allow_unused=True)
        else:
            vjps = (None,) * len(watched)

    def push_flat(tangents):
        pairs = [(g, t) for g, t in zip(vjps, tangents)
                 if g is not None and t is not None and g.requires_grad]
        with _scope(fun):
            if pairs:
                res = _autograd_grad([g for g, _ in pairs], cotangents,
                                     grad_outputs=[t for _, t in pairs], retain_graph=True,
                                     create_graph=nested, allow_unused=True)
            else:
                res = (None,) * len(cotangents)
        return [_zeros_like(o) if r is None else r for o, r in zip(outs, res)]

    return Linearized(fun, outs, rebuild, aux, push_flat, watched, nested)


def _output_tensor(out, fun, transform: str) -> Tensor:
    """The differentiated output as a Tensor: a Tensor, or a number/array (a constant: its
    gradient is zero).  Containers, ``None`` and non-numeric values are a ``TypeError``
    (converted through ``np.asarray`` they would silently give zero gradients), and so are
    boolean and integer outputs, which carry no gradient (JAX rejects them too)."""
    name = getattr(fun, "__name__", fun)
    if not isinstance(out, Tensor):
        if out is None or isinstance(out, (list, tuple, dict, str)) or not isinstance(
                out, (int, float, np.ndarray, np.generic)):
            hint = " (use fg.jacobian for a list, tuple or dict of outputs)" \
                if transform == "grad" and isinstance(out, (list, tuple, dict)) else ""
            raise TypeError(f"{transform} of {name!r}: the function must return a Tensor or a "
                            f"number, got {type(out).__name__}{hint}")
        out = Tensor(np.asarray(out))
    if out.dtype.kind not in "fc":
        raise TypeError(f"{transform} of {name!r}: the output has dtype {out.dtype}; only "
                        f"floating-point outputs can be differentiated")
    return out
