"""``Module``: PyTorch's module system (``torch.nn.Module``) over fastgraph's eager Tensors.

A module holds parameters (``Parameter``), buffers and submodules as attributes, and computes
with fastgraph's ops in ``forward``.  The same module runs three ways:

* eagerly, on Tensors (the tape records it; ``backward()`` fills the parameters' ``.grad``);
* in an ``@fg.function`` trace: while tracing, each parameter and buffer is a Variable of the
  traced graph whose value in every run is the parameter's own array (read at each call), and
  assignments to them made in the trace (an SGD update, BatchNorm's running statistics) run
  with the plan and land in those arrays;
* on a graph placeholder outside a trace: the parameters become Variables of that graph,
  initialised from their current values (run ``fg.global_variables_initializer()``).

    >>> import fastgraph.torch.nn as nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> [name for name, _ in net.named_parameters()]
    ['0.weight', '0.bias', '2.weight', '2.bias']
"""
from __future__ import annotations

import threading
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

import numpy as np

from ..._core import is_tensor
from ...bridge.function import capture_variable, tracing_graph
from ...eager.tensor import Tensor
from ...static.node import NODE_TYPES
from .._tensor import leaf
from .parameter import Buffer, Parameter, as_array

__all__ = ["Module", "IncompatibleKeys"]

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])

_STATIC = threading.local()     # .graph: the graph a module is being called on (not a trace)


def _binding_graph():
    """The graph whose Variables a module's parameters are while it runs, or None (eager)."""
    g = tracing_graph()
    if g is not None:
        return g
    return getattr(_STATIC, "graph", None)


def _graph_of(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if type(a) in NODE_TYPES:
            return a.graph
    return None


class Module:
    """Base class of every layer (PyTorch's ``torch.nn.Module``): subclass it, create
    parameters and submodules in ``__init__`` and compute in ``forward``.

        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(3, 1)
        ...     def forward(self, x):
        ...         return self.fc(x).relu()
        >>> Net()(fg.ones(2, 3, dtype=np.float32)).shape
        (2, 1)
    """

    training: bool

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_hook_id"] = 0

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    # ---- calling ----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: Module.__init__() was not called (call "
                               f"super().__init__() first in __init__)")
        static = None
        if getattr(_STATIC, "graph", None) is None and tracing_graph() is None:
            static = _graph_of(args, kwargs)
        if static is not None:
            _STATIC.graph = static
            try:
                return self._call_impl(args, kwargs)
            finally:
                _STATIC.graph = None
        return self._call_impl(args, kwargs)

    def _call_impl(self, args, kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            res = hook(self, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            res = hook(self, args, out)
            if res is not None:
                out = res
        return out

    # ---- attributes -------------------------------------------------------------------------
    def __getattr__(self, name: str):
        d = self.__dict__
        if "_parameters" in d:
            # parameters and buffers read inside a trace or a graph are that graph's variables
            for store in (d["_parameters"], d["_buffers"]):
                if name in store:
                    value = store[name]
                    if value is not None:
                        g = _binding_graph()
                        if g is not None:
                            return capture_variable(value, g, f"{type(self).__name__}/{name}")
                    return value
            mods = d["_modules"]
            if name in mods:
                return mods[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        if "_parameters" not in d and isinstance(value, (Parameter, Module, Buffer)):
            raise AttributeError("cannot assign parameters, buffers or modules before "
                                 "Module.__init__() call")
        # A value of a kind registers under the name; an existing entry of a kind may be
        # replaced only by None (or, for a buffer, any Tensor); everything else is an attribute.
        for cls, store, what, also in _ASSIGNABLE:
            if isinstance(value, cls):
                self._drop(name)
                if cls is Parameter:
                    self.register_parameter(name, value)
                elif cls is Buffer:
                    self.register_buffer(name, value, value.persistent)
                else:
                    d[store][name] = value
                return
            entries = d.get(store)
            if entries is not None and name in entries:
                if value is not None and not (also and isinstance(value, also)):
                    expected = also.__name__ if also else f"torch.nn.{cls.__name__}"
                    raise TypeError(f"cannot assign '{type(value).__name__}' as {what} "
                                    f"'{name}' (a {expected} or None expected)")
                entries[name] = value
                return
        object.__setattr__(self, name, value)

    def _drop(self, name: str) -> None:
        d = self.__dict__
        d.pop(name, None)
        for key in ("_parameters", "_buffers", "_modules"):
            d[key].pop(name, None)
        d["_non_persistent_buffers_set"].discard(name)

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if name in d.get(key, ()):
                del d[key][name]
                d["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) |
                      set(self._modules))

    def _check_name(self, name, what: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f'{what} name can\'t contain "." or be empty, got {name!r}')
        if name in self.__dict__ and name not in self._parameters and \
                name not in self._buffers and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a ``None`` placeholder for an optional one) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        if name in self._buffers or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a buffer: state saved in ``state_dict`` (unless ``persistent=False``) and
        moved with the module, but not a parameter (BatchNorm's ``running_mean``)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if name in self._parameters or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            tensor = leaf(np.asarray(as_array(tensor)))
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a submodule under ``name`` (``self.name = module`` does the same)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if name in self._parameters or name in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        mod = self
        for item in target.split(".") if target else ():
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target: str) -> Parameter:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    # ---- traversal --------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name,
                                       remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, key: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        g = _binding_graph()
        for mod_prefix, m in mods:
            for name, v in m.__dict__[key].items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                full = mod_prefix + ("." if mod_prefix else "") + name
                yield full, (v if g is None else capture_variable(v, g, full.replace(".", "/")))

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """``(name, parameter)`` pairs, submodules' first-registered order (``'0.weight'``).
        While an ``fg.function`` traces, the parameters are their Variables in the trace."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- modes and helpers ------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def compile(self, *args, **kwargs) -> None:
        """PyTorch's ``model.compile()``: from now on this module's ``forward`` goes through
        ``torch.compile`` (the same options; see there which calls run the compiled plan and
        which run eagerly).  Hooks still run around it, eagerly."""
        from .._compile import compile as _compile
        object.__setattr__(self, "forward", _compile(type(self).forward.__get__(self), *args,
                                                     **kwargs))

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad`` (to None, PyTorch's default, or to zeros)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = leaf(np.zeros_like(p.grad._ndarray))

    def apply(self, fn: Callable[["Module"], Any]) -> "Module":
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, dtype=None, *args, **kwargs) -> "Module":
        """``module.to(np.float64)`` (or ``.double()``/``.float()``) casts floating parameters
        and buffers; device arguments (``'cpu'``) are accepted and ignored."""
        dtype = kwargs.pop("dtype", dtype)
        if isinstance(dtype, str) and dtype.startswith("cpu"):
            dtype = None
        if dtype is None:
            return self
        dt = np.dtype(getattr(dtype, "numpy_dtype", dtype))
        if dt.kind != "f":
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got {dt}")
        for m in self.modules():
            for store in (m._parameters, m._buffers):
                for k, v in store.items():
                    if v is not None and v.dtype.kind == "f" and v.dtype != dt:
                        v.data = v._ndarray.astype(dt)
                        if v.grad is not None:
                            v.grad = None
        return self

    def double(self) -> "Module":
        return self.to(np.float64)

    def float(self) -> "Module":
        return self.to(np.float32)

    def cpu(self) -> "Module":
        return self

    # ---- hooks ------------------------------------------------------------------------------
    def _add_hook(self, store: OrderedDict, hook: Callable) -> RemovableHandle:
        key = self.__dict__["_hook_id"]
        self.__dict__["_hook_id"] = key + 1
        store[key] = hook
        return _HookHandle(store, key)

    def register_forward_pre_hook(self, hook: Callable) -> "_HookHandle":
        """``hook(module, args)`` runs before ``forward``; a non-None result replaces the
        arguments.  Returns a handle with ``remove()``."""
        return self._add_hook(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook: Callable) -> "_HookHandle":
        """``hook(module, args, output)`` runs after ``forward``; a non-None result replaces
        the output.  Returns a handle with ``remove()``."""
        return self._add_hook(self._forward_hooks, hook)

    # ---- state ------------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """Every parameter and persistent buffer by its dotted name, as Tensors sharing the
        module's arrays (detached unless ``keep_vars``), in registration order."""
        out = OrderedDict() if destination is None else destination
        for mod_prefix, m in self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False):
            dot = mod_prefix + ("." if mod_prefix else "")
            for name, p in m._parameters.items():
                if p is not None:
                    out[dot + name] = p if keep_vars else p.detach()
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent_buffers_set:
                    out[dot + name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values into the parameters and persistent buffers by name.  Every key and
        shape is checked before anything is written, so an error leaves the module as it was:
        missing or unexpected keys (with ``strict``), and a shape mismatch (always; the message
        names the key and both shapes).  Values may be fastgraph Tensors, NumPy arrays or
        PyTorch tensors; they are cast to each parameter's dtype.  Returns
        ``(missing_keys, unexpected_keys)``."""
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict:
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.append("Missing key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in missing) + ". ")
        writes = []
        for k, target in own.items():
            if k not in state_dict:
                continue
            value = as_array(state_dict[k])
            if value.shape != target.shape:
                errors.append(f"size mismatch for {k}: copying a param with shape "
                              f"{value.shape} from checkpoint, the shape in current model is "
                              f"{target.shape}.")
                continue
            if target.dtype.kind in "fc" and value.dtype.kind not in "biufc":
                errors.append(f"dtype mismatch for {k}: cannot copy a value of dtype "
                              f"{value.dtype} into a parameter of dtype {target.dtype}.")
                continue
            writes.append((target, value))
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" +
                               "\n\t".join(errors))
        for target, value in writes:
            if assign:
                target.data = np.array(value, dtype=target.dtype)
            else:
                np.copyto(target._ndarray, value, casting="unsafe")
                target._bump_version()
        return IncompatibleKeys(missing, unexpected)

    # ---- printing ---------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        child = [f"({name}): " + repr(m).replace("\n", "\n  ")
                 for name, m in self._modules.items()]
        if not child:
            return f"{self._get_name()}({extra})"
        lines = (extra.split("\n") if extra else []) + child
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


#: what ``Module.__setattr__`` registers, in the order it looks: the kind's class, its store,
#: its name in messages, and what else than None may replace an entry
_ASSIGNABLE = ((Parameter, "_parameters", "parameter", None),
               (Module, "_modules", "child module", None),
               (Buffer, "_buffers", "buffer", Tensor))


class _HookHandle:
    """``handle.remove()`` unregisters the hook (PyTorch's ``RemovableHandle``)."""

    def __init__(self, store: OrderedDict, key) -> None:
        self._store = store
        self._key = key

    def remove(self) -> None:
        self._store.pop(self._key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
