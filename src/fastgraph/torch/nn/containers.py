"""``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``."""
from __future__ import annotations

import operator
from collections import OrderedDict

from .module import Module
from .parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(i, n: int, what: str) -> int:
    i = operator.index(i)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range for {what} of length {n}")
    return i % n


class _ModuleSequence:
    """What ``Sequential`` and ``ModuleList`` share: modules registered under ``'0'``, ``'1'``,
    ..., their count, iteration over them, and ``append``."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module):
        self.add_module(str(len(self)), module)
        return self


class Sequential(_ModuleSequence, Module):
    """Modules applied in order: ``Sequential(nn.Linear(2, 3), nn.ReLU())(x)``; also from an
    ``OrderedDict`` of named modules.

        >>> len(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
        2
    """

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):  # noqa: A002
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self), "Sequential")]

    def __setitem__(self, idx, module) -> None:
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        for k in (keys[idx] if isinstance(idx, slice) else
                  [keys[_index(idx, len(self), "Sequential")]]):
            del self._modules[k]


class ModuleList(_ModuleSequence, Module):
    """A list of modules, registered (so their parameters are the owner's).

        >>> layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)]); len(layers)
        3
    """

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx, module) -> None:
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx) -> None:
        mods = list(self._modules.values())
        del mods[idx if isinstance(idx, slice) else _index(idx, len(mods), "ModuleList")]
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def extend(self, modules) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward(): iterate over its modules")


class _NamedStore:
    """The dict side that ``ModuleDict`` and ``ParameterDict`` share, over the module's own
    registry of entries (``_modules`` or ``_parameters``, named by ``_store``): length,
    iteration over the names, membership, ``keys``, ``items``, ``values`` and ``update``.
    ``items`` and ``values`` read each entry through ``self[name]``, so a parameter read inside
    a trace is the trace's variable."""

    _store = "_modules"

    def _entries(self) -> dict:
        return self.__dict__[self._store]

    def __len__(self) -> int:
        return len(self._entries())

    def __iter__(self):
        return iter(self._entries())

    def __contains__(self, key) -> bool:
        return key in self._entries()

    def keys(self):
        return self._entries().keys()

    def items(self):
        return [(k, self[k]) for k in self._entries()]

    def values(self):
        return [self[k] for k in self._entries()]

    def update(self, entries) -> None:
        for k, v in (entries.items() if hasattr(entries, "items") else entries):
            self[k] = v


class ModuleDict(_NamedStore, Module):
    """A dict of modules, registered, in insertion order.

        >>> heads = nn.ModuleDict({"a": nn.Linear(2, 1)}); list(heads)
        ['a']
    """

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def items(self):             # views, as PyTorch's (a module is its own entry)
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward(): index it by name")


class ParameterList(Module):
    """A list of parameters, registered under ``'0'``, ``'1'``, ..."""

    def __init__(self, values=None) -> None:
        super().__init__()
        for v in values or ():
            self.append(v)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return (getattr(self, k) for k in self._parameters)

    def __getitem__(self, idx):
        return getattr(self, str(_index(idx, len(self), "ParameterList")))

    def append(self, value) -> "ParameterList":
        self.register_parameter(str(len(self)),
                                value if isinstance(value, Parameter) else Parameter(value))
        return self

    def extend(self, values) -> "ParameterList":
        for v in values:
            self.append(v)
        return self


class ParameterDict(_NamedStore, Module):
    """A dict of parameters, registered by name."""

    _store = "_parameters"

    def __init__(self, parameters=None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        if key not in self._parameters:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._parameters.pop(key, None)
        self.register_parameter(key, value if isinstance(value, Parameter) else Parameter(value))
