"""Link kind `dispatch`: the ATen ops an OpInfo/ModuleInfo entry dispatches to, by name. Pure.

From the entry: `aten_name` (default: the name's last component, `nn.functional.gelu` ->
`gelu`), `decomp_aten_name`, `aten_backward_name`, each alias, and the in-place form
(`add_`) of each; `.out` and other overloads share the base name. From the device's
capability file: the ATen ops a supported op lowers to (`square` -> `pow`). Only names that
are ATen ops (native_functions.yaml entries) count.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Mapping

from selection.links.base import Step, Target
from selection.links.callables import alias_names
from selection.opinfo_db import DbEntry

KIND = "dispatch"
_NAME_FIELDS = ("aten_name", "decomp_aten_name", "aten_backward_name")


def _field_name(entry: DbEntry, field: str) -> str | None:
    node = entry.field_nodes.get(field)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def dispatched_names(
    entry: DbEntry, lowered_to: Mapping[str, Collection[str]]
) -> list[tuple[str, str]]:
    """(aten base name, why) for one entry."""
    found: list[tuple[str, str]] = []
    short = entry.name.rsplit(".", 1)[-1]
    found.append((_field_name(entry, "aten_name") or short, "aten_name"))
    for field in _NAME_FIELDS[1:]:
        value = _field_name(entry, field)
        if value:
            found.append((value, field))
    found += [(alias, f"alias {alias!r}") for alias in alias_names(entry)]
    found += [(aten, "the capability file's aten list") for aten in lowered_to.get(entry.name, ())]
    found += [(name + "_", f"in-place form of {why}") for name, why in list(found)]
    return found


def dispatch_uses(
    entry: DbEntry,
    aten_ops: Collection[str],
    lowered_to: Mapping[str, Collection[str]],
) -> Iterator[tuple[Target, str, Step]]:
    label = f"{entry.info_class}({entry.full_name!r})"
    seen: set[str] = set()
    for name, why in dispatched_names(entry, lowered_to):
        if name in aten_ops and name not in seen:
            seen.add(name)
            yield (
                Target.aten(name),
                KIND,
                Step(entry.path, label, f"dispatches to aten::{name} ({why})"),
            )
