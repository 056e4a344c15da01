"""Synthetic relay history for the dashboard benchmark (direct store inserts).

30 days x 10 backends x 300 upstream events a day by default: every event is
dispatched to every backend; L2+ backends report 3 jobs per event, the first
with a selection report summary. Deterministic (seeded random).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass

from relay.store import Store
from tests.support.relay_server import FIXTURES

_PR_FIXTURE = json.loads((FIXTURES / "pull_request.opened.payload.json").read_text())

DAY = 86_400.0
BACKENDS = (
    ("ibm/torch-spyre", "L4"),
    ("intel/torch-xpu-ops", "L4"),
    ("ascend/pytorch", "L3"),
    ("openreg/torch-openreg", "L3"),
    ("acme/npu-backend", "L2"),
    ("contoso/tpu-bridge", "L2"),
    ("example/mtia-ci", "L2"),
    ("lab/riscv-vector", "L2"),
    ("demo/fpga-ops", "L1"),
    ("demo/photonic", "L1"),
)
JOBS = ("test (1/2)", "test (2/2)", "lint")
CONCLUSIONS = (("success", 0.92), ("failure", 0.05), ("cancelled", 0.025), ("timed_out", 0.005))


@dataclass(frozen=True)
class SeedShape:
    days: int = 30
    events_per_day: int = 300
    backends: int = 10


def _webhook(ev: dict) -> str:
    """The stored webhook, full size (a real pull_request payload is ~28 KB): the grid and
    the change pages read the PR's title from it."""
    if ev["type"] == "pull_request":
        payload = copy.deepcopy(_PR_FIXTURE)
        payload["number"] = payload["pull_request"]["number"] = ev["pr"]
        payload["pull_request"]["title"] = f"[inductor] Fix the lowering of op {ev['pr'] % 977}"
        payload["pull_request"]["head"]["sha"] = ev["sha"]
        return json.dumps(payload)
    if ev["type"] == "push":
        head = {"id": ev["sha"], "message": f"Land #{ev['id']}: speed up the add kernel\n\nBody."}
        return json.dumps({"ref": "refs/heads/main", "after": ev["sha"], "head_commit": head,
                           "repository": {"full_name": "pytorch/pytorch"}})  # fmt: skip
    return "{}"


def seed(store: Store, now: float, shape: SeedShape = SeedShape(), rng_seed: int = 8) -> int:
    """Insert the history; return the number of job_runs rows written."""
    rng = random.Random(rng_seed)
    backends = BACKENDS[: shape.backends]
    events = list(_events(now, shape, rng))
    with store.transaction() as tx:
        for i, (repo, level) in enumerate(backends):
            for since, lvl in _level_history(now, level, i):
                tx.execute(
                    "INSERT INTO repo_levels (repo, since, level) VALUES (?, ?, ?)",
                    (repo, since, lvl),
                )
        for ev in events:
            tx.execute(
                "INSERT INTO deliveries (delivery_id, event, action, repo, route, pr_number,"
                " head_sha, payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    ev["id"],
                    ev["type"],
                    "synchronize" if ev["pr"] else None,
                    "pytorch/pytorch",
                    "dispatch",
                    ev["pr"],
                    ev["sha"],
                    _webhook(ev),
                    ev["at"],
                ),
            )
    written = 0
    for repo, level in backends:
        written += _seed_backend(store, repo, level, events, rng, now)
    _seed_outbox(store, now)
    return written


def _events(now: float, shape: SeedShape, rng: random.Random) -> Iterator[dict]:
    start = now - shape.days * DAY
    for n in range(shape.days * shape.events_per_day):
        at = start + n * DAY / shape.events_per_day + rng.random() * 60
        kind = "pull_request" if rng.random() < 0.62 else "push"
        if n % shape.events_per_day == 0:
            kind = "nightly"  # one nightly run a day; its delivery id is the PyTorch SHA
        yield {
            "id": f"d-{n:07d}",
            "type": kind,
            "pr": 150_000 + n // 3 if kind == "pull_request" else None,
            "sha": f"{rng.getrandbits(160):040x}",
            "at": at,
        }


def _level_history(now: float, level: str, i: int) -> list[tuple[float, str]]:
    history = [(now - 90 * DAY, "L1")]
    if level != "L1":
        history.append((now - (60 - 4 * i) * DAY, "L2"))
    if level in ("L3", "L4"):
        history.append((now - 20 * DAY, "L3"))
    if level == "L4":
        history.append((now - 10 * DAY, "L4"))
    return history


def _conclusion(rng: random.Random, skew: float) -> str:
    roll = rng.random()
    for name, p in CONCLUSIONS:
        p = p * (1 - skew) if name == "success" else p
        if roll < p:
            return name
        roll -= p
    return "failure"


def _seed_backend(
    store: Store, repo: str, level: str, events: list[dict], rng: random.Random, now: float
) -> int:
    dispatches, runs, reports = [], [], []
    skew = (hash(repo) % 7) / 100  # backends differ a little in health
    for ev in events:
        dispatched = ev["at"] + rng.uniform(0.2, 2.0)
        if ev["type"] != "nightly":
            dispatches.append(
                (ev["id"], repo, level, ev["type"], ev["pr"], ev["sha"], "[]", dispatched, "tok")
            )
        if level == "L1":
            continue
        run_id = rng.getrandbits(40)
        for j, job in enumerate(JOBS):
            queue = rng.lognormvariate(5.5, 0.8)
            execution = rng.lognormvariate(7.6 if j < 2 else 5.0, 0.5)
            started = dispatched + queue
            completed = started + execution
            selection_id = f"{ev['id']}:{repo}:{run_id}:1" if j == 0 else None
            if started > now:
                continue  # still queued downstream: no callback yet
            done = completed <= now
            runs.append(
                (
                    ev["id"],
                    repo,
                    run_id,
                    1,
                    job,
                    "spyre-ci",
                    ev["type"],
                    ev["pr"],
                    ev["sha"],
                    "completed" if done else "in_progress",
                    _conclusion(rng, skew) if done else None,
                    run_id + j,
                    f"https://github.com/{repo}/actions/runs/{run_id}",
                    None,
                    started,
                    completed if done else None,
                    dispatched,
                    started,
                    completed if done else None,
                    queue,
                    execution if done else None,
                    *((900, 3, 40, 943) if done else (None,) * 4),
                    selection_id if done else None,
                    "{}",
                    completed if done else started,
                )
            )
            if selection_id and done:
                summary = {
                    "per_stage": {"changed": 41, "impact": 3120, "filter": 1210, "agent": 943},
                    "top_causes": [{"cause": "aten/src/ATen/native/BinaryOps.cpp", "count": 610}],
                    "rationale": "binary ops changed; kept elementwise tests",
                }
                reports.append((selection_id, json.dumps(summary), None, repo, ev["id"], completed))
    with store.transaction() as tx:
        _many(
            tx,
            "dispatches",
            9,
            dispatches,
            "delivery_id, repo, level, event_type, pr_number, head_sha, labels, dispatched_at,"
            " callback_token_id",
        )
        _many(
            tx,
            "job_runs",
            28,
            runs,
            "delivery_id, repo, run_id, run_attempt, job_name, workflow_name, event_type,"
            " pr_number, head_sha, status, conclusion, check_run_id, url, artifact_url,"
            " started_at, completed_at, dispatched_at, in_progress_received_at,"
            " completed_received_at, queue_time, execution_time, tests_passed, tests_failed,"
            " tests_skipped, tests_total, selection_id, last_payload, updated_at",
        )
        _many(
            tx,
            "selection_reports",
            6,
            reports,
            "selection_id, summary, html, repo, delivery_id, created_at",
        )
    return len(runs)


def _many(tx, table: str, width: int, rows: list[tuple], columns: str) -> None:  # type: ignore[no-untyped-def]
    marks = ", ".join("?" for _ in range(width))
    for row in rows:
        tx.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", row)


def _seed_outbox(store: Store, now: float) -> None:
    """25 dispatches waiting, one dead letter, and 3 days of done jobs (the retention)."""
    with store.transaction() as tx:
        for n in range(3 * 300 * len(BACKENDS)):
            at = now - 3 * DAY + n * 8.64
            tx.execute(
                "INSERT INTO outbox (job_id, kind, dedupe_key, delivery_id, target, body, state,"
                " attempts, next_attempt_at, created_at, done_at) VALUES (?, ?, ?, ?, ?, '{}',"
                " 'done', 1, ?, ?, ?)",
                (
                    f"done{n}",
                    "dispatch" if n % 3 else "hud",
                    f"kd{n}",
                    f"d-{n:07d}",
                    BACKENDS[n % len(BACKENDS)][0],
                    at,
                    at,
                    at + 1,
                ),
            )
        for n in range(25):
            tx.execute(
                "INSERT INTO outbox (job_id, kind, dedupe_key, delivery_id, target, body, state,"
                " attempts, next_attempt_at, created_at) VALUES (?, 'dispatch', ?, ?, ?, '{}',"
                " 'pending', 1, ?, ?)",
                (f"j{n}", f"k{n}", f"d-{n:07d}", "ibm/torch-spyre", now, now - 120 + n),
            )
        tx.execute(
            "INSERT INTO dead_letters (job_id, kind, dedupe_key, target, body, state, attempts,"
            " next_attempt_at, created_at, died_at) VALUES ('dl1', 'hud', 'dk1', 'hud', '{}',"
            " 'pending', 8, ?, ?, ?)",
            (now, now - 3600, now - 600),
        )
