"""Webhook ingest benchmark: the ack latency of POST /github/webhook, and its ceiling.

Starts the real relay (`spyre-ci relay serve`, one uvicorn process) on a loopback port,
on SQLite (WAL, synchronous=FULL) and on PostgreSQL (Debian's server, started here,
durable: fsync and synchronous_commit on), with an allowlist of 3 targets (each webhook =
1 delivery row + 3 outbox jobs in one transaction). Two set-ups:

- `web`: the web process alone (scale-out: workers elsewhere);
- `embedded`: `serve --with-worker`, the embedded default, its worker dispatching every
  job to a fake GitHub (another process) as fast as it answers, without pacing: the worst
  case for the ack path, which then shares the process and the cores with the worker.

The load generator (asyncio, a hand-written HTTP/1.1 keep-alive client, 64 connections)
runs on the same machine and sends GitHub's real `pull_request.synchronize` payload
(28 KB), each with its own delivery id and HMAC signature, computed beforehand:

- open loop at each of `--rates` (default 50, 200, 500/s) for `--seconds` (default 10):
  p50/p95/p99/max ack latency, counted from the moment each request was due (a server
  that falls behind is charged for the queueing), and the server's CPU time per webhook;
- the highest rate whose p99 stays under 1 s: rates from 100/s up by 1.25x, 5 s each,
  until the p99 reaches 1 s, a request fails or the achieved rate falls 10% short;
- closed loop (32 senders, 5 s): peak throughput and the server's CPU time per webhook
  (user + system, from /proc: the figure that does not depend on what else runs).

Usage: python bench/bench_ingest.py [--rates 50,200,500] [--seconds 10]
           [--only sqlite|postgres] [--setup web|embedded|both] [--no-ceiling]
           [--sqlite-normal] [--code DIR | --compare DIR]
`--code DIR` runs the relay of another checkout (e.g. a `git worktree` of an older commit)
with this load generator; `--compare DIR` runs both this relay and DIR's (SQLite, web) and
sends the open loops to them in alternating 1 s slices, so that both meet the same
background load: the way to compare two versions on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.postgres import PostgresServer, postgres_bin  # noqa: E402
from tests.support.relay_server import RelayServer, fixture_body, signed_headers, write_relay_config  # noqa: E402

TARGETS = ["org/alpha", "org/beta", "org/gamma"]
CEILING_P99 = 1.0  # s
CEILING_START, CEILING_STEP, CEILING_SECONDS, CEILING_MAX = 100.0, 1.25, 5.0, 6000.0


def _requests(count: int) -> list[tuple[bytes, dict[str, str]]]:
    body = fixture_body("pull_request.synchronize")
    return [
        (body, signed_headers("pull_request", body, delivery_id=str(uuid.uuid4())))
        for _ in range(count)
    ]


def _percentile(ordered: list[float], share: float) -> float:
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class Connection:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: a load generator much
    lighter than a general-purpose client, so that the server, not the client, is measured."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        self.writer.write(head.encode() + body)
        await self.writer.drain()
        assert self.reader is not None
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        await self.reader.readexactly(length)
        return int(status_line.split()[1])

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _host_port(url: str) -> tuple[str, int]:
    host, _, port = url.removeprefix("http://").partition(":")
    return host, int(port)


async def open_loop(
    url: str, rate: float, seconds: float, connections: int = 64
) -> dict[str, float]:
    """Request i is due at start + i/rate, sent on connection i % connections; latency
    counts from the due time, so queueing behind a slow request is charged too."""
    start = time.perf_counter() + 0.2
    latencies, errors = await _open_loop_latencies(url, rate, seconds, connections, start)
    return _summary(rate, latencies, errors, time.perf_counter() - start)


async def _open_loop_latencies(
    url: str,
    rate: float,
    seconds: float,
    connections: int,
    start: float,
    pool: list[Connection] | None = None,
) -> tuple[list[float], int]:
    """Latencies of the open loop; `pool` (kept open by the caller) is reused if given."""
    requests = _requests(int(rate * seconds))
    latencies: list[float] = []
    errors = 0
    conns = pool if pool is not None else [Connection(*_host_port(url)) for _ in range(connections)]

    async def lane(k: int) -> None:
        nonlocal errors
        for i in range(k, len(requests), len(conns)):
            due = start + i / rate
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            body, headers = requests[i]
            try:
                if await conns[k].post("/github/webhook", body, headers) != 202:
                    errors += 1
            except (OSError, asyncio.IncompleteReadError, ValueError):
                errors += 1
                conns[k].close()
                conns[k] = Connection(*_host_port(url))
            latencies.append(time.perf_counter() - due)

    try:
        await asyncio.gather(*(lane(k) for k in range(len(conns))))
    finally:
        if pool is None:
            for conn in conns:
                conn.close()
    return latencies, errors


def _summary(rate: float, latencies: list[float], errors: int, elapsed: float) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "rate": rate,
        "sent": len(latencies),
        "errors": errors,
        "achieved_rate": len(latencies) / elapsed,
        "p50_ms": _percentile(ordered, 0.50) * 1000,
        "p95_ms": _percentile(ordered, 0.95) * 1000,
        "p99_ms": _percentile(ordered, 0.99) * 1000,
        "max_ms": ordered[-1] * 1000,
    }


async def interleaved(
    urls: list[str], rate: float, seconds: float, slice_seconds: float = 1.0
) -> list[dict[str, float]]:
    """The open loop against several servers in turn, `slice_seconds` each, for `seconds`
    per server: each meets the same background load, so their figures compare."""
    latencies: list[list[float]] = [[] for _ in urls]
    errors = [0 for _ in urls]
    busy = [0.0 for _ in urls]
    pools = [[Connection(*_host_port(url)) for _ in range(64)] for url in urls]
    try:
        for turn in range(max(1, int(seconds / slice_seconds))):
            order = range(len(urls)) if turn % 2 == 0 else reversed(range(len(urls)))
            for i in order:
                start = time.perf_counter() + 0.05
                got, failed = await _open_loop_latencies(
                    urls[i], rate, slice_seconds, 64, start, pools[i]
                )
                latencies[i] += got
                errors[i] += failed
                busy[i] += time.perf_counter() - start
    finally:
        for conn in (c for pool in pools for c in pool):
            conn.close()
    return [_summary(rate, latencies[i], errors[i], busy[i]) for i in range(len(urls))]


async def closed_loop(url: str, concurrency: int, seconds: float) -> dict[str, float]:
    requests = _requests(int(2000 * seconds))
    latencies: list[float] = []
    index = 0
    deadline = time.perf_counter() + seconds

    async def sender() -> None:
        nonlocal index
        conn = Connection(*_host_port(url))
        try:
            while time.perf_counter() < deadline and index < len(requests):
                body, headers = requests[index]
                index += 1
                t = time.perf_counter()
                status = await conn.post("/github/webhook", body, headers)
                assert status == 202, status
                latencies.append(time.perf_counter() - t)
        finally:
            conn.close()

    start = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    ordered = sorted(latencies)
    return {
        "count": len(latencies),
        "throughput": len(latencies) / elapsed,
        "p50_ms": _percentile(ordered, 0.5) * 1000,
        "p99_ms": _percentile(ordered, 0.99) * 1000,
    }


def ceiling(url: str) -> tuple[float | None, dict[str, float] | None]:
    """The highest rate (of 100, 125, 156, ... per s) whose p99 stays under 1 s, and the
    first run that did not."""
    best: float | None = None
    rate = CEILING_START
    while rate <= CEILING_MAX:
        run = asyncio.run(open_loop(url, rate, CEILING_SECONDS))
        if (
            run["p99_ms"] >= CEILING_P99 * 1000
            or run["errors"]
            or run["achieved_rate"] < 0.9 * rate
        ):
            return best, run
        best = rate
        rate *= CEILING_STEP
    return best, None


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc): a load-independent cost."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def fake_github() -> Iterator[str]:
    """The fake GitHub in a process of its own, so that it does not share the load
    generator's interpreter; yields its URL."""
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1])\n"
        "from tests.support.fake_github import FakeGitHub\n"
        "fake = FakeGitHub().start(); print(fake.url, flush=True)\n"
        "while True: time.sleep(3600)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(ROOT)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.kill()
        process.wait()


def _line(name: str, what: str, run: dict[str, float]) -> str:
    return (
        f"{name:<20} {what:<14} achieved {run['achieved_rate']:6.0f}/s  p50 {run['p50_ms']:7.1f}"
        f"  p95 {run['p95_ms']:7.1f}  p99 {run['p99_ms']:7.1f}  max {run['max_ms']:7.1f} ms"
        f"  errors {run['errors']:.0f}"
    )


def run(
    name: str,
    store_url: str,
    workdir: Path,
    args: argparse.Namespace,
    *,
    embedded: bool,
    **fields: object,
) -> None:
    allowlist = workdir / "allowlist.yml"
    allowlist.write_text("L2:\n" + "".join(f"  - {t}\n" for t in TARGETS))
    with fake_github() as github_url:
        github = {"api_url": github_url, "token": "bench", "min_write_interval_seconds": 0}
        config = write_relay_config(
            workdir,
            store_url=store_url,
            allowlist={"source": str(allowlist)},
            github=github,
            **fields,
        )
        env = {"PYTHONPATH": str(Path(args.code).resolve())} if args.code else None
        server = RelayServer(
            config, with_worker=embedded, log_dir=workdir, log_level="info", env=env
        )
        with server:
            asyncio.run(open_loop(server.url, 100, 1.0))  # warm-up
            assert server.proc is not None
            for rate in args.rates:
                cpu_before = _cpu_seconds(server.proc.pid)
                result = asyncio.run(open_loop(server.url, rate, args.seconds))
                cpu = (_cpu_seconds(server.proc.pid) - cpu_before) / result["sent"] * 1000
                print(f"{_line(name, f'{rate:.0f}/s', result)}  CPU {cpu:.2f} ms", flush=True)
            if not args.no_ceiling:
                best, first_miss = ceiling(server.url)
                shown = f"{best:.0f}/s" if best else f"below {CEILING_START:.0f}/s"
                missed = (
                    "" if first_miss is None else "; " + _line("", "first miss", first_miss).strip()
                )
                print(f"{name:<20} highest rate with p99 < 1 s: {shown}{missed}", flush=True)
            cpu_before = _cpu_seconds(server.proc.pid)
            peak = asyncio.run(closed_loop(server.url, 32, 5.0))
            cpu_per_webhook = (_cpu_seconds(server.proc.pid) - cpu_before) / peak["count"]
    print(
        f"{name:<20} closed loop 32 senders x 5 s: {peak['throughput']:.0f} webhooks/s,"
        f" p50 {peak['p50_ms']:.1f} ms, p99 {peak['p99_ms']:.1f} ms; server CPU"
        f" {cpu_per_webhook * 1000:.2f} ms per webhook; 1-min load average"
        f" {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        flush=True,
    )


def compare(args: argparse.Namespace) -> None:
    """This relay and the one of `--compare DIR` side by side (SQLite, web set-up)."""
    labels = ["this", Path(args.compare).name]
    envs: list[dict[str, str] | None] = [None, {"PYTHONPATH": str(Path(args.compare).resolve())}]
    with tempfile.TemporaryDirectory() as tmp:
        servers = []
        for label, env in zip(labels, envs, strict=True):
            workdir = Path(tmp) / label
            workdir.mkdir()
            allowlist = workdir / "allowlist.yml"
            allowlist.write_text("L2:\n" + "".join(f"  - {t}\n" for t in TARGETS))
            config = write_relay_config(
                workdir,
                store_url=f"sqlite:///{workdir / 'relay.db'}",
                allowlist={"source": str(allowlist)},
            )
            servers.append(RelayServer(config, log_dir=workdir, log_level="info", env=env).start())
        try:
            for server in servers:
                asyncio.run(open_loop(server.url, 100, 1.0))  # warm-up
            for rate in args.rates:
                cpu = [_cpu_seconds(s.proc.pid) for s in servers if s.proc is not None]
                results = asyncio.run(interleaved([s.url for s in servers], rate, args.seconds))
                for label, server, before, result in zip(
                    labels, servers, cpu, results, strict=True
                ):
                    assert server.proc is not None
                    used = (_cpu_seconds(server.proc.pid) - before) / result["sent"] * 1000
                    print(f"{_line(label, f'{rate:.0f}/s', result)}  CPU {used:.2f} ms", flush=True)
        finally:
            for server in servers:
                server.stop()
    print(f"1-min load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="50,200,500")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--setup", choices=["web", "embedded", "both"], default="both")
    parser.add_argument("--no-ceiling", action="store_true", help="skip the highest-rate search")
    parser.add_argument(
        "--sqlite-normal",
        action="store_true",
        help="also measure SQLite with synchronous=NORMAL (no fsync per commit)",
    )
    parser.add_argument("--code", default=None, help="run the relay of this checkout instead")
    parser.add_argument(
        "--compare",
        default=None,
        metavar="DIR",
        help="SQLite, web: this relay and the one of checkout DIR, in interleaved 1 s slices",
    )
    args = parser.parse_args()
    args.rates = [float(r) for r in args.rates.split(",") if r]
    if args.compare:
        compare(args)
        return 0
    setups = ["web", "embedded"] if args.setup == "both" else [args.setup]
    for setup in setups:
        embedded = setup == "embedded"
        if args.only != "postgres":
            variants: list[tuple[str, dict[str, object]]] = [("sqlite", {})]
            if args.sqlite_normal:
                variants.append(("sqlite-normal", {"sqlite_synchronous": "NORMAL"}))
            for label, fields in variants:
                with tempfile.TemporaryDirectory() as tmp:
                    url = f"sqlite:///{Path(tmp) / 'relay.db'}"
                    run(f"{label}/{setup}", url, Path(tmp), args, embedded=embedded, **fields)
        if args.only != "sqlite":
            bindir = postgres_bin()
            if bindir is None:
                print("postgres   skipped: PostgreSQL is not installed (make sysdeps)")
                continue
            with PostgresServer(bindir, durable=True) as pg, tempfile.TemporaryDirectory() as tmp:
                run(f"postgres/{setup}", pg.new_database(), Path(tmp), args, embedded=embedded)
    return 0


if __name__ == "__main__":
    sys.exit(main())
