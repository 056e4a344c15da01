"""A real PostgreSQL server for the tests, from Debian's packages.

`PostgresServer.start()` runs initdb and pg_ctl (under /usr/lib/postgresql/*/bin)
in a temporary directory, on a free 127.0.0.1 port, as the `postgres` user when
the tests run as root (PostgreSQL refuses to run as root). Each pytest-xdist
worker starts its own server (session-scoped fixture), so workers never share
state; `new_database()` gives every test a fresh database.

Fixtures (imported by tests/conftest.py):
- `postgres_server`: the session's server (skips if PostgreSQL is not installed,
  with the command that installs it).
- `postgres_url`: a fresh, empty database URL for one test.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.served import free_port


def postgres_bin() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    return Path(found[-1]).parent if found else None


class PostgresServer:
    def __init__(self, bindir: Path, *, durable: bool = False) -> None:
        """`durable=False` (tests) turns fsync off; benchmarks keep PostgreSQL's defaults."""
        self.bindir = bindir
        self.durable = durable
        self.root = Path(tempfile.mkdtemp(prefix="spyre-pg-"))
        self.datadir = self.root / "data"
        self.port = free_port()
        self.user = "postgres"
        self._as_root = os.geteuid() == 0

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self._as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {result.stdout}{result.stderr}")
        return result

    def start(self) -> PostgresServer:
        if self._as_root:
            shutil.chown(self.root, "postgres", "postgres")
        else:
            self.user = os.environ.get("USER", "postgres")
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.datadir),
            "-U",
            self.user,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        )
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=200"
        )
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.datadir),
            "-o",
            options,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def pids(self) -> list[int]:
        """The postmaster and every process it started (backends, background workers)."""
        postmaster = int((self.datadir / "postmaster.pid").read_text().split()[0])
        found = [postmaster]
        for pid in found:
            children = Path(f"/proc/{pid}/task/{pid}/children")
            with contextlib.suppress(OSError):
                found.extend(int(p) for p in children.read_text().split())
        return found

    def freeze(self) -> None:
        """SIGSTOP the server and its backends: alive for the kernel (which still
        accepts connections and acknowledges data), silent for clients."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        if not (self.datadir / "postmaster.pid").exists():
            return
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def halt(self) -> None:
        """Stop the server (fast mode) but keep its data directory: a database outage."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", "fast", "-w", "stop")

    def stop(self) -> None:
        """Stop at once (immediate mode) and remove the data directory; idempotent."""
        if not self.datadir.exists():
            return
        if not (self.datadir / "postmaster.pid").exists():  # halted
            shutil.rmtree(self.root, ignore_errors=True)
            return
        try:
            self._run(
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.datadir),
                "-m",
                "immediate",
                "-w",
                "stop",
            )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    bindir = postgres_bin()
    if bindir is None:
        message = "PostgreSQL is not installed: run `make sysdeps` (apt-get install postgresql)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI must not turn the PostgreSQL tests into skips
        pytest.skip(message)
    with PostgresServer(bindir) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    return postgres_server.new_database()
