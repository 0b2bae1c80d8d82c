"""fastgraph: automatic differentiation over NumPy, eager (tape) and static (graph) modes.

    >>> import fastgraph as fg
    >>> x = fg.tensor(1.0, requires_grad=True)
    >>> (x * x).backward(); x.grad
    tensor(2.)

Public names only; the contract is docs/guide.md, the layout is described in docs/architecture.md.
"""
from ._version import __version__
from ._core.config import get_num_threads, set_num_threads
from . import utils

# the vocabulary of operations, by the names their declarations export to ``fastgraph`` (one
# registry serves eager, static and the bridge)
from . import ops as _ops
globals().update(_ops.namespace("fastgraph"))
from . import linalg, fft, scipy, random, autograd, optim

# eager mode
from .eager.tensor import Tensor, tensor
from .eager.factories import (arange, eye, full, ones, ones_like, rand, randn, zeros,
                              zeros_like)
from .eager.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .bridge.transforms import (elementwise_grad, grad, hessian, hessian_vector_product, hvp,
                                jacfwd, jacobian, jvp, linearize, make_jvp, value_and_grad)

bool_ = __import__("numpy").bool_

# static mode (TensorFlow 1 semantics) and the bridge
from .static import (Graph, InteractiveSession, Node, Session, Variable, assign, assign_add,
                     constant, get_default_graph, get_default_session,
                     global_variables_initializer, gradients, group, name_scope, placeholder,
                     reset_default_graph, trainable_variables, variables_initializer)
from .bridge.function import clear_caches, function
from .bridge.control_flow import cond, fori_loop, scan, while_loop
from .static.random import set_random_seed
from .extend import custom_vjp
from . import extend
from . import train, errors
from .serialize import load, save
from .dot import render_dot, to_dot

# TensorFlow 1's names where NumPy has none (reduce_sum, cast, random_normal, ...: the
# declarations exported to ``fastgraph`` by the graph engine too), tf.nn, tf.losses, tf.compat.v1
globals().update(_ops.namespace("fastgraph"))
from . import nn, losses, compat, layers
from . import distributed

# every TensorFlow dtype name (fg.int16, fg.string, ...): NumPy's types
globals().update(__import__("fastgraph._core.dtypes", fromlist=["TF_DTYPES"]).TF_DTYPES)
