"""Each test's recent outcomes on one backend, its suspect range and flakiness (pure).

A test's history is its last N outcomes on a backend, newest first, ordered by the
upstream event's time (when the relay dispatched it; a nightly: when it reported).
Each entry is `[event_at, code, sha, delivery_id, run_attempt]` with code `p`
(passed), `f` (failed), `e` (error) or `x` (xfailed, as expected).

- **Suspect range**: a test failing now after passing earlier failed first on B (the
  oldest failure of the current streak) after passing on A (the newest pass before
  it): the upstream change is in A..B.
- **Flaky**: a test that passed and failed on the same upstream SHA (a re-run, or
  two events of one commit) is flaky: counted apart, and its range is not a suspect.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

CODES = {"passed": "p", "failed": "f", "error": "e", "xfailed": "x"}
FAILING = frozenset({"f", "e"})
OK = frozenset({"p", "x"})
SHA_CHARS = 12


@dataclass(frozen=True)
class Entry:
    at: float
    code: str
    sha: str
    delivery_id: str
    attempt: int = 1

    @property
    def failing(self) -> bool:
        return self.code in FAILING

    def as_list(self) -> list[object]:
        return [round(self.at, 3), self.code, self.sha, self.delivery_id, self.attempt]

    def as_dict(self) -> dict[str, object]:
        outcome = {"p": "passed", "f": "failed", "e": "error", "x": "xfailed"}[self.code]
        return {
            "at": self.at,
            "outcome": outcome,
            "sha": self.sha,
            "delivery_id": self.delivery_id,
            "run_attempt": self.attempt,
        }


def entry(at: float, outcome: str, sha: str | None, delivery_id: str, attempt: int) -> Entry:
    # rounded as stored, so that a new entry orders the same as a decoded one
    return Entry(round(at, 3), CODES[outcome], (sha or "")[:SHA_CHARS], delivery_id, attempt)


def raw(text: str | None) -> list[list[Any]]:
    """The stored JSON list as lists `[at, code, sha, delivery_id, attempt]`; anything
    malformed is dropped, never an error page."""
    try:
        found = json.loads(text) if text else []
    except ValueError:
        return []
    if not isinstance(found, list):
        return []
    return [
        e
        for e in found
        if isinstance(e, list) and len(e) == 5 and e[1] in FAILING | OK
        and isinstance(e[0], int | float) and isinstance(e[4], int)
    ]  # fmt: skip


def decode(text: str | None) -> list[Entry]:
    return [Entry(float(e[0]), str(e[1]), str(e[2]), str(e[3]), e[4]) for e in raw(text)]


def encode(history: Sequence[Entry]) -> str:
    return json.dumps([e.as_list() for e in history], separators=(",", ":"))


@dataclass(frozen=True)
class Added:
    history: list[Entry]
    flaky: bool  # the new outcome contradicts another one on the same SHA


def add(history: Sequence[Entry], new: Entry, limit: int, last_pass_sha: str | None) -> Added:
    """`history` with `new` in its place (newest first, at most `limit`; a repeat of the
    same delivery and attempt replaces the old entry)."""
    merged, flaky = add_raw([e.as_list() for e in history], new.as_list(), limit, last_pass_sha)
    return Added(decode(json.dumps(merged)), flaky)


def add_raw(
    history: list[list[Any]], new: list[Any], limit: int, last_pass_sha: str | None
) -> tuple[list[list[Any]], bool]:
    """`add` on the stored form (lists `[at, code, sha, delivery, attempt]`), which is what
    the callback rewrites for each of a run's 2,000 tests: no objects per entry."""
    at, code, sha, delivery, attempt = new
    failing = code in FAILING
    kept = [e for e in history if len(e) > 4 and (e[3], e[4]) != (delivery, attempt)]
    flaky = any(
        e[2] == sha and (e[1] in FAILING) != failing for e in kept
    ) if sha else False  # fmt: skip
    if failing and sha and last_pass_sha and last_pass_sha[:SHA_CHARS] == sha:
        flaky = True
    position = 0
    while position < len(kept) and (kept[position][0], kept[position][4]) > (at, attempt):
        position += 1
    kept.insert(position, new)
    return kept[:limit], flaky


@dataclass(frozen=True)
class Suspect:
    """Where a failing test's break lies: passed on `good`, failed from `bad` on."""

    failing_since: Entry  # the oldest failure of the current streak
    streak: int  # failures in a row, newest first (within the kept history)
    good: Entry | None  # the newest pass before the streak; None if never seen passing

    def as_dict(self) -> dict[str, object]:
        return {
            "failing_since": self.failing_since.as_dict(),
            "streak": self.streak,
            "last_pass": self.good.as_dict() if self.good else None,
            "range": f"{self.good.sha}..{self.failing_since.sha}"
            if self.good and self.good.sha and self.failing_since.sha
            else None,
        }


def suspect(history: Sequence[Entry], last_pass: Entry | None = None) -> Suspect | None:
    """The suspect range of a test failing in its newest outcome; None when it passes.

    `last_pass` is the newest pass ever recorded (kept apart from the bounded history),
    which is the good end when the whole kept history is failures.
    """
    if not history or not history[0].failing:
        return None
    streak = 0
    for item in history:
        if not item.failing:
            break
        streak += 1
    oldest = history[streak - 1]
    good = history[streak] if streak < len(history) else None
    if good is None and last_pass is not None and last_pass.at <= oldest.at:
        good = last_pass
    return Suspect(oldest, streak, good)
