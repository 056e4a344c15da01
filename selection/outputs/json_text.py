"""JSON text that people can read and diff, written at the speed of the C encoder. Pure.

`json.dumps(doc, indent=...)` runs the pure-Python encoder: a release upgrade's
selection.json (tens of thousands of tests with their causes) took seconds. Here only the
outer `depth` levels are laid out one member per line; anything deeper is one compact line
written by the C encoder, so a list of tests reads (and greps, and diffs) as one test per line.
"""

from __future__ import annotations

import json
from typing import Any


def readable(value: Any, depth: int = 2, sort_keys: bool = False, _indent: str = "") -> str:
    """`value` as JSON: dicts and lists within `depth` levels one member per line, indented
    by one space a level; what lies deeper compact, on one line. `sort_keys` as json's."""
    if depth <= 0 or not isinstance(value, dict | list) or not value:
        return json.dumps(value, sort_keys=sort_keys)
    inner = _indent + " "
    if isinstance(value, dict):
        keys = sorted(value) if sort_keys else value
        members = [
            f"{inner}{json.dumps(str(key))}: {readable(value[key], depth - 1, sort_keys, inner)}"
            for key in keys
        ]
        return "{\n" + ",\n".join(members) + f"\n{_indent}}}"
    members = [f"{inner}{readable(item, depth - 1, sort_keys, inner)}" for item in value]
    return "[\n" + ",\n".join(members) + f"\n{_indent}]"
