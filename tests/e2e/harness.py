"""The whole loop on one machine: real relay, fake GitHub that runs the workflow, fake OIDC.

`WorkflowHost` plays GitHub Actions: when the fake GitHub accepts a
`repository_dispatch` for a downstream repository, it runs that repository's
`upstream-dispatch.yml` the way `spyre-ci ci run-workflow` does (the same `spyre-ci ci`
commands, step by step, in a subprocess with a workflow-like environment), with
an OIDC token service from the fake issuer (`ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN`
for that repository) and the relay's callback URL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from spyre_ci.ci.demo import DemoUpstream
from tests.support.fake_github import Dispatch, FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer


@dataclass
class HostedRun:
    dispatch: Dispatch
    workdir: Path
    process: subprocess.Popen[bytes]
    run_id: str

    @property
    def delivery_id(self) -> str:
        return str(self.dispatch.client_payload.get("delivery_id", ""))

    def log(self) -> str:
        path = self.workdir / "run.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def step_logs(self) -> str:
        logs = sorted((self.workdir / "run" / "logs").glob("*.log"))
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in logs)


@dataclass
class WorkflowHost:
    github: FakeGitHub
    oidc: FakeOidcIssuer
    relay_url: str
    upstream: DemoUpstream
    workdir: Path
    shards: int = 1
    runs: list[HostedRun] = field(default_factory=list)
    _seen: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> WorkflowHost:
        self._thread = threading.Thread(target=self._watch, name="workflow-host", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for run in self.runs:
            if run.process.poll() is None:
                run.process.kill()
                run.process.wait(timeout=10)

    def _watch(self) -> None:
        while not self._stop.is_set():
            new = self.github.dispatches_since(self._seen)
            self._seen += len(new)
            for dispatch in new:
                self.runs.append(self._start(dispatch, len(self.runs) + 1))
            time.sleep(0.05)

    def _start(self, dispatch: Dispatch, number: int) -> HostedRun:
        """GitHub starts the workflow run of `dispatch.repo` for this repository_dispatch."""
        run_id = str(7_000_000 + number)
        workdir = self.workdir / f"run-{number}"
        workdir.mkdir(parents=True)
        event = {
            "action": dispatch.event_type,
            "branch": "main",
            "client_payload": dispatch.client_payload,
            "repository": {"full_name": dispatch.repo},
        }
        (workdir / "event.json").write_text(json.dumps(event))
        env = {
            **os.environ,
            **self.oidc.actions_env(dispatch.repo),
            "SPYRE_CI_CALLBACK_URL": f"{self.relay_url}/github/callback",
            "PYTHONUNBUFFERED": "1",
        }
        command = [
            sys.executable, "-m", "spyre_ci", "ci", "run-workflow",
            "--event-name", "repository_dispatch", "--event-path", str(workdir / "event.json"),
            "--workdir", str(workdir / "run"), "--upstream-url", self.upstream.url,
            "--repository", dispatch.repo, "--server-url", "https://github.com",
            "--run-id", run_id, "--shards", str(self.shards),
            "--manifest", str(self.upstream.manifest),
        ]  # fmt: skip
        with (workdir / "run.log").open("wb") as log:
            process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        return HostedRun(dispatch, workdir, process, run_id)

    def wait_for_runs(self, count: int, timeout: float) -> list[HostedRun]:
        """Wait until `count` runs have started and finished; fail with their logs otherwise."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(self.runs) >= count and all(r.process.poll() is not None for r in self.runs):
                return list(self.runs)
            time.sleep(0.2)
        details = "\n".join(f"== run {r.run_id}\n{r.log()}\n{r.step_logs()}" for r in self.runs)
        raise AssertionError(
            f"{len(self.runs)} of {count} workflow runs started; not all finished "
            f"in {timeout} s\n{details}"
        )
