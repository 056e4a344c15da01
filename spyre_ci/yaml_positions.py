"""YAML with the position of every key and item, for errors that name file:line:col.

Shared by the loaders of user-written YAML (relay configuration, test manifests, the
capability file). The document is composed into nodes first so that each key and list item
keeps its position; `locate` then maps a validation error's location (a pydantic `loc`) to
the line and column of the nearest enclosing key that was written.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import yaml

Loc = tuple[str | int, ...]
Positions = dict[Loc, tuple[int, int]]


class YamlSyntaxError(Exception):
    """The text is not YAML; `line`/`column` (1-based) are where the parser stopped."""

    def __init__(self, file: str, line: int, column: int, problem: str) -> None:
        self.file, self.line, self.column, self.problem = file, line, column, problem
        super().__init__(f"{file}:{line}:{column}: malformed YAML: {problem}")


@dataclass
class ParsedYaml:
    data: Any
    positions: Positions = field(default_factory=dict)
    # (loc of the repeated key, line, column): a key written twice in one mapping
    duplicate_keys: list[tuple[Loc, int, int]] = field(default_factory=list)


def format_loc(loc: Sequence[str | int]) -> str:
    """('test_suite_config', 'files', 0, 'path') -> 'test_suite_config.files[0].path'."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def locate(loc: Sequence[Any], positions: Positions) -> tuple[int, int] | None:
    """Line and column of `loc`, else of its nearest written ancestor (a missing field is
    reported where its parent mapping is); None when nothing of it is in the document."""
    probe = tuple(loc)
    while probe and probe not in positions:
        probe = probe[:-1]
    return positions.get(probe) if probe else None


def parse_yaml_positions(text: str, file: str) -> ParsedYaml:
    """Parse `text` (an empty document gives data None); YamlSyntaxError names the line."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlSyntaxError(file, line, column, str(exc.problem or exc.context)) from None
    except yaml.YAMLError as exc:  # e.g. a reader error on a control character
        raise YamlSyntaxError(file, 1, 1, str(exc).splitlines()[0]) from None
    parsed = ParsedYaml(None)
    if node is not None:
        parsed.data = _Walker(parsed, file).build(node, ())
    return parsed


class _Walker:
    """Builds plain data from composed nodes, recording positions as it goes."""

    def __init__(self, parsed: ParsedYaml, file: str) -> None:
        self.parsed, self.file = parsed, file
        self._constructor = yaml.SafeLoader("")

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        mark = node.start_mark
        self.parsed.positions.setdefault(loc, (mark.line + 1, mark.column + 1))
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
            where = (mark.line + 1, mark.column + 1)
            if not isinstance(key, Hashable):  # e.g. `? [a, b]`: PyYAML refuses it too
                raise YamlSyntaxError(self.file, *where, "a mapping key must be a scalar")
            # (keys are str in the documents read here; a bool or int key is still recorded)
            key_loc: Loc = (*loc, cast(str | int, key))
            if key in result:
                self.parsed.duplicate_keys.append((key_loc, *where))
            self.parsed.positions[key_loc] = where
            result[key] = self.build(value_node, key_loc)
        return result
