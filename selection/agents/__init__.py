"""Triage agents: decide run / not needed / needs a manifest change per group of candidates."""

from __future__ import annotations

from typing import Protocol

from selection.state import Group, Verdict


class TriageAgent(Protocol):
    name: str

    def decide(self, groups: list[Group]) -> dict[str, Verdict]:
        """A verdict per group id; a group left out runs (the stage records why)."""
        ...
