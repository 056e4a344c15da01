"""JSON text that people can read and diff, written at the speed of the C encoder. Pure.

`json.dumps(doc, indent=...)` runs the pure-Python encoder: a release upgrade's
selection.json (tens of thousands of tests with their causes) took seconds. Here only the
outer `depth` levels are laid out one member per line; anything deeper is one compact line
written by the C encoder, so a list of tests reads (and greps, and diffs) as one test per line.
"""

from __future__ import annotations

import json
from typing import Any


def readable(value: Any, depth: int = 2, sort_keys: bool = False) -> str:
    """`value` as JSON: dicts, lists and tuples within `depth` levels one member per line,
    indented by one space a level; what lies deeper compact, on one line. `sort_keys` as
    json's. The keys of the laid-out dicts must be strings (json would turn `True` into
    "true", which `str` does not)."""
    return _laid_out(value, depth, json.JSONEncoder(sort_keys=sort_keys), "")


def _laid_out(value: Any, depth: int, encoder: json.JSONEncoder, indent: str) -> str:
    if depth <= 0 or not isinstance(value, dict | list | tuple) or not value:
        return encoder.encode(value)
    inner = indent + " "
    if isinstance(value, dict):
        keys = list(value)
        if not all(isinstance(key, str) for key in keys):
            raise TypeError(f"keys must be str, not {sorted({type(k).__name__ for k in keys})}")
        members = [
            f"{inner}{encoder.encode(key)}: {_laid_out(value[key], depth - 1, encoder, inner)}"
            for key in (sorted(keys) if encoder.sort_keys else keys)
        ]
        return "{\n" + ",\n".join(members) + f"\n{indent}}}"
    members = [f"{inner}{_laid_out(item, depth - 1, encoder, inner)}" for item in value]
    return "[\n" + ",\n".join(members) + f"\n{indent}]"
