"""Link kind `derivative`: the ATen ops a backward formula of derivatives.yaml calls. Pure.

`- name: gelu(Tensor self, *, str approximate='none')` with `self: gelu_backward(grad, self,
approximate)`: running gelu under autograd runs gelu_backward. Only names that are ATen ops
count (FunctionsManual.cpp helpers are C++: the C++ link kind maps those). These links only
matter when gradients are computed: the triage treats a chain through them as gradient-only.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from selection.links.base import Step, Target

KIND = "derivative"
_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_NOT_FORMULAS = frozenset({"name", "dispatch", "output_differentiability", "result_info"})

Derived = dict[str, list[tuple[Target, Step]]]  # aten op (base) -> ops its backward calls


def formula_calls(entry: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    """(called name, the formula's field, the arguments it passes) for each call in an
    entry's formulas.

    Formulas may sit under `dispatch: {Default: {...}, AutogradNestedTensor: {...}}`: each
    dispatch key's formulas count (field named `<key>.<input>`), but a nested tensor's
    (`OTHER_LAYOUT_KEYS`: no reused test builds one). A call to `foo_symint` is
    a call to the op `foo` (the SymInt overload the C++ API exposes under that name; not
    `foo_out`, whose C++ form takes `out` first, so schema positions would not apply). The
    arguments count the receiver of a method call (`grad.slice_symint(dim, start, end,
    step)` passes 5): C++ has no keywords, so a call omits exactly the trailing arguments
    (None where the parentheses do not close).
    """
    found: list[tuple[str, str, int | None]] = []
    for field, formula in _formulas(entry):
        for match in _CALL.finditer(formula):
            arguments = _arguments_passed(formula, match.end())
            if arguments is not None and formula[match.start() - 1 : match.start()] == ".":
                arguments += 1
            found.append((_op_name(match.group(1)), field, arguments))
    return found


_OPEN, _CLOSE = "([{", ")]}"


# Text whose commas the count cannot tell from argument separators (template arguments or
# a comparison, string literals, comments): the count is not known, the call may omit.
_UNCOUNTABLE = ("<", '"', "'", "/*", "//")


def _arguments_passed(formula: str, start: int) -> int | None:
    """The number of arguments of the call whose `(` ends just before `start`."""
    depth, commas, empty = 0, 0, True
    for at, char in enumerate(formula[start:], start):
        if formula.startswith(_UNCOUNTABLE, at):
            return None
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            if depth == 0:
                return 0 if empty else commas + 1
            depth -= 1
        elif char == "," and depth == 0:
            commas += 1
        if not char.isspace():
            empty = False
    return None


# Dispatch keys whose formulas run only on another kind of tensor: a nested tensor's
# backward (`AutogradNestedTensor`), which no reused test's samples build.
OTHER_LAYOUT_KEYS = frozenset({"AutogradNestedTensor"})


def _formulas(entry: dict[str, Any]) -> list[tuple[str, str]]:
    formulas: list[tuple[str, str]] = []
    for field, value in entry.items():
        if field == "dispatch" and isinstance(value, dict):
            for key, nested in value.items():
                if isinstance(nested, dict) and key not in OTHER_LAYOUT_KEYS:
                    formulas.extend(
                        (f"{key}.{name}", text)
                        for name, text in nested.items()
                        if isinstance(text, str) and name not in _NOT_FORMULAS
                    )
        elif field not in _NOT_FORMULAS and isinstance(value, str):
            formulas.append((field, value))
    return formulas


def _op_name(called: str) -> str:
    return called.removesuffix("_symint")


def derivative_uses(
    entries: dict[str, dict[str, Any]], aten_ops: Collection[str], path: str
) -> Derived:
    """Per op (base name), the ops its backward formulas call, each once: the step of its
    call with the fewest arguments, over every overload's formulas (a schema default
    reaches through the edge only where some call omits it)."""
    calls: dict[str, dict[str, Step]] = {}
    for overload, entry in entries.items():
        base = overload.split(".", 1)[0]
        for name, field, arguments in formula_calls(entry):
            if name not in aten_ops or name == base:
                continue
            known = calls.setdefault(base, {}).get(name)
            if known is not None and not _fewer(arguments, known.arguments):
                continue
            how = f"{field}: calls {name} in its backward formula"
            calls[base][name] = Step(path, overload, how, arguments)
    return {
        base: [(Target.aten(name), step) for name, step in called.items()]
        for base, called in calls.items()
    }


def _fewer(arguments: int | None, than: int | None) -> bool:
    """Whether a call passing `arguments` omits more than one passing `than` (unknown: the
    most it could omit)."""
    if than is None:
        return False
    return arguments is None or arguments < than
