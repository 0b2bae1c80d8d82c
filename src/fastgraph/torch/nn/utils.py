"""``nn.utils``: ``clip_grad_norm_``, ``clip_grad_value_``, ``parameters_to_vector``,
``vector_to_parameters`` (PyTorch's ``torch.nn.utils``)."""
from __future__ import annotations

import math

import numpy as np

from ...eager.tensor import Tensor
from .._tensor import leaf

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]


def _list(parameters) -> list:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Scale the gradients so that their joint ``norm_type`` norm is at most ``max_norm``;
    returns the norm before clipping."""
    grads = [p.grad._ndarray for p in _list(parameters) if p.grad is not None]
    if not grads:
        return leaf(np.array(0.0, np.float32))
    norm_type = float(norm_type)
    if math.isinf(norm_type):
        total = max(float(np.abs(g).max()) for g in grads)
    else:
        total = float(sum(float((np.abs(g.astype(np.float64)) ** norm_type).sum())
                          for g in grads)) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           f"`parameters` is non-finite, so it cannot be clipped.")
    coef = float(max_norm) / (total + 1e-6)
    if coef < 1:
        for g in grads:
            g *= g.dtype.type(coef)
    return leaf(np.array(total, grads[0].dtype))


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clip every gradient element into ``[-clip_value, clip_value]``."""
    for p in _list(parameters):
        if p.grad is not None:
            np.clip(p.grad._ndarray, -clip_value, clip_value, out=p.grad._ndarray)


def parameters_to_vector(parameters) -> Tensor:
    """Every parameter flattened and concatenated (a copy)."""
    return leaf(np.concatenate([p._ndarray.reshape(-1) for p in _list(parameters)]))


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of ``vec`` into the parameters."""
    v = vec._ndarray if isinstance(vec, Tensor) else np.asarray(vec)
    i = 0
    for p in _list(parameters):
        n = p._ndarray.size
        np.copyto(p._ndarray, v[i:i + n].reshape(p.shape))
        i += n
