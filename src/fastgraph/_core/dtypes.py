"""TensorFlow's dtype names, read the way TensorFlow reads them.

``TF_DTYPES`` maps each of TensorFlow's dtype names to its NumPy type: these are the names
``fastgraph`` and ``fastgraph.compat.v1`` export (``fg.int16``, ``fg.string``).  A string is
NumPy's ``bytes_`` (``dtype('S')``), as TensorFlow's strings are bytes: a string constant is
fetched as ``b'...'``.  :func:`as_dtype` reads a dtype as TensorFlow's constructors do:
TensorFlow's names first (``"float"`` is float32, where NumPy reads float64), then NumPy's.

    >>> as_dtype("float"), as_dtype(TF_DTYPES["string"])
    (dtype('float32'), dtype('S'))
"""
from __future__ import annotations

import numpy as np

__all__ = ["TF_DTYPES", "TF_DTYPE_STRINGS", "as_dtype", "STRING"]

#: the name of each dtype TensorFlow 1 programs use, and its NumPy type
TF_DTYPES = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float16": np.float16, "half": np.float16, "float32": np.float32, "float64": np.float64,
    "double": np.float64, "bool": np.bool_, "string": np.bytes_, "complex64": np.complex64,
    "complex128": np.complex128,
}

STRING = np.dtype(np.bytes_)

#: dtype strings TensorFlow reads otherwise than NumPy does (``np.dtype("float")`` is float64)
TF_DTYPE_STRINGS = {"float": np.dtype(np.float32), "half": np.dtype(np.float16),
                    "string": STRING, "double": np.dtype(np.float64),
                    "complex": np.dtype(np.complex128)}


def as_dtype(dtype) -> np.dtype:
    """``dtype`` as a NumPy dtype, TensorFlow's string names first; ``TypeError`` naming it
    when NumPy does not know it either."""
    if isinstance(dtype, str):
        dt = TF_DTYPE_STRINGS.get(dtype)
        if dt is not None:
            return dt
    if dtype is str or dtype is bytes:
        return STRING
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"unsupported dtype {dtype!r}: {e}") from None
