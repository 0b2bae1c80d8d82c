"""TensorFlow-named errors raised by :class:`~fastgraph.static.session.Session` (``fg.errors``)."""
from __future__ import annotations

__all__ = ["OpError", "FailedPreconditionError", "InvalidArgumentError", "NotFoundError"]


class OpError(RuntimeError):
    """Base class of the errors a ``Session.run`` raises; ``node`` is the node at fault."""

    def __init__(self, message: str, node=None):
        super().__init__(message)
        self.message = message
        self.node = node


class FailedPreconditionError(OpError):
    """The run needs state that is not there yet (an uninitialised variable)."""


class InvalidArgumentError(OpError, ValueError):
    """A missing feed, or a feed of the wrong shape or dtype."""


class NotFoundError(OpError):
    """Something a run or a restore looks for is not there (a variable missing from a
    checkpoint)."""
