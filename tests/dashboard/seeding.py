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

from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_records import RECORD_TIMEOUT, wait_for_dashboard_dispatches
from tests.support.relay_server import fixture_body, post_webhook

L4_REPO = "acme/spyre-backend"
L2_REPO = "beta/xpu-lab"
L1_REPO = "gamma/dispatch-only"
PR_NUMBER = 4201
SHA_OPENED = "a1" * 20
SHA_SYNC = "b2" * 20
SHA_PUSH = "c3" * 20
SHA_NIGHTLY = "d4" * 20
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

    def __init__(self, relay_url: str, issuer: FakeOidcIssuer, github: FakeGitHub) -> None:
        self.relay_url = relay_url
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
    ) -> None:
        payload = self.payload_for(delivery_id, repo)
        common = {
            "name": "spyre-ci",
            "run_id": run_id,
            "run_attempt": 1,
            "job_name": job_name,
            "check_run_id": run_id * 10 + len(job_name),
            "url": url or f"https://github.com/{repo}/actions/runs/{run_id}",
        }
        self.report(repo, payload, {**common, "status": "in_progress"})
        done = {**common, "status": "completed", "conclusion": conclusion}
        if tests is not None:
            done["test_results"] = tests
        self.report(repo, payload, done, selection)

    def close(self) -> None:
        self.client.close()


def seed(relay_url: str, issuer: FakeOidcIssuer, github: FakeGitHub) -> Seeded:
    seeded = Seeded(delivery_ids=webhooks(relay_url))
    wait_for_dispatches(github, expected=3 * 3)  # 3 events x 3 allowlisted repositories
    # GitHub's 204 comes before the worker's commit: until the relay has recorded a
    # dispatch, its callbacks are answered 503 "is being recorded". Wait for the record.
    wait_for_dashboard_dispatches(relay_url, set(github.dispatched_pairs()))
    ids = seeded.delivery_ids
    down = Downstream(relay_url, issuer, github)
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
        seeded.callbacks = down.sent
    finally:
        down.close()
    return seeded
