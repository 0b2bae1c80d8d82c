"""Gradient recording switch: ``no_grad``, ``enable_grad``, ``set_grad_enabled``,
``is_grad_enabled`` (PyTorch semantics: the mode is per thread)."""
from __future__ import annotations

import functools
import threading

from .tape import is_grad_enabled as _is_enabled, set_grad_enabled as _set_enabled

__all__ = ["no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled"]


class _State(threading.local):
    transform_depth = 0  # how many fg.grad-style transforms are evaluating their function
    transformed = None   # the name of the innermost one's function, for error messages

    # The switch itself is a C thread-local of the compiled recorder, which reads it on every
    # operation; every new thread starts with recording on.
    @property
    def enabled(self) -> bool:
        return _is_enabled()

    @enabled.setter
    def enabled(self, mode: bool) -> None:
        _set_enabled(bool(mode))


_state = _State()


def is_grad_enabled() -> bool:
    """Whether eager operations are being recorded (in this thread) for ``backward()``."""
    return _state.enabled


class _GradMode:
    """Context manager and decorator (with or without parentheses) that sets the mode."""

    _mode = True

    def __init__(self, fn=None) -> None:
        self._prev: list[bool] = []
        self._fn = fn
        if fn is not None:
            functools.update_wrapper(self, fn)

    def __enter__(self):
        self._prev.append(_state.enabled)
        _state.enabled = self._mode
        return self

    def __exit__(self, *exc) -> None:
        _state.enabled = self._prev.pop()

    def __call__(self, *args, **kwargs):
        if self._fn is not None:  # used as @no_grad
            with self.__class__():
                return self._fn(*args, **kwargs)
        (fn,) = args  # used as @no_grad()

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            with self.__class__():
                return fn(*a, **kw)
        return wrapper


class no_grad(_GradMode):
    """Stop recording (context manager or decorator).

        >>> with fg.no_grad():
        ...     y = x * 2          # y.requires_grad is False
    """
    _mode = False


class enable_grad(_GradMode):
    """Re-enable recording inside ``no_grad`` (context manager or decorator)."""
    _mode = True


class set_grad_enabled:
    """Set the mode now; used as a context manager, restore the previous mode on exit.

        >>> with fg.set_grad_enabled(False):
        ...     y = x * 2
    """

    def __init__(self, mode: bool) -> None:
        self._prev = _state.enabled
        _state.enabled = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        _state.enabled = self._prev
