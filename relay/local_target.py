"""The built-in local target: a downstream that runs on the relay's own machine.

A `Dispatcher` (connection `local`) whose dispatch does, on this machine, what a
GitHub workflow does on a `repository_dispatch`: it runs `spyre-ci ci
run-workflow` (upstream-dispatch.yml's select → test → report jobs, step by
step, each the same `spyre-ci ci ...` command) in a subprocess, against
`torch_spyre_ref`. The subprocess reports through the same `/github/callback`
and the same authentication as a GitHub workflow:

- the relay's callback token, in the echoed `client_payload`;
- an OIDC token obtained by GitHub Actions' token-request protocol
  (`ACTIONS_ID_TOKEN_REQUEST_URL`/`_TOKEN`) from the relay's own small issuer,
  served at `<public_url>/local-oidc` (discovery, JWKS, token endpoint). Its
  tokens carry the `repository` claim of the local target's name, and the
  callback side trusts it like GitHub's issuer when `extra.callbacks.oidc_issuers`
  lists `{kind: github_actions, issuer: <public_url>/local-oidc}`.

The request token handed to the subprocess is an HMAC (secret derived from the
first webhook secret) bound to the target and the run, valid 6 hours, so web and
worker processes agree without sharing anything else. The RSA signing key is a
file (`oidc_key_path`), created on first use.

Configuration (relay YAML)::

    targets:
      - name: local/spyre-ci
        connection: local
        level: L2
        options: {upstream_url: /path/to/pytorch-or-demo-repo, shards: 1, manifests: [m.yaml]}
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from relay.dispatch.dispatcher import DispatchRequest
from relay.dispatch.payload import build_client_payload
from relay.jobs import PermanentError
from relay.store.errors import StoreError

if TYPE_CHECKING:
    from relay.config import RelayConfig
    from relay.state import RelayState

log = logging.getLogger("relay.local_target")

ISSUER_PATH = "/local-oidc"
REQUEST_TOKEN_TTL = 6 * 3600.0
ID_TOKEN_TTL = 600
DISPATCH_RECORD_WAIT = 60.0  # seconds the run waits for the relay to record DISPATCHED


class LocalTargetOptions(BaseModel):
    """`options` of a target with `connection: local`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    upstream_url: str = Field(description="git URL or path of the upstream PyTorch repository")
    workdir: Path = Path(".spyre-relay/local-runs")
    shards: int = Field(default=1, ge=1, le=16)
    manifests: list[Path] = Field(
        default_factory=list, description="the backend's manifests (default: the shipped ones)"
    )
    oidc_key_path: Path = Path(".spyre-relay/local-oidc-key.pem")
    events: list[str] = Field(default_factory=lambda: ["pull_request", "push"])

    @field_validator("events")
    @classmethod
    def _known_events(cls, events: list[str]) -> list[str]:
        # the allowlist's event groups: any other name would silently never match
        from relay.allowlist import KNOWN_EVENTS

        unknown = sorted(set(events) - KNOWN_EVENTS)
        if unknown:
            known = ", ".join(sorted(KNOWN_EVENTS))
            raise ValueError(f"unknown event group(s) {', '.join(unknown)} (known: {known})")
        return events


def target_options(options: dict[str, Any], target: str) -> LocalTargetOptions:
    try:
        return LocalTargetOptions.model_validate(options)
    except ValidationError as exc:
        fields = "; ".join(
            f"targets[{target}].options.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors()
        )
        raise PermanentError(f"invalid local target configuration: {fields}") from None


# -- the request token: which target and run may ask the local issuer for a JWT --


def request_secret(state: RelayState) -> bytes:
    return hmac.new(
        state.config.secret_bytes()[0], b"spyre-ci local oidc v1", hashlib.sha256
    ).digest()


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()


def issue_request_token(secret: bytes, repository: str, run_id: str, now: float) -> str:
    body = f"lrt1.{_b64(repository)}.{_b64(run_id)}.{int(now + REQUEST_TOKEN_TTL)}"
    mac = hmac.new(secret, body.encode(), hashlib.sha256).hexdigest()
    return f"{body}.{mac}"


def verify_request_token(secret: bytes, token: str, now: float) -> tuple[str, str] | None:
    """`(repository, run_id)` of a valid, unexpired request token, else None."""
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != "lrt1" or not parts[3].isdigit():
        return None
    expected = hmac.new(secret, ".".join(parts[:4]).encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, parts[4]) or now > int(parts[3]):
        return None
    try:
        return _unb64(parts[1]), _unb64(parts[2])
    except (ValueError, UnicodeDecodeError):
        return None


# -- the signing key, shared by every relay process through a file --


def load_or_create_key(path: Path) -> rsa.RSAPrivateKey:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    return key


def _read_key(path: Path) -> rsa.RSAPrivateKey:
    for _ in range(50):  # another process may be writing it right now
        try:
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        except ValueError:
            time.sleep(0.05)
            continue
        if isinstance(key, rsa.RSAPrivateKey):
            return key
        break
    raise PermanentError(f"{path} is not an RSA private key (remove it to make a new one)")


def key_id(key: rsa.RSAPrivateKey) -> str:
    der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()[:16]


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def public_url_port_mismatch(config: RelayConfig, port: int) -> str | None:
    """Why the local target's callbacks cannot reach a relay served on `port`, if they
    cannot: its subprocess calls back at `public_url`, and trusts `<public_url>/local-oidc`,
    so a loopback `public_url` must name the port the relay listens on."""
    if not any(t.connection == "local" for t in config.targets):
        return None
    url = urlsplit(config.public_url)
    named = url.port or (443 if url.scheme == "https" else 80)
    if url.hostname not in LOOPBACK_HOSTS or named == port:
        return None
    return (
        f"public_url {config.public_url} names port {named} but the relay serves on {port}: "
        "the local target calls back at public_url. Serve on that port, or set public_url "
        f"(e.g. SPYRE_RELAY_PUBLIC_URL=http://127.0.0.1:{port}) and the local issuer "
        f"{{kind: github_actions, issuer: http://127.0.0.1:{port}{ISSUER_PATH}}} in "
        "extra.callbacks.oidc_issuers of a copy of the config"
    )


def issuer_url(state: RelayState) -> str:
    return state.config.public_url.rstrip("/") + ISSUER_PATH


def _local_targets(state: RelayState) -> list[tuple[str, LocalTargetOptions]]:
    return [
        (t.name, target_options(t.options, t.name))
        for t in state.config.targets
        if t.connection == "local"
    ]


# -- the issuer, served by the relay's web application --


def issuer_router(state: RelayState) -> APIRouter:
    """Discovery, JWKS and GitHub's token-request protocol for the local target's runs."""
    api = APIRouter()
    targets = _local_targets(state)
    if not targets:
        return api
    key = load_or_create_key(targets[0][1].oidc_key_path)
    kid = key_id(key)
    secret = request_secret(state)
    issuer = issuer_url(state)
    _warn_if_untrusted(state, issuer)
    names = {name for name, _ in targets}

    @api.get(ISSUER_PATH + "/.well-known/openid-configuration")
    async def discovery() -> JSONResponse:
        return JSONResponse(
            {
                "issuer": issuer,
                "jwks_uri": issuer + "/jwks",
                "id_token_signing_alg_values_supported": ["RS256"],
                "claims_supported": ["repository", "run_id", "sub", "aud", "iss", "exp"],
            }
        )

    @api.get(ISSUER_PATH + "/jwks")
    async def jwks() -> JSONResponse:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        return JSONResponse({"keys": [{**public, "kid": kid, "alg": "RS256", "use": "sig"}]})

    @api.get(ISSUER_PATH + "/token")
    async def token(request: Request, audience: str = "") -> JSONResponse:
        scheme, _, bearer = (request.headers.get("authorization") or "").partition(" ")
        now = time.time()
        claims = (
            verify_request_token(secret, bearer.strip(), now)
            if scheme.lower() == "bearer"
            else None
        )
        if claims is None or claims[0] not in names:
            return JSONResponse({"message": "invalid or expired request token"}, status_code=401)
        repository, run_id = claims
        issued = {
            "iss": issuer,
            "aud": audience or issuer,
            "sub": f"repo:{repository}:local-run:{run_id}",
            "repository": repository,
            "run_id": run_id,
            "iat": int(now),
            "nbf": int(now),
            "exp": int(now) + ID_TOKEN_TTL,
        }
        value = jwt.encode(issued, key, algorithm="RS256", headers={"kid": kid})
        return JSONResponse({"count": 1, "value": value})

    return api


def _warn_if_untrusted(state: RelayState, issuer: str) -> None:
    from relay.callbacks.settings import callback_settings

    trusted = {i.issuer.rstrip("/") for i in callback_settings(state.config.extra).oidc_issuers}
    if issuer not in trusted:
        log.warning(
            "the local target's callbacks will be refused (401): add "
            "{kind: github_actions, issuer: %s} to extra.callbacks.oidc_issuers",
            issuer,
        )


# -- the dispatcher, run by the worker --


def _run_id(delivery_id: str) -> str:
    # Numeric like GitHub's, stable per delivery so that a re-sent dispatch is recognised.
    return str(int(hashlib.sha256(delivery_id.encode()).hexdigest()[:12], 16))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]


class LocalDispatcher:
    def __init__(self, state: RelayState) -> None:
        self.state = state
        self.secret = request_secret(state)

    def dispatch(self, request: DispatchRequest) -> None:
        """Write the event a workflow would get and start the run once DISPATCHED is recorded.

        At-least-once delivery: the same job may be dispatched again (a worker died before
        recording it). The event file is then rewritten, so a run already going reads the
        newest callback token at its next step, and no second run is started.
        """
        options = target_options(request.options, request.target)
        run_id = _run_id(request.delivery_id)
        workdir = options.workdir / f"{_safe(request.delivery_id)}-{_safe(request.target)}"
        workdir.mkdir(parents=True, exist_ok=True)
        client_payload = build_client_payload(
            request.event_type, request.delivery_id, request.payload, **request.extra
        )
        event = {
            "action": request.event_type,
            "client_payload": client_payload,
            "repository": {"full_name": request.target},
        }
        event_path = workdir / "event.json"
        partial = workdir / f"event.json.{os.getpid()}.{threading.get_ident()}"
        partial.write_text(json.dumps(event))
        os.replace(partial, event_path)  # atomic: a running step never reads half a file
        if (workdir / "started").exists():
            log.info("delivery %s: local run already started in %s", request.delivery_id, workdir)
            return
        upstream = Path(options.upstream_url)
        command = [
            sys.executable, "-m", "spyre_ci", "ci", "run-workflow",
            "--event-name", "repository_dispatch", "--event-path", str(event_path.resolve()),
            "--workdir", str((workdir / "run").resolve()),
            "--upstream-url", str(upstream.resolve()) if upstream.exists() else options.upstream_url,
            "--repository", request.target, "--server-url", self.state.config.public_url.rstrip("/"),
            "--run-id", run_id, "--shards", str(options.shards),
            *[arg for m in options.manifests for arg in ("--manifest", str(m.resolve()))],
        ]  # fmt: skip
        thread = threading.Thread(
            target=self._start_when_recorded,
            args=(request, command, self._env(request.target, run_id), workdir),
            name=f"local-run-{run_id}",
            daemon=True,
        )
        thread.start()
        log.info("delivery %s: local run %s starting in %s", request.delivery_id, run_id, workdir)

    def _env(self, target: str, run_id: str) -> dict[str, str]:
        base = self.state.config.public_url.rstrip("/")
        request_token = issue_request_token(self.secret, target, run_id, time.time())
        return {
            **os.environ,
            "ACTIONS_ID_TOKEN_REQUEST_URL": f"{base}{ISSUER_PATH}/token?api-version=2.0",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": request_token,
            "SPYRE_CI_CALLBACK_URL": f"{base}/github/callback",
        }

    def _start_when_recorded(
        self, request: DispatchRequest, command: list[str], env: dict[str, str], workdir: Path
    ) -> None:
        """Start the run once the worker has recorded DISPATCHED (after `dispatch` returns),
        so that the run's callbacks never arrive before the record they are checked against."""
        deadline = time.monotonic() + DISPATCH_RECORD_WAIT
        while time.monotonic() < deadline and not self._recorded(request):
            time.sleep(0.1)
        try:  # only one run per (delivery, target), however often the job was dispatched
            os.close(os.open(workdir / "started", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            return
        with (workdir / "run.log").open("ab") as sink:
            process = subprocess.Popen(
                command, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
            )
        returncode = process.wait()
        self._complete_if_unreported(request, returncode, workdir)

    def _complete_if_unreported(
        self, request: DispatchRequest, returncode: int, workdir: Path
    ) -> None:
        """A run whose process ended while its job is still in progress will never report:
        record it completed/failure now (as the sweeper would after hours), with the reason."""
        from relay.sweepers import complete_abandoned_run

        reason = (
            f"the local run process exited with status {returncode} without reporting"
            f" completion (log: {workdir / 'run.log'})"
        )
        try:
            complete_abandoned_run(
                self.state,
                request.delivery_id,
                request.target,
                int(_run_id(request.delivery_id)),
                reason,
            )
        except StoreError:  # the in-progress sweeper records it later
            log.warning(
                "delivery %s: could not record the end of the local run: store unavailable",
                request.delivery_id,
                exc_info=True,
            )

    def _recorded(self, request: DispatchRequest) -> bool:
        try:
            with self.state.store.transaction(write=False) as tx:
                row = tx.fetchone(
                    "SELECT 1 AS found FROM dispatches WHERE delivery_id = ? AND repo = ?",
                    (request.delivery_id, request.target),
                )
        except StoreError:  # a busy or unreachable store: try again at the next poll
            return False
        return row is not None


def make_dispatcher(state: RelayState) -> LocalDispatcher:
    return LocalDispatcher(state)
