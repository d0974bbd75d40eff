"""Judge containers reused across gradings, of one task or of many (docs/security.md argues it).

A judge never runs candidate code; it parses the candidate's output as bounded data. Reusing
it saves a container start, two volumes and a removal per grading, which is most of a strict
grading's engine work when a batch grades each task once (HumanEval: 164 tasks, one sample
each). What reuse must not do is let one grading influence another, so a judge is lent to one
grading at a time, and before it serves the next one a trusted script
(`_incontainer/judge_reset.py`), started by the engine as a fresh process, kills every process
but init and the keep-alive and empties every writable place, proves it did, and only then
becomes the grading's `prepare` (one exec instead of two). A judge whose grading did not end
normally, or whose reset fails, is removed instead of reused.

A task with a fixed cases file needs no `prepare` at all (the controller makes its inputs:
`fixedcases.py`), so its judge is lent without any exec, and the reset runs first in the exec
of its `compare`. Either way the reset happens in a fresh process, before the judge reads
anything of the grading that follows, and a judge runs one exec per grading instead of three.

A judge sees the task's judge files through a host directory of its own, bound read-only at
/judge. Serving another task, the controller replaces that directory's content with a copy of
the new task's judge files before the reset-then-prepare exec.

Pooled judges carry the pool's own grading-id label, so a grading's scope never sweeps them;
the pool removes them all when it is closed (and `assay grade-many` logs the pool's id, so a
killed batch's next run sweeps them too). Idle judges are capped over all tasks; past the cap
the judge released longest ago is removed with its directories.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from ...model.task import Task
from ...runtime import ContainerStuckError, ExecResult, Runtime, RuntimeError_
from ...runtime.scope import grading_tempdir, new_grading_id
from .judgespec import judge_spec

RESET_ARGV = ("python3", "-I", "/assay/judge_reset.py")
RESET_DEADLINE_S = 20.0
CENSUS_TRIES = 12
CENSUS_PAUSE_S = 0.01
CLEAN = b"clean\n"
REUSABLE_KINDS = frozenset({"function", "cli"})
"""Transform outputs arrive in the judge as root-owned trees the judge's user cannot empty."""


@dataclass
class _Judge:
    cid: str
    image: str
    handoff: Path  # the runner's output, written by the controller (read-only at /handoff)
    files: Path  # a copy of the judge files of the task it serves (read-only at /judge)
    task: str  # that task's digest
    dirty: bool = False  # it served a grading since its last reset: the next exec resets first
    census: frozenset[int] = frozenset()  # its processes before any exec: init, keep-alive


@dataclass(frozen=True)
class Lent:
    """A judge lent to one grading, with `prepare`'s result if it ran one."""

    cid: str
    prepare: ExecResult | None
    reused: bool


class JudgePool:
    def __init__(self, rt: Runtime, max_idle: int = 8) -> None:
        """`max_idle`: idle judges kept over all tasks together (`grade-many`: 2 x --jobs)."""
        self.rt = rt
        self.gid = new_grading_id()
        self.max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: OrderedDict[str, _Judge] = OrderedDict()  # least recently released first
        self._lent: dict[str, _Judge] = {}  # grading id -> its judge
        self._closed = False
        self.created = 0
        self.reused = 0
        self.switched = 0  # reuses that served another task than the judge's last
        self.discarded = 0
        self.evicted = 0
        self.leftovers = 0  # judges found running more than init and keep-alive after a grading

    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)

    @staticmethod
    def reusable(task: Task) -> bool:
        return task.config.kind in REUSABLE_KINDS

    def acquire(
        self,
        task: Task,
        image: str,
        grading_id: str,
        prepare: tuple[str, ...] | None,
        deadline_s: float,
        output_cap: int,
    ) -> Lent:
        """A started judge holding `task`'s judge files, lent to `grading_id`, with `prepare`
        (the judge's argv) run in it, after a reset in the same exec if the judge served
        before. `prepare` None (a fixed cases file): no exec at all; `compare` resets the judge
        if it served before. Runs on the grading's judge thread."""
        while True:
            with self._lock:
                if self._closed:
                    raise RuntimeError("judge pool is closed")
                judge = self._pick(task.digest, image)
                if judge is not None:
                    self._lent[grading_id] = judge
            if judge is None:
                break
            try:
                self._hold(judge, task)
            except OSError:
                self._discard(grading_id)
                continue
            if prepare is None:
                self._count()
                return Lent(judge.cid, None, True)
            res = self._reset_then(judge, prepare, deadline_s, output_cap)
            if res is not None:
                judge.dirty = False
                self._count()
                return Lent(judge.cid, res, True)
            self._discard(grading_id)
        judge = self._new(task, image, grading_id)
        if prepare is None:
            return Lent(judge.cid, None, False)
        res = self.rt.exec(judge.cid, prepare, deadline_s=deadline_s, output_cap=output_cap)
        return Lent(judge.cid, res, False)

    def compare(
        self,
        grading_id: str,
        task: Task,
        argv: tuple[str, ...],
        runner_out: bytes,
        deadline_s: float,
        output_cap: int,
    ) -> tuple[str, ExecResult]:
        """Run `compare` (the judge's argv) on `runner_out` in the judge lent to `grading_id`:
        the judge it ran in, and its result. A judge lent dirty is reset first, in the same
        exec; if it cannot be, it is removed and a new judge compares instead."""
        with self._lock:
            judge = self._lent[grading_id]
        _handoff(judge, runner_out)
        if judge.dirty:
            res = self._reset_then(judge, argv, deadline_s, output_cap)
            if res is not None:
                return judge.cid, res
            # Only a fixed cases file leaves a judge dirty until compare, and a new judge's
            # compare reads that file: it needs no prepare.
            assert task.config.judge is not None and task.config.judge.cases is not None
            self._discard(grading_id)
            judge = self._new(task, judge.image, grading_id)
            _handoff(judge, runner_out)
        return judge.cid, self.rt.exec(
            judge.cid, argv, deadline_s=deadline_s, output_cap=output_cap
        )

    def _pick(self, digest: str, image: str) -> _Judge | None:
        """The most recently released idle judge of `image`, one of this task if any (its files
        are in place already). Called with the lock held."""
        same_image = [j for j in reversed(self._idle.values()) if j.image == image]
        judge = next((j for j in same_image if j.task == digest), None) or next(
            iter(same_image), None
        )
        if judge is not None:
            del self._idle[judge.cid]
        return judge

    def _hold(self, judge: _Judge, task: Task) -> None:
        """Empty the judge's handoff and give it `task`'s files. The judge cannot write its
        read-only /handoff and /judge; the controller does. A process a compromised judge left
        could read the new task's files before the reset kills it; it has no way to keep or
        send them (docs/security.md, "Reusing the judge container")."""
        for stale in judge.handoff.iterdir():
            stale.unlink()
        if judge.task != task.digest:
            fill(judge.files, task.judge_dir)
            judge.task = task.digest
            with self._lock:
                self.switched += 1

    def _count(self) -> None:
        with self._lock:
            self.reused += 1

    def _new(self, task: Task, image: str, grading_id: str) -> _Judge:
        # Named like a grading's temp dirs, so a killed batch's next run removes them too.
        made: list[Path] = []
        try:
            for purpose in ("handoff", "judge"):
                d = grading_tempdir(self.gid, purpose)
                made.append(d)
                d.chmod(0o755)
            handoff, files = made
            fill(files, task.judge_dir)
            cid = self.rt.create(judge_spec(task, image, self.gid, handoff, files))
        except BaseException:
            for d in made:
                shutil.rmtree(d, ignore_errors=True)
            raise
        judge = _Judge(cid, image, handoff, files, task.digest)
        with self._lock:
            self._lent[grading_id] = judge
            self.created += 1
        self.rt.start(cid)
        judge.census = self._first_census(cid)
        return judge

    def _first_census(self, cid: str) -> frozenset[int]:
        """Init and its keep-alive, once both run (the keep-alive may start a moment after
        `start` returns); empty, so the judge serves this grading only, if that never shows."""
        try:
            for _ in range(CENSUS_TRIES * 10):
                procs = self.rt.census(cid)
                if len(procs) >= 2:
                    return procs
                time.sleep(CENSUS_PAUSE_S)
        except RuntimeError_:  # no outside view of its processes
            pass
        return frozenset()

    def release(self, grading_id: str) -> None:
        """The grading ended normally: its judge may serve a later grading, if nothing but its
        init and keep-alive runs in it now. The reset cannot be the only check: a process left
        behind could ptrace it as it starts (docs/security.md), so the engine lists them from
        outside, frozen."""
        with self._lock:
            judge = self._lent.get(grading_id)
        if judge is None:
            return
        if not self._quiet(judge):
            self._discard(grading_id)
            return
        evicted: list[_Judge] = []
        with self._lock:
            judge = self._lent.pop(grading_id, None)
            if judge is None:
                return
            # Whatever its grading did, the judge must be reset before it reads another's.
            judge.dirty = True
            if self._closed:
                evicted.append(judge)
            else:
                self._idle[judge.cid] = judge
                while len(self._idle) > self.max_idle:
                    evicted.append(self._idle.popitem(last=False)[1])
                    self.evicted += 1
        for old in evicted:
            try:
                self._remove(old)
            except ContainerStuckError as exc:
                if not exc.removed:
                    raise
                # An idle judge no grading depends on: gone, and `remove` logged how.

    def _quiet(self, judge: _Judge) -> bool:
        """Nothing but init and the keep-alive runs in the judge. The last exec's process may
        take a moment to leave the list after the engine reports its exit, so a few censuses
        are taken: one that finds nothing else suffices, since nothing starts a process in an
        idle judge but an exec."""
        if not judge.census:
            return False
        try:
            for attempt in range(CENSUS_TRIES):
                if self.rt.census(judge.cid) == judge.census:
                    return True
                time.sleep(CENSUS_PAUSE_S * (attempt + 1))
        except RuntimeError_:
            return False
        with self._lock:
            self.leftovers += 1
        return False

    def finish(self, grading_id: str) -> None:
        """Called after every grading, on every exit path: a judge still lent was not
        released (the grading failed or raised), so it is removed, never reused."""
        self._discard(grading_id)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            judges = [*self._idle.values(), *self._lent.values()]
            self._idle.clear()
            self._lent.clear()
        try:
            try:  # at once: a batch's last grading should not wait for them in turn
                with ThreadPoolExecutor(min(len(judges), 8) or 1) as ex:
                    list(ex.map(lambda j: self.rt.remove(j.cid), judges))
            except RuntimeError:  # no new thread at interpreter exit (a Grader's finalizer)
                for judge in judges:
                    self.rt.remove(judge.cid)
            self.rt.sweep(self.gid)
        finally:
            for judge in judges:
                _rmdirs(judge)

    def _discard(self, grading_id: str) -> None:
        with self._lock:
            judge = self._lent.pop(grading_id, None)
        if judge is not None:
            self._remove(judge)

    def _remove(self, judge: _Judge) -> None:
        """A judge no one holds any more: the container, then its directories."""
        try:
            self.rt.remove(judge.cid)
        finally:
            with self._lock:
                self.discarded += 1
            _rmdirs(judge)

    def _reset_then(
        self, judge: _Judge, argv: tuple[str, ...], deadline_s: float, cap: int
    ) -> ExecResult | None:
        """Reset the judge, then run the judge's `argv` (prepare or compare) in the same exec:
        its result, or None if the judge cannot be reused (the caller discards it)."""
        try:
            res = self.rt.exec(
                judge.cid, (*RESET_ARGV, "--then", *argv),
                deadline_s=RESET_DEADLINE_S + deadline_s, output_cap=len(CLEAN) + cap,
            )  # fmt: skip
        except RuntimeError_:  # a judge that cannot even be reset is not reused
            return None
        if res.timed_out or res.truncated or not res.stdout.startswith(CLEAN):
            return None
        return replace(res, stdout=res.stdout[len(CLEAN) :])


def _handoff(judge: _Judge, runner_out: bytes) -> None:
    path = judge.handoff / "runner.json"
    path.write_bytes(runner_out)
    path.chmod(0o644)


def fill(dst: Path, src: Path) -> None:
    """Make `dst` hold a copy of `src` (a task's trusted judge directory): links stay links,
    files are hard-linked where the filesystem allows (the judge sees them read-only) and
    copied elsewhere."""
    for entry in list(dst.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True, copy_function=_link_or_copy)
    dst.chmod(0o755)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        shutil.copy2(src, dst, follow_symlinks=False)


def _rmdirs(judge: _Judge) -> None:
    shutil.rmtree(judge.handoff, ignore_errors=True)
    shutil.rmtree(judge.files, ignore_errors=True)
