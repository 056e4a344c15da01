"""A fake of GitHub's REST API: real HTTP on 127.0.0.1, enforcing the documented limits.

What it plays:
- GitHub App auth: `GET /repos/{owner}/{repo}/installation` and
  `POST /app/installations/{id}/access_tokens` need an RS256 JWT signed with the
  app's private key (`fake.private_key_pem`; iss = app id; exp - iat <= 10 min);
  installation tokens expire after `token_ttl` (1 h) and only work for their repo.
  Static tokens (`tokens=`) work for every repository.
- `POST /repos/{owner}/{repo}/dispatches`: event_type 1..100 characters,
  client_payload an object with <= 10 top-level keys and < 64 KB, else 422;
  204 on success; recorded in `fake.dispatches`.
- Rate limits: `rate_limit` requests per token per hour (x-ratelimit-* headers;
  403 with remaining 0 when exhausted); secondary limits on writes: at most
  `writes_per_minute`, at least `min_write_interval` s apart (403 + retry-after).
- Fault injection: `fake.inject(Fault.status(502))`, `Fault.secondary_rate_limit(retry_after=2)`,
  `Fault.timeout(seconds)` (no answer until the client gave up: the request is dropped
  unprocessed once it disconnects; a client still waiting after max(seconds, 30) s gets
  the normal answer), `Fault.slow(seconds)` (answers after `seconds`),
  optionally limited to paths containing `path` and to `count` requests.
- Outage: while `fake.down` is true every request is answered 503 (recorded, not processed).
- Every request is recorded in `fake.requests` (method, path, headers, json, at).

Other tests add endpoints (check runs, re-runs, hook deliveries) with
`FakeGitHub(routers=[factory])`, a factory taking the fake and returning an
APIRouter; inside, `fake.guard(request, repo, write=True)` applies auth and
limits (returns an error response or None) and `fake.record(...)` is automatic.
"""

from __future__ import annotations

import asyncio
import functools
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from tests.support.served import UvicornThread, free_port

MAX_EVENT_TYPE = 100
MAX_PAYLOAD_KEYS = 10
MAX_PAYLOAD_BYTES = 64 * 1024
TIMEOUT_FAULT_CAP = 30.0  # s a timeout fault waits at most for the client to give up


@dataclass
class Fault:
    kind: str  # status, secondary, timeout, slow
    status: int = 500
    seconds: float = 0.0
    path: str = ""
    count: int = 1

    @classmethod
    def status_code(cls, status: int = 500, *, path: str = "", count: int = 1) -> Fault:
        return cls("status", status=status, path=path, count=count)

    @classmethod
    def secondary_rate_limit(
        cls, retry_after: float = 1, *, path: str = "", count: int = 1
    ) -> Fault:
        return cls("secondary", status=403, seconds=retry_after, path=path, count=count)

    @classmethod
    def timeout(cls, seconds: float = 5.0, *, path: str = "", count: int = 1) -> Fault:
        return cls("timeout", seconds=seconds, path=path, count=count)

    @classmethod
    def slow(cls, seconds: float, *, path: str = "", count: int = 1) -> Fault:
        return cls("slow", seconds=seconds, path=path, count=count)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    json: Any
    at: float
    status: int = 0


@dataclass
class Dispatch:
    repo: str
    event_type: str
    client_payload: dict[str, Any]
    token: str
    at: float


@dataclass
class _TokenUse:
    count: int = 0
    window_start: float = field(default_factory=time.time)


@functools.cache
def _make_key() -> tuple[str, Any]:
    # One key per test process: generating RSA keys is slow, and fakes are short-lived.
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return pem, key.public_key()


class FakeGitHub:
    def __init__(
        self,
        *,
        app_id: str = "424242",
        tokens: tuple[str, ...] = ("test-token",),
        rate_limit: int = 5000,
        writes_per_minute: int = 10_000,
        min_write_interval: float = 0.0,
        token_ttl: float = 3600.0,
        routers: tuple[Callable[[FakeGitHub], APIRouter], ...] = (),
        now: Callable[[], float] = time.time,
    ) -> None:
        self.now = now  # GitHub's clock (JWT times, token expiry); tests may share a ManualClock
        self.app_id = app_id
        self.private_key_pem, self._public_key = _make_key()
        self.static_tokens = set(tokens)
        self.rate_limit = rate_limit
        self.writes_per_minute = writes_per_minute
        self.min_write_interval = min_write_interval
        self.token_ttl = token_ttl
        self.lock = threading.Lock()
        self.requests: list[Received] = []
        self.dispatches: list[Dispatch] = []
        self.faults: list[Fault] = []
        self.down = False  # an outage: every request answered 503
        self.installation_tokens: dict[str, tuple[str, float]] = {}  # token -> (repo, expires_at)
        self.installations: dict[int, str] = {}
        self.tokens_issued = 0
        self._usage: dict[str, _TokenUse] = {}
        self._writes: list[float] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = self._build_app(routers)
        self._served: UvicornThread | None = None

    # ----- test-facing API -------------------------------------------------
    def inject(self, fault: Fault) -> None:
        with self.lock:
            self.faults.append(fault)

    def dispatched_pairs(self) -> list[tuple[str, str]]:
        """(delivery_id, repo) of every accepted dispatch, in arrival order (duplicates kept)."""
        with self.lock:
            return [(d.client_payload.get("delivery_id", ""), d.repo) for d in self.dispatches]

    def dispatches_since(self, seen: int) -> list[Dispatch]:
        """The dispatches accepted after the first `seen` ones (for watchers that start a
        workflow run per dispatch)."""
        with self.lock:
            return self.dispatches[seen:]

    def start(self) -> FakeGitHub:
        # lifespan off: the fake's app has no startup work
        self._served = UvicornThread(self.app, self.port, "fake GitHub", lifespan="off").start()
        return self

    def stop(self) -> None:
        if self._served is not None:
            self._served.stop()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----- enforcement used by every endpoint ------------------------------
    def _take_fault(self, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.path in path and fault.count > 0:
                    fault.count -= 1
                    if fault.count == 0:
                        self.faults.remove(fault)
                    return fault
        return None

    def _token(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        return value.strip() if scheme.lower() in ("bearer", "token") and value.strip() else None

    def _rate_headers(self, token: str) -> dict[str, str]:
        use = self._usage.setdefault(token, _TokenUse())
        now = time.time()
        if now - use.window_start >= 3600:
            use.count, use.window_start = 0, now
        use.count += 1
        remaining = max(0, self.rate_limit - use.count)
        return {
            "x-ratelimit-limit": str(self.rate_limit),
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-reset": str(int(use.window_start + 3600)),
            "x-ratelimit-used": str(use.count),
        }

    def guard(self, request: Request, repo: str | None, *, write: bool) -> Response | None:
        """Auth (installation token for `repo`, or a static token) and rate limits."""
        token = self._token(request)
        with self.lock:
            if token is None:
                return JSONResponse({"message": "Requires authentication"}, status_code=401)
            if token not in self.static_tokens:
                issued = self.installation_tokens.get(token)
                if issued is None or issued[1] <= self.now():
                    return JSONResponse({"message": "Bad credentials"}, status_code=401)
                if repo is not None and issued[0].lower() != repo.lower():
                    return JSONResponse(
                        {"message": "Resource not accessible by integration"}, status_code=403
                    )
            headers = self._rate_headers(token)
            if int(headers["x-ratelimit-used"]) > self.rate_limit:
                return JSONResponse(
                    {"message": "API rate limit exceeded"}, status_code=403, headers=headers
                )
            if write:
                now = time.time()
                self._writes = [t for t in self._writes if now - t < 60]
                too_soon = self._writes and now - self._writes[-1] < self.min_write_interval
                if len(self._writes) >= self.writes_per_minute or too_soon:
                    return JSONResponse(
                        {"message": "You have exceeded a secondary rate limit."},
                        status_code=403,
                        headers={**headers, "retry-after": "60" if not too_soon else "1"},
                    )
                self._writes.append(now)
        return None

    def _verify_app_jwt(self, request: Request) -> Response | None:
        token = self._token(request)
        if token is None:
            return JSONResponse(
                {"message": "A JSON web token could not be decoded"}, status_code=401
            )
        try:
            claims = jwt.decode(
                token,
                self._public_key,
                algorithms=["RS256"],
                options={
                    "require": ["iat", "exp", "iss"],
                    "verify_exp": False,
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as exc:
            return JSONResponse(
                {"message": f"A JSON web token could not be decoded: {exc}"}, status_code=401
            )
        if not claims["iat"] - 60 <= self.now() < claims["exp"]:
            return JSONResponse(
                {"message": "'Issued at' or 'Expiration time' claim is invalid"}, status_code=401
            )
        if str(claims["iss"]) != self.app_id or claims["exp"] - claims["iat"] > 660:
            return JSONResponse(
                {"message": "'Issuer' or 'Expiration time' claim is invalid"}, status_code=401
            )
        return None

    # ----- the app ----------------------------------------------------------
    def _build_app(self, routers: tuple[Callable[[FakeGitHub], APIRouter], ...]) -> FastAPI:
        app = FastAPI()
        fake = self

        @app.middleware("http")
        async def record_and_inject(request: Request, call_next: Any) -> Response:
            try:
                body = await request.body()
            except ClientDisconnect:  # the client was killed mid-request (crash tests)
                return Response(status_code=499)
            try:
                parsed = json.loads(body) if body else None
            except ValueError:
                parsed = body.decode(errors="replace")
            entry = Received(
                request.method, request.url.path, dict(request.headers), parsed, time.time()
            )
            with fake.lock:
                fake.requests.append(entry)
                down = fake.down
            if down:
                entry.status = 503
                return JSONResponse({"message": "Service Unavailable"}, status_code=503)
            fault = fake._take_fault(request.url.path)
            if fault is not None and fault.kind == "timeout":
                # No answer until the client gives up, however slow it is to do so: a test
                # never depends on the client's timeout beating a fixed delay.
                deadline = time.monotonic() + max(fault.seconds, TIMEOUT_FAULT_CAP)
                while time.monotonic() < deadline:
                    if await request.is_disconnected():
                        entry.status = 499  # nginx's "client closed request"; never sent
                        return Response(status_code=499)
                    await asyncio.sleep(0.02)
            if fault is not None and fault.kind == "slow":
                await asyncio.sleep(fault.seconds)
            if fault is not None and fault.kind == "status":
                entry.status = fault.status
                return JSONResponse({"message": "injected failure"}, status_code=fault.status)
            if fault is not None and fault.kind == "secondary":
                entry.status = 403
                return JSONResponse(
                    {"message": "You have exceeded a secondary rate limit."},
                    status_code=403,
                    headers={"retry-after": str(int(fault.seconds))},
                )
            response: Response = await call_next(request)
            entry.status = response.status_code
            return response

        @app.get("/repos/{owner}/{repo}/installation")
        async def installation(owner: str, repo: str, request: Request) -> Response:
            denied = fake._verify_app_jwt(request)
            if denied is not None:
                return denied
            with fake.lock:
                installation_id = 1000 + len(fake.installations)
                fake.installations[installation_id] = f"{owner}/{repo}"
            return JSONResponse({"id": installation_id, "app_id": int(fake.app_id)})

        @app.post("/app/installations/{installation_id}/access_tokens")
        async def access_token(installation_id: int, request: Request) -> Response:
            denied = fake._verify_app_jwt(request)
            if denied is not None:
                return denied
            with fake.lock:
                repo = fake.installations.get(installation_id)
                if repo is None:
                    return JSONResponse({"message": "Not Found"}, status_code=404)
                token = "ghs_" + secrets.token_hex(18)
                expires = fake.now() + fake.token_ttl
                fake.installation_tokens[token] = (repo, expires)
                fake.tokens_issued += 1
            stamp = datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            return JSONResponse({"token": token, "expires_at": stamp}, status_code=201)

        @app.post("/repos/{owner}/{repo}/dispatches")
        async def dispatches(owner: str, repo: str, request: Request) -> Response:
            full = f"{owner}/{repo}"
            denied = fake.guard(request, full, write=True)
            if denied is not None:
                return denied
            try:
                data = json.loads(await request.body())
            except ValueError:
                return JSONResponse({"message": "Problems parsing JSON"}, status_code=400)
            problem = _dispatch_problem(data)
            if problem:
                return JSONResponse(
                    {"message": "Invalid request.", "errors": [problem]}, status_code=422
                )
            with fake.lock:
                fake.dispatches.append(
                    Dispatch(
                        full,
                        data["event_type"],
                        data.get("client_payload") or {},
                        fake._token(request) or "",
                        time.time(),
                    )
                )
            return Response(status_code=204)

        for factory in routers:
            app.include_router(factory(self))
        return app


def _dispatch_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return "body must be an object"
    event_type = data.get("event_type")
    if not isinstance(event_type, str) or not 1 <= len(event_type) <= MAX_EVENT_TYPE:
        return f"event_type must be a string of 1..{MAX_EVENT_TYPE} characters"
    payload = data.get("client_payload", {})
    if not isinstance(payload, dict):
        return "client_payload must be an object"
    if len(payload) > MAX_PAYLOAD_KEYS:
        return f"client_payload: no more than {MAX_PAYLOAD_KEYS} top-level properties"
    if len(json.dumps(payload, separators=(",", ":")).encode()) >= MAX_PAYLOAD_BYTES:
        return "client_payload must be less than 64 KB"
    return None
