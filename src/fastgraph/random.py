"""``fg.random``: the seedable generator behind ``fg.rand`` and ``fg.randn``."""
from .eager.factories import rand, randn, seed

__all__ = ["seed", "rand", "randn"]
