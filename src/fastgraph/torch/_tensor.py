"""``fastgraph.torch.Tensor``: fastgraph's eager Tensor with PyTorch's face.

Every method means what PyTorch's does (``x.max(1)`` is ``(values, indices)``, ``x.std()`` is
unbiased, ``x.repeat(2, 3)`` tiles; see :class:`fastgraph.ops.torch_methods.TorchFace`).  The
factories of ``fastgraph.torch`` make these tensors, and an operation with one among its inputs
returns one (the eager recorder gives results their inputs' face), so a PyTorch program's values
keep the face from the first ``torch.tensor`` to the last ``.grad``.  Tensors of the top-level
``fastgraph`` keep NumPy's meanings.

    >>> import fastgraph.torch as torch
    >>> x = torch.tensor([[1.0, 5.0], [4.0, 2.0]])
    >>> isinstance(x * 2, torch.Tensor), (x * 2).max(1).values
    (True, tensor([10.,  8.]))
"""
from __future__ import annotations

import builtins

import numpy as np

from ..eager import tape as _tape
from ..eager.tensor import Tensor as _FgTensor
from ..ops.torch_methods import TorchFace
from ..static.node import Node as _Node
from ..static.node import register_torch_face
from ..static.variables import Variable as _Variable

__all__ = ["Tensor", "leaf", "with_torch_face"]


class _TensorType(type):
    """``torch.Tensor(...)`` is PyTorch's legacy constructor: ``torch.Tensor(data)`` (the
    default float dtype) or ``torch.Tensor(*size)`` (zeros); subclasses (``nn.Parameter``) are
    constructed as usual."""

    def __call__(cls, *args, **kwargs):
        if cls is not Tensor:
            return super().__call__(*args, **kwargs)
        from . import _functions
        if kwargs:
            raise TypeError(f"Tensor(): unexpected keyword argument {next(iter(kwargs))!r}")
        if len(args) == 1 and not isinstance(args[0], (builtins.int, np.integer)):
            return _functions.tensor(args[0], dtype=_functions.get_default_dtype())
        return _functions.zeros(*args)


class Tensor(TorchFace, _FgTensor, metaclass=_TensorType):
    """PyTorch's ``torch.Tensor``: a fastgraph Tensor whose methods mean what PyTorch's mean.

        >>> torch.Tensor([-4.0]).double().dtype
        dtype('float64')
        >>> torch.Tensor(2, 3).shape
        (2, 3)
    """

    __slots__ = ()

    @property
    def data(self) -> "Tensor":
        """PyTorch's ``t.data``: a Tensor sharing this one's memory, detached (a leaf that does
        not require grad, even when ``t`` is a parameter), so in-place methods through it
        change ``t`` (``p.data.add_(-lr * p.grad.data)``, ``p.data.zero_()``) and its methods
        are PyTorch's (``t.data.max(1)`` is ``(values, indices)``).  As with ``detach()``, it
        shares ``t``'s version counter: a change through it to a value saved for a backward
        pass still to come makes that pass raise (PyTorch would use the new values silently).
        ``t.data = other`` replaces the value (any shape and dtype, a floating one where ``t``
        requires grad), sharing ``other``'s memory.

            >>> p = torch.nn.Parameter(torch.ones(2))
            >>> _ = p.data.mul_(3); p.tolist()
            [3.0, 3.0]
        """
        t = type.__call__(Tensor, self._ndarray, False)
        self._share_version(t)
        return t

    @data.setter
    def data(self, value) -> None:
        dtype = value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype
        if self._requires_grad and np.dtype(dtype).kind not in "fc":
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        self._set_data(value)


Tensor._face = Tensor          # what detach(), .grad and new leaves of these tensors are
_tape.set_torch_face(Tensor)


def leaf(arr, requires_grad=False) -> Tensor:
    """A new leaf of PyTorch's face holding the ndarray ``arr`` (not copied)."""
    return type.__call__(Tensor, arr, builtins.bool(requires_grad))


def with_torch_face(value):
    """``value`` with every fastgraph Tensor of NumPy's face in it (nested in dicts, lists and
    tuples) given PyTorch's face, in place: for tensors just made (a checkpoint just read)."""
    if type(value) is _FgTensor:
        value.__class__ = Tensor
    elif isinstance(value, dict):
        for v in value.values():
            with_torch_face(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            with_torch_face(v)
    return value


# ---- graph values of PyTorch's face: what fg.function traces from these tensors -------------------
class Node(TorchFace, _Node):
    """A graph value of PyTorch's face: traced by ``fg.function`` from a PyTorch-faced argument,
    a module's parameter, or computed from one, so a module's forward means the same traced as
    eager."""

    __slots__ = ()


class Variable(TorchFace, _Variable):
    """A graph Variable of PyTorch's face (a module's parameter or buffer, captured)."""

    __slots__ = ()


register_torch_face(Tensor, {_Node: Node, _Variable: Variable})
