"""GitHub endpoints for results, re-runs and sweepers, plugged into the fake GitHub.

    results = FakeResultsAPI()
    with FakeGitHub(routers=(results.router,)) as fake:
        ...
        results.check_runs        # every accepted POST /repos/{o}/{r}/check-runs body (+ "repo")
        results.statuses          # every accepted POST /repos/{o}/{r}/statuses/{sha} (+ "repo", "sha")
        results.reruns            # (repo, run_id, "rerun" | "rerun-failed-jobs")
        results.hook_deliveries   # what GET /app/hook/deliveries lists (newest first); tests add
        results.redeliveries      # hook delivery ids POSTed to /app/hook/deliveries/{id}/attempts
        results.tags / results.releases   # served by GET /repos/{o}/{r}/tags and /releases

Limits enforced as GitHub documents them (422 otherwise): check runs need a
name, a 40-hex head_sha, a status in queued/in_progress/completed, a conclusion
exactly when completed, an output title with a summary of at most 65,535
characters; commit statuses need a state in error/failure/pending/success, a
description of at most 140 characters, and at most 1000 statuses per SHA and
context. Hook delivery endpoints need the App's JWT; the others an
installation token for the repository (``fake.guard``). ``on_redeliver`` (a
callable taking the delivery dict) lets a test actually redeliver.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

if TYPE_CHECKING:
    from tests.support.fake_github import FakeGitHub

CHECK_STATUSES = {"queued", "in_progress", "completed"}
CONCLUSIONS = {
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
}
STATUS_STATES = {"error", "failure", "pending", "success"}
SHA = re.compile(r"^[0-9a-f]{40}$")


def _unprocessable(message: str) -> JSONResponse:
    return JSONResponse({"message": "Validation Failed", "errors": [message]}, status_code=422)


def check_run_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "body must be an object"
    if not body.get("name"):
        return "name is required"
    if not SHA.match(str(body.get("head_sha", ""))):
        return "head_sha must be a 40-character SHA"
    status = body.get("status", "queued")
    if status not in CHECK_STATUSES:
        return f"status {status!r} is invalid"
    if (status == "completed") != ("conclusion" in body):
        return "conclusion is required if and only if status is completed"
    if "conclusion" in body and body["conclusion"] not in CONCLUSIONS:
        return f"conclusion {body['conclusion']!r} is invalid"
    output = body.get("output")
    if output is not None:
        if not output.get("title") or "summary" not in output:
            return "output needs title and summary"
        if len(output["summary"]) > 65535:
            return "output.summary is longer than 65535 characters"
    return None


def status_problem(body: Any) -> str | None:
    if not isinstance(body, dict) or body.get("state") not in STATUS_STATES:
        return "state must be one of error, failure, pending, success"
    if len(body.get("description") or "") > 140:
        return "description is longer than 140 characters"
    return None


class FakeResultsAPI:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.check_runs: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        self.reruns: list[tuple[str, int, str]] = []
        self.hook_deliveries: list[dict[str, Any]] = []
        self.redeliveries: list[str] = []
        self.tags: list[dict[str, Any]] = []
        self.releases: list[dict[str, Any]] = []
        self.on_redeliver: Callable[[dict[str, Any]], None] | None = None

    def check_runs_named(self, name: str) -> list[dict[str, Any]]:
        with self.lock:
            return [c for c in self.check_runs if c["name"] == name]

    def router(self, fake: FakeGitHub) -> APIRouter:
        api = APIRouter()
        results = self

        @api.post("/repos/{owner}/{repo}/check-runs")
        async def create_check_run(owner: str, repo: str, request: Request) -> Response:
            denied = fake.guard(request, f"{owner}/{repo}", write=True)
            if denied is not None:
                return denied
            body = await request.json()
            problem = check_run_problem(body)
            if problem:
                return _unprocessable(problem)
            with results.lock:
                run = {**body, "repo": f"{owner}/{repo}", "id": 5000 + len(results.check_runs)}
                results.check_runs.append(run)
            return JSONResponse(run, status_code=201)

        @api.post("/repos/{owner}/{repo}/statuses/{sha}")
        async def create_status(owner: str, repo: str, sha: str, request: Request) -> Response:
            denied = fake.guard(request, f"{owner}/{repo}", write=True)
            if denied is not None:
                return denied
            body = await request.json()
            problem = status_problem(body) or (None if SHA.match(sha) else "sha is invalid")
            with results.lock:
                same = [
                    s
                    for s in results.statuses
                    if (s["sha"], s.get("context")) == (sha, body.get("context"))
                ]
                if not problem and len(same) >= 1000:
                    problem = "This SHA and context has reached the maximum number of statuses."
                if problem:
                    return _unprocessable(problem)
                results.statuses.append({**body, "repo": f"{owner}/{repo}", "sha": sha})
            return JSONResponse(body, status_code=201)

        @api.post("/repos/{owner}/{repo}/actions/runs/{run_id}/{what}")
        async def rerun(
            owner: str, repo: str, run_id: int, what: str, request: Request
        ) -> Response:
            if what not in ("rerun", "rerun-failed-jobs"):
                return JSONResponse({"message": "Not Found"}, status_code=404)
            denied = fake.guard(request, f"{owner}/{repo}", write=True)
            if denied is not None:
                return denied
            with results.lock:
                results.reruns.append((f"{owner}/{repo}", run_id, what))
            return JSONResponse({}, status_code=201)

        @api.get("/app/hook/deliveries")
        async def hook_deliveries(request: Request) -> Response:
            denied = fake._verify_app_jwt(request)
            if denied is not None:
                return denied
            per_page = min(100, int(request.query_params.get("per_page", "30")))
            start = int(request.query_params.get("cursor", "0"))
            with results.lock:
                page = results.hook_deliveries[start : start + per_page]
                more = start + per_page < len(results.hook_deliveries)
            headers = {}
            if more:
                headers["link"] = (
                    f"<{fake.url}/app/hook/deliveries?per_page={per_page}&cursor={start + per_page}>;"
                    ' rel="next"'
                )
            return JSONResponse(page, headers=headers)

        @api.post("/app/hook/deliveries/{delivery_id}/attempts")
        async def redeliver(delivery_id: int, request: Request) -> Response:
            denied = fake._verify_app_jwt(request)
            if denied is not None:
                return denied
            with results.lock:
                found = [d for d in results.hook_deliveries if int(d["id"]) == delivery_id]
                if not found:
                    return JSONResponse({"message": "Not Found"}, status_code=404)
                results.redeliveries.append(str(delivery_id))
            if results.on_redeliver is not None:
                results.on_redeliver(found[0])
            return JSONResponse({}, status_code=202)

        @api.get("/repos/{owner}/{repo}/tags")
        async def tags(owner: str, repo: str, request: Request) -> Response:
            denied = fake.guard(request, f"{owner}/{repo}", write=False)
            with results.lock:
                return denied or JSONResponse(list(results.tags))

        @api.get("/repos/{owner}/{repo}/releases")
        async def releases(owner: str, repo: str, request: Request) -> Response:
            denied = fake.guard(request, f"{owner}/{repo}", write=False)
            with results.lock:
                return denied or JSONResponse(list(results.releases))

        @api.get("/repos/{owner}/{repo}/commits/{ref:path}")
        async def commit(owner: str, repo: str, ref: str, request: Request) -> Response:
            denied = fake.guard(request, f"{owner}/{repo}", write=False)
            if denied is not None:
                return denied
            with results.lock:
                for tag in results.tags:
                    if tag["name"] == ref:
                        return JSONResponse({"sha": tag["commit"]["sha"]})
                for release in results.releases:  # "target_sha" is the fake's own field
                    if release["tag_name"] == ref and release.get("target_sha"):
                        return JSONResponse({"sha": release["target_sha"]})
            return (
                JSONResponse({"sha": ref})
                if SHA.match(ref)
                else JSONResponse({"message": "No commit found"}, status_code=422)
            )

        return api
