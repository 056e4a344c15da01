"""Concurrent callbacks: one decision per job step, matrix shards never block each other."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop


def _concurrently(loop: ResultsLoop, bodies: list[dict]) -> list[int]:
    barrier = threading.Barrier(len(bodies))
    codes: list[int] = [0] * len(bodies)

    tokens = [loop.token("acme/l2") for _ in bodies]

    def post(http: httpx.Client, i: int) -> None:
        barrier.wait()
        codes[i] = loop.callback_with(http, "acme/l2", token=tokens[i], **bodies[i]).status_code

    limits = httpx.Limits(max_connections=len(bodies))
    with httpx.Client(timeout=30, limits=limits) as http:
        threads = [threading.Thread(target=post, args=(http, i)) for i in range(len(bodies))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return codes


@pytest.mark.parametrize(
    "store_kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_racing_first_callbacks_of_one_job_are_decided_once(
    request: pytest.FixtureRequest,
    store_kind: str,
    tmp_path: Path,
    github: FakeGitHub,
    oidc: FakeOidcIssuer,
) -> None:
    store_url = request.getfixturevalue("postgres_url") if store_kind == "postgres" else None
    with ResultsLoop(tmp_path, github, oidc, store_url=store_url) as loop:
        payload = loop.open_pr("acme/l2")
        # Eight different in_progress reports for the same job (a replay race) ...
        racing = [
            {
                "client_payload": payload,
                "status": "in_progress",
                "started_at": f"2026-11-30T04:0{i}:00Z",
            }
            for i in range(8)
        ]
        codes = _concurrently(loop, racing)
        # ... and sixteen shards of a matrix reporting at once.
        shards = [
            {"client_payload": payload, "status": "in_progress", "job_name": f"shard {i}"}
            for i in range(16)
        ]
        shard_codes = _concurrently(loop, shards)
        jobs = loop.rows("SELECT job_name FROM job_runs")
    assert sorted(codes) == [200] + [409] * 7
    assert shard_codes == [200] * 16
    assert len(jobs) == 17
