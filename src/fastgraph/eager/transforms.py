"""Functional transforms in the HIPS-autograd / JAX style: ``grad value_and_grad elementwise_grad
jacobian hessian hessian_vector_product hvp``.

A transformed function takes and returns NumPy values, so it plugs straight into SciPy::

    scipy.optimize.minimize(fg.value_and_grad(loss), x0, jac=True)

An argument differentiated may be a list, tuple or dict of arrays (autograd's list of ``(W, b)``
pairs, a dict of parameters), nested: each array in it is differentiated and the gradient comes
back in the same structure, as autograd and JAX return it.  autograd's keyword ``argnum=`` is
accepted for ``argnums=``.

They compose (``fg.grad(fg.grad(f))``): when called on Tensors that require grad (that is, from
inside another transform) they build their gradients with ``create_graph=True`` and return Tensors
connected to the outer computation.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from .. import ops as F
from . import grad_mode as _gm
from .autograd import grad as _autograd_grad
from .tensor import Tensor
from .._core.errors import MixedKindsError
from .._core.tree import find_leaf, map_structure

__all__ = ["grad", "value_and_grad", "elementwise_grad", "jacobian", "hessian",
           "hessian_vector_product", "hvp"]


def _is_traced(x) -> bool:
    return isinstance(x, Tensor) and x.requires_grad


class _scope:
    """While a transform evaluates its function: record (even inside ``no_grad``), and let
    transforms called inside it build connected gradients even when their own arguments are
    plain arrays -- the outer one may reach them through a closure:
    ``fg.grad(lambda a: fg.grad(lambda x: (a * x * x).sum())(w).sum())``."""

    def __init__(self, fun):
        self._transformed = getattr(fun, "__name__", repr(fun))   # (named in error messages)

    def __enter__(self):
        st = _gm._state
        self._prev = st.enabled, st.transformed
        st.enabled = True
        st.transformed = self._transformed
        st.transform_depth += 1

    def __exit__(self, *exc):
        st = _gm._state
        st.transform_depth -= 1
        st.enabled, st.transformed = self._prev


def _inside_transform() -> bool:
    return _gm._state.transform_depth > 0


def _tracing() -> bool:
    """Whether an ``fg.function`` trace is running in this thread (a closure may hold its
    Nodes even when the arguments are plain numbers)."""
    from ..static.function import tracing_graph
    return tracing_graph() is not None


def _has_node(args) -> bool:
    """Whether any argument is (or a list, tuple or dict argument holds) a static graph ``Node``
    (the transforms then differentiate symbolically with ``fg.gradients``)."""
    from ..static.node import NODE_TYPES
    return find_leaf(lambda v: type(v) in NODE_TYPES, args) is not None


def _watch(x):
    """A tensor to differentiate with respect to: connected to ``x`` if ``x`` is being traced."""
    if _is_traced(x):
        return F.identity(x)
    if isinstance(x, Tensor):
        x = x.data
    arr = np.asarray(x)
    if arr.dtype.kind not in "f":
        if arr.dtype.kind not in "biu":
            raise TypeError(f"can only differentiate with respect to numeric inputs, got dtype "
                            f"{arr.dtype}")
        arr = arr.astype(np.float64)
    return Tensor(arr, requires_grad=True)


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


def _argnums_kw(argnums, argnum):
    """autograd spells ``argnums`` ``argnum``; either may be given, not both."""
    if argnum is None:
        return argnums
    if argnums != 0:
        raise TypeError("give argnums or argnum (autograd's name), not both")
    return argnum


def _numpy(v):
    """Tensors -> NumPy values (0-d as NumPy scalars), through lists, tuples and dicts."""
    return map_structure(_numpy_leaf, v)


def _numpy_leaf(v):
    if isinstance(v, Tensor):
        d = v.data
        return d[()] if d.ndim == 0 else d
    return v


def _zeros_like(x):
    return Tensor(np.zeros(x.shape, dtype=x.dtype))


def _argnums(argnums, n_args: int) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
    ok = single or (isinstance(argnums, (tuple, list)) and argnums and all(
        isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in argnums))
    if not ok:
        raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    nums = (int(argnums),) if single else tuple(int(a) for a in argnums)
    for a in nums:
        if not -n_args <= a < n_args:
            raise ValueError(f"argnums {a} is out of range for a function called with "
                             f"{n_args} positional arguments")
    return tuple(a % n_args for a in nums), single


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, *,
                   argnum=None) -> Callable:
    """``f -> (x -> (f(x), df/dx))`` for scalar-valued ``f``; ``has_aux`` gives
    ``((value, aux), grad)`` as JAX does; a tuple ``argnums`` gives a tuple of gradients.
    A list, tuple or dict argument gets a gradient of the same structure.

        >>> fg.value_and_grad(lambda x: (x ** 2).sum())(np.array([1.0, 2.0]))
        (np.float64(5.0), array([2., 4.]))
    """
    argnums = _argnums_kw(argnums, argnum)

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        nums, single = _argnums(argnums, len(args))
        if _has_node(args):  # inside a static graph (fg.function): symbolic
            from ..static.function import static_value_and_grad
            return static_value_and_grad(fun, args, kwargs, nums, single, has_aux)
        if _tracing() and not _inside_transform():
            # plain arguments inside an fg.function trace: eager unless the body reaches a
            # Node through a closure (then symbolic, so that path is differentiated too)
            from ..static.function import static_value_and_grad
            try:
                return eager(args, kwargs, nums, single)
            except MixedKindsError:
                return static_value_and_grad(fun, args, kwargs, nums, single, has_aux)
        return eager(args, kwargs, nums, single)

    def eager(args, kwargs, nums, single):
        nested = _inside_transform() or any(_any_traced(args[i]) for i in nums)
        templates = [args[i] for i in nums]
        with _scope(fun):
            args, watched = _watch_args(args, nums)
            out = fun(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise TypeError("has_aux=True requires the function to return a pair "
                                    "(value, aux)")
                out, aux = out
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

    return wrapper


def grad(fun: Callable, argnums=0, *, argnum=None) -> Callable:
    """``f -> df/dx`` for scalar-valued ``f`` (NumPy in, NumPy out; composable).

        >>> fg.grad(fg.grad(lambda x: x ** 3))(2.0)
        np.float64(12.0)
    """
    vg = value_and_grad(fun, _argnums_kw(argnums, argnum))

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    return wrapper


def elementwise_grad(fun: Callable, argnums=0, *, argnum=None) -> Callable:
    """autograd's ``elementwise_grad``: the gradient of ``sum(f(x))`` (the vector-Jacobian product
    with ones), which for an elementwise ``f`` is each output's derivative at its own input.

        >>> fg.elementwise_grad(fg.tanh)(np.array([0.0, 1.0]))
        array([1.        , 0.41997434])
    """
    @functools.wraps(fun)
    def summed(*args, **kwargs):
        out = fun(*args, **kwargs)
        # a list, tuple, dict or None stays as it is, for grad's TypeError
        return out if out is None or isinstance(out, (list, tuple, dict, str)) else F.sum(out)

    return functools.wraps(fun)(grad(summed, _argnums_kw(argnums, argnum)))


def jacobian(fun: Callable, argnums=0, *, argnum=None) -> Callable:
    """``f -> J`` with ``J.shape == f(x).shape + x.shape`` (a tuple of them for tuple ``argnums``;
    for a list, tuple or dict argument, that structure holding one such array per array in it).

        >>> fg.jacobian(lambda x: x * x)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
    """
    argnums = _argnums_kw(argnums, argnum)

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        nums, single = _argnums(argnums, len(args))
        if _has_node(args):  # inside a static graph (fg.function): symbolic
            from ..static.function import static_jacobian
            return static_jacobian(fun, args, kwargs, nums, single)
        if _tracing() and not _inside_transform():
            # plain arguments inside an fg.function trace: eager unless the body reaches a
            # Node through a closure (then symbolic), as value_and_grad does
            from ..static.function import static_jacobian
            try:
                return eager(args, kwargs, nums, single)
            except MixedKindsError:
                return static_jacobian(fun, args, kwargs, nums, single)
        return eager(args, kwargs, nums, single)

    def eager(args, kwargs, nums, single):
        nested = _inside_transform() or any(_any_traced(args[i]) for i in nums)
        templates = [args[i] for i in nums]
        with _scope(fun):
            args, watched = _watch_args(args, nums)
            # (inside a trace, a closure may hold the trace's Nodes: the MixedKindsError that
            # raises sends the outermost transform's wrapper down the symbolic path)
            out = fun(*args, **kwargs)

            def jac(o):
                """The Jacobian(s) of one output leaf (the output's structure is kept, as JAX
                keeps it: a list of outputs gives a list of Jacobians)."""
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
                    Tensor(np.zeros(tuple(o.shape) + tuple(w.shape), dtype=w.dtype))
                    for r, w in zip(rows, watched))
                jacs = _unflatten(templates, jacs)
                return jacs[0] if single else jacs

            result = map_structure(jac, out)
        return result if nested else _numpy(result)

    return wrapper


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


def hessian(fun: Callable, argnums: int = 0, *, argnum=None) -> Callable:
    """``f -> H``, the Jacobian of the gradient of scalar-valued ``f``."""
    argnums = _argnums_kw(argnums, argnum)
    return jacobian(grad(fun, argnums), argnums)


def hessian_vector_product(fun: Callable, argnums: int = 0, *, argnum=None) -> Callable:
    """autograd's ``hessian_vector_product``: ``f -> ((*args, v) -> H(args) @ v)`` for
    scalar-valued ``f``, the vector ``v`` (shaped like the argument) passed last; ``H`` is not
    formed.  (``fg.hvp(f, x, v)`` is the same product, called at once.)

        >>> fg.hessian_vector_product(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]),
        ...                                                     np.array([1.0, 0.0]))
        array([6., 0.])
    """
    argnums = _argnums_kw(argnums, argnum)
    if not isinstance(argnums, (int, np.integer)) or isinstance(argnums, bool):
        raise TypeError(f"hessian_vector_product differentiates one argument: argnums must be an "
                        f"int, got {argnums!r}")
    fun_grad = grad(fun, argnums)

    @functools.wraps(fun)
    def vector_dot_grad(*args, **kwargs):
        *args, vector = args
        return F.sum(fun_grad(*args, **kwargs) * vector)

    return functools.wraps(fun)(grad(vector_dot_grad, argnums))


def hvp(fun: Callable, x, v):
    """Hessian-vector product ``H(x) @ v`` of scalar-valued ``f`` without forming ``H``.

        >>> fg.hvp(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]), np.array([1.0, 0.0]))
        array([6., 0.])
    """
    v_value = v.data if isinstance(v, Tensor) else np.asarray(v)
    return grad(lambda x_: F.sum(grad(fun)(x_) * v_value))(x)
