"""The map as a JSON artifact (`spyre-ci/deps` v1; gzip when the name ends in .gz). Torch-free.

Reading validates with `ObservedMap.from_document` and then the optional fields this
recorder adds (row `steps`/`errors`/`seconds`/`cpu_seconds`, document `settings`/`baseline`), so a bad file
is one `BadArtifact` naming the field. Writing goes through a temporary file and a rename.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

from selection.observed import BadDepsDocument, ObservedMap
from selection.outputs.json_text import readable
from selection.sources.deps_store import ROW_EXTRAS


class BadArtifact(ValueError):
    """Unreadable or invalid; the message names the field (or the JSON position)."""


def write_artifact(path: Path, doc: dict[str, Any]) -> None:
    # one pair per line, written by the C encoder (an indented dump of a whole-scope map
    # took 18 s); gzip level 6, zlib's default: level 9 took 12.0 s against 5.3 s of CPU
    # for a 1.3 % smaller whole-scope artifact (docs/benchmarks.md)
    data = readable(doc, depth=2, sort_keys=True).encode() + b"\n"
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def read_artifact(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BadArtifact(f"cannot read: {exc.strerror or exc}") from exc
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise BadArtifact(f"not a gzip or UTF-8 JSON file ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise BadArtifact(f"not JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    validate(doc)
    return doc


def validate(doc: object) -> None:
    try:
        ObservedMap.from_document(doc)
    except BadDepsDocument as exc:
        raise BadArtifact(str(exc)) from exc
    assert isinstance(doc, dict)
    _check_extras(doc)


def _check_extras(doc: dict[str, Any]) -> None:
    if not isinstance(doc.get("settings", {}), dict):
        raise BadArtifact("settings: expected an object")
    seen: set[tuple[str, str, str]] = set()
    for index, row in enumerate(doc["pairs"]):
        pair = (row["database"], row["op"], row["dtype"])
        if pair in seen:
            raise BadArtifact(f"pairs[{index}]: {'/'.join(pair)} is listed twice")
        seen.add(pair)
        for key in ROW_EXTRAS:
            value = row.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise BadArtifact(f"pairs[{index}].{key}: expected a number")
