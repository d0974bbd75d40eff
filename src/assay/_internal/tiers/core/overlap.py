"""Run one step of a grading on a helper thread while the controller does the next one.

Container starts dominate a strict grading, and the judge's start does not depend on the
candidate's, so they overlap. The helper is always joined before the grading's scope closes,
even on Ctrl-C: a container it creates is in the scope by then, and is removed with the rest.

Helper threads are kept between steps (`_Helpers`): starting a thread blocks the caller until
the new thread has run, twice per grading, which cost more wall time than the firewall's whole
work on a small submission, and more so on a loaded machine (docs/performance.md, the
controller's profile). A kept thread holds nothing of the step it ran: each step is a closure
handed over with its own result slot, and no helper code keeps thread-local state.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar, cast

T = TypeVar("T")

MAX_IDLE_HELPERS = 8
"""Idle helper threads kept; past that a helper ends when its step does (a grading has one
step on a helper at a time, so N gradings at once keep N busy)."""


class _Helpers:
    """Daemon threads that run one step at a time and then wait for the next; a step finds an
    idle one or starts a new one, so steps never wait for each other."""

    def __init__(self, max_idle: int) -> None:
        self.max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Callable[[], None]]] = []
        # A forked child has none of the parent's threads: a step handed to an inbox of one
        # would never run, so the child starts with no idle helper (and a fresh lock).
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._idle = []

    def run(self, step: Callable[[], None]) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), daemon=True).start()
        inbox.put(step)

    def _serve(self, inbox: queue.SimpleQueue[Callable[[], None]]) -> None:
        while True:
            inbox.get()()  # a step never raises: Background._run keeps what it raised
            with self._lock:
                if len(self._idle) >= self.max_idle:
                    return
                self._idle.append(inbox)


_HELPERS = _Helpers(MAX_IDLE_HELPERS)


class Background(Generic[T]):
    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._value: T | None = None
        self._exc: BaseException | None = None
        self._done = threading.Event()
        _HELPERS.run(self._run)

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as exc:  # handed to the caller by result()
            self._exc = exc
        finally:
            self._done.set()

    def join(self) -> None:
        """Wait for the helper; a Ctrl-C meanwhile is held until it is done, then re-raised."""
        interrupted: KeyboardInterrupt | None = None
        while not self._done.is_set():
            try:
                self._done.wait()
            except KeyboardInterrupt as exc:
                interrupted = exc
        if interrupted is not None:
            raise interrupted

    def result(self) -> T:
        self.join()
        if self._exc is not None:
            raise self._exc
        return cast(T, self._value)

    def __enter__(self) -> Background[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.join()
