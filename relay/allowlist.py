"""Parse CRCR's allowlist (pytorch/pytorch `.github/allowlist.yml` format). No I/O.

    L1:
      - org/repo                              # dispatch only
    L2:
      - org/repo: "oncall1, oncall2"          # on-call string ...
      - org/repo2: [oncall1, oncall2]         # ... or list
      - org/repo3: {oncalls: [a], events: [pull_request, nightly]}
    L3:
      device-name:                            # PR label ciflow/crcr/device-name
        org/repo4: [oncall1]
    L4:
      - org/repo5: [oncall1]

An entry may opt into event groups with `events` (in its mapping, or as a sibling
key of a one-repo list item); without it an entry gets `pull_request` and `push`.
A repository may appear at one level only. Every error names the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, cast

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

Level = Literal["L1", "L2", "L3", "L4"]
LEVELS: tuple[Level, ...] = ("L1", "L2", "L3", "L4")
DEFAULT_EVENTS = frozenset({"pull_request", "push"})
KNOWN_EVENTS = frozenset(
    {"pull_request", "push", "nightly", "periodic", "check_run", "check_suite"}
)
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class AllowlistError(ValueError):
    def __init__(self, message: str, line: int | None, source: str = "allowlist") -> None:
        where = f"{source}, line {line}" if line is not None else source
        super().__init__(f"{where}: {message}")
        self.line = line


@dataclass(frozen=True)
class AllowlistEntry:
    repo: str
    level: Level
    oncalls: tuple[str, ...] = ()
    device: str | None = None
    events: frozenset[str] = DEFAULT_EVENTS
    line: int = 0

    def wants(self, event_group: str) -> bool:
        return event_group in self.events


@dataclass(frozen=True)
class Allowlist:
    entries: tuple[AllowlistEntry, ...] = ()
    _by_repo: dict[str, AllowlistEntry] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_repo.update({e.repo.lower(): e for e in self.entries})

    def get(self, repo: str) -> AllowlistEntry | None:
        return self._by_repo.get(repo.lower())

    def level_of(self, repo: str) -> Level | None:
        entry = self.get(repo)
        return entry.level if entry else None

    def targets_for(self, event_group: str) -> list[AllowlistEntry]:
        return [e for e in self.entries if e.wants(event_group)]

    def repos_for_device(self, device: str) -> list[AllowlistEntry]:
        return [e for e in self.entries if e.device == device]


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.entries: list[AllowlistEntry] = []
        self.seen: dict[str, AllowlistEntry] = {}

    def error(self, message: str, node: Node | None) -> AllowlistError:
        return AllowlistError(message, node.start_mark.line + 1 if node else None, self.source)

    def scalar(self, node: Node, what: str) -> str:
        if not isinstance(node, ScalarNode) or not str(node.value).strip():
            raise self.error(f"{what} must be a non-empty string", node)
        return str(node.value).strip()

    def oncalls(self, node: Node) -> tuple[str, ...]:
        if isinstance(node, ScalarNode):
            if node.tag == "tag:yaml.org,2002:null":
                return ()
            return tuple(p.strip() for p in str(node.value).split(",") if p.strip())
        if isinstance(node, SequenceNode):
            return tuple(self.scalar(item, "an on-call") for item in node.value)
        raise self.error("on-calls must be a string or a list of strings", node)

    def events(self, node: Node) -> frozenset[str]:
        if not isinstance(node, SequenceNode) or not node.value:
            raise self.error("events must be a non-empty list", node)
        names = [self.scalar(item, "an event") for item in node.value]
        unknown = sorted(set(names) - KNOWN_EVENTS)
        if unknown:
            raise self.error(
                f"unknown event group(s) {unknown}; known: {sorted(KNOWN_EVENTS)}", node
            )
        return frozenset(names)

    def add(
        self,
        repo_node: Node,
        value: Node | None,
        level: str,
        device: str | None,
        events_node: Node | None = None,
    ) -> None:
        repo = self.scalar(repo_node, "a repository")
        if not _REPO.match(repo):
            raise self.error(f"{repo!r} is not owner/repo", repo_node)
        oncalls: tuple[str, ...] = ()
        if isinstance(value, MappingNode):
            for key, sub in value.value:
                name = self.scalar(key, "a key")
                if name == "oncalls":
                    oncalls = self.oncalls(sub)
                elif name == "events":
                    events_node = sub
                else:
                    raise self.error(f"unknown key {name!r} (expected oncalls, events)", key)
        elif value is not None:
            oncalls = self.oncalls(value)
        events = self.events(events_node) if events_node is not None else DEFAULT_EVENTS
        line = repo_node.start_mark.line + 1
        previous = self.seen.get(repo.lower())
        if previous is not None:
            raise self.error(
                f"{repo} is listed at {level} and already at {previous.level}"
                f" (line {previous.line}); a repository may appear at one level only",
                repo_node,
            )
        entry = AllowlistEntry(repo, cast(Level, level), oncalls, device, events, line)
        self.seen[repo.lower()] = entry
        self.entries.append(entry)

    def list_level(self, level: str, node: Node) -> None:
        if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null":
            return
        if not isinstance(node, SequenceNode):
            raise self.error(f"{level} must be a list of repositories", node)
        for item in node.value:
            if isinstance(item, ScalarNode):
                self.add(item, None, level, None)
                continue
            if not isinstance(item, MappingNode):
                raise self.error(
                    f"{level} entries must be owner/repo or owner/repo: on-calls", item
                )
            pairs = [(k, v) for k, v in item.value if getattr(k, "value", None) != "events"]
            events = next((v for k, v in item.value if getattr(k, "value", None) == "events"), None)
            if len(pairs) != 1:
                raise self.error(f"{level} entry must name exactly one repository", item)
            self.add(pairs[0][0], pairs[0][1], level, None, events)

    def device_level(self, node: Node) -> None:
        if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null":
            return
        if not isinstance(node, MappingNode):
            raise self.error("L3 must map a device name to {owner/repo: on-calls}", node)
        for device_node, repos in node.value:
            device = self.scalar(device_node, "an L3 device name")
            if not isinstance(repos, MappingNode):
                raise self.error(f"L3 device {device!r} must map owner/repo to on-calls", repos)
            for repo_node, value in repos.value:
                self.add(repo_node, value, "L3", device)

    def parse(self, text: str) -> Allowlist:
        try:
            root = yaml.compose(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            raise AllowlistError(
                f"not valid YAML: {getattr(exc, 'problem', exc)}", line, self.source
            ) from exc
        if root is None:
            return Allowlist()
        if not isinstance(root, MappingNode):
            raise self.error("the top level must be a mapping with keys L1..L4", root)
        for key, value in root.value:
            level = self.scalar(key, "a level")
            if level not in LEVELS:
                raise self.error(f"unknown level {level!r} (expected L1, L2, L3 or L4)", key)
            if level == "L3":
                self.device_level(value)
            else:
                self.list_level(level, value)
        return Allowlist(tuple(self.entries))


def parse_allowlist(text: str, source: str = "allowlist") -> Allowlist:
    """Parse allowlist YAML text; raise `AllowlistError` naming `source` and the line."""
    return _Parser(source).parse(text)
