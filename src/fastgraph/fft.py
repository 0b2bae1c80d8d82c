"""``fg.fft`` and ``fastgraph.numpy.fft``: NumPy's discrete Fourier transforms, differentiable
(``fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn fftshift ifftshift``
with NumPy's ``n``/``s``, ``axis``/``axes`` and ``norm``), the ops whose declarations export
them here.  NumPy's other ``fft`` functions (``fftfreq``, ``hfft``, ...) are NumPy's own.

    >>> import fastgraph.numpy as np
    >>> x = fg.tensor([1.0, 2.0, 0.5, -1.0], requires_grad=True)
    >>> np.sum(np.abs(np.fft.fft(x)) ** 2).backward()      # Parseval: 4 * sum(x ** 2)
    >>> x.grad
    tensor([ 8., 16.,  4., -8.])
"""
from ._core import namespace as _namespace
from . import ops as _ops  # noqa: F401  (the declarations)

globals().update(_namespace("fft"))
__all__ = sorted(_namespace("fft"))


def __getattr__(name: str):
    import numpy.fft
    return getattr(numpy.fft, name)
