"""Where the ack of POST /github/webhook spends its time: a profile, not a benchmark.

1. Stages, in this process (CPU time of the calling thread, `time.thread_time`, so other
   work on the machine does not count): HMAC over the body, UTF-8 + JSON, the body checks
   (depth, surrogates), routing, the ingest write (1 delivery row + 3 outbox jobs, in
   SAVEPOINTs, 20 webhooks per transaction as group commit batches them), the JSON log line.
2. `--py-spy RATE`: the real server (`spyre-ci relay serve`, SQLite) under an open loop at
   RATE/s for 8 s, sampled by py-spy (`pip install py-spy`) with `--gil` (only the thread
   holding the GIL: where the CPU goes) in all threads; printed as shares of the samples.

Usage: python bench/profile_ack.py [--py-spy 300] [--seconds 8]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_ingest import TARGETS, open_loop  # noqa: E402

from relay.allowlist import parse_allowlist  # noqa: E402
from relay.allowlist_source import StaticAllowlist  # noqa: E402
from relay.config import RelayConfig  # noqa: E402
from relay.json_body import _lone_surrogate, _too_deep, parse_json_body  # noqa: E402
from relay.logs import JsonFormatter  # noqa: E402
from relay.state import build_state  # noqa: E402
from relay.webhook.ingest import StoredDelivery, _writer  # noqa: E402
from relay.webhook.routing import route  # noqa: E402
from relay.webhook.signature import sign, verify_signature  # noqa: E402
from tests.support.relay_server import (  # noqa: E402
    TEST_SECRET,
    RelayServer,
    fixture_body,
    write_relay_config,
)

UPSTREAM = "Codertocat/Hello-World"
# The functions whose share of the py-spy samples is printed, in the order of the ack path.
SPOTS = (
    "RequestResponseCycle.run_asgi",
    "github_webhook",
    "verify_signature",
    "parse_json_body",
    "loads",
    "_too_deep",
    "route",
    "ingest_async",
    "Logger.info",
    "_apply",
    "_insert_delivery",
    "_enqueue_dispatches",
    "_GeneratorContextManager.__exit__",
    "_checkpoint_loop",
)


def _cpu_us(fn: Callable[[], object], count: int) -> float:
    fn()
    start = time.thread_time()
    for _ in range(count):
        fn()
    return (time.thread_time() - start) / count * 1e6


def stages(count: int) -> None:
    body = fixture_body("pull_request.synchronize")
    secret = TEST_SECRET.encode()
    headers = {"x-hub-signature-256": sign(body, secret)}
    text, payload = parse_json_body(body)
    print(f"body: GitHub's pull_request.synchronize, {len(body)} bytes")
    timed = {
        "HMAC-SHA256 check": lambda: verify_signature(headers, body, [secret]),
        "UTF-8 decode + json.loads": lambda: json.loads(body.decode("utf-8")),
        "depth check (64 levels)": lambda: _too_deep(payload, 64),
        "lone-surrogate walk (only for a lone escape)": lambda: _lone_surrogate(payload),
        "parse_json_body (all of the above but HMAC)": lambda: parse_json_body(body),
        "route": lambda: route("pull_request", payload, UPSTREAM),
    }
    logger = logging.getLogger("profile-ack")
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel("INFO")
    timed["JSON log line"] = lambda: logger.info(
        "webhook %s: %s, %d job(s)", "dispatch", "pull_request synchronize", 3,
        extra={"delivery_id": "d", "event": "pull_request", "route": "dispatch"},
    )  # fmt: skip
    for name, fn in timed.items():
        print(f"  {name:<55} {_cpu_us(fn, count):8.1f} us CPU")
    print(
        f"  {'ingest write (SQLite, 20 per transaction, fsync)':<55} {_write_us(text):8.1f} us CPU"
    )


def _write_us(text: str, count: int = 1000) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        config = RelayConfig.model_validate(
            {
                "upstream_repo": UPSTREAM,
                "webhook_secrets": [TEST_SECRET],
                "store_url": f"sqlite:///{Path(tmp) / 'relay.db'}",
            }
        )
        allowlist = parse_allowlist("L2:\n" + "".join(f"  - {t}\n" for t in TARGETS))
        state = build_state(config, allowlist=StaticAllowlist(allowlist))
        state.store.migrate()
        payload = json.loads(text)
        decision = route("pull_request", payload, UPSTREAM)
        raw = text.encode()
        deliveries = [
            StoredDelivery(str(uuid.uuid4()), "pull_request", payload, raw, time.time())
            for _ in range(count)
        ]
        start = time.thread_time()
        for first in range(0, count, 20):
            with state.store.transaction() as tx:
                for delivery in deliveries[first : first + 20]:
                    tx.execute("SAVEPOINT w")
                    _writer(state, delivery, decision, allowlist)(tx)
                    tx.execute("RELEASE SAVEPOINT w")
        used = (time.thread_time() - start) / count * 1e6
        state.close()
    return used


def sampled(rate: float, seconds: float) -> None:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        print("py-spy is not installed: pip install py-spy")
        return
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        allowlist = workdir / "allowlist.yml"
        allowlist.write_text("L2:\n" + "".join(f"  - {t}\n" for t in TARGETS))
        config = write_relay_config(
            workdir,
            store_url=f"sqlite:///{workdir / 'relay.db'}",
            allowlist={"source": str(allowlist)},
        )
        out = workdir / "samples.txt"
        with RelayServer(config, log_dir=workdir, log_level="info") as server:
            asyncio.run(open_loop(server.url, 100, 1.0))
            assert server.proc is not None
            command = [
                spy, "record", "-p", str(server.proc.pid), "-d", str(int(seconds)), "-r", "250",
                "--gil", "--threads", "--nonblocking", "--format", "raw", "-o", str(out),
            ]  # fmt: skip
            recorder = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            result = asyncio.run(open_loop(server.url, rate, seconds))
            recorder.wait()
        print(
            f"py-spy --gil, {rate:.0f}/s for {seconds:.0f} s: p50 {result['p50_ms']:.1f} ms,"
            f" p99 {result['p99_ms']:.1f} ms"
        )
        _print_shares(out.read_text())


def _print_shares(raw: str) -> None:
    threads: Counter[str] = Counter()
    spots: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        thread = re.sub(r"\s*\(\d+\)", "", frames[0]).split(":")[-1].strip()
        threads[thread] += int(count)
        names = {f.split(" (")[0] for f in frames[1:]}
        for spot in SPOTS:
            if any(n == spot or n.endswith("." + spot) for n in names):
                spots[spot] += int(count)
    total = sum(threads.values()) or 1
    print("  samples holding the GIL, by thread: " + ", ".join(
        f"{t} {n / total:.0%}" for t, n in threads.most_common()
    ))  # fmt: skip
    for spot in SPOTS:
        print(f"  {spot:<45} {spots[spot] / total:6.1%} of the samples (inclusive)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="iterations per stage")
    parser.add_argument("--py-spy", dest="rate", type=float, default=None, metavar="RATE")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    stages(args.count)
    if args.rate:
        sampled(args.rate, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
