"""Which of NumPy's functions fastgraph differentiates: the table ``docs/numpy-coverage.md``.

Every public function and ufunc of NumPy's namespace is in one of three groups:

* **differentiable**: ``fastgraph.numpy.X`` is a fastgraph operation (read from the registry),
  and NumPy's own ``np.X(tensor)`` reaches it too (except where the table says otherwise: NumPy
  dispatches creation functions such as ``np.full`` on ``like=`` only);
* **no gradient by nature** (:data:`NO_GRADIENT`): the result is integer, boolean, indices,
  shapes, dtypes or strings, or does not depend on the input's values; NumPy's own result comes
  back for Tensors too;
* **refused** (:data:`REFUSED`): a floating result no fastgraph operation computes; on a Tensor
  that requires grad (grad mode on) it raises ``TypeError`` (``RuntimeError`` for conversions)
  naming the function, rather than return a result whose gradient would silently be zero.

Types, constants, submodules, configuration and file functions are listed apart
(:data:`NOT_ARRAY_FUNCTIONS`).  ``python -m fastgraph.numpy_coverage --write`` regenerates the
page; a test walks NumPy's namespace, checks each name is in exactly one group and that the page
is current.

    >>> from fastgraph.numpy_coverage import group_of
    >>> group_of("sort"), group_of("argsort"), group_of("histogram")
    ('differentiable', 'no gradient', 'refused')
"""
from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

import numpy as np

from . import numpy as _fnp
from .eager.numpy_protocols import FUNCTIONS, UFUNCS


def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split())


#: results without a gradient by their nature, by why
NO_GRADIENT = {
    "boolean or integer results": _names(
        "all any allclose array_equal array_equiv isclose isin in1d iscomplex isreal isneginf "
        "isposinf isinf isnan isnat signbit logical_xor count_nonzero bincount digitize "
        "bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_invert bitwise_count invert "
        "bitwise_left_shift bitwise_right_shift left_shift right_shift gcd lcm packbits "
        "unpackbits"),
    "indices": _names(
        "argmax argmin nanargmax nanargmin argsort argpartition lexsort argwhere nonzero "
        "flatnonzero searchsorted ravel_multi_index unravel_index diag_indices_from "
        "tril_indices_from triu_indices_from"),
    "shapes, dtypes, flags and memory": _names(
        "shape ndim size broadcast_shapes can_cast common_type min_scalar_type mintypecode "
        "promote_types result_type isdtype issubdtype iscomplexobj isrealobj isfortran isscalar "
        "iterable may_share_memory shares_memory typename einsum_path"),
    "values that do not depend on the input's values": _names(
        "zeros_like ones_like empty_like"),
    "sizes, counts and windows": _names(
        "zeros ones empty eye identity tri arange bartlett blackman hamming hanning kaiser "
        "indices diag_indices tril_indices triu_indices mask_indices"),
    "strings, dates and business days": _names(
        "array2string array_repr array_str base_repr binary_repr format_float_positional "
        "format_float_scientific datetime_as_string datetime_data busday_count busday_offset "
        "is_busday"),
}

#: floating results without a differentiable operation: refused on Tensors that require grad
REFUSED = {
    "conversions to plain arrays (as PyTorch's)": _names(
        "asanyarray ascontiguousarray asfortranarray asarray_chkfinite asmatrix "
        "require from_dlpack"),
    "writes into an array in place": _names(
        "copyto place put put_along_axis putmask fill_diagonal"),
    "sorting complex values (lexicographic order)": _names("sort_complex"),
    "set operations and histograms (piecewise constant in the values, or ties)": _names(
        "unique unique_all unique_counts unique_inverse unique_values intersect1d setdiff1d "
        "setxor1d union1d histogram histogram2d histogramdd histogram_bin_edges"),
    "polynomial fitting and roots (least squares and eigenvalues)": _names(
        "poly polydiv polyfit roots"),
    "calls of a Python function over the values": _names(
        "apply_along_axis apply_over_axes piecewise fromfunction frompyfunc nested_iters"),
    "other": _names("i0 insert ix_"),
}

#: NumPy functions written in NumPy whose every step on a Tensor is a fastgraph operation: they
#: are differentiable as NumPy wrote them
COMPOSED = _names("fix row_stack trapz")    # trapz: NumPy 2.3's deprecated trapezoid

#: not functions of array values
NOT_ARRAY_FUNCTIONS = {
    "configuration and information": _names(
        "get_include get_printoptions getbufsize geterr geterrcall info printoptions "
        "set_printoptions setbufsize seterr seterrcall show_config show_runtime test"),
    "the matrix class's block constructor (strings and nested lists)": _names("bmat"),
    "files and buffers": _names(
        "load save savetxt savez savez_compressed loadtxt genfromtxt fromfile frombuffer "
        "fromiter fromregex fromstring"),
}

GROUPS = ("differentiable", "no gradient", "refused", "not an array function")


def public_names() -> list[str]:
    """NumPy's public names (no leading underscore), sorted."""
    return sorted(n for n in dir(np) if not n.startswith("_"))


def _is_function(value) -> bool:
    return isinstance(value, (np.ufunc, types.FunctionType, types.BuiltinFunctionType)) or (
        callable(value) and not isinstance(value, type) and hasattr(value, "__wrapped__"))


def _listed() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for group, table in (("no gradient", NO_GRADIENT), ("refused", REFUSED),
                         ("not an array function", NOT_ARRAY_FUNCTIONS)):
        for why, names in table.items():
            for name in names:
                if name in out:
                    raise ValueError(f"np.{name} is listed twice ({out[name][1]!r} and {why!r})")
                out[name] = (group, why)
    return out


def routes_numpy_call(name: str) -> bool:
    """Whether NumPy's own ``np.<name>(tensor)`` reaches a differentiable operation."""
    value = getattr(np, name)
    if isinstance(value, np.ufunc):
        return value.__name__ in UFUNCS
    if name in COMPOSED:
        return True
    # (NumPy's creation functions, np.full, dispatch on like= only: not on their arguments)
    return value in FUNCTIONS and hasattr(value, "_implementation")


def classify() -> dict[str, tuple[str, str]]:
    """``{name: (group, why)}`` for each of NumPy's public names; ``group`` is one of
    :data:`GROUPS`.  A function both differentiable and listed raises (the list is stale)."""
    listed = _listed()
    out: dict[str, tuple[str, str]] = {}
    for name in public_names():
        value = getattr(np, name)
        fg_value = getattr(_fnp, name, None)
        differentiable = (name in _fnp.__all__ and fg_value is not value and callable(fg_value)
                          ) or (_is_function(value) and routes_numpy_call(name))
        if differentiable:
            if name in listed:
                raise ValueError(f"np.{name} is differentiable now: remove it from "
                                 f"fastgraph.numpy_coverage ({listed[name][1]!r})")
            out[name] = ("differentiable", "" if routes_numpy_call(name)
                         or not _is_function(value) else "as fastgraph.numpy." + name)
        elif name in listed:
            out[name] = listed[name]
        elif isinstance(value, types.ModuleType):
            out[name] = ("not an array function", "submodules")
        elif isinstance(value, type):
            out[name] = ("not an array function", "types and dtypes")
        elif not _is_function(value):
            out[name] = ("not an array function", "constants and index helpers")
        else:
            out[name] = ("", "unclassified")
    return out


def group_of(name: str) -> str:
    """The group of ``np.<name>``: one of :data:`GROUPS` (``""`` when unclassified)."""
    return classify()[name][0]


def page() -> str:
    """The Markdown of ``docs/numpy-coverage.md``."""
    table = classify()
    by_group: dict[str, dict[str, list[str]]] = {g: {} for g in GROUPS}
    for name, (group, why) in table.items():
        by_group.setdefault(group, {}).setdefault(why, []).append(name)
    counts = {g: sum(map(len, by_group[g].values())) for g in GROUPS}
    lines = [
        "# NumPy coverage of `fastgraph.numpy`",
        "",
        "<!-- generated by `python -m fastgraph.numpy_coverage --write`; a test checks it is "
        "current -->",
        "",
        f"Generated for NumPy {np.__version__}. Each public name of NumPy's namespace is in one "
        "group:",
        "",
        f"* **differentiable** ({counts['differentiable']}): `fastgraph.numpy.X` is a "
        "fastgraph operation, differentiable eagerly, in static graphs and in `fg.function`; "
        "NumPy's own `np.X(tensor)` reaches the same operation (except where marked).",
        f"* **no gradient by nature** ({counts['no gradient']}): integer, boolean, index, shape "
        "or string results, or results that do not depend on the input's values: NumPy's own "
        "result comes back for Tensors.",
        f"* **refused** ({counts['refused']}): a floating result no fastgraph operation "
        "computes. On a Tensor that requires grad it raises `TypeError` naming the function "
        "(conversions raise `RuntimeError`, as PyTorch's do) instead of returning a result "
        "whose gradient would silently be zero; on `.detach()` values or inside `fg.no_grad()` "
        "it runs as NumPy.",
        f"* **not an array function** ({counts['not an array function']}): types, constants, "
        "submodules, configuration, files.",
        "",
        "`fastgraph.numpy.linalg`, `.fft` and `.random` have pages of their own in the guide.",
        "",
    ]
    titles = {"differentiable": "Differentiable", "no gradient": "No gradient by nature",
              "refused": "Refused (would lose a gradient)",
              "not an array function": "Not array functions"}
    for group in GROUPS:
        lines += [f"## {titles[group]}", ""]
        if group == "differentiable":
            names = sorted(by_group[group].get("", []))
            lines += [", ".join(f"`{n}`" for n in names), ""]
            marked = sorted(n for why, ns in by_group[group].items() if why for n in ns)
            if marked:
                lines += ["Differentiable as `fastgraph.numpy.X` only (NumPy does not dispatch "
                          "these on their arguments): " + ", ".join(f"`{n}`" for n in marked)
                          + ".", ""]
            continue
        for why in sorted(by_group[group]):
            names = sorted(by_group[group][why])
            lines += [f"* {why}: " + ", ".join(f"`{n}`" for n in names)]
        lines.append("")
    return "\n".join(lines)


PAGE = Path(__file__).resolve().parents[2] / "docs" / "numpy-coverage.md"


def main(argv=None) -> int:
    """``python -m fastgraph.numpy_coverage [--write PATH]``: print or write the page."""
    parser = argparse.ArgumentParser(prog="python -m fastgraph.numpy_coverage",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", nargs="?", const=str(PAGE), default=None, metavar="PATH",
                        help=f"write the page (default {PAGE.name} in the docs folder)")
    args = parser.parse_args(argv)
    unclassified = sorted(n for n, (g, _) in classify().items() if not g)
    if unclassified:
        print("unclassified NumPy names: " + " ".join(unclassified), file=sys.stderr)
        return 1
    text = page()
    if args.write:
        Path(args.write).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
