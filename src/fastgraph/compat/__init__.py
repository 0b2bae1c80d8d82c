"""``fg.compat``: ``fg.compat.v1`` is TensorFlow 1's namespace (``tf.compat.v1``)."""
from . import v1

__all__ = ["v1"]
