"""Resident judges, reused across gradings of one task or of many (docs/security.md argues it).

A judge container's main process is the judge's worker (`_incontainer/judge_worker.py`), which
the controller talks to over its stdin and stdout (`judgewire`): a grading's `prepare` and
`compare` are requests to it, each run in a child it forks and kills, with no `runc exec` and
no interpreter start. A judge never runs candidate code; it parses the candidate's output as
bounded data.

Reusing it saves a container start and removal per grading, which is most of a strict
grading's engine work when a batch grades each task once (HumanEval: 164 tasks, one sample
each). What reuse must not do is let one grading influence another, so a judge is lent to one
grading at a time, and when that grading ends normally the worker is asked to `reset`: it kills
every process of the judge's uid, empties every writable place and proves both; then the pool
lists the container's processes from outside (the census) and finds only init and the worker.
Only then is the judge idle. A judge whose grading did not end normally, whose step left
anything behind, whose worker died, hung or answered out of frame, whose reset or census fails,
or which served RECYCLE_AFTER gradings, is removed instead.

A task with a fixed cases file needs no `prepare` at all (the controller makes its inputs:
`fixedcases.py`), so its judge is lent without any request, and its first is `compare`.

A judge sees the task's judge files through a host directory of its own, bound read-only at
/judge. Serving another task, the controller replaces that directory's content with a copy of
the new task's judge files, while nothing but init and the worker runs in it.

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
from dataclasses import dataclass
from pathlib import Path

from ...model.task import Task
from ...runtime import ContainerStuckError, ExecResult, Runtime, RuntimeError_
from ...runtime.scope import grading_tempdir, new_grading_id
from .judgespec import judge_spec
from .judgewire import Channel, WorkerFault

CENSUS_TRIES = 12
CENSUS_PAUSE_S = 0.01
RECYCLE_AFTER = 100
"""Gradings a judge serves before it is replaced anyway: the backstop for whatever one grading
could leave in the worker that the reset, the census and the fork per step do not show."""
REUSABLE_KINDS = frozenset({"function", "cli"})
"""Transform outputs arrive in the judge as root-owned trees the judge's user cannot empty."""


class Resident:
    """A started judge container whose main process is the worker, and the controller's pipes
    to it. `start` spawns the created container `cid` (spec: `judge_spec(resident=True)`)."""

    def __init__(self, rt: Runtime, cid: str) -> None:
        spawned = rt.spawn(cid)
        if spawned.stdin is None:
            spawned.close()
            raise RuntimeError_("the judge's container was started without its stdin")
        self.cid = cid
        self.channel = Channel(spawned.stdin, spawned.stdout, spawned.stderr)

    def step(
        self, grading_id: str, argv: tuple[str, ...], deadline_s: float, output_cap: int
    ) -> ExecResult:
        """The judge's `argv` (`prepare` or `compare`) as a request to the worker: its result
        as an exec's was. A step that left anything running or written is still its
        grading's result; only the judge does not serve again (see `JudgePool`)."""
        return self.channel.step(grading_id, argv, deadline_s, output_cap).result

    def close(self) -> None:
        self.channel.close()


@dataclass
class _Judge:
    resident: Resident
    image: str
    handoff: Path  # the runner's output, written by the controller (read-only at /handoff)
    files: Path  # a copy of the judge files of the task it serves (read-only at /judge)
    task: str  # that task's digest
    census: frozenset[int] = frozenset()  # its processes before any step: init, the worker
    counted: bool = False  # that census was taken (at its first request)
    served: int = 0  # gradings it ended normally
    steps: int = 0  # requests of the grading it is lent to
    sound: bool = True  # no step of it left anything behind

    @property
    def cid(self) -> str:
        return self.resident.cid


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
        self.leftovers = 0  # judges found running more than init and the worker after a grading
        self.faults = 0  # workers that died, hung or answered out of frame
        self.recycled = 0  # judges replaced after RECYCLE_AFTER gradings

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
        (the judge's argv) run in it. `prepare` None (a fixed cases file): no request at all.
        A judge lent again was reset when its last grading ended; one found dead meanwhile
        (killed between gradings) is replaced. Runs on the grading's judge thread."""
        while True:
            with self._lock:
                if self._closed:
                    raise RuntimeError("judge pool is closed")
                judge = self._pick(task.digest, image)
                if judge is not None:
                    self._lent[grading_id] = judge
            if judge is None:
                break
            if judge.resident.channel.gone():
                self._discard(grading_id)
                continue
            try:
                self._hold(judge, task)
            except OSError:
                self._discard(grading_id)
                continue
            judge.steps = 0
            if prepare is None:
                self._count()
                return Lent(judge.cid, None, True)
            res = self._step(grading_id, judge, prepare, deadline_s, output_cap)
            if res is not None:
                self._count()
                return Lent(judge.cid, res, True)
        judge = self._new(task, image, grading_id)
        if prepare is None:
            return Lent(judge.cid, None, False)
        res = self._step(grading_id, judge, prepare, deadline_s, output_cap)
        assert res is not None  # a new judge's first step is never retried
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
        the judge it ran in, and its result. A judge lent again whose worker is found gone at
        this, its grading's first request, is replaced by a new one."""
        with self._lock:
            judge = self._lent[grading_id]
        _handoff(judge, runner_out)
        res = self._step(grading_id, judge, argv, deadline_s, output_cap)
        if res is None:
            # Only a fixed cases file's judge has no request before compare, and a new judge's
            # compare reads that file: it needs no prepare.
            assert task.config.judge is not None and task.config.judge.cases is not None
            judge = self._new(task, judge.image, grading_id)
            _handoff(judge, runner_out)
            res = self._step(grading_id, judge, argv, deadline_s, output_cap)
            assert res is not None
        return judge.cid, res

    def _step(
        self, grading_id: str, judge: _Judge, argv: tuple[str, ...], deadline_s: float, cap: int
    ) -> ExecResult | None:
        """One request to the judge's worker: its result; None when a judge lent again is
        found gone at its grading's first request (killed between gradings: nothing of this
        grading reached it, so a new judge may do the step). Any other fault of the worker
        removes the judge and is raised: it ends this grading, with no verdict."""
        first_of_reuse = judge.served > 0 and judge.steps == 0
        try:
            self._count_once(judge)
            stepped = judge.resident.channel.step(grading_id, argv, deadline_s, cap)
        except WorkerFault as exc:
            with self._lock:
                self.faults += 1
            self._discard(grading_id)
            if exc.gone and first_of_reuse:
                return None
            raise
        judge.steps += 1
        if not stepped.clean:
            judge.sound = False
        return stepped.result

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
        read-only /handoff and /judge; the controller does, while nothing but init and the
        worker runs in it (its reset and census at release showed so)."""
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
        cid: str | None = None
        try:
            for purpose in ("handoff", "judge"):
                d = grading_tempdir(self.gid, purpose)
                made.append(d)
                d.chmod(0o755)
            handoff, files = made
            fill(files, task.judge_dir)
            spec = judge_spec(task, image, self.gid, handoff, files, resident=True)
            cid = self.rt.create(spec)
            resident = Resident(self.rt, cid)
        except BaseException:
            try:
                if cid is not None:
                    self.rt.remove(cid)
            finally:
                for d in made:
                    shutil.rmtree(d, ignore_errors=True)
            raise
        judge = _Judge(resident, image, handoff, files, task.digest)
        with self._lock:
            self._lent[grading_id] = judge
            self.created += 1
        return judge

    def _count_once(self, judge: _Judge) -> None:
        """Its processes as they are before any step: init and the worker's, once the worker
        said hello (before that, the runtime's own start stages may be listed). Raises
        `WorkerFault` if the worker never says it."""
        if not judge.counted:
            judge.resident.channel.greet()
            judge.census = self._first_census(judge.cid)
            judge.counted = True

    def _first_census(self, cid: str) -> frozenset[int]:
        """Init and the worker's processes (the one init started, which waits for the worker,
        and the worker), the judge's only ones once the worker said hello; empty, so the judge
        serves this grading only, if no outside view of them can be had."""
        try:
            procs = self.rt.census(cid)
        except RuntimeError_:  # no outside view of its processes
            return frozenset()
        return procs if len(procs) >= 2 else frozenset()

    def release(self, grading_id: str) -> None:
        """The grading ended normally: its judge may serve a later grading, if its worker keeps
        a uid of its own, no step of it left anything behind, it served fewer than
        RECYCLE_AFTER gradings, its worker's reset proves it clean, and nothing but init and
        the worker runs in it, as the engine lists them from outside, frozen (a process left
        behind would be the judge's user, which the worker's own view cannot vouch for)."""
        with self._lock:
            judge = self._lent.get(grading_id)
        if judge is None:
            return
        judge.served += 1
        if judge.served >= RECYCLE_AFTER:
            with self._lock:
                self.recycled += 1
            self._discard(grading_id)
            return
        if not (judge.sound and self._confined(judge) and self._reset(judge)):
            self._discard(grading_id)
            return
        if not self._quiet(judge):
            self._discard(grading_id)
            return
        evicted: list[_Judge] = []
        with self._lock:
            judge = self._lent.pop(grading_id, None)
            if judge is None:
                return
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

    def _confined(self, judge: _Judge) -> bool:
        """Its worker keeps a uid its steps never have: else a step could have reached it."""
        try:
            self._count_once(judge)  # a grading that made no request: its census now
            return judge.resident.channel.greet().confined
        except WorkerFault:
            return False

    def _reset(self, judge: _Judge) -> bool:
        try:
            return judge.resident.channel.reset()
        except WorkerFault:
            with self._lock:
                self.faults += 1
            return False

    def _quiet(self, judge: _Judge) -> bool:
        """Nothing but init and the worker's processes run in the judge. A step's process may take a
        moment to leave the list after the worker reaped it, so a few censuses are taken: one
        that finds nothing else suffices, since nothing starts a process in an idle judge but
        a request."""
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
            for judge in judges:
                judge.resident.close()
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
        """A judge no one holds any more: its pipes, the container, then its directories."""
        try:
            judge.resident.close()
            self.rt.remove(judge.cid)
        finally:
            with self._lock:
                self.discarded += 1
            _rmdirs(judge)


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
