"""``torch.compile``: ``fg.function``'s compiled plans for the calls that take no gradient.

    >>> model = torch.nn.Linear(4, 2)
    >>> fast = torch.compile(model)
    >>> with torch.no_grad():
    ...     y = fast(torch.randn(3, 4))      # traced once per input signature, then the plan
"""
from __future__ import annotations

from ..bridge.function import Function
from ..eager.grad_mode import is_grad_enabled

__all__ = ["compile", "OptimizedModule"]

_BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs")


class OptimizedModule:
    """What :func:`compile` returns: calls it like the function or module it wraps; every other
    attribute (``parameters()``, ``eval()``, ``state_dict()``, ``weight``) is the wrapped
    object's own (``_orig_mod``; PyTorch's prefixes ``_orig_mod.`` to state-dict keys, this one
    does not)."""

    def __init__(self, fn):
        self.__dict__["_orig_mod"] = fn
        self.__dict__["_fg_function"] = Function(fn)

    def __call__(self, *args, **kwargs):
        fn = self._orig_mod
        if is_grad_enabled() and _may_take_gradient(fn):
            return fn(*args, **kwargs)   # the tape records it: gradients reach the parameters
        return self._fg_function(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.__dict__["_orig_mod"], name)

    def __setattr__(self, name, value):
        setattr(self._orig_mod, name, value)

    def __repr__(self) -> str:
        return f"OptimizedModule({self._orig_mod!r})"


def _may_take_gradient(fn) -> bool:
    """Whether a call of ``fn`` with grad mode on may need the tape: a module (or a module's
    bound method) with a parameter that requires grad, or any other function (what modules it
    calls is not known before it runs).  Arguments that require grad make ``fg.function`` run
    the call eagerly itself."""
    from .nn.module import Module
    owner = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
    if isinstance(owner, Module):
        return any(p.requires_grad for p in owner.parameters())
    return True


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",
            mode=None, options=None, disable: bool = False):
    """PyTorch's ``torch.compile(model)`` for a function or a module (also as ``@torch.compile``
    and ``@torch.compile(...)``): a call that takes no gradient (under ``torch.no_grad()``, or
    a module none of whose parameters requires grad) runs ``fg.function``'s compiled plan,
    traced once per argument signature; a call that may take one runs eagerly, so
    ``loss.backward()`` after it is exactly the eager one.  ``fullgraph``, ``dynamic``,
    ``mode`` and ``options`` are accepted and change nothing; ``disable=True`` returns
    ``model`` itself.  A compiled training step is written with ``fg.function``
    (``fg.gradients`` and ``fg.assign`` in the traced step)."""
    if callable(backend) or backend not in _BACKENDS:
        raise TypeError(f"compile(): backend {backend!r} is not supported: fastgraph compiles "
                        f"with fg.function (backend names accepted: {', '.join(_BACKENDS)})")
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                  mode=mode, options=options, disable=disable)
    if not callable(model):
        raise TypeError(f"compile(): expected a function or a Module, not "
                        f"{type(model).__name__}")
    if disable:
        return model
    return OptimizedModule(model)
