"""HIPS autograd's ``autograd.misc`` for fastgraph: :func:`flatten` (``fastgraph.misc.flatten``),
the optimizers (``fastgraph.misc.optimizers``: ``sgd rmsprop adam``) and
``fastgraph.misc.fixed_points.fixed_point``, with autograd's signatures and numbers, so
autograd's programs run with their import lines changed."""
from .flatten import flatten, flatten_func

__all__ = ["flatten", "flatten_func"]
