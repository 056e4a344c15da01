"""native_functions.yaml and derivatives.yaml entries, compared entry by entry. Pure."""

from __future__ import annotations

import re
from typing import Any

import yaml

from selection.devices import dispatch_key_other_device
from selection.model import ChangeKind, NativeChange

try:
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Loader = yaml.SafeLoader


class NativeYamlError(ValueError):
    """The file is not a list of entries as upstream writes it."""


def _op_name(signature: str) -> str:
    return signature.split("(", 1)[0].strip()


def parse_entries(text: str, path: str) -> dict[str, dict[str, Any]]:
    """Entries keyed by overload name (`add.Tensor`) from `func:` (or `name:` in derivatives)."""
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise NativeYamlError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, list):
        raise NativeYamlError(f"{path}: expected a list of entries, got {type(data).__name__}")
    entries: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise NativeYamlError(f"{path}: entry {index} is not a mapping")
        signature = item.get("func") or item.get("name")
        if not isinstance(signature, str):
            continue  # e.g. derivatives' `- name: ...` always has one; tolerate comments-only items
        entries[_op_name(signature)] = item
    return entries


# A schema argument's default: `=0`, `=None`, `=[]`, `=[1, 1]`, `="mean"`.
_DEFAULT = re.compile(r"""=\s*(\[[^\]]*\]|"[^"]*"|'[^']*'|[^,)\s]+)""")

# The field name of a `func:` change that only changed argument defaults, and of one that
# only gave defaults to arguments that had none, of an op without other overloads (every
# existing call passes them, and none can resolve to it anew).
FUNC_DEFAULTS = "func.defaults"
FUNC_DEFAULTS_ADDED = "func.defaults_added"


def _func_field(old: object, new: object) -> str:
    """`func.defaults` when the two schemas differ only in their arguments' defaults
    (`func.defaults_added` when each difference is a default given where there was none)."""
    if (
        isinstance(old, str)
        and isinstance(new, str)
        and _DEFAULT.sub("", old) == _DEFAULT.sub("", new)
    ):
        pairs = zip(_arguments(old), _arguments(new), strict=False)
        if all(before == after or "=" not in before for before, after in pairs):
            return FUNC_DEFAULTS_ADDED
        return FUNC_DEFAULTS
    return "func"


def _arguments(signature: str) -> list[str]:
    """A schema's arguments in order, `*` left out: `add.Tensor(Tensor self, *, Scalar
    alpha=1)` -> [`Tensor self`, `Scalar alpha=1`] (brackets nest: `Tensor(a) self`,
    `int[1] dim=[-2,-1]`; schema defaults hold no quoted commas)."""
    return [a for a in _declared(signature) if a != "*"]


def positional_types(signature: str) -> list[str]:
    """The types of a schema's positional arguments (those before `*`), brackets and `?`
    kept: `div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode)` -> [`Tensor`,
    `Tensor`]."""
    found = []
    for argument in _declared(signature):
        if argument == "*":
            break
        found.append(argument.split()[0])
    return found


def _declared(signature: str) -> list[str]:
    start = signature.find("(")
    arguments: list[str] = []
    depth, current = 0, ""
    for char in signature[start + 1 :] if start >= 0 else "":
        if char in "([":
            depth += 1
        elif char in ")]":
            if depth == 0:
                break
            depth -= 1
        if char == "," and depth == 0:
            arguments.append(current.strip())
            current = ""
        else:
            current += char
    arguments.append(current.strip())
    return [a for a in arguments if a]


def first_changed_default(old: str, new: str) -> int | None:
    """The position of the first argument whose default differs between two schemas that
    differ only in defaults (a default added or removed counts)."""
    for position, (before, after) in enumerate(zip(_arguments(old), _arguments(new), strict=False)):
        if before != after:
            return position
    return None


def argument_name(signature: str, position: int) -> str:
    """The name of a schema's argument at `position` (`_arguments`' order): `dim` of
    `int dim=0`; "" past the last."""
    arguments = _arguments(signature)
    if position >= len(arguments):
        return ""
    words = arguments[position].split("=", 1)[0].split()
    return words[-1] if words else ""


def _per_key(dispatch: object) -> dict[str, object]:
    """`{"CPU, CUDA": fn}` -> `{"CPU": fn, "CUDA": fn}`: compare kernels key by key."""
    if not isinstance(dispatch, dict):
        return {}
    out: dict[str, object] = {}
    for keys, kernel in dispatch.items():
        for key in str(keys).split(","):
            out[key.strip()] = kernel
    return out


def _changed_fields(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], bool]:
    fields: list[str] = []
    other_only = True
    for key in sorted(set(old) | set(new)):
        if old.get(key) == new.get(key):
            continue
        if (
            key == "dispatch"
            and isinstance(old.get(key, {}), dict)
            and isinstance(new.get(key, {}), dict)
        ):
            before, after = _per_key(old.get(key)), _per_key(new.get(key))
            for dispatch in sorted(set(before) | set(after)):
                if before.get(dispatch) != after.get(dispatch):
                    fields.append(f"dispatch.{dispatch}")
                    other_only &= dispatch_key_other_device(dispatch)
        else:
            fields.append(_func_field(old.get(key), new.get(key)) if key == "func" else key)
            other_only = False
    return fields, other_only and bool(fields)


def _overloaded(op: str, entries: dict[str, dict[str, Any]]) -> bool:
    base = op.split(".", 1)[0]
    return any(other != op and other.split(".", 1)[0] == base for other in entries)


def diff_entries(
    source: str, old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]
) -> list[NativeChange]:
    changes: list[NativeChange] = []
    for op in sorted(set(old) | set(new)):
        if op not in old:
            changes.append(NativeChange(source, op, ChangeKind.added))
        elif op not in new:
            changes.append(NativeChange(source, op, ChangeKind.removed))
        elif old[op] != new[op]:  # may still be equal key by key (a dispatch key merged)
            fields, other_only = _changed_fields(old[op], new[op])
            if FUNC_DEFAULTS_ADDED in fields and _overloaded(op, new):
                # a call of another overload may now resolve to this one (`t.sum()` to
                # `sum.dim_IntList` once its `dim` has a default): not without effect
                fields = [FUNC_DEFAULTS if f == FUNC_DEFAULTS_ADDED else f for f in fields]
            if fields:
                old_func, new_func = str(old[op].get("func")), str(new[op].get("func"))
                default_from = (
                    first_changed_default(old_func, new_func) if FUNC_DEFAULTS in fields else None
                )
                name = argument_name(new_func, default_from) if default_from is not None else ""
                changes.append(
                    NativeChange(
                        source,
                        op,
                        ChangeKind.modified,
                        tuple(fields),
                        other_only,
                        default_from,
                        name,
                    )
                )
    return changes
