"""``Parameter``: an eager Tensor a ``Module`` registers as one of its parameters."""
from __future__ import annotations

import numpy as np

from ...eager.tensor import Tensor
from .._tensor import Tensor as _TorchTensor

__all__ = ["Parameter", "Buffer", "as_array"]


def as_array(value) -> np.ndarray:
    """A tensor-like value as an ndarray: a fastgraph Tensor's data, a PyTorch tensor's values
    (so ``load_state_dict(torch_model.state_dict())`` works), or ``np.asarray``."""
    if isinstance(value, Tensor):
        return value._ndarray
    detach = getattr(value, "detach", None)
    if detach is not None and hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        return detach().cpu().numpy()
    return np.asarray(value)


class Parameter(_TorchTensor):
    """A Tensor that is a module's parameter: assigning one to a ``Module`` attribute registers
    it, so ``parameters()``, ``state_dict()`` and the optimizers find it.  It requires grad
    unless told otherwise (PyTorch's ``torch.nn.Parameter``).

        >>> p = Parameter(np.zeros(3, np.float32)); p.requires_grad
        True
    """

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = np.empty(0, np.float32)
        arr = np.asarray(as_array(data))
        if type(arr) is not np.ndarray:
            arr = np.asarray(arr)
        super().__init__(arr, requires_grad=bool(requires_grad) and arr.dtype.kind in "fc")

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class Buffer(_TorchTensor):
    """A Tensor that is a module's buffer (state that is not trained: BatchNorm's running
    statistics); assigning one to a ``Module`` attribute registers it (``torch.nn.Buffer``).

        >>> b = Buffer(np.zeros(3, np.float32)); b.requires_grad
        False
    """

    __slots__ = ("persistent",)

    def __init__(self, data=None, persistent: bool = True):
        arr = np.asarray(as_array(data if data is not None else np.empty(0, np.float32)))
        super().__init__(arr, requires_grad=False)
        self.persistent = bool(persistent)
