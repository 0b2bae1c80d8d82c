"""The eager ``Tensor``: an ndarray plus what ``backward()`` needs (PyTorch semantics).

Recording (:func:`fastgraph.eager.tape.record`, compiled) is the whole of eager mode's forward cost: run
the op's NumPy forward and, when some input requires grad, attach one ``TapeNode``.
0-d results are kept as NumPy scalars internally (scalar arithmetic is ~7x cheaper than 0-d array
arithmetic); ``Tensor._ndarray`` (and ``.data`` on NumPy's face) always hands out an
ndarray.
"""
from __future__ import annotations

import operator
import weakref
from typing import Any, Callable

import numpy as np

from .. import ops as F
from .._core import operator_ops, random_state
from .._core.errors import op_error
from ..ops.methods import OpMethods
from ..ops.torch_methods import SizeValue, TorchMethods, new_leaf_like
from . import grad_mode as _gm
from . import tape as _tape
from .tape import TensorBase

__all__ = ["Tensor", "tensor"]

_ndarray = np.ndarray
_generic = np.generic


class Tensor(TensorBase, TorchMethods, OpMethods):
    """An eager array that records operations for reverse-mode differentiation.

        >>> x = fg.tensor(1.0, requires_grad=True)
        >>> (x * x).backward(); x.grad
        tensor(2.)
    """

    # fields (_data, grad, grad_fn, _requires_grad, _hooks, _retains) live in the compiled base
    __slots__ = ()
    __array_priority__ = 1000

    # ---- data and metadata ----------------------------------------------------------------
    @property
    def _ndarray(self) -> np.ndarray:
        """The value as an ndarray, whatever the face (what fastgraph's own code reads: on
        PyTorch's face ``.data`` is a Tensor)."""
        d = self._data
        if type(d) is not _ndarray:
            d = self._data = np.asarray(d)
        return d

    def _set_data(self, value) -> None:
        self._data = np.asarray(value._ndarray if isinstance(value, Tensor) else value)

    data = property(_ndarray.fget, _set_data, doc="""The value as an ndarray (NumPy's face; no
        copy): NumPy's in-place operators on it change the tensor, unseen by the tape.  On
        PyTorch's face (``fastgraph.torch``) ``.data`` is PyTorch's: a detached Tensor sharing
        the memory.  Assigning ``t.data = value`` replaces the value (any shape and dtype).""")

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                               "want to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and self.dtype.kind not in "fc":
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require "
                               f"gradients (got {self.dtype})")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def size(self) -> int:
        """The element count (NumPy's ``ndarray.size``, an ``int``); called, PyTorch's
        ``x.size()`` (the shape) or ``x.size(dim)``."""
        d = self._data
        return SizeValue(d.size, d.shape)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def numpy(self) -> np.ndarray:
        """The value as an ndarray (no copy). Errors if the tensor requires grad, as in PyTorch.

            >>> fg.tensor([1.0, 2.0], requires_grad=True).detach().numpy()
            array([1., 2.])
        """
        if self._requires_grad and _gm._state.enabled:
            raise _conversion_error(self, "Can't call numpy() on Tensor that requires grad")
        return self._ndarray

    def item(self):
        if self._data.size != 1:
            raise ValueError(f"a Tensor with {self._data.size} elements cannot be converted to "
                             f"Scalar")
        return self._data.item() if hasattr(self._data, "item") else self._data

    def tolist(self):
        return self._ndarray.tolist()

    def __contains__(self, value) -> bool:
        """``value in t``: whether any element equals ``value`` (NumPy's and PyTorch's rule;
        without it Python would compare whole rows)."""
        other = value._data if isinstance(value, Tensor) else value
        return bool((self._ndarray == other).any())

    def detach(self) -> "Tensor":
        """A new leaf sharing this tensor's data (and, as in PyTorch, its in-place version
        counter: changing the data through it is seen by a tape that saved this tensor).
        It has this tensor's face (PyTorch's, for a tensor of ``fastgraph.torch``)."""
        t = new_leaf_like(self, self._data)
        self._share_version(t)
        return t

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after ``backward()``."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is not None and not self._retains:
            self._retains = True
            self.grad_fn.retained = weakref.ref(self)

    def register_hook(self, hook: Callable) -> "RemovableHandle":
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned Tensor
        replaces the gradient.  Returns a handle whose ``remove()`` (or a call of it) removes
        the hook, as PyTorch's does.

            >>> h = x.register_hook(lambda g: g * 2)
            >>> h.remove()
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            hooks = self.grad_fn.hooks
            if hooks is None:
                hooks = self.grad_fn.hooks = []
        else:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def register_grad_ready_hook(self, hook: Callable) -> "RemovableHandle":
        """On a leaf: call ``hook(tensor, grad)`` during ``backward()`` as soon as this leaf's
        gradient for the pass is complete (after its :meth:`register_hook` hooks, before the
        walk ends and ``.grad`` is set); a returned value (same shape) is the gradient that
        accumulates into ``.grad``.  Data-parallel training starts sending a gradient from
        here while the backward pass goes on (PyTorch's post-accumulate-grad hooks serve the
        same purpose).  ``fg.autograd.grad`` does not call them.

            >>> w = fg.tensor([1.0, 2.0], requires_grad=True)
            >>> h = w.register_grad_ready_hook(lambda t, g: g * 0.5)
            >>> (w * 3.0).sum().backward(); w.grad
            tensor([1.5, 1.5])
            >>> h.remove()
        """
        if not self._requires_grad or self.grad_fn is not None:
            raise RuntimeError("register_grad_ready_hook: only a leaf tensor that requires "
                               "gradient has one")
        if self._ready_hooks is None:
            self._ready_hooks = []
        hooks = self._ready_hooks
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def backward(self, gradient=None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (PyTorch semantics)."""
        _autograd.backward(self, gradient, retain_graph, create_graph, inputs)

    # ---- printing ---------------------------------------------------------------------------
    def __format__(self, spec: str) -> str:
        """``f"{t:.3f}"``: a 0-d tensor formats as its number (PyTorch's rule); others take
        only an empty format spec."""
        if spec and self.ndim == 0:
            return format(self._ndarray.item(), spec)
        return super().__format__(spec) if spec else str(self)

    def __repr__(self) -> str:
        body = np.array2string(self._ndarray, separator=", ", prefix="tensor(")
        extras = []
        if self.dtype != np.float64:
            extras.append(f"dtype={self.dtype}")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.op.name}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extras) + ")"

    def __str__(self) -> str:
        return self.__repr__()

    def __bool__(self) -> bool:
        return bool(self._data)

    def __float__(self) -> float:
        return float(self._data)

    def __int__(self) -> int:
        return int(self._data)

    def __index__(self) -> int:
        # NumPy 2.5 asks sizes for __index__ first: a float Tensor is refused as a float is
        try:
            return operator.index(self._data)
        except TypeError:
            raise TypeError(f"only an integer Tensor of one element can be used as an index or "
                            f"a size, not a {self._data.dtype} Tensor of shape "
                            f"{tuple(np.shape(self._data))}") from None

    def __hash__(self) -> int:
        return id(self)

    def _fg_index_value(self):
        return self._ndarray

    # ---- NumPy protocols -------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        # np.asarray(t), np.array(t), an ndarray built from or assigned a Tensor: the result
        # is plain NumPy, so for a tensor that requires grad it would silently carry no
        # gradient -- refused as PyTorch refuses it (float(t), t.item() and the explicit
        # escape hatches t.data and t.detach() stay allowed, as there)
        if self._requires_grad and _gm._state.enabled:
            if dtype is not None and np.dtype(dtype) == object:
                return self._object_array()
            raise _conversion_error(self, "Can't convert a Tensor that requires grad to a "
                                          "NumPy array (np.asarray, np.array)")
        d = self._ndarray
        if dtype is not None and d.dtype != dtype:
            return d.astype(dtype)
        return d.copy() if copy else d

    def _object_array(self) -> np.ndarray:
        """An object array of this tensor's elements as 0-d Tensors (the tensor itself when
        0-d), which keep their gradients: what ``np.array([t[0], t[1]], dtype=object)`` and
        ``np.array(t, dtype=object)`` build, and fastgraph's operations take."""
        out = np.empty(self.shape, dtype=object)
        if self.ndim == 0:
            out[()] = self
        else:
            for idx in np.ndindex(*self.shape):
                out[idx] = self[idx]
        return out

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:   # (array_ufunc's first case, one frame less)
            fn = _protocols.UFUNCS.get(ufunc.__name__)
            if fn is not None:
                return fn(*inputs)
        return _protocols.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _protocols.array_function(func, types, args, kwargs)

    # ---- in-place operators (the others come from OpMethods and the compiled base) -------
    def __setitem__(self, index, value) -> None:
        self._check_inplace("__setitem__")
        if isinstance(value, Tensor):
            if value._requires_grad and _gm._state.enabled:
                # the written values' gradient would be lost (PyTorch records a copy_slices op;
                # fastgraph has none): say so rather than cut the graph silently
                raise RuntimeError("t[index] = value with a value that requires grad is not "
                                   "differentiable in fastgraph; build the result out of place "
                                   "(fg.where, fg.concatenate, fg.stack) or assign "
                                   "value.detach()")
            value = value._data
        self._ndarray[F.shape._canon_index(index)] = value
        self._bump_version()

    def _check_inplace(self, what: str) -> None:
        """Raise where changing this tensor's data in place would corrupt a gradient."""
        if not _gm._state.enabled:
            return
        if self._requires_grad:
            if self.grad_fn is None:
                raise RuntimeError(f"a leaf Variable that requires grad is being used in an "
                                   f"in-place operation ({what}).")
            raise RuntimeError(f"in-place operation {what} on a tensor that requires grad is not "
                               f"supported: its old value may be saved for backward. Use an "
                               f"out-of-place operation (or fg.where) instead.")
        base = self._base
        if base is not None and base._requires_grad:
            kind = "a leaf Variable" if base.grad_fn is None else "a tensor"
            raise RuntimeError(f"a view of {kind} that requires grad is being used in an "
                               f"in-place operation ({what}): the view was created in no_grad "
                               f"mode and is being modified in place with grad mode enabled, "
                               f"which is ambiguous and forbidden. Modify it inside "
                               f"fg.no_grad(), or modify a copy.")

    def _inplace(self, ufunc, other, name):
        if self._requires_grad and _gm._state.enabled:
            if self.grad_fn is None:
                raise RuntimeError(f"a leaf Variable that requires grad is being used in an "
                                   f"in-place operation ({name}).")
            # a non-leaf: record out of place; Python rebinds the name to the result
            return NotImplemented
        if self._base is not None:
            self._check_inplace(name)
        d = self._ndarray
        try:
            ufunc(d, other._data if isinstance(other, Tensor) else other, out=d,
                  casting="same_kind")
        except FloatingPointError:  # np.errstate(...='raise'): raised after writing
            self._bump_version()
            raise
        self._bump_version()  # a tape that saved this data (through any view) refuses to use it
        return self

    def __iadd__(self, other): return self._inplace(np.add, other, "+=")
    def __isub__(self, other): return self._inplace(np.subtract, other, "-=")
    def __imul__(self, other): return self._inplace(np.multiply, other, "*=")
    def __itruediv__(self, other): return self._inplace(np.divide, other, "/=")
    def __ifloordiv__(self, other): return self._inplace(np.floor_divide, other, "//=")
    def __imod__(self, other): return self._inplace(np.remainder, other, "%=")
    def __ipow__(self, other): return self._inplace(np.power, other, "**=")

    # ---- PyTorch's in-place methods ------------------------------------------------------
    def _torch_inplace(self, ufunc, other, name):
        out = self._inplace(ufunc, other, name)
        if out is NotImplemented:
            raise RuntimeError(f"in-place operation {name}() on a tensor that requires grad is "
                               f"not supported: its old value may be saved for backward. Use "
                               f"the out-of-place form instead.")
        return out

    def add_(self, other, alpha=1):
        return self._torch_inplace(np.add, other if alpha == 1 else _scaled(other, alpha),
                                   "add_")

    def sub_(self, other, alpha=1):
        return self._torch_inplace(np.subtract, other if alpha == 1 else _scaled(other, alpha),
                                   "sub_")

    def mul_(self, other):
        return self._torch_inplace(np.multiply, other, "mul_")

    def div_(self, other):
        return self._torch_inplace(np.divide, other, "div_")

    def fill_(self, value):
        """Set every element to ``value`` in place (PyTorch's ``fill_``)."""
        self._check_inplace("fill_")
        self._ndarray[...] = value._data if isinstance(value, Tensor) else value
        self._bump_version()
        return self

    def zero_(self):
        return self.fill_(0)

    def copy_(self, src):
        """Copy ``src``'s values (broadcast, cast to this dtype) into this tensor in place."""
        self._check_inplace("copy_")
        if isinstance(src, Tensor):
            if src._requires_grad and _gm._state.enabled:
                raise RuntimeError("copy_() from a tensor that requires grad is not "
                                   "differentiable in fastgraph; copy src.detach()")
            src = src._data
        np.copyto(self._ndarray, np.broadcast_to(np.asarray(src), self._data.shape),
                  casting="unsafe")
        self._bump_version()
        return self

    def addcmul_(self, tensor1, tensor2, value=1):
        """``self += value * tensor1 * tensor2`` in place (PyTorch's ``addcmul_``)."""
        return self._torch_inplace(np.add, _scaled(_value(tensor1) * _value(tensor2), value),
                                   "addcmul_")

    def addcdiv_(self, tensor1, tensor2, value=1):
        """``self += value * tensor1 / tensor2`` in place (PyTorch's ``addcdiv_``)."""
        return self._torch_inplace(np.add, _scaled(_value(tensor1) / _value(tensor2), value),
                                   "addcdiv_")

    def lerp_(self, end, weight):
        """``self += weight * (end - self)`` in place (PyTorch's ``lerp_``; a moving average's
        ``ema.lerp_(p, 1 - decay)``)."""
        return self._torch_inplace(np.add, _value(weight) * (_value(end) - self._ndarray),
                                   "lerp_")

    def masked_fill_(self, mask, value):
        """Set the elements where ``mask`` (broadcast to this shape) is True to ``value``."""
        self._check_inplace("masked_fill_")
        m = np.asarray(_value(mask))
        if m.dtype != np.bool_:
            raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with "
                               f"dtype {m.dtype}")
        d = self._ndarray
        np.copyto(d, np.asarray(_value(value)), casting="unsafe",
                  where=np.broadcast_to(m, d.shape))
        self._bump_version()
        return self

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """Fill with values from N(mean, std^2) in place, drawn from the process's seeded
        generator (``torch.manual_seed``, ``fg.random.seed``) or ``generator``: the
        initialisation idiom ``m.weight.data.normal_(0.0, 0.02)``."""
        return self._fill_random("normal_", lambda rng, shape: rng.normal(mean, std, shape),
                                 generator)

    def uniform_(self, from_=0.0, to=1.0, *, generator=None):
        """Fill with values from U(from_, to) in place (see :meth:`normal_`)."""
        return self._fill_random("uniform_", lambda rng, shape: rng.uniform(from_, to, shape),
                                 generator)

    def _fill_random(self, name, draw, generator):
        self._check_inplace(name)
        d = self._ndarray
        if d.dtype.kind not in "fc":
            raise TypeError(f"{name}: expects a floating-point tensor, got {d.dtype}")
        np.copyto(d, draw(random_state.generator_for(generator), d.shape), casting="unsafe")
        self._bump_version()
        return self

    def clamp_(self, min=None, max=None):
        self._check_inplace("clamp_")
        self._ndarray[...] = np.asarray(self.clamp(min, max)._data)
        self._bump_version()
        return self

    def __imatmul__(self, other):
        # no in-place matmul (its result may have another shape); a leaf that requires grad
        # still must not be silently rebound to a new tensor
        if self._requires_grad and self.grad_fn is None and _gm._state.enabled:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation (@=).")
        return NotImplemented


def _scaled(other, alpha):
    return (other._data if isinstance(other, Tensor) else np.asarray(other)) * alpha


def _value(v):
    """An operand of an in-place method: a Tensor's array, anything else as it is."""
    return v._data if isinstance(v, Tensor) else v


_tape.configure(Tensor, F.ZERO, F.sum_to_like, F.astype, op_error, operator_ops())

_SUPPORTED_KINDS = "biufc"


def tensor(data: Any, dtype=None, requires_grad: bool = False) -> Tensor:
    """Make a leaf Tensor from a scalar, nested list, ndarray or Tensor (data is copied; the
    values of Tensors are read without their history, as ``torch.tensor`` reads them).

        >>> fg.tensor([1.0, 2.0], requires_grad=True)
        tensor([1., 2.], requires_grad=True)
    """
    if isinstance(data, Tensor):
        data = data._ndarray
    try:
        if isinstance(data, (list, tuple)):
            with _gm.no_grad():     # a new leaf from Tensors' values: torch.tensor's rule
                arr = np.array(data, dtype=dtype)
        else:
            arr = np.array(data, dtype=dtype)
    except ValueError as e:
        raise ValueError(f"fg.tensor: could not build an array from the data ({e}); nested "
                         f"lists must be rectangular") from None
    except TypeError as e:
        raise TypeError(f"fg.tensor: unsupported data or dtype ({e})") from None
    if arr.dtype.kind not in _SUPPORTED_KINDS or (
            arr.dtype.kind == "f" and arr.dtype.itemsize not in (4, 8)) or (  # float16
            arr.dtype.kind == "c" and arr.dtype.itemsize not in (8, 16)):    # clongdouble
        raise TypeError(f"fg.tensor: unsupported dtype {arr.dtype}; use bool, integer, "
                        f"float32, float64, complex64 or complex128 data")
    t = Tensor(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _conversion_error(t: Tensor, what: str) -> RuntimeError:
    """The error for turning a Tensor that requires grad into a plain ndarray: it names the
    function a transform is differentiating (as JAX names the traced function) and says what
    to write instead."""
    inside = _gm._state.transformed
    where = f" while differentiating {inside!r}" if inside else ""
    return RuntimeError(
        f"{what} (shape {t.shape}, dtype {t.dtype}){where}: the ndarray would carry no "
        f"gradient. Use tensor.detach().numpy() for its value without a gradient, or "
        f"differentiable operations on the Tensor itself (fg.* or fastgraph.numpy functions: "
        f"import fastgraph.numpy as np; a function that calls NumPy's own np.asarray on its "
        f"argument cannot be differentiated).")


# the class of what detach(), .grad and new leaves like a tensor are (a subclass, such as a
# module's Parameter, makes plain Tensors; PyTorch's face sets its own)
Tensor._face = Tensor


class RemovableHandle:
    """What ``Tensor.register_hook`` returns: ``remove()`` takes the hook off (once; later calls
    do nothing); also a context manager, and callable as ``remove`` (fastgraph's earlier API)."""
    __slots__ = ("_hooks", "_hook")

    def __init__(self, hooks: list, hook: Callable) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        hooks, self._hooks = self._hooks, None
        if hooks is not None and self._hook in hooks:
            hooks.remove(self._hook)

    __call__ = remove

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


# NumPy's protocols and backward() live in modules that import this one: bound here, once, after
# Tensor exists (an import statement in the methods would go through the import machinery on
# every NumPy call and every backward())
from . import numpy_protocols as _protocols  # noqa: E402
from . import autograd as _autograd  # noqa: E402
