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
    """(called name, the formula's field) for each call in an entry's formulas."""
    found: list[tuple[str, str]] = []
    for field, formula in entry.items():
        if field in _NOT_FORMULAS or not isinstance(formula, str):
            continue
        for name in _CALL.findall(formula):
            found.append((name, field))
    return found


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
