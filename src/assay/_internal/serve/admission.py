"""The bounded queue in front of the worker threads: a request is admitted only while the work
waiting and running stays within `workers + queue`, so the backlog can never grow without
bound; a full server answers at once (429) instead of queueing."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


class Full(Exception):
    """No room: the caller should come back after `retry_after` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the queue is full; retry after {retry_after} s")
        self.retry_after = retry_after


class Draining(Exception):
    """The server is shutting down and takes no new work."""


class QueueTimeout(Exception):
    """The work waited longer than the queue allows and was not started."""

    def __init__(self, waited: float) -> None:
        super().__init__(f"waited {waited:.1f} s in the queue without starting")
        self.waited = waited


@dataclass
class _Slot(Generic[T]):
    fn: Callable[[], T]
    admitted: float


class Admission:
    """`workers` threads run admitted work; at most `queue` more items wait. Thread-safe counts
    for the metrics (`running`, `waiting`)."""

    def __init__(self, workers: int, queue: int, queue_timeout: float) -> None:
        self.workers, self.queue, self.queue_timeout = workers, queue, queue_timeout
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="assay-serve")
        self._lock = threading.Lock()
        self.running = 0
        self.waiting = 0
        self.draining = False
        self._seconds_per_item = 1.0  # a running mean, for Retry-After

    def admit(self, n: int = 1) -> None:
        """Reserve room for `n` items, or raise `Full`/`Draining`. Each reserved item must be
        `run` (which releases it) or `release`d."""
        with self._lock:
            if self.draining:
                raise Draining("the server is draining")
            if self.running + self.waiting + n > self.workers + self.queue:
                raise Full(self._retry_after())
            self.waiting += n

    def release(self, n: int = 1) -> None:
        with self._lock:
            self.waiting -= n

    def _retry_after(self) -> int:
        backlog = self.running + self.waiting
        return max(1, min(60, round(backlog * self._seconds_per_item / self.workers)))

    async def run(self, fn: Callable[[], T]) -> T:
        """Run one admitted item on a worker thread. Raises `QueueTimeout` when it waited past
        the queue's timeout (it then never starts), or what `fn` raises."""
        slot = _Slot(fn, time.monotonic())
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._work, slot)

    def _work(self, slot: _Slot[T]) -> T:
        waited = time.monotonic() - slot.admitted
        with self._lock:
            self.waiting -= 1
            if waited > self.queue_timeout:
                raise QueueTimeout(waited)
            self.running += 1
        t0 = time.monotonic()
        try:
            return slot.fn()
        finally:
            spent = time.monotonic() - t0
            with self._lock:
                self.running -= 1
                self._seconds_per_item = 0.9 * self._seconds_per_item + 0.1 * spent

    def drain(self) -> None:
        """Take no new work; wait for every admitted item to finish (each runs to its verdict
        or its own error, and removes what it made)."""
        with self._lock:
            self.draining = True
        self._pool.shutdown(wait=True)
