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


def formula_calls(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """(called name, the formula's field) for each call in an entry's formulas.

    Formulas may sit under `dispatch: {Default: {...}, AutogradNestedTensor: {...}}`: each
    dispatch key's formulas count (field named `<key>.<input>`). A call to `foo_symint` is
    a call to the op `foo` (the SymInt overload the C++ API exposes under that name).
    """
    found: list[tuple[str, str]] = []
    for field, formula in _formulas(entry):
        for name in _CALL.findall(formula):
            found.append((_op_name(name), field))
    return found


def _formulas(entry: dict[str, Any]) -> list[tuple[str, str]]:
    formulas: list[tuple[str, str]] = []
    for field, value in entry.items():
        if field == "dispatch" and isinstance(value, dict):
            for key, nested in value.items():
                if isinstance(nested, dict):
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
    found: Derived = {}
    for overload, entry in entries.items():
        seen: set[str] = set()
        for name, field in formula_calls(entry):
            if name not in aten_ops or name in seen or name == overload.split(".", 1)[0]:
                continue
            seen.add(name)
            step = Step(path, overload, f"{field}: calls {name} in its backward formula")
            found.setdefault(overload.split(".", 1)[0], []).append((Target.aten(name), step))
    return found
