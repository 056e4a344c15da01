"""The `make serve` demo run, timed: webhook -> local target -> workflow steps -> completed
callback, first alone, then two runs at once (the README's two demo PRs).

The relay runs as `spyre-ci relay serve --with-worker` with relay/example.yaml moved into a
scratch directory (tests/support/local_demo.py, as the end-to-end test does); each webhook is
sent with `spyre-ci relay send-test-event`. A run is timed from the moment its webhook is
sent to the moment the relay recorded its completed callback (job_runs.completed_received_at).
Wall time depends on what else the machine runs, so the figures that compare are the ratio of
two runs at once to the run alone (measured in the same invocation) and the CPU time of the
whole process tree (the relay and every step it ran, user + system).

Usage: python bench/bench_demo.py
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from relay.store import open_store  # noqa: E402
from tests.support.local_demo import example_config, spyre_ci  # noqa: E402
from tests.support.relay_server import RelayServer, free_port  # noqa: E402

TIMEOUT = 600.0


def _send(config: Path, url: str, payload: Path) -> tuple[str, float]:
    delivery = str(uuid.uuid4())
    sent_at = time.time()
    done = spyre_ci(
        "relay", "send-test-event", "--config", str(config), "--url", url,
        "--payload", str(payload), "--delivery-id", delivery,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"send-test-event failed: {done.stdout}{done.stderr}")
    return delivery, sent_at


def _completed(store_url: str, delivery: str) -> tuple[float, str] | None:
    store = open_store(store_url)
    try:
        with store.transaction(write=False) as tx:
            rows = tx.fetchall(
                "SELECT status, conclusion, completed_received_at FROM job_runs"
                " WHERE delivery_id = ?",
                (delivery,),
            )
    finally:
        store.close()
    if not rows or any(r["status"] != "completed" for r in rows):
        return None
    return max(float(r["completed_received_at"]) for r in rows), str(rows[0]["conclusion"])


def _wait(store_url: str, sent: list[tuple[str, float]]) -> list[tuple[float, str]]:
    """(wall seconds, conclusion) of each sent run, once all of them completed."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        found = [_completed(store_url, delivery) for delivery, _ in sent]
        if all(f is not None for f in found):
            return [(f[0] - at, f[1]) for f, (_, at) in zip(found, sent, strict=True) if f]
        time.sleep(0.25)
    raise RuntimeError(f"the demo runs did not complete within {TIMEOUT:.0f} s")


def main() -> int:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as scratch:
        tmp = Path(scratch)
        demo = spyre_ci("ci", "demo", "--dir", str(tmp / "demo"))
        if demo.returncode != 0:
            print(demo.stderr, file=sys.stderr)
            return 1
        port = free_port()
        config = example_config(tmp, port)
        store_url = f"sqlite:///{tmp / 'relay.db'}"
        good, bad = (tmp / "demo" / f"pr-{pr}.pull_request.json" for pr in ("good", "bad"))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with RelayServer(config, with_worker=True, port=port, log_dir=tmp) as relay:
            ((alone, conclusion),) = _wait(store_url, [_send(config, relay.url, good)])
            pair = _wait(store_url, [_send(config, relay.url, p) for p in (good, bad)])
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the relay was stopped and waited
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"load average at the start: {load:.1f} (2 cores)")
    print(
        f"demo run alone (PR #101): {alone:.1f} s wall, webhook -> completed callback ({conclusion})"
    )
    walls = ", ".join(f"{wall:.1f} s ({c})" for wall, c in pair)
    slowest = max(wall for wall, _ in pair)
    print(f"two runs at once (PR #101, #102): {walls}; x{slowest / alone:.2f} the run alone")
    print(f"CPU time of the relay and every step, 3 runs: {cpu:.1f} s ({cpu / 3:.1f} s per run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
