"""JSON files a command is given (a webhook payload, an event, a plan): a JSON object, or
BadInput (exit 2) in one line naming the file and, for a syntax error, its line:col."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spyre_ci.exit_codes import BadInput


def json_object(data: bytes | str, source: str | Path) -> dict[str, Any]:
    """`data` (the content of `source`) as a JSON object."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise BadInput(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{source}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise BadInput(f"{source}: must be a JSON object, not a {type(value).__name__}")
    return value


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in the file at `path` (BadInput naming it if it cannot be read)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror}") from None
    return json_object(data, path)
