"""Webhook ingest benchmark: throughput and latency of POST /github/webhook.

Starts the real relay (`spyre-ci relay serve`, web only, one uvicorn process) on
a loopback port, on SQLite (WAL, synchronous=FULL) and on PostgreSQL (Debian's
server, started here), with an allowlist of 3 targets (each webhook = 1 delivery
row + 3 outbox jobs in one transaction). The load generator (asyncio + httpx, on
the same 2-core machine) sends GitHub's real `pull_request.synchronize` payload
(28 KB), each with its own delivery id and HMAC signature, computed beforehand.
Both databases run durable (SQLite synchronous=FULL, PostgreSQL fsync and
synchronous_commit on, as configured by Debian):

- open loop at a fixed rate (default 500/s for 10 s): p50/p99 latency, from the
  moment each request was due (so a server that falls behind is charged for it);
- closed loop (32 concurrent senders for 5 s): maximum throughput.

Usage: python bench/bench_ingest.py [--rate 500] [--seconds 10] [--only sqlite|postgres]
                                    [--sqlite-normal]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.postgres import PostgresServer, postgres_bin  # noqa: E402
from tests.support.relay_server import RelayServer, fixture_body, signed_headers, write_relay_config  # noqa: E402

TARGETS = ["org/alpha", "org/beta", "org/gamma"]


def _requests(count: int) -> list[tuple[bytes, dict[str, str]]]:
    body = fixture_body("pull_request.synchronize")
    return [
        (body, signed_headers("pull_request", body, delivery_id=str(uuid.uuid4())))
        for _ in range(count)
    ]


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
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
    requests = _requests(int(rate * seconds))
    latencies: list[float] = []
    errors = 0
    start = time.perf_counter() + 0.2

    async def lane(k: int) -> None:
        nonlocal errors
        conn = Connection(*_host_port(url))
        try:
            for i in range(k, len(requests), connections):
                due = start + i / rate
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                body, headers = requests[i]
                if await conn.post("/github/webhook", body, headers) != 202:
                    errors += 1
                latencies.append(time.perf_counter() - due)
        finally:
            conn.close()

    await asyncio.gather(*(lane(k) for k in range(connections)))
    elapsed = time.perf_counter() - start
    return {
        "sent": len(requests),
        "errors": errors,
        "achieved_rate": len(requests) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": _percentile(latencies, 0.99) * 1000,
        "max_ms": max(latencies) * 1000,
    }


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
    return {
        "count": len(latencies),
        "throughput": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": _percentile(latencies, 0.99) * 1000,
    }


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc): a load-independent cost."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(
    name: str, store_url: str, workdir: Path, rate: float, seconds: float, **fields: str
) -> None:
    allowlist = workdir / "allowlist.yml"
    allowlist.write_text("L2:\n" + "".join(f"  - {t}\n" for t in TARGETS))
    config = write_relay_config(
        workdir, store_url=store_url, allowlist={"source": str(allowlist)}, **fields
    )
    with RelayServer(config, log_dir=workdir) as server:
        asyncio.run(open_loop(server.url, 100, 1.0))  # warm-up
        fixed = asyncio.run(open_loop(server.url, rate, seconds))
        assert server.proc is not None
        cpu_before = _cpu_seconds(server.proc.pid)
        peak = asyncio.run(closed_loop(server.url, 32, 5.0))
        cpu_per_webhook = (_cpu_seconds(server.proc.pid) - cpu_before) / peak["count"]
    load = os.getloadavg()[0]
    print(f"{name:<10} 1-min load average {load:.1f} on {os.cpu_count()} cores", flush=True)
    print(
        f"{name:<10} open loop {rate:.0f}/s x {seconds:.0f} s: achieved {fixed['achieved_rate']:.0f}/s,"
        f" p50 {fixed['p50_ms']:.1f} ms, p99 {fixed['p99_ms']:.1f} ms, max {fixed['max_ms']:.1f} ms,"
        f" errors {fixed['errors']:.0f}",
        flush=True,
    )
    print(
        f"{name:<10} closed loop 32 senders x 5 s: {peak['throughput']:.0f} webhooks/s,"
        f" p50 {peak['p50_ms']:.1f} ms, p99 {peak['p99_ms']:.1f} ms;"
        f" server CPU {cpu_per_webhook * 1000:.2f} ms per webhook",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument(
        "--sqlite-normal",
        action="store_true",
        help="also measure SQLite with synchronous=NORMAL (no fsync per commit)",
    )
    args = parser.parse_args()
    if args.only != "postgres":
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'relay.db'}"
            run("sqlite", url, Path(tmp), args.rate, args.seconds)
        if args.sqlite_normal:
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite:///{Path(tmp) / 'relay.db'}"
                run(
                    "sqlite-nrm",
                    url,
                    Path(tmp),
                    args.rate,
                    args.seconds,
                    sqlite_synchronous="NORMAL",
                )
    if args.only != "sqlite":
        bindir = postgres_bin()
        if bindir is None:
            print("postgres   skipped: PostgreSQL is not installed (make sysdeps)")
            return 0
        with PostgresServer(bindir, durable=True) as server, tempfile.TemporaryDirectory() as tmp:
            run("postgres", server.new_database(), Path(tmp), args.rate, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
