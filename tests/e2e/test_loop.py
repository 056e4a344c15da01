"""The whole loop, end to end, on one machine.

Real relay (`spyre-ci relay serve --with-worker`: uvicorn, SQLite), the fake GitHub
(which runs the downstream workflow on each repository_dispatch, see harness.py),
the fake OIDC issuer, and a small upstream git repository (spyre_ci/ci/demo.py).
Two upstream PRs, both labelled for an L3 backend: one that only extends a test
(its selected tests pass) and one that changes what `add` must compute (the
backend's add fails it). Every hop is asserted: webhook accepted, dispatch sent in
CRCR's format with a callback token, the workflow's steps, the callbacks, the check
runs on the upstream head SHAs, the dashboard rows, cells and selection reports.
GitHub answers the first dispatch after the relay's timeout, so it is dispatched
twice (at least once): the second run is told "duplicate" at its claim and stops, and
everything downstream of it still happens once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from spyre_ci.ci.demo import DemoUpstream, build_demo_upstream
from tests.e2e.harness import HostedRun, WorkflowHost
from tests.support.fake_github import FakeGitHub, Fault
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_server import RelayServer, free_port, post_webhook, served_relay_config
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = "pytorch/pytorch"
BACKEND = "acme/torch-spyre"  # L3 for the `spyre` device
LABEL = "ciflow/crcr/spyre"
CHECK_NAME = f"crcr/{BACKEND}/upstream-dispatch/report"
RUN_TIMEOUT = 150.0
GITHUB_TIMEOUT = 2.0  # the relay's; the first dispatch is answered later than that


@dataclass
class Loop:
    relay: RelayServer
    github: FakeGitHub
    results: FakeResultsAPI
    host: WorkflowHost
    demo: DemoUpstream

    def api(self, path: str) -> Any:
        answer = httpx.get(f"{self.relay.url}{path}", timeout=10)
        assert answer.status_code == 200, f"{path}: {answer.status_code} {answer.text[:300]}"
        return answer.json()

    def page(self, path: str) -> str:
        answer = httpx.get(f"{self.relay.url}{path}", timeout=10)
        assert answer.status_code == 200, f"{path}: {answer.status_code}"
        return answer.text


def _labelled(event_path: Path) -> bytes:
    event = json.loads(event_path.read_text())
    event["pull_request"]["labels"] = [{"name": LABEL}]
    return json.dumps(event).encode()


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[Loop]:
    demo = build_demo_upstream(tmp_path / "demo", repo_name=UPSTREAM)
    results = FakeResultsAPI()
    with FakeOidcIssuer() as oidc, FakeGitHub(routers=(results.router,)) as github:
        # Recorded, but answered after the relay gave up: the relay sends it again.
        github.inject(Fault.slow(GITHUB_TIMEOUT + 1.5, path="/dispatches", count=1))
        port = free_port()
        config = served_relay_config(
            tmp_path,
            f"L3:\n  spyre:\n    {BACKEND}: [spyre-oncall]\n",
            github_url=github.url,
            oidc_url=oidc.url,
            poll_interval_seconds=0.1,
            github={"timeout_seconds": GITHUB_TIMEOUT},
            upstream_repo=UPSTREAM,
            public_url=f"http://127.0.0.1:{port}",
        )
        with (
            RelayServer(config, with_worker=True, port=port, log_dir=tmp_path) as relay,
            WorkflowHost(github, oidc, relay.url, demo, tmp_path / "runs") as host,
        ):
            yield Loop(relay, github, results, host, demo)


def _workflow_steps() -> list[tuple[str, str]]:
    """(job, `spyre-ci ci` command) in upstream-dispatch.yml, in the order the jobs run:
    select, report's in_progress, the test leg (shard 1), report's completed."""
    workflow = yaml.safe_load(
        (ROOT / ".github" / "workflows" / "upstream-dispatch.yml").read_text()
    )
    commands = {
        name: [
            step["run"].split()[2]
            for step in job["steps"]
            if step.get("run", "").startswith("spyre-ci ci ")
        ]
        for name, job in workflow["jobs"].items()
    }
    report = [c for c in commands["report"] if c != "wait-for-jobs"]
    return [
        *[("select", c) for c in commands["select"]],
        ("report", report[0]),
        *[("test", f"1-{c}") for c in commands["test"]],  # shard 1
        *[("report", c) for c in report[1:]],
    ]


def _run_for(runs: list[HostedRun], delivery: str) -> HostedRun:
    """The run that owns `delivery`'s dispatch (a duplicate run stops after its claim)."""
    (run,) = [r for r in runs if r.delivery_id == delivery and "not run: duplicate" not in r.log()]
    return run


def _completed_job(loop: Loop, pr: int) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        page = loop.api(f"/api/crcr/pr/{pr}")
        jobs = [j for b in page["backends"] for j in b["jobs"] if j["status"] == "completed"]
        return jobs[0] if jobs else None

    job: dict[str, Any] = wait_until(done, 30, f"the completed job of PR #{pr} on the dashboard")
    # One result per PR, though one of the two was dispatched twice.
    page = loop.api(f"/api/crcr/pr/{pr}")
    assert [len(b["jobs"]) for b in page["backends"]] == [1], page
    return job


def test_upstream_prs_go_round_the_whole_loop(loop: Loop) -> None:
    demo = loop.demo
    # 1. Signed webhooks in: accepted (202) and stored.
    for delivery, event in (("e2e-good", demo.good_event), ("e2e-bad", demo.bad_event)):
        answer = post_webhook(
            loop.relay.url, "pull_request", _labelled(event), delivery_id=delivery
        )
        assert answer.status_code == 202, answer.text

    # 2. The relay dispatches to the backend in CRCR's format, with a callback token; the
    #    dispatch answered late is sent again (at least once).
    wait_until(lambda: len(loop.github.dispatches) >= 3, 60, "three repository_dispatch calls")
    by_delivery = {d.client_payload["delivery_id"]: d for d in loop.github.dispatches}
    assert set(by_delivery) == {"e2e-good", "e2e-bad"}
    for delivery, sha in (("e2e-good", demo.good_sha), ("e2e-bad", demo.bad_sha)):
        dispatch = by_delivery[delivery]
        assert (dispatch.repo, dispatch.event_type) == (BACKEND, "pull_request")
        payload = dispatch.client_payload
        assert payload["event_type"] == "pull_request"
        assert payload["payload"]["pull_request"]["head"]["sha"] == sha
        assert payload["callback_token"].startswith("crt1.")

    # 3. The fake GitHub ran the workflow for each dispatch: every step succeeded; the
    #    second run of the dispatch sent twice was told duplicate at its claim, and stopped.
    runs = loop.host.wait_for_runs(3, timeout=RUN_TIMEOUT)
    for run in runs:
        assert run.process.returncode == 0, run.log() + run.step_logs()
    good_run, bad_run = _run_for(runs, "e2e-good"), _run_for(runs, "e2e-bad")
    (duplicate,) = [r for r in runs if r not in (good_run, bad_run)]
    duplicate_steps = sorted((duplicate.workdir / "run" / "logs").glob("*.log"))
    assert [p.stem.split("-", 1)[1] for p in duplicate_steps] == ["select-claim"]
    owner = good_run if duplicate.delivery_id == "e2e-good" else bad_run
    assert f"belongs to run {owner.run_id} attempt 1" in duplicate.log(), duplicate.log()
    # ... the workflow file's steps, job by job (the API wait is GitHub-only: the legs ran).
    executed = [
        p.stem.split("-", 1)[1] for p in sorted((good_run.workdir / "run" / "logs").glob("*.log"))
    ]
    assert executed == [f"{job}-{cmd}" for job, cmd in _workflow_steps()], executed
    assert "conclusion: success" in good_run.log(), good_run.log() + good_run.step_logs()
    assert "conclusion: failure" in bad_run.log(), bad_run.log() + bad_run.step_logs()

    # 4. The relay recorded both callbacks of each job: results on the dashboard.
    good = _completed_job(loop, 101)
    assert (good["conclusion"], good["job_name"], good["workflow_name"]) == (
        "success",
        "report",
        "upstream-dispatch",
    )
    # The selection kept test_mul (the PR's edit) for float16 and float32; both pass.
    assert good["tests"] == {"passed": 2, "failed": 0, "skipped": 0, "total": 2}
    assert good["head_sha"] == demo.good_sha
    assert good["url"] == f"https://github.com/{BACKEND}/actions/runs/{good_run.run_id}"
    # in_progress comes once select is done, completed after the tests: both times are real.
    assert good["queue_time"] > 0 and good["execution_time"] > 0
    bad = _completed_job(loop, 102)
    assert bad["conclusion"] == "failure"
    # test_add (reaches the changed reference_add) on spyre, float16 and float32: both fail.
    assert bad["tests"] == {"passed": 0, "failed": 2, "skipped": 0, "total": 2}
    assert bad["head_sha"] == demo.bad_sha

    # 5. The selection report came with the callback: per-stage counts and the cause on the
    #    PR page, the full HTML report behind the link.
    for job, template, cause in (
        (
            good,
            "test_mul",
            "TestDemoOps.test_mul modified -> template TestDemoOps.test_mul: "
            "the template's body changed",
        ),
        (
            bad,
            "test_add",
            "reference_add modified -> template TestDemoOps.test_add "
            "(2 links: calls reference_add (line 21))",
        ),
    ):
        selection = job["selection"]
        assert (selection["selected"], selection["total"]) == (2, 5), selection
        assert [s["name"] for s in selection["stages"]] == ["detect", "map", "scope", "triage"]
        assert cause in selection["top_causes"][0]["cause"], selection["top_causes"]
        report = loop.api(f"/api/selection/{job['selection_id']}")
        assert (report["repo"], report["has_html"]) == (BACKEND, True)
        # the selection's page links back to its run; the full report is the downstream's HTML
        page = loop.page(f"/selection/{job['selection_id']}")
        assert f"/crcr/deliveries/{job['delivery_id']}?repo=" in page
        html = loop.page(f"/selection-html/{job['selection_id']}")
        assert f"{template}_spyre_float16" in html and f"{template}_spyre_float32" in html
    assert "reference_add modified" in loop.page("/crcr/pr/102")

    # 6. L3 with the label: the fake GitHub holds in_progress then completed check runs
    #    on each PR's head SHA (posted through the relay's outbox, so wait for all four).
    checks = wait_until(
        lambda: (found := loop.results.check_runs_named(CHECK_NAME)) and len(found) >= 4 and found,
        30,
        "four check runs on the fake GitHub",
    )
    for sha, run, conclusion, number in (
        (demo.good_sha, good_run, "success", 101),
        (demo.bad_sha, bad_run, "failure", 102),
    ):
        mine = [c for c in checks if c["head_sha"] == sha]
        assert [c["status"] for c in mine] == ["in_progress", "completed"], mine
        assert mine[-1]["conclusion"] == conclusion
        assert mine[-1]["external_id"] == f"{run.run_id}:{number}"
        assert all(c["repo"] == UPSTREAM for c in mine)

    # 7. The backend's grid: a green cell for the good PR, a red one for the bad PR.
    grid = loop.api(f"/api/crcr/{BACKEND}")
    cells = [c for row in grid["rows"] for c in row["cells"] if c and not c.get("leg")]
    assert sorted(c["conclusion"] for c in cells) == ["failure", "success"]
    legs = [c for row in grid["rows"] for c in row["cells"] if c and c.get("leg")]
    assert sorted((c["job"], c["conclusion"]) for c in legs) == [
        ("test (shard 1)", "failure"),
        ("test (shard 1)", "success"),
    ]  # the test leg of each run, a column of its own
    html = loop.page(f"/crcr/{BACKEND}")
    assert "state-failure" in html and "state-success" in html
