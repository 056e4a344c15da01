"""Per-test results on top of the dashboard benchmark's history (direct store inserts).

Every run of an L2+ backend ran 2,000 of the backend's 3,000 reused tests (issue 13's
volume): each (backend, test) has a full history (`history_length` outcomes, as the
callback writes it) in test_status; every failed job has its failed tests in
test_failures (5 each, one run with 200, messages of realistic length); 2 % of the
failed jobs are infrastructure failures; the first job of every run reports two legs,
its steps and, when it failed, a log tail. Deterministic (seeded random).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from relay.results import history
from relay.results.records import node_key
from relay.store import Store, Tx

TESTS_PER_BACKEND = 3000
TESTS_PER_RUN = 2000
FAILURES_PER_JOB = 5
BIG_RUN_FAILURES = 200
HISTORY_LENGTH = 20
MESSAGE = (
    "AssertionError: Tensor-likes are not close!\n\nMismatched elements: 5 / 6 (83.3%)\n"
    "Greatest absolute difference: 1.25 at index (1, 2) (up to 0.001 allowed)\n"
    "Greatest relative difference: 0.5 at index (1, 0) (up to 0.001 allowed)\n\n"
    "To execute this test, run the following from the base repo dir:\n"
    "    python test/test_ops.py TestCommonSPYRE.test_{name}"
)
LOG_TAIL = "\n".join(f"E   line {i} of the failing shard's pytest output" for i in range(60))
STEPS = [
    {"job": "select", "name": "plan", "kind": "plan", "outcome": "success"},
    {"job": "select", "name": "checkout", "kind": "checkout", "outcome": "success"},
    {"job": "select", "name": "select", "kind": "select", "outcome": "success"},
    {"job": "test (shard 1)", "name": "test", "kind": "test", "outcome": "success"},
    {"job": "test (shard 2)", "name": "test", "kind": "test", "outcome": "success"},
]


def reused_test_ids(count: int = TESTS_PER_BACKEND) -> list[str]:
    ops = ("add", "mul", "sum", "matmul", "softmax", "gelu", "conv2d", "layer_norm")
    return [
        f"test/test_ops.py::TestCommonSPYRE::test_{kind}_{ops[i % len(ops)]}{i:05d}_spyre_float16"
        for i, kind in (
            (i, ("compare_cpu", "out", "variant_consistency")[i % 3]) for i in range(count)
        )
    ]


def _many(tx: Tx, table: str, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
    for start in range(0, len(rows), 200):
        chunk = rows[start : start + 200]
        marks = ", ".join("(" + ", ".join("?" for _ in columns) + ")" for _ in chunk)
        tx.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES {marks}",
            [v for row in chunk for v in row],
        )


def seed_results(store: Store, now: float, rng_seed: int = 13) -> dict[str, int]:
    """Add the per-test rows; return how many of each were written."""
    rng = random.Random(rng_seed)
    ids = reused_test_ids()
    with store.transaction() as tx:
        _kinds_and_details(tx, rng)
        failing = tx.fetchall(
            "SELECT delivery_id, repo, run_id, run_attempt, job_name, head_sha, dispatched_at,"
            " completed_received_at FROM job_runs WHERE failure_kind = 'test'"
            " AND job_name = 'test (1/2)'"
        )
        failures = _failures(tx, failing, ids, rng)
        repos = [r["repo"] for r in tx.fetchall("SELECT DISTINCT repo FROM job_runs")]
        statuses = 0
        for repo in repos:
            statuses += _statuses(tx, repo, ids, now, rng)
    return {"test_failures": failures, "test_status": statuses}


def _kinds_and_details(tx: Tx, rng: random.Random) -> None:
    tx.execute("UPDATE job_runs SET failure_kind = 'test' WHERE conclusion = 'failure'")
    tx.execute("UPDATE job_runs SET failure_kind = 'timeout' WHERE conclusion = 'timed_out'")
    tx.execute("UPDATE job_runs SET failure_kind = 'cancelled' WHERE conclusion = 'cancelled'")
    # 2 % of the failed jobs failed around their tests (the run id's low bits pick them)
    tx.execute(
        "UPDATE job_runs SET failure_kind = 'infrastructure', failure_step = 'select / checkout'"
        " WHERE conclusion = 'failure' AND run_id % 50 = 0"
    )
    legs = json.dumps(
        [
            {"name": f"test (shard {n})", "conclusion": "success",
             "tests": {"passed": 990, "failed": 0, "skipped": 10, "total": 1000}}
            for n in (1, 2)
        ]
    )  # fmt: skip
    ok = json.dumps({"steps": STEPS, "outcomes": {"passed": 1980, "skipped": 20}})
    failed_steps = [*STEPS[:-1], {**STEPS[-1], "outcome": "failure"}]
    failed = json.dumps(
        {
            "steps": failed_steps,
            "outcomes": {"passed": 1975, "failed": 5, "skipped": 20},
            "log_tail": {"step": "test (shard 2) / test", "text": LOG_TAIL, "truncated": True},
            "junit_url": "https://github.com/ibm/torch-spyre/actions/runs/1#artifacts",
        }
    )
    tx.execute(
        "UPDATE job_runs SET legs = ?, run_details = CASE WHEN conclusion = 'failure' THEN ?"
        " ELSE ? END WHERE job_name = 'test (1/2)' AND status = 'completed'",
        (legs, failed, ok),
    )


def _failures(tx: Tx, failing: list[dict[str, Any]], ids: list[str], rng: random.Random) -> int:
    rows = []
    for n, job in enumerate(failing):
        count = BIG_RUN_FAILURES if n == len(failing) // 2 else FAILURES_PER_JOB
        for node_id in rng.sample(ids, count):
            rows.append(
                (job["delivery_id"], job["repo"], job["run_id"], job["run_attempt"],
                 job["job_name"], node_key(node_id), node_id, "failed",
                 MESSAGE.format(name=node_id.rsplit("::", 1)[1]),
                 "test/test_ops.py:1234: AssertionError", 0.4, "2", job["head_sha"],
                 job["dispatched_at"] or 0.0, job["completed_received_at"] or 0.0)
            )  # fmt: skip
    _many(
        tx,
        "test_failures",
        ("delivery_id", "repo", "run_id", "run_attempt", "job_name", "test_key", "node_id",
         "outcome", "message", "location", "duration", "shard", "head_sha", "event_at",
         "received_at"),
        rows,
    )  # fmt: skip
    return len(rows)


def _statuses(tx: Tx, repo: str, ids: list[str], now: float, rng: random.Random) -> int:
    runs = tx.fetchall(
        "SELECT delivery_id, head_sha, dispatched_at FROM job_runs WHERE repo = ?"
        " AND job_name = 'test (1/2)' AND status = 'completed' ORDER BY updated_at DESC LIMIT 60",
        (repo,),
    )
    if not runs:
        return 0
    rows = []
    for node_id in ids:
        # each run ran 2,000 of the 3,000 tests: this test's newest HISTORY_LENGTH runs
        chosen = [r for r in runs if rng.random() < TESTS_PER_RUN / TESTS_PER_BACKEND]
        entries = [
            history.entry(r["dispatched_at"] or now, "failed" if rng.random() < 0.03 else "passed",
                          r["head_sha"], r["delivery_id"], 1)
            for r in chosen[:HISTORY_LENGTH]
        ]  # fmt: skip
        if not entries:
            continue
        passes = [e for e in entries if e.code == "p"]
        flaky = rng.random() < 0.01
        rows.append(
            (repo, node_key(node_id), node_id, history.encode(entries), entries[0].code,
             entries[0].at, passes[0].at if passes else None, passes[0].sha if passes else None,
             passes[0].delivery_id if passes else None, int(flaky), now - 3600 if flaky else None,
             entries[0].sha if flaky else None, now - rng.random() * 3600)
        )  # fmt: skip
    _many(
        tx,
        "test_status",
        ("repo", "test_key", "node_id", "history", "last_code", "last_event_at", "last_pass_at",
         "last_pass_sha", "last_pass_delivery", "flaky_count", "flaky_at", "flaky_sha",
         "updated_at"),
        rows,
    )  # fmt: skip
    return len(rows)
