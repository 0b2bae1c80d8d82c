"""Functional transforms in the HIPS-autograd / JAX style: ``grad value_and_grad elementwise_grad
jacobian hessian hessian_vector_product hvp``, on eager values and on graph Nodes alike.

A transformed function takes and returns NumPy values, so it plugs straight into SciPy::

    scipy.optimize.minimize(fg.value_and_grad(loss), x0, jac=True)

This module is the switch between the two engines' halves: arguments holding a graph ``Node``
are differentiated symbolically (``fastgraph.static.transforms``), everything else on the tape
(``fastgraph.eager.transforms``) -- except inside an ``fg.function`` trace, where a closure may
reach the trace's Nodes: the eager half runs, and a function that mixes the two kinds is
differentiated symbolically instead.  autograd's keyword ``argnum=`` is accepted for
``argnums=``.  They compose (``fg.grad(fg.grad(f))``, ``fg.function(fg.grad(f))``).

Forward mode has no rules of its own: the vector-Jacobian product ``u -> J^T u`` is linear in the
cotangent ``u``, so its own vector-Jacobian product with respect to ``u``, taken with the
tangent ``v``, is ``J v``.  Both products are reverse passes with the VJP rules every op already
has (written in fastgraph operations, so they differentiate again), which is why every op has a
JVP, eagerly, in static graphs and inside ``fg.function``.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from .. import ops as F
from .._core.errors import MixedKindsError
from .._core.tree import find_leaf, map_structure
from ..eager import transforms as _eager
from ..eager.tensor import Tensor
from ..static import transforms as _symbolic
from ..static.node import NODE_TYPES, as_node
from .function import _TRACING, tracing_graph

_ndarray = np.ndarray

__all__ = ["grad", "value_and_grad", "elementwise_grad", "jacobian", "hessian",
           "hessian_vector_product", "hvp", "jvp", "make_jvp", "linearize", "jacfwd"]


def _argnums_kw(argnums, argnum):
    """autograd spells ``argnums`` ``argnum``; either may be given, not both."""
    if argnum is None:
        return argnums
    if argnums != 0:
        raise TypeError("give argnums or argnum (autograd's name), not both")
    return argnum


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


def _has_node(args) -> bool:
    """Whether any argument is (or a list, tuple or dict argument holds) a static graph ``Node``
    (the transforms then differentiate symbolically with ``fg.gradients``)."""
    for a in args:
        if type(a) is not np.ndarray:
            break
    else:
        return False   # (an optimiser's call: arrays only, nothing to walk)
    return find_leaf(lambda v: type(v) in NODE_TYPES, args) is not None


def _transformed(fun, argnums, eager, symbolic):
    """``fun`` transformed by ``eager(fun, args, kwargs, nums, single)`` on eager values and
    ``symbolic(..., graph)`` on graph Nodes (see the module docstring)."""
    resolved: dict = {}   # argument count -> _argnums(argnums, count), argnums being immutable
    immutable = isinstance(argnums, (int, np.integer, tuple))

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        r = resolved.get(len(args))
        if r is None:
            r = _argnums(argnums, len(args))
            if immutable:
                resolved[len(args)] = r
        nums, single = r
        for a in args:   # (an optimiser's call, arrays only, makes no call to _has_node)
            if type(a) is not _ndarray:
                if _has_node(args):  # inside a static graph (fg.function): symbolic
                    return symbolic(fun, args, kwargs, nums, single, None)
                break
        graphs = getattr(_TRACING, "graphs", None)   # (tracing_graph(), without its frame)
        graph = graphs[-1] if graphs else None
        if graph is not None and not _eager.inside_transform():
            # plain arguments inside an fg.function trace: eager unless the body reaches a
            # Node through a closure (then symbolic, so that path is differentiated too)
            try:
                return eager(fun, args, kwargs, nums, single)
            except MixedKindsError:
                return symbolic(fun, args, kwargs, nums, single, graph)
        return eager(fun, args, kwargs, nums, single)

    return wrapper


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, *,
                   argnum=None) -> Callable:
    """``f -> (x -> (f(x), df/dx))`` for scalar-valued ``f``; ``has_aux`` gives
    ``((value, aux), grad)`` as JAX does; a tuple ``argnums`` gives a tuple of gradients.
    A list, tuple or dict argument gets a gradient of the same structure.

        >>> fg.value_and_grad(lambda x: (x ** 2).sum())(np.array([1.0, 2.0]))
        (np.float64(5.0), array([2., 4.]))
    """
    return _transformed(
        fun, _argnums_kw(argnums, argnum),
        functools.partial(_eager.value_and_grad, has_aux=has_aux),   # (no frame of its own)
        lambda f, a, k, nums, single, graph: _symbolic.value_and_grad(f, a, k, nums, single,
                                                                      has_aux, graph))


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
    return _transformed(fun, _argnums_kw(argnums, argnum), _eager.jacobian, _symbolic.jacobian)


def hessian(fun: Callable, argnums: int = 0, *, argnum=None) -> Callable:
    """``f -> H``, the Jacobian of the gradient of scalar-valued ``f``.

        >>> fg.hessian(lambda x: (x ** 3).sum())(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
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
    v_value = v._ndarray if isinstance(v, Tensor) else np.asarray(v)
    return grad(lambda x_: F.sum(grad(fun)(x_) * v_value))(x)



# ---- forward mode ------------------------------------------------------------------------------
def _tangent_dtype(primal) -> np.dtype:
    """The dtype ``primal`` is differentiated at (integers and booleans as float64, as the
    reverse-mode transforms promote them), which its tangent must have."""
    dt = primal.dtype if isinstance(primal, Tensor) or type(primal) in NODE_TYPES else \
        np.asarray(primal).dtype
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def _tangent_leaves(transform: str, primals, tangents, names) -> list:
    """The tangents' arrays in the order the transforms differentiate the primals' arrays,
    checked: the same structure, and each array the shape and dtype of its primal (a Python
    number takes its primal's dtype).  A mismatch names the argument and both shapes or dtypes.
    ``None`` (JAX's empty subtree) pairs with ``None``."""
    out: list = []

    def pair(p, t, path):
        if p is None:
            if t is not None:
                raise TypeError(f"{transform}: the primal {path} is None, so its tangent must be "
                                f"None, got {type(t).__name__}")
            return
        if isinstance(p, dict):
            if not isinstance(t, dict) or set(t) != set(p):
                got = f"keys {sorted(t, key=repr)}" if isinstance(t, dict) else \
                    type(t).__name__
                raise TypeError(f"{transform}: the tangent {path} must be a dict with the "
                                f"primal's keys {sorted(p, key=repr)}, got {got}")
            for k in p:
                pair(p[k], t[k], f"{path}[{k!r}]")
            return
        if isinstance(p, (list, tuple)):
            if not isinstance(t, (list, tuple)) or len(t) != len(p):
                got = f"a {type(t).__name__} of length {len(t)}" \
                    if isinstance(t, (list, tuple)) else type(t).__name__
                raise TypeError(f"{transform}: the tangent {path} must be a sequence of "
                                f"{len(p)} like its primal (a {type(p).__name__}), got {got}")
            for k, (pv, tv) in enumerate(zip(p, t)):
                pair(pv, tv, f"{path}[{k}]")
            return
        dtype = _tangent_dtype(p)
        pshape = p.shape if isinstance(p, Tensor) or type(p) in NODE_TYPES else np.shape(p)
        pshape = None if pshape is None else tuple(pshape)     # (a Node of unknown rank)
        if isinstance(t, (list, tuple, dict)) or t is None:
            raise TypeError(f"{transform}: the tangent {path} must be an array of shape "
                            f"{pshape}, like its primal, got {type(t).__name__}")
        if isinstance(t, (int, float, complex)) and not isinstance(t, (bool, np.generic)):
            t = np.asarray(t, dtype=dtype)
        if not (isinstance(t, Tensor) or type(t) in NODE_TYPES):
            t = np.asarray(t)
        tshape = tuple(t.shape) if t.shape is not None else None
        known = tshape is not None and pshape is not None and None not in tshape + pshape
        if known and tshape != pshape:
            raise ValueError(f"{transform}: the tangent {path} has shape {tshape} but its "
                             f"primal has shape {pshape}; each tangent must have its "
                             f"primal's shape")
        if t.dtype != dtype:
            raise TypeError(f"{transform}: the tangent {path} has dtype {t.dtype} but its "
                            f"primal is differentiated at dtype {dtype}; each tangent must have "
                            f"its primal's dtype")
        out.append(t)

    for p, t, name in zip(primals, tangents, names):
        pair(p, t, name)
    return out


def _node_graph(*trees):
    node = find_leaf(lambda v: type(v) in NODE_TYPES, trees)
    return None if node is None else node.graph


def _linearize(fun, args, kwargs, nums, has_aux, transform, tangents=None):
    """The engine's linearization of ``fun`` (``Linearized``): symbolic when a primal or tangent
    is a graph Node, or when an ``fg.function`` trace's Nodes are reached through a closure;
    else on the tape."""
    graph = _node_graph(args, tangents)
    if graph is not None:
        return _symbolic.linearize(fun, args, kwargs, nums, has_aux, graph, transform)
    graph = tracing_graph()
    if graph is not None and not _eager.inside_transform():
        try:
            return _eager.linearize(fun, args, kwargs, nums, has_aux, transform)
        except MixedKindsError:
            return _symbolic.linearize(fun, args, kwargs, nums, has_aux, graph, transform)
    return _eager.linearize(fun, args, kwargs, nums, has_aux, transform)


def _as_tuple(transform: str, what: str, v) -> tuple:
    if not isinstance(v, (tuple, list)):
        raise TypeError(f"{transform}: {what} must be a tuple or list with one entry per "
                        f"argument of the function, got {type(v).__name__}")
    return tuple(v)


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """JAX's ``jvp``: ``(fun(*primals), J @ tangents)``, the Jacobian-vector product in forward
    mode, without forming ``J``.  ``primals`` and ``tangents`` are tuples (or lists) with one
    entry per argument; each tangent has its primal's structure (list, tuple, dict), shapes and
    dtypes.  ``has_aux=True``: ``fun`` returns ``(value, aux)`` and you get
    ``(value, tangent, aux)``.

        >>> fg.jvp(lambda x: x ** 3, (np.array([1.0, 2.0]),), (np.array([1.0, 0.5]),))
        (array([1., 8.]), array([3., 6.]))
    """
    primals = _as_tuple("jvp", "primals", primals)
    tangents = _as_tuple("jvp", "tangents", tangents)
    if len(tangents) != len(primals):
        raise TypeError(f"jvp: {len(primals)} primals but {len(tangents)} tangents; give one "
                        f"tangent per primal")
    names = [f"primals[{i}]" for i in range(len(primals))]
    flat = _tangent_leaves("jvp", primals, tangents, names)
    lin = _linearize(fun, primals, {}, tuple(range(len(primals))), has_aux, "jvp", tangents)
    out, tangent_out = lin.export(lin.out), lin.export(lin.push(flat))
    if has_aux:
        return out, tangent_out, lin.export(lin.aux)
    return out, tangent_out


def linearize(fun: Callable, *primals):
    """JAX's ``linearize``: ``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the
    Jacobian-vector product at ``primals``.  The forward pass and the graph of the
    vector-Jacobian product are kept, so each ``f_jvp`` call is one backward pass through it.

        >>> y, f_jvp = fg.linearize(fg.sin, np.array([0.0, 1.0]))
        >>> f_jvp(np.array([1.0, 1.0]))
        array([1.        , 0.54030231])
    """
    names = [f"primals[{i}]" for i in range(len(primals))]
    lin = _linearize(fun, primals, {}, tuple(range(len(primals))), False, "linearize")

    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise TypeError(f"linearize: {len(primals)} primals but {len(tangents)} tangents; "
                            f"give one tangent per primal")
        flat = _tangent_leaves("linearize", primals, tangents, names)
        if _node_graph(tangents) is not None and isinstance(lin, _eager.Linearized):
            return jvp(fun, primals, tangents)[1]   # a Node tangent: the symbolic passes
        return lin.export(lin.push(flat))

    return lin.export(lin.out), f_jvp


def make_jvp(fun: Callable, argnum=0):
    """HIPS autograd's ``make_jvp``: ``make_jvp(fun, argnum)(*args)(vector)`` is
    ``(fun(*args), J @ vector)`` with ``J`` the Jacobian in ``args[argnum]`` (a tuple ``argnum``
    takes a tuple of vectors).  The function runs once per ``make_jvp(fun)(*args)``; each vector
    then costs one backward pass.

        >>> fg.make_jvp(lambda x: x ** 2)(np.array([1.0, 3.0]))(np.array([1.0, 1.0]))
        (array([1., 9.]), array([2., 6.]))
    """
    @functools.wraps(fun)
    def at(*args, **kwargs):
        nums, single = _argnums(argnum, len(args))
        names = [f"argument {i}" for i in nums]
        primals = [args[i] for i in nums]
        cache: list = []

        def jvp_of(vector):
            vectors = (vector,) if single else _as_tuple("make_jvp", "the vector for a tuple "
                                                         "argnum", vector)
            if len(vectors) != len(nums):
                raise TypeError(f"make_jvp: {len(nums)} differentiated arguments but "
                                f"{len(vectors)} vectors")
            flat = _tangent_leaves("make_jvp", primals, vectors, names)
            if _node_graph(vectors) is not None and not (cache and not isinstance(
                    cache[0], _eager.Linearized)):
                lin = _linearize(fun, args, kwargs, nums, False, "make_jvp", vectors)
            else:
                if not cache:
                    cache.append(_linearize(fun, args, kwargs, nums, False, "make_jvp"))
                lin = cache[0]
            return lin.export(lin.out), lin.export(lin.push(flat))

        return jvp_of

    return at


def _jacobian_columns(lin, nums, single, templates, transform):
    """The Jacobian from one forward-mode push per differentiated array element (a column
    each), in fg.jacobian's layout: ``out.shape + x.shape``, the outputs' structure holding the
    arguments' structure."""
    watched = lin.watched
    for what, v in [("an input", w) for w in watched] + [("an output", o) for o in lin.outs]:
        if v.shape is None or None in tuple(v.shape):
            name = getattr(lin.fun, "__name__", lin.fun)
            raise TypeError(f"{transform} of {name!r} inside a graph needs inputs and outputs "
                            f"of known shape (one product per input element), got {what} of "
                            f"shape {v.shape}")
    total = sum(int(np.prod(w.shape)) for w in watched)
    if not isinstance(lin, _eager.Linearized) and total > _symbolic.JACOBIAN_MAX_OUTPUTS:
        raise ValueError(f"{transform} inside fg.function: {total} input elements would take "
                         f"{total} Jacobian-vector products in the graph (at most "
                         f"{_symbolic.JACOBIAN_MAX_OUTPUTS}); call it eagerly, or take "
                         f"products with fg.jvp")
    columns = [[[] for _ in watched] for _ in lin.outs]     # [out leaf][input leaf] -> list
    for j, w in enumerate(watched):
        n = int(np.prod(w.shape))
        for k in range(n):
            basis = np.zeros(n, dtype=w.dtype)
            basis[k] = 1
            tangents = [None] * len(watched)
            tangents[j] = basis.reshape(tuple(w.shape))
            for col, t in zip(columns, lin.push_flat(tangents)):
                col[j].append(t)
    jacs = []
    for o, cols in zip(lin.outs, columns):
        per_input = []
        for w, c in zip(watched, cols):
            shape = tuple(o.shape) + tuple(w.shape)
            per_input.append(F.reshape(F.stack(c, axis=-1), shape) if c else
                             _zeros(lin, shape, w.dtype))
        it = iter(per_input)
        per_arg = tuple(map_structure(lambda v: None if v is None else next(it), t)
                        for t in templates)
        jacs.append(per_arg[0] if single else per_arg)
    return lin.rebuild(jacs)


def _zeros(lin, shape, dtype):
    if isinstance(lin, _eager.Linearized):
        return Tensor(np.zeros(shape, dtype=dtype))
    return as_node(np.zeros(shape, dtype=dtype), lin.watched[0].graph)


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """JAX's ``jacfwd``: the Jacobian in forward mode, one Jacobian-vector product per input
    element (cheaper than ``fg.jacobian``, one vector-Jacobian product per output element, when
    the function has more outputs than inputs).  The layout is ``fg.jacobian``'s:
    ``out.shape + x.shape``; ``has_aux=True`` gives ``(J, aux)``.

        >>> fg.jacfwd(lambda x: fg.stack([x[0] * x[1], fg.sin(x[0]), x[1]]))(np.array([0.0, 2.0]))
        array([[2., 0.],
               [1., 0.],
               [0., 1.]])
    """
    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        nums, single = _argnums(argnums, len(args))
        lin = _linearize(fun, args, kwargs, nums, has_aux, "jacfwd")
        jac = lin.export(_jacobian_columns(lin, nums, single, [args[i] for i in nums],
                                           "jacfwd"))
        return (jac, lin.export(lin.aux)) if has_aux else jac

    return wrapper
