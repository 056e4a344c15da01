"""The level history the dashboard records from the allowlist ("time at L2")."""

from __future__ import annotations

from relay.dashboard import queries
from relay.dashboard.levels import UNLISTED, level_changes, record_levels
from relay.dashboard.views import levels_for
from relay.store import Store

DAY = 86400.0
NOW = 1_800_000_000.0


def _dispatch(store: Store, delivery: str, repo: str, level: str, at: float) -> None:
    with store.transaction() as tx:
        tx.execute(
            "INSERT INTO dispatches (delivery_id, repo, level, event_type, dispatched_at)"
            " VALUES (?, ?, ?, 'push', ?)",
            (delivery, repo, level, at),
        )


def test_level_changes() -> None:
    recorded = {"a/x": ("L2", 1.0), "b/y": ("L1", 1.0), "c/z": (UNLISTED, 1.0)}
    allowlisted = {"a/x": "L2", "b/y": "L2", "d/w": "L4"}
    assert level_changes(recorded, allowlisted) == [("b/y", "L2"), ("d/w", "L4")]
    assert level_changes(recorded, {}) == [("a/x", UNLISTED), ("b/y", UNLISTED)]


def test_first_sight_is_dated_back_to_the_current_stint_of_dispatches(store: Store) -> None:
    _dispatch(store, "d1", "a/x", "L1", NOW - 50 * DAY)
    _dispatch(store, "d2", "a/x", "L2", NOW - 40 * DAY)
    _dispatch(store, "d3", "a/x", "L2", NOW - 2 * DAY)
    assert record_levels(store, {"a/x": "L2", "new/repo": "L3"}, NOW) == [
        ("a/x", "L2"),
        ("new/repo", "L3"),
    ]
    with store.transaction(write=False) as tx:
        assert queries.current_levels(tx) == {
            "a/x": ("L2", NOW - 40 * DAY),
            "new/repo": ("L3", NOW),
        }
    # Nothing changed: nothing written.
    assert record_levels(store, {"a/x": "L2", "new/repo": "L3"}, NOW + 60) == []


def test_a_stint_restarts_when_the_level_changes_and_unlisted_repos_lose_their_level(
    store: Store,
) -> None:
    _dispatch(store, "d1", "b/y", "L2", NOW - 95 * DAY)
    record_levels(store, {"a/x": "L2", "b/y": "L2"}, NOW - 90 * DAY)
    record_levels(store, {"a/x": "L1", "b/y": "L2"}, NOW - 60 * DAY)
    record_levels(store, {"a/x": "L2", "b/y": "L2"}, NOW - 10 * DAY)
    record_levels(store, {"a/x": "L2"}, NOW)
    with store.transaction(write=False) as tx:
        assert queries.current_levels(tx)["a/x"] == ("L2", NOW - 10 * DAY)
        assert queries.current_levels(tx)["b/y"] == (UNLISTED, NOW)
        assert levels_for(tx, ["a/x", "b/y"]) == {"a/x": ("L2", NOW - 10 * DAY)}
