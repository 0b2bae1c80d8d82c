"""All operations, each declared once in the modules below (``_core/registry.py`` says how).

``fastgraph.ops.<name>`` is every declared function, by its name (and the aliases ``fastgraph``
exports), generated from the registry: a new declaration needs no line here.  Each accepts NumPy
values, eager ``Tensor``s or graph ``Node``s and returns the same kind.
"""
from .._core import (API, REGISTRY, ZERO, OpDef, apply, defop, defun, namespace,
                     register_kind, set_pack)
from . import elementwise, reductions, shape, linalg, nn  # noqa: F401  (the declarations)
from . import linalg_decomp, scipy_linalg, special, stats, signal  # noqa: F401
from . import ufuncs, arrays, products, statistics  # noqa: F401
from . import random, tf1  # noqa: F401  (TensorFlow 1's ops)
from . import spectral  # noqa: F401  (np.fft)
from . import convolution, pooling, nn_functional, losses  # noqa: F401
from . import tf1_nn  # noqa: F401  (tf.nn.conv2d and friends over the above)
from . import collectives  # noqa: F401  (fastgraph.distributed's)

globals().update({api.name: api.function for api in API.values()})
globals().update(namespace("fastgraph"))

#: the public vocabulary: the names ``fastgraph`` exports (``fastgraph.numpy`` adds NumPy's
#: aliases); the helpers above stay importable from here
PUBLIC = tuple(namespace("fastgraph"))

# a list holding Tensors or Nodes is one array of the graph, as np.array reads it
set_pack(stack)  # noqa: F821  (declared in .shape)
