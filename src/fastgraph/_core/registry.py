"""The registry: every operation is declared once, by :func:`defop`, in ``fastgraph.ops``.

A declaration says everything about an op, each fact a keyword (the fields of
:class:`~fastgraph._core.dispatch.OpDef`, and of its public face :class:`Api`), and what is
generated from the declarations reads them:

* the public names of ``fastgraph``, ``fastgraph.numpy``, ``fastgraph.linalg``,
  ``fastgraph.scipy.special`` and ``fastgraph.scipy.linalg`` (:func:`namespace`);
* the NumPy protocol tables, NumPy's ufuncs and functions that route to an op (:func:`numpy_routes`);
* the method and operator forms of ``Tensor`` and ``Node`` (:func:`method_forms`);
* the passes' decisions (they ask an op's fields, never its name).

A function made of other ops (``trace`` is ``sum(diagonal(x))``) has a public face only:
:func:`defun` declares it with the same keywords.

    >>> exp = defop("exp", np.exp, lambda g, ans, x: g * ans, elementwise=True, opcode="exp",
    ...             exports=TOP, methods=("exp",))
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .dispatch import ANS, G, Kernel, OpDef, Slot, X0, X1, X2, X3, apply
from . import shapes as _shapes

__all__ = ["OpDef", "Api", "REGISTRY", "API", "ZERO", "TOP", "TF", "TOP_TF", "NN", "LOSSES",
           "defop", "defun", "namespace",
           "numpy_routes", "method_forms", "operator_ops", "G", "ANS", "X0", "X1", "X2", "X3",
           "Kernel", "Slot"]


class _Zero:
    """Sentinel VJP: the gradient with respect to this input is identically zero."""

    def __repr__(self) -> str:
        return "ZERO"


ZERO = _Zero()

#: every declared op, by name
REGISTRY: dict[str, OpDef] = {}
#: every public face (of an op or of a function made of ops), by name
API: dict[str, "Api"] = {}

#: the namespaces a public op is exported to unless it says otherwise: ``fastgraph`` and the
#: drop-in ``fastgraph.numpy``
TOP = ("fastgraph", "numpy")
#: TensorFlow 1's namespace, ``fastgraph.compat.v1``, where TensorFlow's meanings win
TF = "compat.v1"
#: an op whose NumPy name is also TensorFlow's, with the same meaning (``exp``, ``add``)
TOP_TF = TOP + (TF,)
#: ``fastgraph.nn`` and ``fastgraph.losses``: TensorFlow 1's ``tf.nn`` and ``tf.losses``
NN = "nn"
LOSSES = "losses"
#: ``nn_ops``: the deep-learning functions with PyTorch's names and semantics (NCHW), the
#: functional namespace of the PyTorch front-end
NN_OPS = "nn_ops"
#: ``fastgraph.distributed``: the collectives across the processes of an MPI job
DISTRIBUTED = "distributed"
NAMESPACES = ("fastgraph", "numpy", "linalg", "fft", "scipy.special", "scipy.linalg",
              "scipy.signal", "scipy.integrate", TF, NN, LOSSES, NN_OPS, DISTRIBUTED)
#: namespaces of one module per family: ``scipy.stats.norm``, ``scipy.stats.gamma``, ...
NAMESPACE_FAMILIES = ("scipy.stats.",)

_UNARY_DUNDERS = frozenset({"__neg__", "__abs__", "__invert__", "__pos__"})
_REFLECTED = frozenset({"__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__",
                        "__rmod__", "__rpow__", "__rmatmul__", "__rand__", "__ror__"})


class Api:
    """The public face of an op, or of a function made of ops.

    * ``function``: what users call;
    * ``exports``: the namespaces that export it, each ``"fastgraph"``, ``"numpy"``,
      ``"linalg"``, ``"scipy.special"``, ``"scipy.linalg"``, ``"compat.v1"`` (TensorFlow 1's
      names, with TensorFlow's meanings), ``"nn"`` or ``"losses"`` (TensorFlow 1's ``tf.nn`` and
      ``tf.losses``), ``"nn_ops"`` (PyTorch's ``torch.nn.functional``), under its name or as a
      pair ``(namespace, alias)``;
    * ``methods``: its method forms on ``Tensor`` and ``Node``: names bound to ``function`` (the
      value is ``self``; ``True``: its own name), or a dict of name to a function of ``self``
      (or a ``property``);
    * ``operators``: the Python operators that call it (``"__add__"``, ``"__radd__"``...;
      reflected ones swap the operands);
    * ``numpy``: the NumPy functions and ufuncs (attribute paths of ``numpy``: ``"absolute"``,
      ``"linalg.inv"``) that ``np.X(t)`` routes to it.  ``None`` (the default): NumPy's
      namesakes of the names it is exported under in ``fastgraph.numpy`` and
      ``fastgraph.linalg``.
    """
    __slots__ = ("name", "function", "op", "generated", "exports", "methods", "operators",
                 "numpy")

    def __init__(self, name, function, op, exports=(), methods=(), operators=(), numpy=None,
                 generated=False):
        exports = tuple(exports)
        for e in exports:
            ns = e[0] if isinstance(e, tuple) else e
            if ns not in NAMESPACES and not (ns.startswith(NAMESPACE_FAMILIES) and "." not in
                                             ns[len("scipy.stats."):]):
                raise ValueError(f"{name}: unknown namespace {ns!r} (one of {NAMESPACES})")
        self.name, self.function, self.op = name, function, op
        self.generated = generated      # the function is apply(op, inputs, None)
        self.exports = exports
        if methods is True:
            methods = (name,)
        self.methods = dict(methods) if isinstance(methods, dict) else {m: function
                                                                         for m in methods}
        self.operators = tuple(operators)
        for d in self.operators:
            if not (d.startswith("__") and d.endswith("__")):
                raise ValueError(f"{name}: {d!r} is not an operator's method name")
        self.numpy = None if numpy is None else tuple(numpy)

    def names_in(self, ns: str) -> list[str]:
        """The names it has in namespace ``ns`` (none when not exported there)."""
        return [e[1] if isinstance(e, tuple) else self.name
                for e in self.exports if (e[0] if isinstance(e, tuple) else e) == ns]

    def __repr__(self) -> str:
        return f"Api({self.name!r})"


def defop(name: str, forward: Callable, *vjps, vjp_for: Callable | None = None,
          function: Callable | None = None, doc: str | None = None, kernel=None,
          eager_vjps=None, exports=(), methods=(), operators=(), numpy=None,
          **fields) -> Callable:
    """Declare an operation once; returns its public function (``function.op`` is the
    :class:`OpDef`).

    ``forward`` is the NumPy computation and ``vjps`` one rule per input (see ``OpDef``); a
    variadic op gives ``vjp_for(i)``, which makes the rule of its ``i``-th input.
    ``function``: the public function, when it takes attributes (its body checks them and
    calls ``apply(function.op, inputs, attrs)``); else one is generated, taking the inputs
    positionally (``doc`` is its docstring).  ``kernel``: the compiled elementwise kernel the
    engines may call on small float arrays (``OpDef.set_kernel``; a NumPy ufunc ``forward`` is
    its own); ``eager_vjps``: compiled VJPs (``OpDef.set_eager_vjps``), where a
    :class:`Kernel` may name its op (one declared before, or this one).  ``exports``,
    ``methods``, ``operators``, ``numpy``: the public face (:class:`Api`).  Every other keyword
    is a field of ``OpDef`` (``elementwise``, ``opcode``, ``reduction``, ``blas``, ...).  An
    elementwise op's shape rule is NumPy's broadcasting unless ``shape`` says otherwise.
    """
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is declared twice")
    if fields.get("elementwise") and fields.get("shape") is None:
        fields["shape"] = _broadcast_rule(name)
    if vjp_for is not None:
        if vjps:
            raise ValueError(f"{name}: give vjps or vjp_for, not both")
        vjps = _VariadicVjps(vjp_for)
    op = OpDef(name, forward, vjps, **fields)
    if kernel is None and _is_numpy_ufunc(forward):
        kernel = forward
    if kernel is not None:
        op.set_kernel(kernel)
    if eager_vjps is not None:
        op.set_eager_vjps([_resolved(r, op) for r in eager_vjps])
    generated = function is None
    if generated:
        function = _generated_function(op, doc)
    function.op = op
    op.api = _register_api(name, function, op, exports, methods, operators, numpy, generated)
    REGISTRY[name] = op
    return function


def defun(function: Callable, name: str | None = None, exports=(), methods=(), operators=(),
          numpy=None) -> Callable:
    """Declare the public face of a function made of other ops (``trace``, ``dot``,
    ``hstack``): the same keywords as :func:`defop`'s public face.  Returns ``function``.

        >>> def trace(x, offset=0, axis1=0, axis2=1): ...
        >>> trace = defun(trace, exports=TOP, methods=("trace",))
    """
    name = name or function.__name__
    _register_api(name, function, None, exports, methods, operators, numpy)
    return function


def _register_api(name, function, op, exports, methods, operators, numpy,
                  generated=False) -> Api:
    if name in API:
        raise ValueError(f"{name!r} is declared twice")
    api = API[name] = Api(name, function, op, exports, methods, operators, numpy, generated)
    return api


class _VariadicVjps(tuple):
    """VJP rules for a variadic op: rule ``i`` made on demand for the ``i``-th input."""

    def __new__(cls, make):
        self = super().__new__(cls, ())
        self.make = make
        self.cache = {}
        return self

    def __getitem__(self, i):
        rule = self.cache.get(i)
        if rule is None:
            rule = self.cache[i] = self.make(i)
        return rule


def _resolved(recipe, op: OpDef):
    """An eager VJP with its kernel's op named by its name made the OpDef itself."""
    if isinstance(recipe, Kernel) and isinstance(recipe.op, str):
        k = op if recipe.op == op.name else REGISTRY.get(recipe.op)
        if k is None:
            raise ValueError(f"{op.name}: eager VJP {recipe!r} names an op not declared yet")
        return Kernel(k, *recipe.args)
    return recipe


def _broadcast_rule(name: str):
    return lambda shapes, **_: _shapes.broadcast(name, *shapes)


def _is_numpy_ufunc(f) -> bool:
    """A ufunc of NumPy's own namespace (SciPy's special functions are ufuncs too, but report
    errors their own way: they keep going through the ufunc machinery)."""
    return isinstance(f, np.ufunc) and getattr(np, f.__name__, None) is f


def _generated_function(op: OpDef, doc: str | None) -> Callable:
    """The public function of an op without attributes: its inputs, positionally."""
    n = len(op.vjps)
    if op.variadic or n > 3:
        def fn(*xs):
            return apply(op, xs, None)
    elif n == 1:
        def fn(x):
            return apply(op, (x,), None)   # no attributes: None saves a dict per call
    elif n == 2:
        def fn(x, y):
            return apply(op, (x, y), None)
    else:
        def fn(x, y, z):
            return apply(op, (x, y, z), None)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc if doc is not None else _default_doc(op, n)
    return fn


def _default_doc(op: OpDef, n: int) -> str:
    name = op.name
    if not op.elementwise:
        return f"``{name}`` of the inputs (NumPy semantics), differentiable."
    if not op.differentiable:
        return f"Elementwise ``{name}``; a boolean result that carries no gradient."
    if n == 1:
        return (f"Elementwise ``{name}`` (NumPy semantics), differentiable.\n\n"
                f"    >>> fg.{name}(fg.tensor([0.5]))  # doctest: +SKIP\n")
    return (f"Elementwise ``{name}`` with NumPy broadcasting, differentiable.\n\n"
            f"    >>> fg.{name}(fg.tensor([1.0]), 2.0)  # doctest: +SKIP\n")


# ---- what the declarations generate ------------------------------------------------------------
def namespace(ns: str) -> dict[str, Callable]:
    """The public functions namespace ``ns`` exports, by the names it exports them under.

        >>> namespace("linalg")["inv"]        # fg.linalg.inv
    """
    out: dict[str, Callable] = {}
    for api in API.values():
        for n in api.names_in(ns):
            if n in out and out[n] is not api.function:
                raise ValueError(f"{ns}.{n} is exported by two declarations")
            out[n] = api.function
    return out


def _numpy_attr(path: str):
    obj = np
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def numpy_routes() -> tuple[dict[str, Callable], dict[Callable, Callable]]:
    """``(ufuncs, functions)``: NumPy's ufuncs (by their ``__name__``, as ``__array_ufunc__``
    receives them) and functions (by the function, as ``__array_function__`` does) that route
    to each public function."""
    ufuncs: dict[str, Callable] = {}
    functions: dict[Callable, Callable] = {}
    for api in API.values():
        paths = api.numpy
        if paths is None:
            paths = api.names_in("numpy") + [f"linalg.{n}" for n in api.names_in("linalg")]
        for path in paths:
            target = _numpy_attr(path)
            if target is None:
                if api.numpy is not None:
                    raise ValueError(f"{api.name}: NumPy has no {path!r} to route")
                continue
            if isinstance(target, np.ufunc):
                _claim(ufuncs, target.__name__, api, f"np.{path}")
            elif callable(target):
                _claim(functions, target, api, f"np.{path}")
    return ufuncs, functions


def _claim(table: dict, key, api: Api, what: str) -> None:
    if key in table and table[key] is not api.function:
        raise ValueError(f"{what} routes to two declarations ({api.name!r} and "
                         f"{table[key].__name__!r})")
    table[key] = api.function


def method_forms() -> dict[str, object]:
    """The methods and operators of ``Tensor`` and ``Node``, by attribute name: a public
    function taking the value first is its own method; a reflected operator swaps the
    operands."""
    out: dict[str, object] = {}
    owner: dict[str, str] = {}

    def put(attr, member, api):
        if attr in out:
            raise ValueError(f"method {attr!r} is declared by {owner[attr]!r} and {api.name!r}")
        out[attr], owner[attr] = member, api.name

    for api in API.values():
        for attr, member in api.methods.items():
            put(attr, member, api)
        for attr in api.operators:
            put(attr, _reflected(api) if attr in _REFLECTED else api.function, api)
    return out


def _reflected(api: Api) -> Callable:
    """``other <op> self`` for a binary public function: the operands swapped.  An op whose
    function is generated gets the dispatcher call itself (no extra Python frame)."""
    op, fn = api.op, api.function
    if api.generated:
        def reflected(self, other):
            return apply(op, (other, self), None)
    else:
        def reflected(self, other):
            return fn(other, self)
    reflected.__name__ = reflected.__qualname__ = f"r{api.name}"
    return reflected


def operator_ops() -> dict[str, OpDef]:
    """The op of each Python operator that an op's function serves directly (``"__add__"`` ->
    the op ``add``): the eager Tensor's compiled operators call the dispatcher with it."""
    return {attr: api.op for api in API.values() if api.op is not None
            for attr in api.operators}
