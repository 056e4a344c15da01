"""Whether a test template computes gradients, or traces what it tests, read from its body. Pure.

A derivative formula (`derivatives.yaml`) only runs when a test computes gradients, so
a derivative change cannot affect a template that never does. The reading is
conservative: an identifier, keyword or string that mentions grad/backward/autograd
(or jvp/vjp) in the template, or in any function or method of the same file that the
template reaches by name, counts as computing gradients -- except a gradient switch set to
a literal False (`requires_grad=False`), which asks for none. A template whose body was
not seen (a release wheel ships no `test/`) takes what selection.layout recorded from a
real tree; one recorded from none is assumed to compute them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from selection.pyast import Symbol

# forward-mode AD too: `fwAD.make_dual`, `dual_level` run the forward formulas
GRADIENT_WORDS = (
    "grad", "backward", "autograd", "jvp", "vjp", "jacobian", "hessian", "dual", "fwad", "forward_ad",
)  # fmt: skip


# Keywords that ask for gradients when true; set to a literal False they ask for none.
GRADIENT_SWITCHES = frozenset({"requires_grad", "create_graph", "retain_graph"})


def _gradients_off(keyword: ast.keyword) -> bool:
    """`op.sample_inputs(device, dtype, requires_grad=False)`: no mention of gradients
    (`test_fake`'s helper builds its samples so, and computes none)."""
    value = keyword.value
    return (
        keyword.arg in GRADIENT_SWITCHES
        and isinstance(value, ast.Constant)
        and value.value is False
    )


def _identifiers(nodes: Iterable[ast.AST]) -> set[str]:
    found: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                found.add(sub.id)
            elif isinstance(sub, ast.Attribute):
                found.add(sub.attr)
            elif isinstance(sub, ast.keyword) and sub.arg and not _gradients_off(sub):
                found.add(sub.arg)
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                found.add(sub.value)
            elif isinstance(sub, (ast.Try, ast.TryStar)):
                found.add(TRY)
    return found


def _mentions_gradients(names: Iterable[str]) -> bool:
    return any(word in name.lower() for name in names for word in GRADIENT_WORDS)


# What makes a template trace the ops it tests instead of (or besides) running them eagerly:
# torch.compile / Dynamo, FakeTensor, make_fx / AOT, export, meta tensors. Past a
# decomposition or meta registration, only tracing runs the registered Python kernel.
TRACE_NAMES = frozenset(
    {
        "compile",
        "_dynamo",
        "dynamo",
        "FakeTensorMode",
        "FakeTensor",
        "fake_tensor",
        "FakeTensorConverter",
        "CrossRefFakeMode",
        "make_fx",
        "aot_function",
        "aot_module",
        "aot_autograd",
        "export",
        "enable_python_dispatcher",
        "meta",
    }
)


# What makes a template see what a failure raises or says: it expects an exception
# (assertRaises, assertRaisesRegex, pytest.raises, an OpInfo's error_inputs), catches one
# (`try`, contextlib.suppress), or is expected to fail.
TRY = "<try>"  # stands for a try statement among a symbol's identifiers
ERROR_WORDS = ("raise", "error_input", "suppress", "expectedfailure", "xfail")


def _mentions_errors(names: Iterable[str]) -> bool:
    return any(name == TRY or any(word in name.lower() for word in ERROR_WORDS) for name in names)


def _mentions_tracing(names: Iterable[str]) -> bool:
    return any(name in TRACE_NAMES for name in names)


def _reading(
    symbol: Symbol, key: str, mentions: Callable[[Iterable[str]], bool]
) -> tuple[bool, frozenset[str]]:
    """Whether the symbol mentions what `mentions` looks for, and the names it uses;
    memoized in the symbol so each symbol's nodes are walked once however many templates
    reach it."""
    cached = symbol._cache.get(key)
    if cached is None:
        names = symbol._cache.get("identifiers")
        if names is None:
            names = symbol._cache["identifiers"] = frozenset(_identifiers(symbol.nodes))
        cached = (mentions(names), names)  # type: ignore[arg-type]
        symbol._cache[key] = cached
    return cached  # type: ignore[return-value]


def callable_index(symbols: dict[str, Symbol]) -> dict[str, list[Symbol]]:
    """The file's functions and methods by the name a call uses: `f`, or `m` for any
    `Class.m` (`self.m` may resolve to a base class defined in the same file)."""
    index: dict[str, list[Symbol]] = {}
    for qualname, symbol in symbols.items():
        if symbol.kind in ("function", "method"):
            index.setdefault(qualname.rsplit(".", 1)[-1], []).append(symbol)
    return index


def _reaches(
    template: Symbol | None,
    callables: dict[str, list[Symbol]],
    key: str,
    mentions: Callable[[Iterable[str]], bool],
) -> bool | None:
    """Whether the template, or a function or method of its file it reaches by name,
    mentions it; None when the body was not seen."""
    if template is None:
        return None
    pending, visited = [template], set[int]()
    while pending:
        symbol = pending.pop()
        if id(symbol) in visited:
            continue
        visited.add(id(symbol))
        found, names = _reading(symbol, key, mentions)
        if found:
            return True
        for name in names:
            pending.extend(callables.get(name, ()))
    return False


def computes_gradients(template: Symbol | None, callables: dict[str, list[Symbol]]) -> bool | None:
    """True or False for a template whose body is `template`; None when it was not seen."""
    return _reaches(template, callables, "gradients", _mentions_gradients)


def handles_errors(template: Symbol | None, callables: dict[str, list[Symbol]]) -> bool | None:
    """Whether the template expects or catches exceptions (assertRaises and its kin, a `try`,
    an OpInfo's error inputs), read like `computes_gradients`; None when it was not seen."""
    return _reaches(template, callables, "errors", _mentions_errors)


def traces(template: Symbol | None, callables: dict[str, list[Symbol]]) -> bool | None:
    """Whether the template compiles, fake-tensors, make_fx's or exports what it tests, or
    runs it on meta tensors (read like `computes_gradients`); None when it was not seen."""
    return _reaches(template, callables, "traces", _mentions_tracing)
