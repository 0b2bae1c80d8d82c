"""``torch.autograd``: ``grad``, ``backward`` and custom gradients with ``Function``
(``ctx.save_for_backward``, ``ctx.saved_tensors``, ``.apply``), fastgraph's own.

    >>> x = torch.tensor(3.0, requires_grad=True)
    >>> torch.autograd.grad(x ** 2, x)
    (tensor(6., dtype=float32),)
"""
from __future__ import annotations

from ..autograd import Function, FunctionCtx, backward, grad
from ..eager.grad_mode import enable_grad, no_grad, set_grad_enabled

__all__ = ["Function", "FunctionCtx", "backward", "grad", "no_grad", "enable_grad",
           "set_grad_enabled", "Variable"]


def Variable(data, requires_grad=False, volatile=False):
    """PyTorch's deprecated ``Variable(t)``: the Tensor itself (a leaf when asked)."""
    if requires_grad:
        return data.detach().requires_grad_(True)
    return data
