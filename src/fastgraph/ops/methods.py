"""Operators and method forms shared by the eager ``Tensor`` and the graph ``Node``.

Both kinds answer ``x + y``, ``x @ w``, ``x.sum(axis=0)``, ``x.exp()``... with the same fastgraph
operation, so the list lives here once.  (``Tensor`` also has the hottest operators compiled in
its base class; those come first in its method resolution order.)
"""
from __future__ import annotations

from .. import ops as F
from .._core import REGISTRY, apply

__all__ = ["OpMethods"]

_ADD, _SUB, _MUL, _DIV, _NEG = (REGISTRY[n] for n in
                                ("add", "subtract", "multiply", "divide", "negative"))


class OpMethods:
    """Mixin: Python operators and NumPy-named method forms of the fastgraph operations."""

    __slots__ = ()


    def __add__(self, other): return apply(_ADD, (self, other), None)
    def __radd__(self, other): return apply(_ADD, (other, self), None)
    def __sub__(self, other): return apply(_SUB, (self, other), None)
    def __rsub__(self, other): return apply(_SUB, (other, self), None)
    def __mul__(self, other): return apply(_MUL, (self, other), None)
    def __rmul__(self, other): return apply(_MUL, (other, self), None)
    def __truediv__(self, other): return apply(_DIV, (self, other), None)
    def __rtruediv__(self, other): return apply(_DIV, (other, self), None)
    def __floordiv__(self, other): return F.floor_divide(self, other)
    def __rfloordiv__(self, other): return F.floor_divide(other, self)
    def __mod__(self, other): return F.remainder(self, other)
    def __rmod__(self, other): return F.remainder(other, self)
    def __pow__(self, other): return F.power(self, other)
    def __rpow__(self, other): return F.power(other, self)
    def __matmul__(self, other): return F.matmul(self, other)
    def __rmatmul__(self, other): return F.matmul(other, self)
    def __neg__(self): return apply(_NEG, (self,), None)
    def __pos__(self): return self
    def __abs__(self): return F.abs(self)
    def __lt__(self, other): return F.less(self, other)
    def __le__(self, other): return F.less_equal(self, other)
    def __gt__(self, other): return F.greater(self, other)
    def __ge__(self, other): return F.greater_equal(self, other)
    def __eq__(self, other): return F.equal(self, other)  # type: ignore[override]
    def __ne__(self, other): return F.not_equal(self, other)  # type: ignore[override]
    def __and__(self, other): return F.logical_and(self, other)
    def __or__(self, other): return F.logical_or(self, other)
    def __invert__(self): return F.logical_not(self)
    def __getitem__(self, index): return F.getitem(self, index)

    def sum(self, axis=None, keepdims=False): return F.sum(self, axis, keepdims)
    def mean(self, axis=None, keepdims=False): return F.mean(self, axis, keepdims)
    def prod(self, axis=None, keepdims=False): return F.prod(self, axis, keepdims)
    def max(self, axis=None, keepdims=False): return F.max(self, axis, keepdims)
    def min(self, axis=None, keepdims=False): return F.min(self, axis, keepdims)
    def var(self, axis=None, keepdims=False, ddof=0): return F.var(self, axis, keepdims, ddof)
    def std(self, axis=None, keepdims=False, ddof=0): return F.std(self, axis, keepdims, ddof)
    def logsumexp(self, axis=None, keepdims=False): return F.logsumexp(self, axis, keepdims)
    def cumsum(self, axis=None): return F.cumsum(self, axis)
    def repeat(self, repeats, axis=None): return F.repeat(self, repeats, axis)
    def diagonal(self, offset=0, axis1=0, axis2=1): return F.diagonal(self, offset, axis1, axis2)
    def trace(self, offset=0, axis1=0, axis2=1): return F.trace(self, offset, axis1, axis2)
    def reshape(self, *shape): return F.reshape(self, *shape)
    def swapaxes(self, a, b): return F.swapaxes(self, a, b)
    def squeeze(self, axis=None): return F.squeeze(self, axis)
    def expand_dims(self, axis): return F.expand_dims(self, axis)
    def ravel(self): return F.ravel(self)
    def flatten(self): return F.copy(F.ravel(self))  # NumPy's flatten copies; ravel may view
    def copy(self): return F.copy(self)
    def clone(self): return F.copy(self)  # PyTorch's name (the gradient passes through)
    def clip(self, a_min=None, a_max=None): return F.clip(self, a_min, a_max)
    def dot(self, other): return F.dot(self, other)
    def exp(self): return F.exp(self)
    def expm1(self): return F.expm1(self)
    def log(self): return F.log(self)
    def log1p(self): return F.log1p(self)
    def sqrt(self): return F.sqrt(self)
    def square(self): return F.square(self)
    def reciprocal(self): return F.reciprocal(self)
    def sin(self): return F.sin(self)
    def cos(self): return F.cos(self)
    def tan(self): return F.tan(self)
    def tanh(self): return F.tanh(self)
    def sinh(self): return F.sinh(self)
    def cosh(self): return F.cosh(self)
    def arctan(self): return F.arctan(self)
    def sigmoid(self): return F.sigmoid(self)
    def relu(self): return F.relu(self)
    def softplus(self): return F.softplus(self)
    def abs(self): return F.abs(self)
    def sign(self): return F.sign(self)
    def floor(self): return F.floor(self)
    def ceil(self): return F.ceil(self)
    def round(self, decimals=0): return F.round(self, decimals)
    def __round__(self, ndigits=None): return F.round(self, 0 if ndigits is None else ndigits)
    def softmax(self, axis=-1): return F.softmax(self, axis)
    def log_softmax(self, axis=-1): return F.log_softmax(self, axis)
    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return F.transpose(self, axes or None)

    def astype(self, dtype): return F.astype(self, dtype)

    @property
    def T(self): return F.transpose(self)
