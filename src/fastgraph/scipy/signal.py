"""``fastgraph.scipy.signal``: ``convolve`` with gradients in both inputs (SciPy's
``convolve(in1, in2, mode)`` and HIPS autograd's ``axes=``/``dot_axes=`` form), from the
declaration that exports it here (``ops/signal.py``).

    >>> import fastgraph.scipy.signal as sig
    >>> sig.convolve(fg.tensor([1.0, 2.0, 3.0], requires_grad=True), [0.0, 1.0, 0.5])  # doctest: +SKIP

Any other name is SciPy's own (not differentiable).
"""
from .._core import namespace as _namespace
from .. import ops as _ops  # noqa: F401  (the declarations)

globals().update(_namespace("scipy.signal"))
__all__ = sorted(_namespace("scipy.signal"))


def __getattr__(name: str):
    import scipy.signal
    return getattr(scipy.signal, name)
