"""All operations, declared once (see :mod:`._registry`), exported by NumPy name.

Each function accepts NumPy values, eager ``Tensor``s or graph ``Node``s and returns the same kind.
"""
from .._core import REGISTRY, ZERO, OpDef, apply, defop, register_kind, set_pack
from .elementwise import (abs, add, arctan, ceil, clip, cos, cosh, digamma, divide, equal, erf,
                          erfc, exp, expm1, floor, floor_divide, gammaln, greater, greater_equal,
                          isfinite, less, less_equal, log, log1p, logical_and, logical_not,
                          logical_or, logit, maximum, minimum, multiply, negative, not_equal,
                          polygamma, power, reciprocal, relu, sigmoid, sign, sin, sinh, softplus,
                          sqrt, square, subtract, tan, tanh, where, xlogy,
                          tanh_grad, sigmoid_grad,
                          log10, log2, exp2, arcsin, arccos, arcsinh, arccosh, arctanh, deg2rad,
                          rad2deg, logaddexp, hypot, remainder, mod, rint, trunc, round, around)
from .reductions import cumsum, diff, logsumexp, max, mean, min, prod, std, sum, var
from .shape import (astype, broadcast_like, broadcast_to, concatenate, copy, expand_dims,
                    getitem, identity, ravel, reshape, reshape_like, scatter_add, size_ratio, split,
                    squeeze, stack, sum_to_like, swapaxes, transpose,
                    flip, roll, moveaxis, repeat, tile, atleast_1d, atleast_2d, atleast_3d,
                    hstack, vstack, dstack, column_stack, diagonal, diag, triu, tril)
from .linalg import (adjugate, det, dot, einsum, inv, matmul, norm, outer, slogdet, solve,
                     tensordot, trace)
from .nn import cross_entropy, cross_entropy_grad, log_softmax, pick, put_labels, softmax

# a list holding Tensors or Nodes is one array of the graph, as np.array reads it
set_pack(stack)

# The public vocabulary of DESIGN.md §2 (helpers above stay importable from fastgraph.ops).
PUBLIC = (
    "add subtract multiply divide power negative abs exp expm1 log log1p sqrt square reciprocal "
    "sin cos tan tanh sinh cosh arctan sigmoid relu softplus erf maximum minimum where clip sign "
    "floor ceil floor_divide less less_equal greater greater_equal equal not_equal logical_and "
    "logical_or logical_not isfinite "
    "sum mean prod max min var std logsumexp "
    "matmul dot outer einsum "
    "reshape transpose swapaxes expand_dims squeeze broadcast_to concatenate stack split ravel "
    "softmax log_softmax cross_entropy astype "
    "log10 log2 exp2 arcsin arccos arcsinh arccosh arctanh deg2rad rad2deg logaddexp hypot "
    "remainder mod rint trunc round around "
    "cumsum diff flip roll moveaxis repeat tile atleast_1d atleast_2d atleast_3d hstack vstack "
    "dstack column_stack diagonal diag trace triu tril tensordot"
).split()
