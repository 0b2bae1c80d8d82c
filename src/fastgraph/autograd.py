"""``fg.autograd``: PyTorch-style functional access to the eager engine, and custom gradients
PyTorch's way (:class:`Function`, one fastgraph operation like any other: eager, static graphs,
``fg.function``, higher order when ``backward`` is written with fastgraph operations)."""
from __future__ import annotations

import numpy as np

from .eager.autograd import backward, grad
from .eager.grad_mode import no_grad
from .eager.tensor import Tensor
from .ops.custom import custom_op

__all__ = ["backward", "grad", "Function", "FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` of :class:`Function`: ``save_for_backward``, ``saved_tensors``,
    ``needs_input_grad``; any other attribute set in ``forward`` is there in ``backward``."""

    def __init__(self, needs_input_grad=()):
        self._saved = ()
        self.needs_input_grad = tuple(needs_input_grad)

    def save_for_backward(self, *tensors) -> None:
        self._saved = tensors

    @property
    def saved_tensors(self) -> tuple:
        return tuple(self._saved)

    def mark_non_differentiable(self, *tensors) -> None:
        """Accepted for PyTorch's code: fastgraph's results carry what ``backward`` gives."""

    def set_materialize_grads(self, value: bool) -> None:
        """Accepted for PyTorch's code: gradients are always arrays."""


def _as_array(v):
    return v._ndarray if isinstance(v, Tensor) else v


class Function:
    """PyTorch's ``torch.autograd.Function``: subclass with ``forward(ctx, *args)`` and
    ``backward(ctx, *grads)`` (static methods) and call ``.apply(*args)``.

    ``forward`` gets Tensors that do not require grad (plain values) and ``backward`` one
    gradient per argument of ``forward`` (None for none).  ``forward`` runs again when the
    gradient is taken, on the values the engine differentiates (so ``ctx.saved_tensors`` hold
    Tensors or graph Nodes that a ``backward`` written with fastgraph operations differentiates
    to higher order); side effects in it happen twice.

        >>> class Exp(fg.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = fg.exp(x)
        ...         ctx.save_for_backward(y)
        ...         return y
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (y,) = ctx.saved_tensors
        ...         return g * y
        >>> Exp.apply(fg.tensor([0.0, 1.0], requires_grad=True)).sum().backward()
    """

    #: the class of the Tensors ``forward`` and ``backward`` get (``fastgraph.torch``'s
    #: ``Function`` gives PyTorch's face)
    _tensor_class = Tensor

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass defines forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("a Function subclass defines backward(ctx, grad)")

    @classmethod
    def _custom_op(cls):
        op = cls.__dict__.get("_fg_custom_op")
        if op is None:
            op = custom_op(cls.__qualname__, cls._plain_forward, cls._backward_rule)
            cls._fg_custom_op = op
        return op

    @classmethod
    def _as_tensor(cls, v):
        # (a 0-d value arrives as a NumPy scalar, as the tape keeps it: a Tensor too)
        if isinstance(v, (np.ndarray, np.generic)):
            return type.__call__(cls._tensor_class, v, False)
        return v

    @classmethod
    def _plain_forward(cls, *args, **kwargs):
        with no_grad():
            out = cls.forward(FunctionCtx(), *map(cls._as_tensor, args), **kwargs)
        return _as_array(out)

    @classmethod
    def _backward_rule(cls, g, ans, args, kwargs, positions):
        ctx = FunctionCtx(tuple(p in positions for p in range(len(args))))
        plain = isinstance(g, np.ndarray)    # a first-order eager backward: arrays in and out
        cls.forward(ctx, *map(cls._as_tensor, args), **kwargs)
        grads = cls.backward(ctx, cls._as_tensor(g))
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) != len(args):
            raise RuntimeError(f"function {cls.__name__}.backward returned an incorrect number "
                               f"of gradients (expected {len(args)}, got {len(grads)})")
        return [_as_array(grads[p]) if plain else grads[p] for p in positions]

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` as one operation whose gradient ``backward`` gives."""
        return cls._custom_op().call(args, kwargs)
