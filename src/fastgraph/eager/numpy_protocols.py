"""NumPy's dispatch protocols for ``Tensor``: ``np.exp(t)``, ``np.sum(t, axis=0)``, ``a @ t``...

A NumPy ufunc or function with a fastgraph op of the same meaning is routed to that op (so it is
recorded exactly like ``fg.exp``); anything else runs on the plain arrays and returns NumPy values
-- unless a Tensor that requires grad is among the arguments (grad mode on) and the result holds
floating values: that result would silently carry no gradient, so it raises instead, as PyTorch
does for ``out=`` calls and NumPy conversions of such tensors.  Integer and boolean results
(``np.argmax``, ``np.allclose``, ``np.isnan``, ``np.shape``) come back as before.
"""
from __future__ import annotations

import inspect

import numpy as np

from .. import ops as F  # noqa: F401  (every declaration made before the tables are read)
from .._core import numpy_routes
from .tensor import Tensor
from .._core.tree import find_leaf, map_structure
from . import grad_mode as _gm

#: NumPy's ufuncs by name and functions -> the fastgraph function each routes to, generated from
#: the declarations (their ``numpy`` routing)
UFUNCS, FUNCTIONS = numpy_routes()


def _data(v):
    return v._ndarray if isinstance(v, Tensor) else v


def _unwrap(x):
    """``x`` with every Tensor (also inside lists, tuples and dicts) as its data."""
    return map_structure(_data, x)


def _requires_grad(v) -> bool:
    return isinstance(v, Tensor) and v._requires_grad


def _floating(value, depth: int = 0) -> bool:
    """Whether a NumPy result holds floating (or complex) values: what a gradient would flow to."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind in "fc"
    if isinstance(value, (float, complex)):
        return True
    if isinstance(value, (list, tuple)) and depth < 32:
        return any(_floating(v, depth + 1) for v in value)
    return False


def _numpy_name(func) -> str:
    """``np.linalg.norm`` for NumPy's norm: the name a user calls it by."""
    module = getattr(func, "__module__", None) or "numpy"
    if module.startswith("numpy"):
        module = "np" + module[len("numpy"):].replace("._core", "").replace(".core", "")
    return f"{module}.{getattr(func, '__name__', func)}"


def _lost_gradient(name: str, holder: Tensor, why: str) -> TypeError:
    return TypeError(
        f"{name}: {why}, so its result would carry no gradient of its input "
        f"(a Tensor of shape {holder.shape} and dtype {holder.dtype} that requires grad). "
        f"Use a fastgraph operation, or call it on .detach() values (or inside fg.no_grad()) to "
        f"get plain NumPy values")


# NumPy functions whose result does not depend on the input's values (only its shape and
# dtype): nothing to lose, so they run on Tensors that require grad too
_VALUE_FREE = frozenset({"np.zeros_like", "np.ones_like", "np.empty_like", "np.full_like"})


def _check_no_lost_gradient(name, args, kwargs, out, result=None, before=False, why=None):
    """Raise where a plain-NumPy fallback would drop the gradient of a Tensor argument: before
    writing into ``out=`` arrays of a floating dtype (nothing is left half-written), and after
    computing a floating result (``why()``: why no fastgraph operation took the call)."""
    if not _gm._state.enabled:
        return
    if name in _VALUE_FREE:  # only full_like's fill value can carry one
        if name != "np.full_like":
            return
        args = args[1:]
    holder = find_leaf(_requires_grad, args)
    if holder is None and kwargs:
        holder = find_leaf(_requires_grad, kwargs)
    if holder is None:
        return
    if before:
        if out is not None and _floating(tuple(_unwrap(o) for o in out if o is not None)):
            raise _lost_gradient(name, holder, "out= arguments do not support automatic "
                                 "differentiation")
    elif _floating(result):
        why = why() if why is not None else None
        raise _lost_gradient(name, holder, why or "no differentiable fastgraph operation takes "
                             "this call")


def array_ufunc(ufunc, method, inputs, kwargs):
    fn = UFUNCS.get(ufunc.__name__)
    if fn is not None and method == "__call__" and not kwargs:
        return fn(*inputs)
    # not differentiable here (out=, reduce, accumulate, at...): compute on plain arrays; a
    # Tensor written in place (out=, or the first operand of ufunc.at) is checked first and its
    # version bumped after, so a tape that saved it refuses to use the new values
    written = []
    out = kwargs.get("out")
    name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    if out is not None:
        kwargs = dict(kwargs, out=tuple(_unwrap(o) for o in out))
        for o in out:
            if isinstance(o, Tensor):
                o._check_inplace(f"np.{ufunc.__name__}(out=...)")
                written.append(o)
    if method == "at" and inputs and isinstance(inputs[0], Tensor):
        inputs[0]._check_inplace(f"np.{ufunc.__name__}.at")
        written.append(inputs[0])
    if out is not None or method == "at":  # (before anything is written)
        _check_no_lost_gradient(name, inputs, None, out if out is not None else inputs[:1],
                                before=True)
    if not written:
        result = getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
        if out is None and method != "at":
            _check_no_lost_gradient(name, inputs, None, None, result,
                                    why=lambda: _ufunc_refusal(fn, method, kwargs))
        return result
    try:
        result = getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
    except FloatingPointError:  # (np.errstate 'raise': reported after writing)
        for o in written:
            o._bump_version()
        raise
    for o in written:
        o._bump_version()
    if out is not None:  # NumPy returns the out arrays: hand back the Tensors given (and
        # NumPy's own result where an output slot was None: np.divmod(a, b, out=(t, None)))
        if not isinstance(result, tuple):
            return out[0] if out[0] is not None else result
        return tuple(o if o is not None else r for o, r in zip(out, result))
    return result


def _ufunc_refusal(fn, method, kwargs) -> str | None:
    """Why a NumPy ufunc call ran as plain NumPy: the keyword or method fastgraph lacks."""
    if fn is None:
        return None
    if method != "__call__":
        return f"fastgraph's {fn.__name__} has no differentiable .{method} form"
    return f"fastgraph's {fn.__name__} takes none of NumPy's keyword arguments (" + \
        ", ".join(f"{k}=" for k in kwargs) + ")"


# NumPy's keyword names that fastgraph spells differently (NumPy 2.1's ``np.clip(a, min=, max=)``
# aliases; ``np.reshape``'s ``newshape=`` before 2.1's ``shape=``).  The first parameter (NumPy's
# ``a``, ``array``, ``ary``..., fastgraph's ``x``) and positional-only ones pair by position, every
# other parameter by its name.  A NumPy parameter with no fastgraph counterpart (``dtype``,
# ``out``, ``order``, ``initial``...) makes the call run as plain NumPy.
_NO_VALUE = getattr(np, "_NoValue", object())   # NumPy's default for "not given"
_RENAMED = {"min": "a_min", "max": "a_max", "newshape": "shape"}
_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
_ANY_NUMBER = 1 << 30


def _where(condition, x=None, y=None, /): ...
def _concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"): ...
def _dot(a, b, out=None): ...
def _inner(a, b, /): ...
def _vdot(a, b, /): ...


# C functions whose signature NumPy reports only from 2.4 on, as 2.4 reports it (earlier releases
# take the same arguments, but ``inspect.signature`` finds none for them).
_C_SIGNATURES = {f.__name__[1:]: inspect.signature(f) for f in (_where, _concatenate, _dot,
                                                                _inner, _vdot)}


def _numpy_signature(func):
    """``inspect.signature`` of a NumPy function, or None where neither it nor the table knows one."""
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        if getattr(func, "__module__", None) == "numpy":
            return _C_SIGNATURES.get(func.__name__)
        return None


class _Plan:
    """How a NumPy function's arguments become its fastgraph function's (one per pair)."""
    __slots__ = ("np_sig", "np_kinds", "np_defaults", "fg_sig", "fg_params", "target", "n_fast", "n_required",
                 "direct", "renamed", "rename_targets")

    def __init__(self, func, fn):
        self.fg_sig = inspect.signature(fn)
        self.fg_params = list(self.fg_sig.parameters.values())
        self.n_required = sum(1 for p in self.fg_params
                              if p.kind in _POSITIONAL and p.default is _P.empty)
        self.np_sig = _numpy_signature(func)
        if self.np_sig is None:  # no signature known: fastgraph's names only, as given
            self.n_fast, self.direct = 0, {}
            return
        np_params = list(self.np_sig.parameters.values())
        self.np_kinds = {p.name: p.kind for p in np_params}
        self.np_defaults = {p.name: p.default for p in np_params if p.default is not _P.empty}
        fg_by_name = {p.name: p for p in self.fg_params if p.kind is not _P.VAR_KEYWORD}
        self.target = {}  # NumPy's name -> fastgraph's Parameter
        for i, p in enumerate(np_params):
            if p.kind is _P.VAR_POSITIONAL and i < len(self.fg_params) and \
                    self.fg_params[i].kind is _P.VAR_POSITIONAL:
                self.target[p.name] = self.fg_params[i]   # np.einsum(*operands): the same
                continue
            if p.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD):
                continue
            if i == 0 or p.kind is _P.POSITIONAL_ONLY:
                if i < len(self.fg_params) and self.fg_params[i].kind in _POSITIONAL:
                    self.target[p.name] = self.fg_params[i]
                continue
            q = fg_by_name.get(_RENAMED.get(p.name, p.name))
            if q is not None and (q.kind is not _P.POSITIONAL_ONLY):
                self.target[p.name] = q
        self.renamed = frozenset(n for n in self.target if n in _RENAMED)
        self.rename_targets = frozenset(n for n in self.np_kinds if n in _RENAMED.values()
                                        ) if self.renamed else frozenset()
        # positional arguments NumPy and fastgraph read alike: passed on untouched
        self.n_fast = 0
        for i, p in enumerate(np_params):
            q = self.fg_params[i] if i < len(self.fg_params) else None
            if p.kind is _P.VAR_POSITIONAL:  # np.einsum(*operands): fastgraph's must take any
                rest = self.fg_params[i:]
                star = next((k for k, r in enumerate(rest) if r.kind is _P.VAR_POSITIONAL), None)
                if star is not None and all(r.kind in _POSITIONAL for r in rest[:star]):
                    self.n_fast = _ANY_NUMBER
                break
            if q is None or p.kind not in _POSITIONAL or self.target.get(p.name) is not q \
                    or q.kind is _P.KEYWORD_ONLY:
                break
            self.n_fast = i + 1
            if q.kind is _P.VAR_POSITIONAL:  # np.reshape(a, shape) -> fg.reshape(x, *shape)
                break
        # keywords both spell alike: NumPy's position (past the untouched positional ones)
        self.direct = {}
        for name, q in self.target.items():
            kind = self.np_kinds[name]
            if name == q.name and kind is not _P.POSITIONAL_ONLY and q.kind in (
                    _P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY):
                self.direct[name] = (list(self.np_kinds).index(name)
                                     if kind is _P.POSITIONAL_OR_KEYWORD else _ANY_NUMBER)

    def translate(self, args, kwargs):
        """fastgraph's ``(args, kwargs)`` for NumPy's, or None where fastgraph has no such form."""
        n = len(args)
        if not kwargs and self.n_required <= n <= self.n_fast:
            return args, kwargs  # the commonest case: positional arguments only
        if kwargs and any(v is _NO_VALUE for v in kwargs.values()):
            # NumPy's "not given" marker (np.sum(t, keepdims=np._NoValue)): not given
            kwargs = {k: v for k, v in kwargs.items() if v is not _NO_VALUE}
        if self.n_required <= n <= self.n_fast and all(
                self.direct.get(k, -1) >= n for k in kwargs):
            return args, kwargs  # the common case: nothing to rename
        if self.np_sig is None:
            return _binds(self.fg_sig, args, kwargs)
        try:
            given = self.np_sig.bind(*args, **kwargs).arguments
        except TypeError:
            return None  # not a valid NumPy call either: NumPy reports it
        if self.renamed and not self.renamed.isdisjoint(given) \
                and not self.rename_targets.isdisjoint(given):
            return None  # np.clip(a, a_min=0, max=1): NumPy's to refuse
        values = {}
        for name, value in given.items():
            q = self.target.get(name)
            if q is None:
                if self.np_kinds[name] is _P.VAR_KEYWORD and not value:
                    continue
                if _is_default(self.np_defaults.get(name, _P.empty), value):
                    continue  # NumPy's default spelt out (out=None, order="C"): no change
                return None  # dtype=, out=, order="F", np.einsum's optimize=True...
            if q.name in values:
                return None
            values[q.name] = value
        args, kwargs, gap = [], {}, False
        for q in self.fg_params:
            if q.name not in values:
                gap = gap or q.kind in _POSITIONAL
            elif q.kind is _P.VAR_POSITIONAL:  # NumPy's one value (np.reshape's shape), or
                if gap:                         # NumPy's own *operands (np.einsum's)
                    return None
                if any(self.target.get(n) is q and k is _P.VAR_POSITIONAL
                       for n, k in self.np_kinds.items()):
                    args.extend(values[q.name])
                else:
                    args.append(values[q.name])
            elif q.kind in _POSITIONAL and not gap:
                args.append(values[q.name])
            elif q.kind is _P.POSITIONAL_ONLY:
                return None
            else:
                kwargs[q.name] = values[q.name]
        return _binds(self.fg_sig, args, kwargs)

    def refusal(self, fn, args, kwargs) -> str | None:
        """Why :meth:`translate` refused NumPy's ``(args, kwargs)``: the NumPy argument that
        fastgraph's ``fn`` does not take (``np.sum(t, dtype=...)``), for the error message."""
        if self.np_sig is None:
            return None
        try:
            given = self.np_sig.bind(*args, **kwargs).arguments
        except TypeError:
            return None
        for name, value in given.items():
            if value is _NO_VALUE or name in self.target or (
                    self.np_kinds[name] is _P.VAR_KEYWORD and not value) or \
                    _is_default(self.np_defaults.get(name, _P.empty), value):
                continue
            return f"fastgraph's {fn.__name__} takes no {name}= argument"
        return None


def _is_default(default, value) -> bool:
    """``value`` is NumPy's ``default`` for its parameter (compared only for simple values)."""
    if value is default:
        return True
    return type(default) in (str, bool, int) and type(value) is type(default) \
        and value == default


def _binds(sig, args, kwargs):
    """``(args, kwargs)`` when the signature binds them, else None: a ``TypeError`` raised
    *inside* the op still reaches the user."""
    try:
        sig.bind(*args, **kwargs)
    except TypeError:
        return None
    return args, kwargs


_PLANS: dict = {}


def numpy_call_to_fastgraph(func, fn, args, kwargs):
    """NumPy's ``func(*args, **kwargs)`` as arguments for fastgraph's ``fn``: ``(args, kwargs)``
    in fastgraph's names (``np.sum(a=t)`` -> ``((), {"x": t})``), or None where ``fn`` does not
    take that form (``dtype=``, ``out=``, one-argument ``where``...): plain NumPy's then."""
    plan = _PLANS.get((func, fn))
    if plan is None:
        plan = _PLANS[(func, fn)] = _Plan(func, fn)
    return plan.translate(args, kwargs)


def positional_counts(func, fn) -> tuple[int, int]:
    """The numbers of positional arguments (fewest, most) that ``numpy_call_to_fastgraph(func,
    fn, args, {})`` passes through unchanged: a caller may then call ``fn(*args)`` itself."""
    plan = _PLANS.get((func, fn))
    if plan is None:
        plan = _PLANS[(func, fn)] = _Plan(func, fn)
    return plan.n_required, plan.n_fast


#: NumPy functions that write into their first argument (``np.copyto(dst, src)``, ``np.put``)
_WRITE_INTO_FIRST = frozenset({"copyto", "place", "put", "put_along_axis", "putmask",
                               "fill_diagonal"})


def _write_into_first(func, args, kwargs):
    """``np.put(t, ...)`` and the other in-place writers: a Tensor written to is checked (it may
    not require grad) and its version bumped after; values that require grad written into a
    floating array would lose their gradient, so they are refused before anything is written."""
    name = _numpy_name(func)
    dst = args[0] if args else next(iter(kwargs.values()), None)
    if isinstance(dst, Tensor):
        dst._check_inplace(name)
    rest = (args[1:], kwargs) if args else ((), dict(list(kwargs.items())[1:]))
    if _gm._state.enabled and _floating(_unwrap(dst)):
        holder = find_leaf(_requires_grad, rest)
        if holder is not None:
            raise _lost_gradient(name, holder, "it writes the values into an array in place")
    result = func(*_unwrap(args), **_unwrap_kwargs(kwargs))
    if isinstance(dst, Tensor):
        dst._bump_version()
    return result


def array_function(func, types, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is not None:
        call = numpy_call_to_fastgraph(func, fn, args, kwargs)
        if call is not None:
            return fn(*call[0], **call[1])
    if getattr(func, "__name__", None) in _WRITE_INTO_FIRST and \
            getattr(func, "__module__", "").startswith("numpy"):
        return _write_into_first(func, args, kwargs)
    out = kwargs.get("out")
    if out is not None:
        _check_no_lost_gradient(_numpy_name(func), args, kwargs,
                                out if isinstance(out, tuple) else (out,), before=True)
    result = func(*_unwrap(args), **_unwrap_kwargs(kwargs))
    if out is None:
        _check_no_lost_gradient(_numpy_name(func), args, kwargs, None, result,
                                why=None if fn is None else lambda: _PLANS[(func, fn)].refusal(
                                    fn, args, kwargs))
    return result


def _unwrap_kwargs(kwargs):
    return {k: _unwrap(v) for k, v in kwargs.items()}
