"""Group commit: many small write transactions share one commit (one fsync).

SQLite with `synchronous=FULL` syncs the WAL at every commit, a few ms each, so
one-commit-per-webhook caps ingest at a few hundred per second. Here a writer
thread takes every write queued meanwhile, runs each in its own SAVEPOINT (one
failing write does not undo the others) inside one transaction, commits once,
and only then wakes the callers: nothing is acknowledged before it is durable.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from relay.store.base import Store, Tx

T = TypeVar("T")


@dataclass
class _Write:
    fn: Callable[[Tx], Any]
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None
    on_done: Callable[[_Write], None] | None = None

    def finish(self) -> None:
        self.done.set()
        if self.on_done is not None:
            self.on_done(self)


class GroupCommitter:
    def __init__(self, store: Store, *, max_batch: int = 128) -> None:
        self._store = store
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[_Write | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[Tx], T]) -> T:
        """Run `fn` in a (shared) write transaction; return once it is committed."""
        self._ensure_thread()
        write = _Write(fn)
        self._queue.put(write)
        write.done.wait()
        if write.error is not None:
            raise write.error
        result: T = write.result
        return result

    async def submit_async(self, fn: Callable[[Tx], T]) -> T:
        """The same, awaited from an event loop without tying up a worker thread."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def resolve(write: _Write) -> None:
            loop.call_soon_threadsafe(_settle, future, write)

        self._ensure_thread()
        self._queue.put(_Write(fn, on_done=resolve))
        return await future

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="store-group-commit", daemon=True
                )
                self._thread.start()

    def _next_batch(self) -> list[_Write] | None:
        first = self._queue.get()
        if first is None:
            return None
        batch = [first]
        while len(batch) < self._max_batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._queue.put(None)  # stop after this batch
                break
            batch.append(item)
        return batch

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            self._commit(batch)

    def _commit(self, batch: list[_Write]) -> None:
        try:
            with self._store.transaction() as tx:
                for write in batch:
                    self._apply(tx, write)
        except BaseException as exc:  # the commit itself failed: nobody's write is durable
            for write in batch:
                if write.error is None:
                    write.error, write.result = exc, None
        finally:
            for write in batch:
                write.finish()

    @staticmethod
    def _apply(tx: Tx, write: _Write) -> None:
        tx.execute("SAVEPOINT group_write")
        try:
            write.result = write.fn(tx)
        except BaseException as exc:
            tx.execute("ROLLBACK TO SAVEPOINT group_write")
            write.error = exc
        tx.execute("RELEASE SAVEPOINT group_write")

    def close(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout=10)


def _settle(future: asyncio.Future[Any], write: _Write) -> None:
    if future.cancelled():
        return
    if write.error is not None:
        future.set_exception(write.error)
    else:
        future.set_result(write.result)
