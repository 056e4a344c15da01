"""Record a map: run pairs in --jobs worker processes (`spyre_ci.deps.worker`). Torch-free.

Each worker is one device process answering one pair at a time. A worker that dies or does
not answer within the timeout is ended (by its pid) and replaced; its pair is recorded with
that as its status, and the run goes on. The first pair a worker records is run twice: what
only the first run executed (lazy imports, first-use initialisation) is that worker's
warm-up, collected as the map's `baseline`, so it is not credited to whichever pair happened
to come first.
"""

from __future__ import annotations

import json
import os
import queue
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from selection.observed import NAME_LISTS, SCHEMA, SCHEMA_VERSION, Pair

STARTUP_SECONDS = 600.0  # importing torch and the backend, on a loaded 2-core machine


@dataclass(frozen=True)
class RecordOptions:
    backend_module: str = "torch_spyre_ref"
    compile_backend: str = "spyre"
    max_samples: int = 32
    compile_samples: int = 1
    seed: int = 0
    paths: tuple[str, ...] = ()  # empty: every path
    jobs: int = 1
    timeout: float = 300.0  # seconds per pair
    python: str = sys.executable

    def worker_command(self) -> list[str]:
        command = [self.python, "-m", "spyre_ci.deps.worker"]
        command += ["--backend-module", self.backend_module]
        command += ["--compile-backend", self.compile_backend]
        command += ["--max-samples", str(self.max_samples)]
        command += ["--compile-samples", str(self.compile_samples), "--seed", str(self.seed)]
        if self.paths:
            command += ["--paths", ",".join(self.paths)]
        return command

    def settings(self) -> dict[str, Any]:
        return {
            "backend_module": self.backend_module,
            "compile_backend": self.compile_backend,
            "max_samples": self.max_samples,
            "compile_samples": self.compile_samples,
            "seed": self.seed,
        }


class WorkerFailed(RuntimeError):
    """A worker died or hung; the message says how (exit status, last stderr line)."""


class RecordingFailed(RuntimeError):
    """No worker could start (the backend does not import, no device): nothing recorded."""


@dataclass
class Worker:
    options: RecordOptions
    log_dir: Path
    process: subprocess.Popen[str] | None = None
    hello: dict[str, Any] = field(default_factory=dict)
    fresh: bool = True
    _log: IO[str] | None = None

    def start(self) -> None:
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115  (closed in stop)
            "w+", dir=self.log_dir, suffix=".log", delete=False, encoding="utf-8"
        )
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen(
            self.options.worker_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._log, text=True, env=env,
        )  # fmt: skip
        self.hello = self._answer(STARTUP_SECONDS)["hello"]
        self.fresh = True

    def ask(self, pair: Pair) -> dict[str, Any]:
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(list(pair)) + "\n")
            self.process.stdin.flush()
        except OSError as exc:
            raise WorkerFailed(self._death(f"worker pipe closed ({exc})")) from exc
        timeout = self.options.timeout * (3 if self.fresh else 1)
        answer = self._answer(timeout)
        self.fresh = False
        return answer

    def _answer(self, timeout: float) -> dict[str, Any]:
        assert self.process is not None and self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                raise WorkerFailed(self._death(f"no answer within {timeout:.0f} s"))
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=30)
            raise WorkerFailed(self._death(f"worker exited ({self.process.returncode})"))
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _death(self, what: str) -> str:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # our own child, by its pid; its log is complete after this
            self.process.wait(timeout=30)
        last = self._last_error_line()
        self.stop()
        return f"error: {what}" + (f": {last}" if last else "")

    def _last_error_line(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        lines = Path(self._log.name).read_text(encoding="utf-8", errors="replace").splitlines()
        useful = [line for line in lines if line.strip() and not line.startswith("USDT:")]
        return useful[-1][:200] if useful else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # our own child, by its pid
            self.process.wait(timeout=30)
        if self.process is not None:
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    stream.close()
        if self._log is not None:
            self._log.close()
            Path(self._log.name).unlink(missing_ok=True)
            self._log = None


@dataclass
class Recording:
    """What a run produced: rows, the warm-up baseline, what the workers reported."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    baseline: dict[str, set[str]] = field(
        default_factory=lambda: {kind: set() for kind in NAME_LISTS}
    )
    hello: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, row: dict[str, Any]) -> None:
        with self.lock:
            warmup = row.pop("baseline", None)
            if warmup:
                for kind in self.baseline:
                    self.baseline[kind].update(warmup.get(kind, ()))
            self.rows.append(row)

    def document(self, options: RecordOptions, paths: Sequence[str]) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "torch_version": self.hello.get("torch_version", ""),
            "torch_git_version": self.hello.get("torch_git_version", ""),
            "device": self.hello.get("device", ""),
            "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "paths": list(paths),
            "settings": options.settings(),
            "baseline": {kind: sorted(names) for kind, names in self.baseline.items()},
            "pairs": sorted(self.rows, key=lambda r: (r["database"], r["op"], r["dtype"])),
        }


def failed_row(pair: Pair, status: str) -> dict[str, Any]:
    database, op, dtype = pair
    return {"database": database, "op": op, "dtype": dtype, "status": status,
            "aten": [], "functions": []}  # fmt: skip


def record(
    pairs: Sequence[Pair],
    options: RecordOptions,
    on_row: Callable[[dict[str, Any]], None] = lambda _row: None,
) -> Recording:
    """Record every pair; rows arrive through `on_row` as they finish (from worker threads)."""
    recording = Recording()
    work: queue.Queue[Pair] = queue.Queue()
    for pair in pairs:
        work.put(pair)
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="spyre-ci-deps-") as logs:
        threads = [
            threading.Thread(
                target=_drain, args=(work, options, Path(logs), recording, on_row, errors)
            )
            for _ in range(max(1, min(options.jobs, len(pairs))))
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                thread.join()
        except KeyboardInterrupt:
            _drop_all(work)  # each thread ends after its current pair and stops its worker
            raise
    if not recording.hello and pairs:
        raise RecordingFailed(errors[0] if errors else "no worker started")
    while not work.empty():  # every worker that could still run them failed to start
        row = failed_row(work.get_nowait(), errors[-1] if errors else "error: not run")
        recording.add(row)
        on_row(row)
    return recording


def _drain(
    work: queue.Queue[Pair],
    options: RecordOptions,
    logs: Path,
    recording: Recording,
    on_row: Callable[[dict[str, Any]], None],
    errors: list[str],
) -> None:
    worker: Worker | None = None
    try:
        while True:
            try:
                pair = work.get_nowait()
            except queue.Empty:
                return
            if worker is None:
                worker = Worker(options, logs)
                try:
                    worker.start()
                except WorkerFailed as exc:
                    errors.append(str(exc))
                    _give_back(work, pair, errors)
                    return
                with recording.lock:
                    recording.hello = recording.hello or worker.hello
            started = time.perf_counter()
            try:
                row = worker.ask(pair)
            except WorkerFailed as exc:
                row = failed_row(pair, str(exc))
                row["seconds"] = round(time.perf_counter() - started, 3)
                worker = None
            recording.add(row)
            on_row(row)
    finally:
        if worker is not None:
            worker.stop()


def _drop_all(work: queue.Queue[Pair]) -> None:
    while True:
        try:
            work.get_nowait()
        except queue.Empty:
            return


def _give_back(work: queue.Queue[Pair], pair: Pair, errors: list[str]) -> None:
    """A worker that cannot start gives its pair back; when every worker fails, the run
    stops with the first error (RecordingFailed) rather than recording every pair as failed."""
    work.put(pair)
