"""fastgraph: automatic differentiation over NumPy, eager (tape) and static (graph) modes.

    >>> import fastgraph as fg
    >>> x = fg.tensor(1.0, requires_grad=True)
    >>> (x * x).backward(); x.grad
    tensor(2.)

Public names only; the contract is DESIGN.md, the layout is described in docs/architecture.md.
"""
from ._version import __version__
from ._core.config import get_num_threads, set_num_threads
from . import utils

# the vocabulary of operations (one registry serves eager, static and the bridge)
from .ops import (abs, add, arctan, broadcast_to, ceil, clip, concatenate, cos, cosh,
                  cross_entropy, divide, dot, einsum, equal, erf, exp, expand_dims, expm1, floor,
                  floor_divide, greater, greater_equal, less, less_equal, log, log1p,
                  log_softmax, logical_and, logical_not, logical_or, logsumexp, matmul, max,
                  maximum, mean, min, minimum, multiply, negative, not_equal, outer, power, prod,
                  ravel, reciprocal, relu, reshape, sigmoid, sign, sin, sinh, softmax, softplus,
                  split, sqrt, square, squeeze, stack, std, subtract, sum, swapaxes, tan, tanh,
                  transpose, var, where, astype, isfinite)
from .ops import (log10, log2, exp2, arcsin, arccos, arcsinh, arccosh, arctanh, deg2rad, rad2deg,
                  logaddexp, hypot, remainder, mod, cumsum, diff, flip, roll, moveaxis, repeat,
                  tile, atleast_1d, atleast_2d, atleast_3d, hstack, vstack, dstack,
                  column_stack, diagonal, diag, trace, triu, tril, tensordot, rint, trunc,
                  round, around)
from . import linalg, scipy, random, autograd, optim

# eager mode
from .eager.tensor import Tensor, tensor
from .eager.factories import (arange, eye, full, ones, ones_like, rand, randn, zeros,
                              zeros_like)
from .eager.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .eager.transforms import (elementwise_grad, grad, hessian, hessian_vector_product, hvp,
                               jacobian, value_and_grad)

float32 = __import__("numpy").float32
float64 = __import__("numpy").float64
int32 = __import__("numpy").int32
int64 = __import__("numpy").int64
bool_ = __import__("numpy").bool_

# static mode (TensorFlow 1 semantics) and the bridge
from .static import (Graph, InteractiveSession, Node, Session, Variable, assign, assign_add,
                     constant, get_default_graph, get_default_session,
                     global_variables_initializer, gradients, group, name_scope, placeholder,
                     reset_default_graph, trainable_variables, variables_initializer)
from .static.function import clear_caches, function
from . import train, errors
