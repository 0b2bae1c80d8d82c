"""``fg.errors``: TensorFlow-named errors of static mode (see :mod:`fastgraph.static.errors`)."""
from .static.errors import (FailedPreconditionError, InvalidArgumentError, NotFoundError,
                            OpError)

__all__ = ["OpError", "FailedPreconditionError", "InvalidArgumentError", "NotFoundError"]
