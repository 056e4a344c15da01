"""Seed a real relay the way production does: signed webhooks in, dispatches to the fake
GitHub, then OIDC-authenticated callbacks (in_progress, completed) back from "downstream".

Everything a downstream controls carries hostile text (a `<script>` job name, an `<img
onerror>` cause, a report with a script, a link to a foreign host) so that the browser
tests can check the dashboard shows it as inert text.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from relay.callbacks.run_binding import grant_rerun
from relay.store import open_store
from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_records import RECORD_TIMEOUT, wait_for_dashboard_dispatches
from tests.support.relay_server import fixture_body, post_webhook

L4_REPO = "acme/spyre-backend"
L2_REPO = "beta/xpu-lab"
L1_REPO = "gamma/dispatch-only"
RESULTS_REPO = "delta/results-lab"  # reports as spyre-ci's workflow does: run_report, legs
TEST_ADD = "test/test_ops.py::TestOpsSPYRE::test_add_spyre_float16"
TEST_MUL = "test/test_ops.py::TestOpsSPYRE::test_mul_spyre_float16"
TEST_SUM = "test/test_ops.py::TestOpsSPYRE::test_sum_spyre_float32"
XSS_MESSAGE = (
    "AssertionError: Tensor-likes are not close! <script>window.__xss = 'message'</script>"
)
XSS_LOG = "E   AssertionError <img src=x onerror=\"window.__xss='log'\">"
SUSPECT_CHANGE = "test/test_ops.py: reference_add modified"
PR_NUMBER = 4201
SHA_OPENED = "a1" * 20
SHA_SYNC = "b2" * 20
SHA_PUSH = "c3" * 20
SHA_NIGHTLY = "d4" * 20
PUSH_TITLE = "Speed up the add kernel"
XSS_JOB = '<script>window.__xss = "job"</script>'
XSS_CAUSE = "<img src=x onerror=\"window.__xss='cause'\">"
PR_TITLE = "Fix <img src=x onerror=\"window.__xss='title'\"> in add"
XSS_RATIONALE = "<b>not bold</b> because <script>window.__xss = 'rationale'</script>"
REPORT_HTML = (
    "<!doctype html><html><head><title>Selection report</title>"
    "<script>document.title = 'pwned'; window.__xss = 'report'</script></head>"
    "<body><h1>Selection report</h1><p>943 of 12000 tests selected.</p></body></html>"
)

ALLOWLIST = f"""\
L1:
  - {L1_REPO}
L2:
  - {L2_REPO}: {{oncalls: [bob], events: [pull_request, push, nightly]}}
  - {RESULTS_REPO}
L4:
  - {L4_REPO}: [alice]
"""


@dataclass
class Seeded:
    """What the tests may rely on having been reported."""

    selection_id: str = ""
    summary_only_selection_id: str = ""  # a report uploaded without HTML
    delivery_ids: dict[str, str] = field(default_factory=dict)  # "opened"/"sync"/"push"
    callbacks: int = 0


def webhooks(relay_url: str) -> dict[str, str]:
    """A PR opened, then synchronized, then a branch push; returns their delivery ids."""
    opened = json.loads(fixture_body("pull_request.opened"))
    opened["number"] = opened["pull_request"]["number"] = PR_NUMBER
    opened["pull_request"]["head"]["sha"] = SHA_OPENED
    opened["pull_request"]["title"] = PR_TITLE
    sync = copy.deepcopy(opened)
    sync["action"] = "synchronize"
    sync["pull_request"]["head"]["sha"] = SHA_SYNC
    push = json.loads(fixture_body("push"))
    push.update(ref="refs/heads/main", after=SHA_PUSH, deleted=False, created=False)
    push["head_commit"] = {"id": SHA_PUSH, "message": f"{PUSH_TITLE}\n\nThe details."}
    ids = {"opened": "dlv-opened-0001", "sync": "dlv-sync-0002", "push": "dlv-push-0003"}
    for key, event, body in (
        ("opened", "pull_request", opened),
        ("sync", "pull_request", sync),
        ("push", "push", push),
    ):
        answer = post_webhook(relay_url, event, json.dumps(body).encode(), delivery_id=ids[key])
        assert answer.status_code == 202, answer.text
    return ids


def wait_for_dispatches(github: FakeGitHub, expected: int, timeout: float = RECORD_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while len(set(github.dispatched_pairs())) < expected:
        if time.monotonic() > deadline:
            raise AssertionError(f"only {github.dispatched_pairs()} dispatched")
        time.sleep(0.05)


class Downstream:
    """Plays a downstream workflow reporting with the callback action's body."""

    def __init__(
        self,
        relay_url: str,
        issuer: FakeOidcIssuer,
        github: FakeGitHub,
        store_url: str | None = None,
    ) -> None:
        self.relay_url = relay_url
        self.store_url = store_url  # the relay's store, for what the relay itself records
        self.issuer = issuer
        self.github = github
        self.client = httpx.Client(timeout=10)
        self.sent = 0

    def payload_for(self, delivery_id: str, repo: str) -> dict[str, Any]:
        for d in self.github.dispatches:
            if d.repo == repo and d.client_payload.get("delivery_id") == delivery_id:
                return d.client_payload
        raise AssertionError(f"no dispatch of {delivery_id} to {repo}")

    def report(
        self,
        repo: str,
        client_payload: dict[str, Any],
        workflow: dict[str, Any],
        selection: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {**client_payload, "workflow": {"schema_version": "1", **workflow}}
        if selection is not None:
            body["selection"] = selection
        token = self.issuer.github_actions_token(repo)
        answer = self.client.post(
            f"{self.relay_url}/github/callback",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 200, (answer.status_code, answer.text)
        self.sent += 1
        result: dict[str, Any] = answer.json()
        return result

    def job(
        self,
        repo: str,
        delivery_id: str,
        job_name: str,
        conclusion: str,
        run_id: int,
        *,
        tests: dict[str, int] | None = None,
        url: str | None = None,
        selection: dict[str, Any] | None = None,
        workflow: str = "spyre-ci",
        attempt: int = 1,
        run_report: dict[str, Any] | None = None,
        progress: dict[str, Any] | None = None,
    ) -> None:
        """One job, in_progress then completed (`conclusion` "" : left running, with `progress`)."""
        payload = self.payload_for(delivery_id, repo)
        common = {
            "name": workflow,
            "run_id": run_id,
            "run_attempt": attempt,
            "job_name": job_name,
            "check_run_id": run_id * 10 + len(job_name) + attempt,
            "url": url or f"https://github.com/{repo}/actions/runs/{run_id}",
        }
        self.report(repo, payload, {**common, "status": "in_progress"})
        if not conclusion:
            extra = {"progress": progress} if progress else {}
            self.report(repo, {**payload, **extra}, {**common, "status": "in_progress"})
            return
        done = {**common, "status": "completed", "conclusion": conclusion}
        if tests is not None:
            done["test_results"] = tests
        extra = {"run_report": run_report} if run_report else {}
        self.report(repo, {**payload, **extra}, done, selection)

    def close(self) -> None:
        self.client.close()


def tests_report(
    failed: list[str], passed: list[str], steps: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """The run_report `spyre-ci ci report` sends for two shards (a failure in shard 2)."""
    return {
        "schema_version": "1",
        "steps": steps
        or [
            {"job": "select", "name": "checkout", "kind": "checkout", "outcome": "success"},
            {"job": "select", "name": "select", "kind": "select", "outcome": "success"},
            {"job": "test (shard 1)", "name": "test", "kind": "test", "outcome": "success"},
            {
                "job": "test (shard 2)",
                "name": "test",
                "kind": "test",
                "outcome": "failure" if failed else "success",
            },
        ],
        "tests": {
            "outcomes": {"passed": len(passed), "failed": len(failed)},
            "failures": [
                {
                    "id": t,
                    "outcome": "failed",
                    "shard": "2",
                    "duration": 0.25,
                    "message": XSS_MESSAGE if t == TEST_ADD else f"AssertionError in {t}",
                    "location": "test/test_ops.py:21: AssertionError",
                }
                for t in failed
            ],
            "results": {"passed": passed},
            "truncated": {"failures": 0, "results": 0, "messages": 0},
            "junit_url": f"https://github.com/{RESULTS_REPO}/actions/runs/401#artifacts",
        },
        "legs": [
            {
                "name": "test (shard 1)",
                "conclusion": "success",
                "tests": {"passed": 1, "failed": 0, "skipped": 0, "total": 1},
            },
            {
                "name": "test (shard 2)",
                "conclusion": "failure" if failed else "success",
                "tests": {
                    "passed": len(passed) - 1,
                    "failed": len(failed),
                    "skipped": 0,
                    "total": len(passed) - 1 + len(failed),
                },
            },
        ],
        "log_tail": {"step": "test (shard 2) / test", "text": "collected 3 items\n" + XSS_LOG},
    }


def _counts(report: dict[str, Any]) -> dict[str, int]:
    tests = report["tests"]
    passed, failed = len(tests["results"]["passed"]), len(tests["failures"])
    return {"passed": passed, "failed": failed, "skipped": 0, "total": passed + failed}


def seed_results(down: Downstream, ids: dict[str, str]) -> None:
    """The results backend: test_add passes on the PR's first commit and fails on its
    second (twice: a re-run, where test_mul flips: flaky); the push fails in checkout
    (infrastructure); a second job of the push is still running (3 of 8 steps)."""
    wf = "upstream-dispatch"
    ok = tests_report([], [TEST_ADD, TEST_MUL, TEST_SUM])
    down.job(
        RESULTS_REPO,
        ids["opened"],
        "report",
        "success",
        401,
        tests=_counts(ok),
        run_report=ok,
        workflow=wf,
    )
    selection = {
        "selection_id": "sel-results",
        "summary": {
            "per_stage": {"detect": 1, "map": 3, "scope": 3, "triage": 3},
            "selected": 3,
            "total": 40,
            "causes_by_test": {
                TEST_ADD: [
                    {"stage": "detect", "kind": "helper", "summary": SUSPECT_CHANGE},
                    {
                        "stage": "map",
                        "kind": "helper",
                        "summary": "template TestOps.test_add uses it",
                        "evidence": "calls reference_add",
                    },
                ]
            },
        },
    }
    first = tests_report([TEST_ADD], [TEST_MUL, TEST_SUM])
    down.job(
        RESULTS_REPO,
        ids["sync"],
        "report",
        "failure",
        402,
        tests=_counts(first),
        run_report=first,
        selection=selection,
        workflow=wf,
    )
    # a re-run of run 402 (callback tokens are one-shot: the relay lets an attempt in when
    # it asked GitHub for the re-run itself, which records this grant)
    if down.store_url:
        store = open_store(down.store_url)
        try:
            with store.transaction() as tx:
                grant_rerun(tx, RESULTS_REPO, 402, time.time())
        finally:
            store.close()
    rerun = tests_report([TEST_ADD, TEST_MUL], [TEST_SUM])
    down.job(
        RESULTS_REPO,
        ids["sync"],
        "report",
        "failure",
        402,
        tests=_counts(rerun),
        run_report=rerun,
        selection=selection,
        attempt=2,
        workflow=wf,
    )
    checkout_failed = {
        "schema_version": "1",
        "steps": [
            {"job": "select", "name": "plan", "kind": "plan", "outcome": "success"},
            {"job": "select", "name": "checkout", "kind": "checkout", "outcome": "failure"},
        ],
        "log_tail": {"step": "select / checkout", "text": f"fatal: no such commit {SHA_PUSH}"},
    }
    down.job(
        RESULTS_REPO, ids["push"], "report", "failure", 403, run_report=checkout_failed, workflow=wf
    )
    progress = {"done": 3, "total": 8, "step": "test-1-checkout"}
    down.job(RESULTS_REPO, ids["push"], "report (gpu)", "", 403, progress=progress, workflow=wf)


def seed(
    relay_url: str, issuer: FakeOidcIssuer, github: FakeGitHub, store_url: str | None = None
) -> Seeded:
    seeded = Seeded(delivery_ids=webhooks(relay_url))
    wait_for_dispatches(github, expected=3 * 4)  # 3 events x 4 allowlisted repositories
    # GitHub's 204 comes before the worker's commit: until the relay has recorded a
    # dispatch, its callbacks are answered 503 "is being recorded". Wait for the record.
    wait_for_dashboard_dispatches(relay_url, set(github.dispatched_pairs()))
    ids = seeded.delivery_ids
    down = Downstream(relay_url, issuer, github, store_url)
    try:
        tests_ok = {"passed": 940, "failed": 0, "skipped": 3, "total": 943}
        tests_bad = {"passed": 930, "failed": 10, "skipped": 3, "total": 943}
        selection = {
            "selection_id": f"sel-{ids['sync']}",
            "summary": {
                "per_stage": {"changed files": 41, "impact": 3120, "filter": 1210, "agent": 943},
                "top_causes": [
                    {"cause": "aten/src/ATen/native/BinaryOps.cpp", "count": 610},
                    {"cause": XSS_CAUSE, "count": 12},
                ],
                "rationale": "BinaryOps changed: kept elementwise and type-promotion tests.",
                "selected": 943,
                "total": 12000,
            },
            "html": REPORT_HTML,
        }
        # The PR's first commit: one failing shard on the L4 backend.
        down.job(L4_REPO, ids["opened"], "test (1/2)", "success", 101, tests=tests_ok)
        down.job(L4_REPO, ids["opened"], "test (2/2)", "failure", 101, tests=tests_bad)
        # The PR's second commit: green, with a selection report and hostile text.
        down.job(
            L4_REPO, ids["sync"], "test (1/2)", "success", 102, tests=tests_ok, selection=selection
        )
        # The relay keeps each repository's reports apart: it prefixes ids with the repo.
        seeded.selection_id = f"{L4_REPO}/sel-{ids['sync']}"
        down.job(
            L4_REPO,
            ids["sync"],
            "test (2/2)",
            "success",
            102,
            tests=tests_ok,
            url="https://evil.example/acme/spyre-backend/actions/runs/102",
        )
        down.job(L4_REPO, ids["sync"], XSS_JOB, "success", 102)
        summary_only = {
            "selection_id": "plain",
            "summary": {"per_stage": {"impact": 80, "agent": 20}, "rationale": XSS_RATIONALE},
        }
        down.job(
            L2_REPO,
            ids["sync"],
            "build-and-test",
            "success",
            202,
            tests=tests_ok,
            selection=summary_only,
        )
        seeded.summary_only_selection_id = f"{L2_REPO}/plain"
        # A branch push: the L2 backend timed out.
        down.job(L4_REPO, ids["push"], "test (1/2)", "success", 103, tests=tests_ok)
        down.job(L2_REPO, ids["push"], "build-and-test", "timed_out", 203)
        # A nightly run of the L2 backend: no dispatch, delivery id = the PyTorch SHA.
        down.report(
            L2_REPO,
            {"event_type": "nightly", "delivery_id": SHA_NIGHTLY, "payload": {}},
            {
                "name": "nightly",
                "status": "completed",
                "conclusion": "success",
                "run_id": 301,
                "run_attempt": 1,
                "job_name": "full suite",
                "check_run_id": 3010,
                "url": f"https://github.com/{L2_REPO}/actions/runs/301",
                "test_results": {"passed": 12000, "failed": 0, "skipped": 40, "total": 12040},
            },
        )
        seed_results(down, ids)
        seeded.callbacks = down.sent
    finally:
        down.close()
    return seeded
