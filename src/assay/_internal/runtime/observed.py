"""A Runtime wrapper shared by many concurrent gradings: per-grading call timings (the profile
`assay bench` prints) and cancellation (a batch's second Ctrl-C).

It adds no behaviour to a grading that is not cancelled: every call goes to the wrapped runtime
unchanged. A cancelled grading gets no new container, and the ones it has are removed, so its
remaining steps fail fast and its scope unwinds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO, TypeVar

from assay.errors import GradingCancelledError

from . import ContainerSpec, ExecResult, Runtime
from .base import Spawned

T = TypeVar("T")


Cancelled = GradingCancelledError  # the name the batch code has always used


@dataclass
class CallStats:
    calls: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    containers: int = 0

    def add(self, op: str, dt: float) -> None:
        self.calls[op] = self.calls.get(op, 0) + 1
        self.seconds[op] = self.seconds.get(op, 0.0) + dt


class ObservedRuntime:
    def __init__(self, inner: Runtime) -> None:
        self.inner = inner
        self.name = inner.name
        self._lock = threading.Lock()
        self._owner: dict[str, str] = {}  # container id -> grading id
        self._stats: dict[str, CallStats] = {}
        self._cancelled: set[str] = set()

    # -- bookkeeping ---------------------------------------------------------------------------

    def take(self, grading_id: str) -> CallStats:
        """Stop tracking a finished grading and return its figures (keeps memory flat)."""
        with self._lock:
            self._cancelled.discard(grading_id)
            for cid in [c for c, g in self._owner.items() if g == grading_id]:
                del self._owner[cid]
            return self._stats.pop(grading_id, CallStats())

    def cancel(self, grading_id: str) -> int:
        with self._lock:
            self._cancelled.add(grading_id)
        return self.inner.sweep(grading_id)

    def _timed(self, op: str, gid: str | None, fn: Callable[[], T]) -> T:
        t0 = time.monotonic()
        try:
            return fn()
        finally:
            if gid is not None:
                dt = time.monotonic() - t0
                with self._lock:
                    self._stats.setdefault(gid, CallStats()).add(op, dt)

    def _gid(self, cid: str) -> str | None:
        with self._lock:
            return self._owner.get(cid)

    # -- Runtime -------------------------------------------------------------------------------

    def create(self, spec: ContainerSpec) -> str:
        gid = spec.grading_id
        with self._lock:
            if gid in self._cancelled:
                raise Cancelled(f"grading {gid} was cancelled")
        cid = self._timed(f"create:{spec.role}", gid, lambda: self.inner.create(spec))
        with self._lock:
            self._owner[cid] = gid
            self._stats.setdefault(gid, CallStats()).containers += 1
            cancelled = gid in self._cancelled
        if cancelled:  # lost a race with cancel(): this container must not run either
            self.inner.remove(cid)
            raise Cancelled(f"grading {gid} was cancelled")
        return cid

    def start(self, cid: str) -> None:
        self._timed("start", self._gid(cid), lambda: self.inner.start(cid))

    def exec(
        self,
        cid: str,
        argv: tuple[str, ...],
        *,
        deadline_s: float,
        output_cap: int,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        capture: bool = True,
        keep_container: bool = False,
    ) -> ExecResult:
        def call() -> ExecResult:
            return self.inner.exec(
                cid,
                argv,
                deadline_s=deadline_s,
                output_cap=output_cap,
                env=env,
                workdir=workdir,
                capture=capture,
                keep_container=keep_container,
            )

        return self._timed("exec", self._gid(cid), call)

    def spawn(self, cid: str) -> Spawned:
        return self._timed("spawn", self._gid(cid), lambda: self.inner.spawn(cid))

    def run(
        self, cid: str, *, deadline_s: float, output_cap: int, stdin: bytes = b""
    ) -> ExecResult:
        def call() -> ExecResult:
            return self.inner.run(cid, deadline_s=deadline_s, output_cap=output_cap, stdin=stdin)

        return self._timed("run", self._gid(cid), call)

    def wait(self, cid: str, deadline_s: float) -> int | None:
        return self._timed("wait", self._gid(cid), lambda: self.inner.wait(cid, deadline_s))

    def kill(self, cid: str) -> None:
        self._timed("kill", self._gid(cid), lambda: self.inner.kill(cid))

    def pause(self, cid: str) -> None:
        self._timed("pause", self._gid(cid), lambda: self.inner.pause(cid))

    def remove(self, cid: str) -> None:
        self._timed("remove", self._gid(cid), lambda: self.inner.remove(cid))

    def put_archive(self, cid: str, path: str, data: bytes) -> None:
        self._timed("put_archive", self._gid(cid), lambda: self.inner.put_archive(cid, path, data))

    def get_archive(self, cid: str, path: str, sink: BinaryIO, cap: int) -> int:
        return self._timed(
            "get_archive", self._gid(cid), lambda: self.inner.get_archive(cid, path, sink, cap)
        )

    def logs(self, cid: str, cap: int) -> bytes:
        return self._timed("logs", self._gid(cid), lambda: self.inner.logs(cid, cap))

    def oom_killed(self, cid: str) -> bool:
        return self._timed("inspect", self._gid(cid), lambda: self.inner.oom_killed(cid))

    def limit_events(self, cid: str) -> dict[str, int]:
        return self._timed("cgroup", self._gid(cid), lambda: self.inner.limit_events(cid))

    def processes(self, cid: str) -> list[tuple[int, str]]:
        return self._timed("top", self._gid(cid), lambda: self.inner.processes(cid))

    def census(self, cid: str) -> frozenset[int]:
        return self._timed("census", self._gid(cid), lambda: self.inner.census(cid))

    def image_digest(self, image: str) -> str:
        return self.inner.image_digest(image)

    def sweep(self, grading_id: str | None = None) -> int:
        return self._timed("sweep", grading_id, lambda: self.inner.sweep(grading_id))

    def leftovers(self, grading_id: str | None = None) -> list[str]:
        return self.inner.leftovers(grading_id)

    def gradings(self) -> set[str]:
        return self.inner.gradings()

    def orphans(self) -> set[str]:
        return self.inner.orphans()
