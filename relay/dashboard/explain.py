"""Query plans of a page: which indexes the dashboard's SQL uses (for the benchmark and tests).

`RecordingTx` wraps a real transaction and remembers every query a page builder
runs; `page_plans` then asks the database to explain each of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from relay.store.base import Params, Row, Store, Tx

# Tables that grow with traffic: a full scan of one of them is a bug.
BIG_TABLES = (
    "job_runs",
    "dispatches",
    "deliveries",
    "selection_reports",
    "outbox",
    "test_failures",
    "test_status",
)


class RecordingTx(Tx):
    def __init__(self, inner: Tx) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.queries: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, params: Params = ()) -> int:
        return self.inner.execute(sql, params)

    def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        self.queries.append((sql, tuple(params)))
        return self.inner.fetchall(sql, params)


@dataclass(frozen=True)
class Plan:
    sql: str
    lines: tuple[str, ...]

    def full_scans(self) -> list[str]:
        """Plan lines that read a big table without an index."""
        return [line for line in self.lines if _is_full_scan(line)]


def _is_full_scan(line: str) -> bool:
    text = line.strip()
    for table in BIG_TABLES:
        # SQLite: "SCAN job_runs" (no "USING ... INDEX"); PostgreSQL: "Seq Scan on job_runs".
        if text.startswith(f"SCAN {table}") and "INDEX" not in text:
            return True
        if f"Seq Scan on {table}" in text:
            return True
    return False


def page_plans(store: Store, build: Callable[[Tx, float], Any], now: float) -> list[Plan]:
    with store.transaction(write=False) as tx:
        recorder = RecordingTx(tx)
        build(recorder, now)
        plans: dict[str, Plan] = {}
        for sql, params in recorder.queries:
            if sql not in plans:
                plans[sql] = Plan(sql, tuple(_explain(tx, sql, params)))
    return list(plans.values())


def _explain(tx: Tx, sql: str, params: tuple[Any, ...]) -> list[str]:
    if tx.dialect == "sqlite":
        return [str(r["detail"]) for r in tx.fetchall("EXPLAIN QUERY PLAN " + sql, params)]
    return [str(next(iter(r.values()))) for r in tx.fetchall("EXPLAIN " + sql, params)]
