"""Wait, inside the `report` job, for the run's `test` jobs to finish.

The `report` job starts right after `select` and sends the in_progress callback at
once, so that the relay measures queue time as CRCR means it (dispatch → the run
starts), not dispatch → the tests are over. It then waits for the test matrix
through GitHub's REST API (`GET /repos/{repo}/actions/runs/{run_id}/attempts/{n}/jobs`,
`actions: read`, the job's own short-lived GITHUB_TOKEN) and sends the completed
callback. `matrix_state` is the pure decision; `wait_for_jobs` the polling shell.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import requests

PER_PAGE = 100


class WaitFailed(RuntimeError):
    """The jobs could not be listed or did not finish in time; the message says which."""


@dataclass(frozen=True)
class MatrixState:
    done: bool
    result: str  # GitHub's needs.<job>.result vocabulary: success, failure, cancelled, skipped
    seen: int
    legs: tuple[Mapping[str, Any], ...] = ()  # the legs as the API listed them (with steps)


def leg_steps(legs: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The steps of each leg as `ci report --steps-file` reads them: `{job, name, outcome}`."""
    out = []
    for leg in legs:
        for step in leg.get("steps") or []:
            if isinstance(step, Mapping) and step.get("status") == "completed":
                out.append(
                    {
                        "job": str(leg.get("name", "")),
                        "name": str(step.get("name", "")),
                        "outcome": str(step.get("conclusion") or ""),
                    }
                )
    return out


def steps_done(jobs: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(completed steps, listed steps) over the run's jobs: the run's progress."""
    steps = [s for j in jobs for s in j.get("steps") or [] if isinstance(s, Mapping)]
    return sum(1 for s in steps if s.get("status") == "completed"), len(steps)


def matrix_state(jobs: Sequence[Mapping[str, Any]], prefix: str, expected: int) -> MatrixState:
    """Are the jobs named `prefix` or `prefix (...)` (matrix legs) done, and how did they end?

    Done when at least `expected` of them are listed and all are completed (a leg not
    yet created is not listed). The result is as GitHub aggregates a matrix for
    `needs`: cancelled if any leg was cancelled, failure if any failed, else success.
    """
    legs = [
        j
        for j in jobs
        if j.get("name") == prefix or str(j.get("name", "")).startswith(f"{prefix} (")
    ]
    if not legs and expected == 0:
        return MatrixState(True, "skipped", 0)
    done = len(legs) >= expected and all(j.get("status") == "completed" for j in legs)
    listed = tuple(legs)
    conclusions = {str(j.get("conclusion")) for j in legs}
    if "cancelled" in conclusions:
        result = "cancelled"
    elif conclusions & {"failure", "timed_out", "startup_failure", "action_required"}:
        result = "failure"
    else:
        result = "success"
    return MatrixState(done, result, len(legs), listed)


def _list_jobs(
    api_url: str, repo: str, run_id: str, attempt: str, token: str
) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    url: str | None = f"{api_url}/repos/{repo}/actions/runs/{run_id}/attempts/{attempt}/jobs"
    params: dict[str, Any] | None = {"per_page": PER_PAGE}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"}
    while url:
        try:
            response = requests.get(url, params=params, headers=headers, timeout=15)
        except requests.RequestException as exc:
            raise WaitFailed(f"cannot list the jobs of run {run_id}: {exc}") from exc
        if response.status_code != 200:
            raise WaitFailed(
                f"listing the jobs of run {run_id} answered {response.status_code}: "
                f"{response.text[:200]} (the job needs `permissions: actions: read`)"
            )
        jobs.extend(response.json().get("jobs") or [])
        url = response.links.get("next", {}).get("url")
        params = None  # the next link carries them
    return jobs


def wait_for_jobs(
    *,
    api_url: str,
    repo: str,
    run_id: str,
    attempt: str,
    token: str,
    prefix: str,
    expected: int,
    timeout: float,
    interval: float = 15.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    on_poll: Callable[[list[dict[str, Any]]], None] | None = None,
) -> MatrixState:
    """Poll until the `prefix` jobs are done; an API error is retried until the deadline.
    `on_poll` sees every listing (the progress report).

    At the deadline the last attempt's API error, if it failed, is what is raised (it
    names the missing permission), else "not all finished".
    """
    deadline = clock() + timeout
    while True:
        error: WaitFailed | None = None
        try:
            jobs = _list_jobs(api_url, repo, run_id, attempt, token)
            if on_poll is not None:
                on_poll(jobs)
            state = matrix_state(jobs, prefix, expected)
        except WaitFailed as exc:
            error = exc  # maybe transient: ask again until the deadline
            state = MatrixState(False, "", 0)
        if state.done:
            return state
        if clock() >= deadline:
            if error is not None:
                raise error
            raise WaitFailed(
                f"{state.seen} of {expected} `{prefix}` job(s) listed, not all finished "
                f"after {timeout:.0f} s"
            )
        sleep(interval)
