"""Where each setting of the relay configuration came from, for one-line errors.

A setting comes from the YAML file (then an error names `file:line:col` and the key) or
from a `SPYRE_RELAY_*` variable (then it names the variable). `ConfigSources.describe`
turns pydantic's errors into such lines, one per error:

    relay.yaml:4:5: targets[local/spyre-ci].connection: unknown connection 'locl' (known: github, local)
    SPYRE_RELAY_WORKER__CONCURRENCY: worker.concurrency: Input should be a valid integer, ...
    relay.yaml: webhook_secrets: required (YAML key webhook_secrets or variable SPYRE_RELAY_WEBHOOK_SECRETS)

No I/O.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from spyre_ci.yaml_positions import Loc, Positions, locate

ENV_PREFIX = "SPYRE_RELAY_"


def variable_for(loc: Sequence[Any]) -> str | None:
    """The variable that sets `loc` (None inside a list: variables cannot reach items)."""
    if not loc or not all(isinstance(part, str) for part in loc):
        return None
    return ENV_PREFIX + "__".join(str(part) for part in loc).upper()


@dataclass
class ConfigSources:
    path: Path | None = None
    positions: Positions = field(default_factory=dict)
    variables: dict[Loc, str] = field(default_factory=dict)  # loc -> the variable that set it
    data: Mapping[str, Any] = field(default_factory=dict)  # the merged raw settings

    def where(self, loc: Sequence[Any]) -> str:
        """The variable that set `loc` (or an enclosing setting), else file:line:col of the
        nearest written key, else the file (a required setting written nowhere)."""
        for end in range(len(loc), 0, -1):
            variable = self.variables.get(tuple(loc[:end]))
            if variable is not None:
                return variable
        if self.path is None:
            return "environment"
        found = locate(loc, self.positions)
        return f"{self.path}:{found[0]}:{found[1]}" if found else str(self.path)

    def field_name(self, loc: Sequence[Any]) -> str:
        """`targets[local/spyre-ci].options.workdr`: list items of `targets` by their name."""
        text = ""
        node: Any = self.data
        for part in loc:
            node = _child(node, part)
            if isinstance(part, int):
                name = node.get("name") if isinstance(node, Mapping) else None
                text += f"[{name}]" if isinstance(name, str) and name else f"[{part}]"
            else:
                text += f".{part}" if text else str(part)
        return text

    def describe(
        self, errors: Iterable[Mapping[str, Any]], prefix: Loc = (), model: type | None = None
    ) -> str:
        """One line per pydantic error; `prefix` is where the validated part sits (e.g.
        ("extra", "dashboard")) and `model` its model (for the known keys)."""
        lines = []
        for error in errors:
            loc = (*prefix, *error["loc"])
            message = _message(error, loc, model, error["loc"])
            name = self.field_name(loc)
            lines.append(
                f"{self.where(loc)}: {name}: {message}" if name else f"{self.where(loc)}: {message}"
            )
        return "\n".join(lines)


def _child(node: Any, part: Any) -> Any:
    if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
        return node[part]
    if isinstance(node, Mapping):
        return node.get(part)
    return None


def _message(
    error: Mapping[str, Any], loc: Loc, model: type | None, model_loc: Sequence[Any]
) -> str:
    kind, message = error["type"], str(error["msg"])
    if kind == "missing":
        variable = variable_for(loc)
        also = f" or variable {variable}" if variable else ""
        return f"required (YAML key {'.'.join(str(p) for p in loc)}{also})"
    if kind == "extra_forbidden":
        known = known_keys(model, model_loc[:-1]) if model is not None else []
        return f"unknown key {loc[-1]!r}" + (f" (known: {', '.join(known)})" if known else "")
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind in ("literal_error", "enum"):  # YAML reads `OFF` as false: show what it read
        message += f" (got {error.get('input')!r})"
    return message


def known_keys(model: type, loc: Sequence[Any]) -> list[str]:
    """The field names of the model found at `loc` inside `model` ([] if none is)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            current = _item_type(current)
        elif _is_model(current) and part in current.model_fields:
            current = _unwrap_optional(current.model_fields[part].annotation)
        else:
            return []
    return sorted(current.model_fields) if _is_model(current) else []


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _unwrap_optional(kind: Any) -> Any:
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        return args[0] if len(args) == 1 else kind
    return kind


def _item_type(kind: Any) -> Any:
    args = typing.get_args(_unwrap_optional(kind))
    return _unwrap_optional(args[0]) if args else None
