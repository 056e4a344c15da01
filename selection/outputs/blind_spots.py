"""Blind spots as the reports show them: the run's own, then the changed symbols' grouped by
reason. Pure.

A release upgrade has hundreds of changed symbols nothing links statically ("inside
torch/_dynamo, linked only by the recording"), each covered by a canary; listed flat they
hide the run's own blind spots (no test/ tree, no C++) and the few reasons among them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# `path: name modified: why` (the change's label, then the reason)
_CHANGE_SPOT = re.compile(r"^(?P<what>\S+: .*? (?:modified|added|removed))(?:: (?P<why>.*))?$")
EXAMPLES = 5  # changes named per reason


@dataclass
class SpotGroup:
    reason: str
    changes: list[str] = field(default_factory=list)

    @property
    def examples(self) -> list[str]:
        return self.changes[:EXAMPLES]

    @property
    def more(self) -> int:
        return max(0, len(self.changes) - EXAMPLES)


def is_change_spot(spot: str) -> bool:
    """A blind spot of one changed symbol (`path: name modified: linked to no reused test
    statically`), covered by a canary; the others are the run's own (no test/ tree, no C++)."""
    return bool(_CHANGE_SPOT.match(spot))


def run_spots(spots: list[str]) -> list[str]:
    return [s for s in spots if not is_change_spot(s)]


def change_spot_groups(spots: list[str]) -> list[SpotGroup]:
    """The changed symbols' blind spots by reason (the reason without the path and symbol it
    names: "inside torch/_dynamo, linked only by the recording"), largest first."""
    groups: dict[str, SpotGroup] = {}
    for spot in spots:
        match = _CHANGE_SPOT.match(spot)
        if match is None:
            continue
        reason = _general(match.group("why") or "no link", match.group("what"))
        groups.setdefault(reason, SpotGroup(reason)).changes.append(match.group("what"))
    return sorted(groups.values(), key=lambda g: (-len(g.changes), g.reason))


def _general(why: str, what: str) -> str:
    """The reason with the change's own label left out where it repeats it."""
    return why.replace(what, "the change").strip()
