"""Who a verified caller is to us: an allowlisted repository or a configured target.

The allowlist names GitHub repositories; configured ``targets`` (the built-in
local target, for one) report through the same callback with their own name as
the OIDC ``repository`` claim and the level given in their configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relay.state import RelayState

LEVEL_ORDER = {"L1": 1, "L2": 2, "L3": 3, "L4": 4}


@dataclass(frozen=True)
class Downstream:
    repo: str  # as the allowlist or the configuration spells it
    level: str
    device: str | None = None


def downstream_of(state: RelayState, repo: str) -> Downstream | None:
    entry = state.allowlist.current().get(repo)
    if entry is not None:
        return Downstream(entry.repo, entry.level, entry.device)
    for target in state.config.targets:
        if target.name.lower() == repo.lower():
            return Downstream(target.name, target.level)
    return None
