"""Which targets an event goes to: allowlisted repositories plus configured targets. No I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from relay.allowlist import DEFAULT_EVENTS, Allowlist
from relay.config import TargetConfig


@dataclass(frozen=True)
class Target:
    name: str  # owner/repo for GitHub targets
    connection: str  # a key of DISPATCHER_FACTORIES
    level: str | None
    options: dict[str, Any] = field(default_factory=dict)


def targets_for(
    event: str, allowlist: Allowlist, configured: Sequence[TargetConfig]
) -> list[Target]:
    """Every target that wants `event` (an event group such as pull_request or push).

    A configured target that is also allowlisted (e.g. the local target, listed so
    that its callbacks are accepted) is reached through its configured connection
    only, at its allowlisted level.
    """
    own = {t.name.lower() for t in configured}
    found = [
        Target(e.repo, "github", e.level)
        for e in allowlist.targets_for(event)
        if e.repo.lower() not in own
    ]
    for t in configured:
        events = t.options.get("events", sorted(DEFAULT_EVENTS))
        if event in events:
            level = allowlist.level_of(t.name) or t.level
            found.append(Target(t.name, t.connection, level, dict(t.options)))
    return found
