"""``torch.autograd``: ``grad``, ``backward`` and custom gradients with ``Function``
(``ctx.save_for_backward``, ``ctx.saved_tensors``, ``.apply``), fastgraph's own.

    >>> x = torch.tensor(3.0, requires_grad=True)
    >>> torch.autograd.grad(x ** 2, x)
    (tensor(6., dtype=float32),)
"""
from __future__ import annotations

from .. import autograd as _fg_autograd
from ..autograd import FunctionCtx, backward, grad
from ..eager.grad_mode import enable_grad, no_grad, set_grad_enabled
from ._tensor import Tensor as _Tensor

__all__ = ["Function", "FunctionCtx", "backward", "grad", "no_grad", "enable_grad",
           "set_grad_enabled", "Variable"]


class Function(_fg_autograd.Function):
    """PyTorch's ``torch.autograd.Function`` (see ``fg.autograd.Function``): ``forward`` and
    ``backward`` get Tensors of PyTorch's face, so ``x.max(1)`` in them is ``(values,
    indices)`` as in PyTorch."""

    _tensor_class = _Tensor


def Variable(data, requires_grad=False, volatile=False):
    """PyTorch's deprecated ``Variable(t)``: the Tensor itself (a leaf when asked)."""
    if requires_grad:
        return data.detach().requires_grad_(True)
    return data
