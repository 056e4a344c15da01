"""`spyre-ci relay ...`: serve, worker, status, dead-letters, send-test-event."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from types import FrameType
from typing import Any

import click

from spyre_ci.exit_codes import BadInput
from spyre_ci.json_input import json_object

CONFIG_OPTION = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="relay YAML configuration (default: $SPYRE_RELAY_CONFIG; SPYRE_RELAY_* variables override)",
)


def load_relay_config(config_path: Path | None) -> Any:
    """The configuration; a bad one is bad input (exit 2), one line per problem."""
    from relay.config import ConfigError, load_config

    try:
        config = load_config(config_path)
    except ConfigError as exc:
        raise BadInput(str(exc)) from exc
    return config


def _state(config_path: Path | None, *, check_allowlist: bool = False) -> Any:
    return relay_state(load_relay_config(config_path), check_allowlist=check_allowlist)


def relay_state(config: Any, *, check_allowlist: bool = False) -> Any:
    """The relay state; `check_allowlist` refuses to go on with an allowlist that cannot
    be loaded, naming its source and the error (serve, worker): exit 2 for a file (bad
    input), 1 for a URL (a service that failed)."""
    from relay.allowlist_source import AllowlistSource, AllowlistUnavailable
    from relay.state import build_state
    from relay.store import StoreError

    try:
        state = build_state(config)
    except StoreError as exc:  # one line: the driver's message may span several
        reason = " ".join(str(exc).split())
        raise click.ClickException(f"relay store {config.store_url}: {reason}") from exc
    if check_allowlist and isinstance(state.allowlist, AllowlistSource):
        try:
            state.allowlist.load()
        except AllowlistUnavailable as exc:
            state.close()
            if state.allowlist.is_url:
                raise click.ClickException(str(exc)) from exc
            raise BadInput(str(exc)) from exc
    return state


def _start_worker(state: Any) -> tuple[threading.Event, threading.Thread]:
    from relay.worker import Worker

    stop = threading.Event()
    thread = threading.Thread(
        target=Worker(state).run, args=(stop,), name="relay-worker", daemon=True
    )
    thread.start()
    return stop, thread


@click.group("relay")
def relay_group() -> None:
    """The CRCR-compatible relay: webhook ingest, durable dispatch, callbacks.

    Exit codes: 0 done; 1 failed (the store cannot be reached, the relay answered an
    error, an allowlist URL cannot be fetched); 2 bad input (configuration, an allowlist
    file, an unknown dead-letter id, a payload that is not a JSON object), one line each.
    """


@relay_group.command()
@CONFIG_OPTION
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=int)
@click.option("--with-worker", is_flag=True, help="also run the dispatch worker in this process")
@click.option("--log-level", default="info", show_default=True)
def serve(
    config_path: Path | None, host: str, port: int, with_worker: bool, log_level: str
) -> None:
    """Serve POST /github/webhook, /healthz and /metrics (and the routes of other modules)."""
    import uvicorn

    from relay.app import create_app
    from relay.local_target import public_url_port_mismatch
    from relay.logs import configure_logging

    configure_logging(log_level)
    config = load_relay_config(config_path)
    mismatch = public_url_port_mismatch(config, port)
    if mismatch is not None:  # before the store is opened and migrated
        raise click.UsageError(mismatch)
    state = relay_state(config, check_allowlist=True)
    app = create_app(state.config, state=state)
    worker = _start_worker(state) if with_worker else None
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)
    if worker is not None:
        worker[0].set()


@relay_group.command()
@CONFIG_OPTION
@click.option("--log-level", default="info", show_default=True)
@click.option(
    "--metrics-port", type=int, default=None, help="serve this worker's /metrics on the port"
)
def worker(config_path: Path | None, log_level: str, metrics_port: int | None) -> None:
    """Run the outbox worker: claim jobs, dispatch, retry, dead-letter, prune."""
    from relay.logs import configure_logging
    from relay.worker import Worker

    configure_logging(log_level)
    state = _state(config_path, check_allowlist=True)
    if metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(metrics_port, addr="127.0.0.1", registry=state.metrics.registry)
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    Worker(state).run(stop)


@relay_group.command()
@CONFIG_OPTION
@click.option("--json", "as_json", is_flag=True, help="print machine-readable JSON")
def status(config_path: Path | None, as_json: bool) -> None:
    """Queue depths by kind, the oldest pending job, dead letters."""
    from rich.console import Console
    from rich.table import Table

    from relay.outbox import queue_stats

    state = _state(config_path)
    now = time.time()
    stats = queue_stats(state.store, now=now)
    age = None if stats.oldest_pending_at is None else round(now - stats.oldest_pending_at, 1)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "pending": stats.pending,
                    "leased": stats.leased,
                    "oldest_pending_age_seconds": age,
                    "dead_letters": stats.dead_letters,
                    "done": stats.done,
                }
            )
        )
        return
    table = Table(title=f"relay queue ({state.store.dialect})")
    for column in ("kind", "pending", "leased"):
        table.add_column(column)
    for kind in sorted(set(stats.pending) | set(stats.leased)):
        table.add_row(kind, str(stats.pending.get(kind, 0)), str(stats.leased.get(kind, 0)))
    console = Console()
    console.print(table)
    console.print(f"oldest pending job: {'none' if age is None else f'{age} s old'}")
    console.print(f"dead letters: {stats.dead_letters}   done (retained): {stats.done}")


@relay_group.command("dead-letters")
@CONFIG_OPTION
@click.option(
    "--requeue", is_flag=True, help="move dead letters back to the outbox (all, or JOB_IDs)"
)
@click.argument("job_ids", nargs=-1)
def dead_letters(config_path: Path | None, requeue: bool, job_ids: tuple[str, ...]) -> None:
    """List the jobs that exhausted their attempts (all, or JOB_IDs); --requeue sends them
    again. An unknown JOB_ID is bad input (exit 2)."""
    from rich.console import Console
    from rich.table import Table

    from relay.outbox import list_dead_letters, requeue_dead_letters

    state = _state(config_path)
    rows = list_dead_letters(state.store, job_ids=job_ids)
    unknown = sorted(set(job_ids) - {r["job_id"] for r in rows})
    if unknown:
        raise BadInput(
            f"no dead letter with id {', '.join(unknown)} (see `spyre-ci relay dead-letters`)"
        )
    if requeue:
        moved = requeue_dead_letters(state.store, now=time.time(), job_ids=job_ids or None)
        click.echo(f"requeued {moved} job(s)")
        return
    table = Table(title=f"dead letters ({len(rows)})")
    for column in ("job_id", "kind", "target", "delivery_id", "attempts", "died", "last_error"):
        table.add_column(column, overflow="fold")
    for r in rows:
        died = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["died_at"]))
        table.add_row(
            r["job_id"],
            r["kind"],
            r["target"],
            r["delivery_id"] or "",
            str(r["attempts"]),
            died,
            (r["last_error"] or "")[:200],
        )
    Console(width=200).print(table)


def _default_push(upstream: str) -> dict[str, Any]:
    """A minimal push to the upstream's main branch, shaped as GitHub sends it."""
    owner, _, name = upstream.partition("/")
    after = "2" * 40
    return {
        "ref": "refs/heads/main",
        "before": "1" * 40,
        "after": after,
        "created": False,
        "deleted": False,
        "forced": False,
        "base_ref": None,
        "compare": f"https://github.com/{upstream}/compare/{'1' * 12}...{after[:12]}",
        "commits": [],
        "head_commit": {"id": after, "message": "relay test event", "timestamp": None},
        "repository": {
            "name": name,
            "full_name": upstream,
            "owner": {"login": owner, "name": owner},
            "clone_url": f"https://github.com/{upstream}.git",
            "html_url": f"https://github.com/{upstream}",
        },
        "pusher": {"name": "relay-test"},
        "sender": {"login": "relay-test"},
    }


def _default_event(upstream: str) -> dict[str, Any]:
    return {
        "action": "opened",
        "number": 1,
        "pull_request": {
            "number": 1,
            "state": "open",
            "title": "relay test event",
            "head": {"sha": "0" * 40, "ref": "test"},
            "base": {"sha": "1" * 40, "ref": "main"},
            "labels": [],
        },
        "repository": {"full_name": upstream},
    }


@relay_group.command("send-test-event")
@CONFIG_OPTION
@click.option(
    "--url", default="http://127.0.0.1:8080", show_default=True, help="the relay's base URL"
)
@click.option("--event", default="pull_request", show_default=True, help="X-GitHub-Event")
@click.option(
    "--payload",
    "payload_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="webhook JSON (default for pull_request and push: a minimal one on the upstream repo)",
)
@click.option("--delivery-id", default=None, help="X-GitHub-Delivery (default: a new UUID)")
def send_test_event(
    config_path: Path | None,
    url: str,
    event: str,
    payload_path: Path | None,
    delivery_id: str | None,
) -> None:
    """Sign a webhook with the first configured secret and POST it to the relay.

    Exit codes: 0 the relay accepted it (2xx), 1 the relay answered an error or could not
    be reached, 2 bad input (configuration, a --payload that is not a JSON object).
    """
    import httpx

    from relay.webhook.signature import sign

    config = load_relay_config(config_path)
    if payload_path is not None:
        body = payload_path.read_bytes()
        json_object(body, payload_path)  # checked first: a bad file is never sent
    elif event == "push":
        body = json.dumps(_default_push(config.upstream_repo)).encode()
    elif event == "pull_request":
        body = json.dumps(_default_event(config.upstream_repo)).encode()
    else:
        raise click.UsageError(
            f"no default payload for --event {event} (pull_request and push have one):"
            " pass --payload FILE"
        )
    delivery_id = delivery_id or str(uuid.uuid4())
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": sign(body, config.secret_bytes()[0]),
    }
    try:
        response = httpx.post(
            url.rstrip("/") + "/github/webhook", content=body, headers=headers, timeout=10
        )
    except httpx.HTTPError as exc:
        raise click.ClickException(f"cannot reach the relay at {url}: {exc}") from exc
    click.echo(f"{response.status_code} {response.text}")
    if response.status_code >= 400:
        sys.exit(1)


def register(group: click.Group) -> None:
    group.add_command(relay_group)
