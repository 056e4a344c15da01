"""Load a manifest from YAML, reporting every error with file, line and field.

YAML is composed into nodes first so that each key and list item keeps its position;
pydantic's error locations are then mapped back to those positions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from test_manifests.inputs import TAG_PREFIX
from test_manifests.model import Loc, Manifest


@dataclass(frozen=True)
class ManifestIssue:
    """One problem in a manifest, located precisely."""

    file: str
    line: int
    column: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class ManifestError(Exception):
    """A manifest could not be loaded or applied; `issues` names file, line and field."""

    def __init__(self, issues: Iterable[ManifestIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


def format_loc(loc: Loc) -> str:
    """('test_suite_config', 'files', 0, 'path') -> 'test_suite_config.files[0].path'."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


class _Positions:
    """Walks composed YAML nodes, building plain data and a loc -> (line, column) map."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.positions: dict[Loc, tuple[int, int]] = {}
        self.issues: list[ManifestIssue] = []
        self._constructor = yaml.SafeLoader("")

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        self.positions.setdefault(loc, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, loc)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*loc, i)) for i, item in enumerate(node.value)]
        return self._constructor.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, loc: Loc) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self._constructor.construct_object(key_node, deep=True)
            mark = key_node.start_mark
            if key in result:
                self.issues.append(
                    ManifestIssue(
                        self.file,
                        mark.line + 1,
                        mark.column + 1,
                        format_loc((*loc, key)),
                        "duplicate key",
                    )
                )
            self.positions[(*loc, key)] = (mark.line + 1, mark.column + 1)
            result[key] = self.build(value_node, (*loc, key))
        return result


def parse_yaml(text: str, file: str) -> tuple[Any, dict[Loc, tuple[int, int]]]:
    """Parse YAML text into data plus positions; ManifestError on syntax errors."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise ManifestError(
            [ManifestIssue(file, line, column, "", f"malformed YAML: {exc.problem}")]
        ) from exc
    if node is None:
        raise ManifestError([ManifestIssue(file, 1, 1, "", "empty manifest")])
    walker = _Positions(file)
    data = walker.build(node, ())
    if walker.issues:
        raise ManifestError(walker.issues)
    return data, walker.positions


def issue_for(error: Any, file: str, positions: dict[Loc, tuple[int, int]]) -> ManifestIssue:
    """A pydantic error located in the YAML document (file, line, column, field)."""
    loc: Loc = tuple(part for part in error["loc"] if not str(part).startswith(TAG_PREFIX))
    probe = loc
    while probe and probe not in positions:
        probe = probe[:-1]
    line, column = positions.get(probe, (1, 1))
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
        raise ManifestError([ManifestIssue(file, 0, 0, "", f"cannot read: {exc}")]) from exc
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
