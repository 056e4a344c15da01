"""At-least-once dispatch to the fake GitHub: payload shape, retries, rate limits, dead letters."""

from __future__ import annotations

import json
import time

import pytest

from relay.allowlist_source import StaticAllowlist
from relay.clock import ManualClock
from relay.outbox import claim, list_dead_letters, queue_stats, requeue_dead_letters
from relay.store import Row, Store
from relay.worker import Worker
from tests.relay.conftest import dispatching_config
from tests.support.fake_github import FakeGitHub, Fault
from tests.support.relay_server import InProcessRelay, fixture_body, post_webhook


def _drain(relay: InProcessRelay, worker: Worker | None = None, *, rounds: int = 50) -> None:
    """Run the worker until no job is ready (waiting out short backoffs)."""
    worker = worker or relay.worker()
    for _ in range(rounds):
        if worker.run_once(limit=10) == 0:
            if not queue_stats(relay.state.store, now=time.time()).pending:
                return
            time.sleep(0.05)


def _outbox(store: Store) -> list[Row]:
    with store.transaction(write=False) as tx:
        return tx.fetchall(
            "SELECT target, state, attempts, last_error, next_attempt_at FROM outbox ORDER BY target"
        )


def _outbox_row(store: Store, target: str) -> Row:
    [row] = [r for r in _outbox(store) if r["target"] == target]
    return row


def test_client_payload_is_crcrs_wire_format(
    dispatching_relay_each_store: InProcessRelay, fake_github: FakeGitHub
) -> None:
    body = fixture_body("pull_request.opened")
    assert (
        post_webhook(
            dispatching_relay_each_store.url, "pull_request", body, delivery_id="d1"
        ).status_code
        == 202
    )
    _drain(dispatching_relay_each_store)
    assert sorted(d.repo for d in fake_github.dispatches) == [
        "org/observed",
        "org/onboarding",
        "org/stable",
    ]
    for sent in fake_github.dispatches:
        assert sent.event_type == "pull_request"
        crcr = {k: sent.client_payload[k] for k in ("event_type", "delivery_id", "payload")}
        assert crcr == {
            "event_type": "pull_request",
            "delivery_id": "d1",
            "payload": json.loads(body),
        }
        assert "payload_slimmed" not in sent.client_payload  # other keys: PAYLOAD_EXTENSIONS
        assert sent.token == "test-token"
    with dispatching_relay_each_store.state.store.transaction(write=False) as tx:
        rows = tx.fetchall(
            "SELECT repo, level, event_type, pr_number FROM dispatches ORDER BY repo"
        )
    assert rows == [
        {"repo": "org/observed", "level": "L2", "event_type": "pull_request", "pr_number": 2},
        {"repo": "org/onboarding", "level": "L1", "event_type": "pull_request", "pr_number": 2},
        {"repo": "org/stable", "level": "L3", "event_type": "pull_request", "pr_number": 2},
    ]
    assert {r["state"] for r in _outbox(dispatching_relay_each_store.state.store)} == {"done"}


def test_server_errors_are_retried_until_accepted(
    dispatching_relay: InProcessRelay, fake_github: FakeGitHub
) -> None:
    fake_github.inject(Fault.status_code(502, path="/repos/org/stable/", count=2))
    post_webhook(dispatching_relay.url, "push", fixture_body("push"), delivery_id="d2")
    _drain(dispatching_relay)
    statuses = [r.status for r in fake_github.requests if r.path == "/repos/org/stable/dispatches"]
    assert statuses == [502, 502, 204]
    assert fake_github.dispatched_pairs().count(("d2", "org/stable")) == 1
    stable = _outbox_row(dispatching_relay.state.store, "org/stable")
    assert (stable["state"], stable["attempts"]) == ("done", 3)


def test_secondary_rate_limit_waits_for_retry_after(
    dispatching_relay: InProcessRelay, fake_github: FakeGitHub
) -> None:
    fake_github.inject(Fault.secondary_rate_limit(retry_after=30, path="/repos/org/observed/"))
    post_webhook(dispatching_relay.url, "push", fixture_body("push"), delivery_id="d3")
    before = time.time()
    _drain(dispatching_relay, rounds=3)
    observed = _outbox_row(dispatching_relay.state.store, "org/observed")
    assert observed["state"] == "pending" and "rate limited" in str(observed["last_error"])
    assert float(observed["next_attempt_at"]) >= before + 30  # not before GitHub said


def test_timeouts_are_retried(
    sqlite_url: str, allowlist: StaticAllowlist, fake_github: FakeGitHub
) -> None:
    # The fake holds its answer past the client's 1 s timeout.
    fake_github.inject(Fault.timeout(5, path="/repos/org/onboarding/"))
    config = dispatching_config(sqlite_url, fake_github, github={"timeout_seconds": 1.0})
    with InProcessRelay(config, allowlist=allowlist) as relay:
        post_webhook(relay.url, "push", fixture_body("push"), delivery_id="d4")
        _drain(relay)
        onboarding = _outbox_row(relay.state.store, "org/onboarding")
    assert sorted(fake_github.dispatched_pairs()) == [
        ("d4", "org/observed"),
        ("d4", "org/onboarding"),
        ("d4", "org/stable"),
    ]
    assert onboarding["attempts"] == 2


def test_slow_answers_within_the_timeout_succeed_first_time(
    dispatching_relay: InProcessRelay, fake_github: FakeGitHub
) -> None:
    fake_github.inject(Fault.slow(0.15, path="/dispatches", count=3))
    post_webhook(dispatching_relay.url, "push", fixture_body("push"), delivery_id="d5")
    _drain(dispatching_relay)
    assert [r["attempts"] for r in _outbox(dispatching_relay.state.store)] == [1, 1, 1]


def test_exhausted_jobs_become_dead_letters_and_requeue_sends_them(
    dispatching_relay_each_store: InProcessRelay, fake_github: FakeGitHub
) -> None:
    fake_github.inject(
        Fault.status_code(500, path="/repos/org/stable/", count=3)
    )  # max_attempts is 3
    post_webhook(dispatching_relay_each_store.url, "push", fixture_body("push"), delivery_id="d6")
    _drain(dispatching_relay_each_store)
    [dead] = list_dead_letters(dispatching_relay_each_store.state.store)
    assert (dead["target"], dead["attempts"], dead["delivery_id"]) == ("org/stable", 3, "d6")
    assert "after 3 attempts" in dead["last_error"] and "500" in dead["last_error"]
    assert ("d6", "org/stable") not in fake_github.dispatched_pairs()
    assert requeue_dead_letters(dispatching_relay_each_store.state.store, now=time.time()) == 1
    _drain(dispatching_relay_each_store)
    assert fake_github.dispatched_pairs().count(("d6", "org/stable")) == 1
    assert list_dead_letters(dispatching_relay_each_store.state.store) == []


def test_a_client_error_is_dead_lettered_without_retrying(
    dispatching_relay: InProcessRelay, fake_github: FakeGitHub
) -> None:
    fake_github.inject(Fault.status_code(404, path="/repos/org/onboarding/"))
    post_webhook(dispatching_relay.url, "push", fixture_body("push"), delivery_id="d7")
    _drain(dispatching_relay)
    [dead] = list_dead_letters(dispatching_relay.state.store)
    assert (dead["target"], dead["attempts"]) == ("org/onboarding", 1)


def test_a_job_whose_worker_died_is_finished_by_another_after_the_lease(
    store: Store, allowlist: StaticAllowlist, fake_github: FakeGitHub
) -> None:
    clock = ManualClock(time.time())  # the lease runs out when the test says, not by sleeping
    config = dispatching_config(store.url, fake_github)
    with InProcessRelay(config, allowlist=allowlist, store=store, clock=clock) as relay:
        post_webhook(relay.url, "push", fixture_body("push"), delivery_id="d8")
        lost = claim(
            store, owner="died", kinds=["dispatch"], now=clock.now(), lease_seconds=30, limit=10
        )
        assert len(lost) == 3
        worker = relay.worker()
        assert worker.run_once(limit=10) == 0  # still leased
        clock.advance(31)
        assert worker.run_once(limit=10) == 3
    assert len(fake_github.dispatched_pairs()) == 3
    assert {r["state"] for r in _outbox(store)} == {"done"}


def test_oversized_payload_is_slimmed_to_fit_githubs_limit(
    dispatching_relay: InProcessRelay, fake_github: FakeGitHub
) -> None:
    push = json.loads(fixture_body("push"))
    commit = {"id": "a" * 40, "message": "m" * 200, "added": [f"file{i}.py" for i in range(40)]}
    push["commits"] = [
        dict(commit, id=f"{i:040d}") for i in range(200)
    ]  # ~450 KB, as a big push is
    raw = json.dumps(push).encode()
    post_webhook(dispatching_relay.url, "push", raw, delivery_id="big")
    _drain(dispatching_relay)
    assert len(fake_github.dispatches) == 3
    sent = fake_github.dispatches[0].client_payload
    assert sent["payload_slimmed"] is True and "commits" not in sent["payload"]
    assert sent["payload"]["after"] == push["after"] and sent["payload"]["ref"] == push["ref"]
    assert sent["payload"]["repository"] == {
        k: push["repository"][k] for k in ("full_name", "clone_url", "html_url")
    }
    assert len(json.dumps(sent, separators=(",", ":"))) < 64 * 1024
    assert list_dead_letters(dispatching_relay.state.store) == []


@pytest.mark.parametrize("event", ["pull_request", "push"])
def test_only_targets_that_opted_into_the_event_receive_it(
    sqlite_url: str, fake_github: FakeGitHub, event: str
) -> None:
    from relay.allowlist import parse_allowlist
    from relay.allowlist_source import StaticAllowlist

    allowlist = StaticAllowlist(
        parse_allowlist(
            "L2:\n  - org/prs-only: {oncalls: [a], events: [pull_request]}\n  - org/both\n"
            "  - org/nightly-only:\n    events: [nightly]\n"
        )
    )
    fixture = "pull_request.opened" if event == "pull_request" else "push"
    with InProcessRelay(dispatching_config(sqlite_url, fake_github), allowlist=allowlist) as relay:
        post_webhook(relay.url, event, fixture_body(fixture), delivery_id="e")
        _drain(relay)
    expected = {"pull_request": ["org/both", "org/prs-only"], "push": ["org/both"]}[event]
    assert sorted(repo for _, repo in fake_github.dispatched_pairs()) == expected


def test_results_are_taken_before_new_triggers(dispatching_relay: InProcessRelay) -> None:
    from relay.outbox import enqueue

    done: list[str] = []
    worker = Worker(
        dispatching_relay.state,
        handlers={
            "dispatch": lambda job: done.append(job.kind),
            "hud": lambda job: done.append(job.kind),
        },
    )
    with dispatching_relay.state.store.transaction() as tx:
        enqueue(tx, kind="dispatch", target="o/r", body={}, dedupe_key="d", now=1.0)
        enqueue(tx, kind="hud", target="o/r", body={}, dedupe_key="h", now=2.0)
    while worker.run_once():
        pass
    assert done == ["hud", "dispatch"]


def test_a_deferred_job_runs_again_later_without_counting_an_attempt(
    dispatching_relay: InProcessRelay,
) -> None:
    """Our own write pacing defers a job (relay.jobs.Deferred): with `max_attempts` set, a
    burst of deferrals must never dead-letter a job its target never refused."""
    from relay.jobs import Deferred
    from relay.outbox import Job, enqueue

    state = dispatching_relay.state
    calls: list[int] = []

    def pacing(job: Job) -> None:
        calls.append(job.attempts)
        if len(calls) < 5:
            raise Deferred("write pacing: no turn within the lease", seconds=30.0)

    worker = Worker(state, handlers={"dispatch": pacing})
    with state.store.transaction() as tx:
        enqueue(tx, kind="dispatch", target="o/r", body={}, dedupe_key="d", now=0.0)
    for _ in range(5):
        assert worker.run_once() == 1
        assert worker.run_once() == 0  # deferred: not ready for another 30 s
        with state.store.transaction() as tx:
            tx.execute("UPDATE outbox SET next_attempt_at = 0")  # let those 30 s pass
    assert calls == [1, 1, 1, 1, 1]  # each claim is its first attempt again
    with state.store.transaction(write=False) as tx:
        assert tx.scalar("SELECT COUNT(*) FROM dead_letters") == 0
        assert tx.scalar("SELECT state FROM outbox WHERE dedupe_key = 'd'") == "done"
        assert tx.scalar("SELECT first_failed_at FROM outbox WHERE dedupe_key = 'd'") is None
