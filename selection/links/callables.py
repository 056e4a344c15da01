"""Link kind `callable`: the callables an OpInfo tests when its arguments do not name them. Pure.

As `OpInfo.__post_init__` fills them in: `op` = `torch.<name>` (`_refs.abs` ->
`torch._refs.abs`, `nn.functional.gelu` -> `torch.nn.functional.gelu`), `method_variant` =
`Tensor.<name>`, `inplace_variant` = `Tensor.<name>_`, `operator_variant` = `operator.<name>`
(`Tensor.__<name>__` / `__r<name>__`), and the same for each alias in `aliases`. Each is
resolved to the Python function that defines it, when one does (many are C bindings: those
reach their ATen op through `dispatch`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from selection.links.base import Step, Target
from selection.opinfo_db import DbEntry
from selection.python.resolver import Resolver

KIND = "callable"
_FIELDS = ("op", "method_variant", "inplace_variant", "operator_variant")


def alias_names(entry: DbEntry) -> list[str]:
    node = entry.field_nodes.get("aliases")
    if not isinstance(node, (ast.Tuple, ast.List)):
        return []
    return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def _defaults(name: str, given: set[str]) -> list[tuple[str, str]]:
    """(field, dotted name) of the callables OpInfo derives from a name."""
    out: list[tuple[str, str]] = []
    if "op" not in given:
        out.append(("op", f"torch.{name}"))
    short = name.rsplit(".", 1)[-1]
    if "." not in name:
        if "method_variant" not in given:
            out.append(("method_variant", f"torch.Tensor.{short}"))
        if "inplace_variant" not in given:
            out.append(("inplace_variant", f"torch.Tensor.{short}_"))
        if "operator_variant" not in given:
            out += [
                ("operator_variant", f"torch.Tensor.__{short}__"),
                ("operator_variant", f"torch.Tensor.__r{short}__"),
            ]
    return out


def callable_uses(entry: DbEntry, resolver: Resolver) -> Iterator[tuple[Target, str, Step]]:
    if entry.database != "opinfo":
        return
    given = set(entry.field_nodes) & set(_FIELDS)
    label = f"{entry.info_class}({entry.full_name!r})"
    names = [(entry.name, given)] + [(alias, set()) for alias in alias_names(entry)]
    for name, fields in names:
        for field, dotted in _defaults(name, fields):
            for target in resolver.resolve_dotted(dotted):
                how = f"{field} defaults to {dotted}"
                if target.kind == "aten":
                    how += f", the C binding of aten::{target.name}"
                if name != entry.name:
                    how += f" (alias {name!r})"
                yield target, KIND, Step(entry.path, label, how)
