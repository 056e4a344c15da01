"""What link kinds read: the head (and base) sources, the OpInfo database, the universe of
instances, the device facts and, when one was recorded, the observed map. Pure: every
derived index is built lazily from these and memoized here, so a kind that is never asked
costs nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from selection.device import DeviceFacts
    from selection.observed import ObservedMap
    from selection.oplists import OpDatabase
    from selection.universe import Universe
    from selection.upstream import ParsedTrees

T = TypeVar("T")


@dataclass
class LinkIndex:
    head: ParsedTrees
    base: ParsedTrees
    db: OpDatabase
    universe: Universe
    facts: DeviceFacts
    observed: ObservedMap | None = None
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def memo(self, key: str, build: Callable[[], T]) -> T:
        """Build a derived index once (key: the builder's module-qualified name)."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]
