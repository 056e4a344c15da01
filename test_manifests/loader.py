"""Load a manifest from YAML, reporting every error with file, line and field.

YAML is composed into nodes first so that each key and list item keeps its position
(`spyre_ci.yaml_positions`); pydantic's error locations are then mapped back to them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from spyre_ci.yaml_positions import YamlSyntaxError, format_loc, locate, parse_yaml_positions
from test_manifests.inputs import TAG_PREFIX
from test_manifests.model import Loc, Manifest


@dataclass(frozen=True)
class ManifestIssue:
    """One problem in a manifest, located precisely (line and column None: the problem is
    the file as a whole, e.g. it cannot be read; no location is better than a false one)."""

    file: str
    line: int | None
    column: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}:{self.column}"
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class ManifestError(Exception):
    """A manifest could not be loaded or applied; `issues` names file, line and field."""

    def __init__(self, issues: Iterable[ManifestIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


def parse_yaml(text: str, file: str) -> tuple[Any, dict[Loc, tuple[int, int]]]:
    """Parse YAML text into data plus positions; ManifestError on syntax errors."""
    try:
        parsed = parse_yaml_positions(text, file)
    except YamlSyntaxError as exc:
        raise ManifestError(
            [ManifestIssue(file, exc.line, exc.column, "", f"malformed YAML: {exc.problem}")]
        ) from exc
    if parsed.data is None:
        raise ManifestError([ManifestIssue(file, 1, 1, "", "empty manifest")])
    if parsed.duplicate_keys:
        raise ManifestError(
            ManifestIssue(file, line, column, format_loc(loc), "duplicate key")
            for loc, line, column in parsed.duplicate_keys
        )
    return parsed.data, parsed.positions


def issue_for(error: Any, file: str, positions: dict[Loc, tuple[int, int]]) -> ManifestIssue:
    """A pydantic error located in the YAML document (file, line, column, field)."""
    loc: Loc = tuple(part for part in error["loc"] if not str(part).startswith(TAG_PREFIX))
    line, column = locate(loc, positions) or (1, 1)
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = f"unknown key {loc[-1]!r}"
    elif error["type"] == "missing":
        message = f"missing required field {loc[-1]!r}"
    return ManifestIssue(file, line, column, format_loc(loc), message)


def manifest_from_text(text: str, file: str = "<memory>") -> Manifest:
    """Validate manifest YAML text; ManifestError lists every problem with its position."""
    data, positions = parse_yaml(text, file)
    if not isinstance(data, dict):
        raise ManifestError([ManifestIssue(file, 1, 1, "", "a manifest must be a mapping")])
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(issue_for(e, file, positions) for e in exc.errors()) from exc
    manifest.attach_source(file, positions)
    return manifest


def load_manifest(path: str | Path) -> Manifest:
    """Load and validate one manifest file."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(
            [ManifestIssue(file, None, None, "", f"cannot read: {exc.strerror or exc}")]
        ) from exc
    return manifest_from_text(text, file)


def load_manifests(paths: Iterable[str | Path]) -> list[Manifest]:
    """Load several manifests, collecting the issues of all of them before failing."""
    manifests: list[Manifest] = []
    issues: list[ManifestIssue] = []
    for path in paths:
        try:
            manifests.append(load_manifest(path))
        except ManifestError as exc:
            issues.extend(exc.issues)
    if issues:
        raise ManifestError(issues)
    return manifests
