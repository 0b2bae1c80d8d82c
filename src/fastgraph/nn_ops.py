"""Deep-learning functions with PyTorch's names and semantics (``torch.nn.functional``): NCHW
convolutions and their transposes, pooling, normalisation, dropout, embeddings, padding,
activations and losses, every one differentiable in eager, static and ``fg.function`` code.
The PyTorch front-end's ``nn.functional`` is built on them.

    >>> import fastgraph as fg, fastgraph.nn_ops as F
    >>> x = fg.randn(2, 3, 8, 8); w = fg.randn(4, 3, 3, 3, requires_grad=True)
    >>> F.max_pool2d(F.conv2d(x, w, padding=1), 2).shape
    (2, 4, 4, 4)

Generated from the op registry (the declarations that export to ``"nn_ops"``).
"""
from . import ops as _ops

globals().update(_ops.namespace("nn_ops"))

__all__ = sorted(_ops.namespace("nn_ops"))
