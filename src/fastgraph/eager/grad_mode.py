"""Gradient recording switch: ``no_grad``, ``enable_grad``, ``is_grad_enabled`` (PyTorch semantics)."""
from __future__ import annotations

import functools

__all__ = ["no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled"]

# A module global, read on every recorded op: cheaper than a thread-local.
_enabled = True


def is_grad_enabled() -> bool:
    """Whether eager operations are being recorded for ``backward()``."""
    return _enabled


def set_grad_enabled(mode: bool) -> None:
    global _enabled
    _enabled = bool(mode)


class _GradMode:
    _mode = True

    def __init__(self) -> None:
        self._prev: list[bool] = []

    def __enter__(self):
        global _enabled
        self._prev.append(_enabled)
        _enabled = self._mode
        return self

    def __exit__(self, *exc) -> None:
        global _enabled
        _enabled = self._prev.pop()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Context manager (or decorator) that stops recording.

        >>> with fg.no_grad():
        ...     y = x * 2          # y.requires_grad is False
    """
    _mode = False


class enable_grad(_GradMode):
    """Context manager (or decorator) that re-enables recording inside ``no_grad``."""
    _mode = True
