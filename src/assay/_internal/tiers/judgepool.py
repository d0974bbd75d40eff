"""Judge containers reused across gradings of one task (opt-in; docs/security.md argues it).

A judge never runs candidate code; it parses the candidate's output as bounded data. Reusing
it saves a container start, two volumes and a removal per grading. What reuse must not do is
let one grading influence another, so a judge is lent to one grading at a time, and before it
serves the next one a trusted script (`_incontainer/judge_reset.py`) kills every process but
init and the keep-alive and empties every writable place, then proves it did. A judge whose
grading did not end normally, or whose reset fails, is removed instead of reused.

Pooled judges carry the pool's own grading-id label, so a grading's scope never sweeps them;
the pool removes them all when it is closed (and `assay grade-many` logs the pool's id, so a
killed batch's next run sweeps them too).

Idle judges are capped across all tasks, not per task: a batch over many tasks would otherwise
keep one judge (and its handoff directory) per task alive until the end. Past the cap the
judge released longest ago is removed with its handoff directory.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from ..model.task import Task
from ..runtime import Runtime, RuntimeError_
from ..runtime.scope import TEMP_PREFIX, new_grading_id
from .judgespec import judge_spec

RESET_ARGV = ("python3", "-I", "/assay/judge_reset.py")
RESET_DEADLINE_S = 20.0
REUSABLE_KINDS = frozenset({"function", "cli"})
"""Transform outputs arrive in the judge as root-owned trees the judge's user cannot empty."""


class JudgePool:
    def __init__(self, rt: Runtime, max_idle: int = 8) -> None:
        """`max_idle`: idle judges kept over all tasks together (`grade-many`: 2 x --jobs)."""
        self.rt = rt
        self.gid = new_grading_id()
        self.max_idle = max_idle
        self._lock = threading.Lock()
        # cid -> (task digest, image), least recently released first
        self._idle: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._lent: dict[str, tuple[str, tuple[str, str]]] = {}  # grading id -> (cid, key)
        self._handoff: dict[str, Path] = {}  # cid -> its /handoff directory on the host
        self._closed = False
        self.created = 0
        self.reused = 0
        self.discarded = 0
        self.evicted = 0

    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)

    @staticmethod
    def reusable(task: Task) -> bool:
        return task.config.kind in REUSABLE_KINDS

    def acquire(self, task: Task, image: str, grading_id: str) -> tuple[str, bool]:
        """A started judge for `task`, lent to `grading_id`; True if it served before (and was
        reset just now). Runs on the grading's judge thread, so a reset costs no latency."""
        key = (task.digest, image)
        while True:
            with self._lock:
                if self._closed:
                    raise RuntimeError("judge pool is closed")
                # The most recently released judge of this task: the least likely to be evicted.
                cid = next((c for c, k in reversed(self._idle.items()) if k == key), None)
                if cid is not None:
                    del self._idle[cid]
                    self._lent[grading_id] = (cid, key)
            if cid is None:
                break
            if self._reset(cid):
                with self._lock:
                    self.reused += 1
                return cid, True
            self._discard(grading_id)
        # Named like a grading's temp dirs, so a killed batch's next run removes it too.
        handoff = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{self.gid}-handoff-"))
        handoff.chmod(0o755)
        try:
            cid = self.rt.create(judge_spec(task, image, self.gid, handoff))
        except BaseException:
            shutil.rmtree(handoff, ignore_errors=True)
            raise
        with self._lock:
            self._lent[grading_id] = (cid, key)
            self._handoff[cid] = handoff
            self.created += 1
        self.rt.start(cid)
        return cid, False

    def handoff_dir(self, cid: str) -> Path:
        with self._lock:
            return self._handoff[cid]

    def release(self, grading_id: str) -> None:
        """The grading ended normally: its judge may serve the next grading of the task."""
        evicted: list[str] = []
        with self._lock:
            lent = self._lent.pop(grading_id, None)
            if lent is None:
                return
            cid, key = lent
            if self._closed:
                evicted.append(cid)
            else:
                self._idle[cid] = key
                while len(self._idle) > self.max_idle:
                    evicted.append(self._idle.popitem(last=False)[0])
                    self.evicted += 1
        for old in evicted:
            self._remove(old)

    def finish(self, grading_id: str) -> None:
        """Called after every grading, on every exit path: a judge still lent was not
        released (the grading failed or raised), so it is removed, never reused."""
        self._discard(grading_id)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            cids = [*self._idle, *(cid for cid, _ in self._lent.values())]
            self._idle.clear()
            self._lent.clear()
        for cid in cids:
            self.rt.remove(cid)
        self.rt.sweep(self.gid)
        with self._lock:
            dirs = list(self._handoff.values())
            self._handoff.clear()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)

    def _discard(self, grading_id: str) -> None:
        with self._lock:
            lent = self._lent.pop(grading_id, None)
        if lent is not None:
            self._remove(lent[0])

    def _remove(self, cid: str) -> None:
        """A judge no one holds any more: the container, then its handoff directory."""
        try:
            self.rt.remove(cid)
        finally:
            with self._lock:
                self.discarded += 1
                handoff = self._handoff.pop(cid, None)
            if handoff is not None:
                shutil.rmtree(handoff, ignore_errors=True)

    def _reset(self, cid: str) -> bool:
        # The judge cannot write its read-only /handoff; the controller empties it.
        with self._lock:
            handoff = self._handoff.get(cid)
        if handoff is not None:
            for stale in handoff.iterdir():
                stale.unlink()
        try:
            res = self.rt.exec(cid, RESET_ARGV, deadline_s=RESET_DEADLINE_S, output_cap=4096)
        except RuntimeError_:  # a judge that cannot even be reset is simply not reused
            return False
        return res.exit_code == 0 and res.stdout == b"clean\n"
