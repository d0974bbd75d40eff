"""Batch grading: many (task, submission) pairs, bounded parallelism, resumable output.

Jobs come from `jobs`; the output directory (verdict files, event log, lock) is `journal`.

Resume rule: a job is done iff OUT/<id>.dsse.json verifies with our key, names the job's
task digest, and names the submission digest the job's submission has now, computed the way
a grading computes it (the firewall's normalised archive under the task's artifact globs).
Anything else (missing, torn, tampered, another key, another task, a replaced submission, one
whose digest cannot be computed) is graded again. An infrastructure error leaves no verdict
file, so it is retried by the next run and never counted as a pass.

Submissions are read where they are, never through a symbolic link: a link at the top of
`--submissions`, or a manifest entry naming one, is a usage error.

Threads are enough for parallelism: the work happens in containers, and the controller's
share is small. Only the main thread renders progress or handles Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.errors import (
    AssayError,
    EngineUnavailableError,
    InfrastructureError,
    NodeLostError,
    UsageError,
)

from ..model.atomic import atomic_write
from ..model.diagnostics import Diagnostics, Judged
from ..model.task import Task
from ..model.verdict import Verdict, is_failing_reason
from ..runtime.scope import new_grading_id
from ..signing.sign import VerificationError, sign_verdict
from .jobs import Job, check_id, jobs_from_dir, jobs_from_manifest, load_tasks, no_duplicate_ids
from .journal import (
    LOG,
    SUMMARY,
    EventLog,
    diagnostics_path,
    envelope_path,
    exclusive,
    finished_verdict,
    publish,
    record_patch,
    remove_tempdirs,
    unfinished_gradings,
)

__all__ = [
    "BatchResult",
    "Job",
    "Outcome",
    "Progress",
    "Shared",
    "Tally",
    "check_id",
    "drain",
    "iter_batch",
    "jobs_from_dir",
    "jobs_from_manifest",
    "load_tasks",
    "no_duplicate_ids",
    "run_batch",
]

R = TypeVar("R")
P = ParamSpec("P")
GradeFn = Callable[[Task, Any, str], Judged]
"""Grade one submission of one task under a given grading id; raises on infrastructure errors."""
SweepFn = Callable[[str], int]
"""Remove every container and volume of one grading id (recovering from a killed run)."""
FactsFn = Callable[[str], dict[str, Any]]
"""Extra fields for a grading's `end` line in the log (where it ran, on a cluster)."""
CancelFn = Callable[[str], object]
"""Stop one running grading now: refuse it new containers and kill the ones it has."""
MAX_ATTEMPTS = 3
"""Gradings per job when nodes are lost under it (`NodeLostError`); a verdict, passed or
failed, is never graded again, nor is any other infrastructure error within a run."""


@dataclass(frozen=True)
class Outcome:
    """One job's end in a batch (public as `assay.batch.Outcome`): `status` "passed" or
    "failed" with its verdict, "error" (no verdict; `error` says why), or "aborted" (a second
    Ctrl-C stopped it). `resumed`: the verdict was already in the output directory."""

    id: str
    status: Literal["passed", "failed", "error", "aborted"]
    reasons: tuple[str, ...] = ()
    """Failure reason codes only; informational notes are in `notes`."""
    error: str | None = None
    grading_id: str | None = None
    wall_s: float = 0.0
    resumed: bool = False
    verdict: Verdict | None = field(default=None, repr=False)
    envelope: bytes | None = field(default=None, repr=False)
    """The signed verdict, for a caller that takes outcomes as they come (`Grader.grade_many`)."""
    diagnostics: Diagnostics | None = field(default=None, repr=False)
    notes: tuple[str, ...] = ()


def reasons_and_notes(v: Verdict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A verdict's failure reasons and its notes, apart; a verdict signed before notes had
    their own field carries them among its reason codes."""
    reasons = tuple(c for c in v.reason_codes if is_failing_reason(c))
    legacy = (c for c in v.reason_codes if not is_failing_reason(c))
    return reasons, tuple(dict.fromkeys([*v.notes, *legacy]))


@dataclass(frozen=True)
class Shared:
    name: str
    grading_id: str
    close: Callable[[], object]


@dataclass
class Tally:
    """Counts kept as gradings finish; the failure lists are small records, never verdicts."""

    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    resumed: int = 0
    graded: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    error_list: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)
    """How many verdicts carry each informational note (never a failure reason)."""

    def add(self, o: Outcome) -> None:
        if o.status == "aborted":
            return
        for note in o.notes:
            self.notes[note] = self.notes.get(note, 0) + 1
        if o.resumed:
            self.resumed += 1
        else:
            self.graded += 1
        if o.status == "passed":
            self.passed += 1
        elif o.status == "failed":
            self.failed += 1
            self.failures.append({"id": o.id, "reasons": list(o.reasons)})
        else:
            self.errors += 1
            self.error_list.append({"id": o.id, "error": o.error})

    @property
    def done(self) -> int:
        return self.passed + self.failed + self.errors


@dataclass
class BatchResult:
    """How a batch run ended (public as `assay.batch.BatchResult`): its `tally`; whether
    Ctrl-C `interrupted` it or a lost engine ended it (`aborted_engine`); how many containers
    a killed earlier run had left (`recovered_containers`, removed); the ids whose verdict
    file was invalid and so graded again; its wall time. `not_run`: jobs never graded."""

    tally: Tally
    interrupted: bool
    aborted_engine: bool
    recovered_containers: int
    regraded_invalid: list[str]
    wall_s: float

    @property
    def not_run(self) -> int:
        return self.tally.total - self.tally.done


# -- running ---------------------------------------------------------------------------------


@dataclass
class Progress:
    """What the parent process shows; the callbacks run on the main thread only:
    `on_plan(to_grade, resumed)` once before the first grading, `on_outcome(outcome, tally)`
    per job, `on_stopping(running)` when Ctrl-C stops the scheduling."""

    on_plan: Callable[[int, int], None] = lambda to_grade, resumed: None
    on_outcome: Callable[[Outcome, Tally], None] = lambda o, t: None
    on_stopping: Callable[[int], None] = lambda running: None


class _Interrupts:
    """Ctrl-C once: take no new jobs, let running gradings finish and keep their verdicts.
    Ctrl-C twice: also kill the running gradings' containers and keep none of their results."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.abort = threading.Event()


def drain(results: Generator[Any, None, R]) -> R:
    """Run a generator to its end, discarding what it yields; its return value."""
    while True:
        try:
            next(results)
        except StopIteration as done:
            value: R = done.value
            return value


def iter_batch(
    out: Path,
    jobs: list[Job],
    tasks: dict[Path, Task],
    grade: GradeFn,
    private_key: Ed25519PrivateKey,
    parallelism: int,
    sweep: SweepFn | None = None,
    cancel: CancelFn | None = None,
    progress: Progress | None = None,
    shared: Sequence[Shared] = (),
    facts: FactsFn | None = None,
) -> Generator[Outcome, None, BatchResult]:
    """Yield each job's outcome as it is known (resumed verdicts first), then return the
    result. Ctrl-C while waiting stops the batch as `_Run.schedule` says; closing the generator
    early aborts the running gradings and waits for them.

    `shared`: containers that serve many gradings (a judge pool). Their label is logged
    before any grading starts and closed after the last one ends, so a killed run's next run
    sweeps them like any unfinished grading."""
    if parallelism < 1:
        raise UsageError("--jobs must be at least 1")
    progress = progress or Progress()
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    started_at = datetime.now(UTC)
    with exclusive(out):
        log = EventLog(out / LOG)
        try:
            recovered = 0
            leftovers = unfinished_gradings(out / LOG)
            for gid in leftovers:
                recovered += sweep(gid) if sweep is not None else 0
                remove_tempdirs(gid)
                log.write("recovered", grading_id=gid)
            tally = Tally(total=len(jobs))
            todo, invalid, resumed = _resume(out, jobs, tasks, private_key, tally, log)
            log.write("run", jobs=len(jobs), to_grade=len(todo), resumed=tally.resumed)
            progress.on_plan(len(todo), tally.resumed)
            yield from resumed
            run = _Run(out, tasks, grade, private_key, log, tally, progress, cancel, facts)
            for res in shared:
                log.write("start", id=res.name, grading_id=res.grading_id)
            try:
                yield from run.schedule(todo, parallelism)
            finally:
                close_shared(shared, log)
                recovered += sweep_lost(run.lost, sweep, log)
            lost = run.engine_gone.is_set()
            result = BatchResult(
                tally,
                run.intr.stop.is_set() and not lost,
                lost,
                recovered,
                invalid,
                time.monotonic() - t_start,
            )
            try:
                write_summary(out, result, started_at)
            except OSError as exc:
                raise InfrastructureError(
                    f"could not write {out / SUMMARY} ({exc.strerror or exc}); the verdicts "
                    "written so far are kept",
                    fix="free space in the output directory and rerun the same command to resume",
                ) from None
            if log.lost:
                raise InfrastructureError(
                    f"{log.lost} line(s) could not be written to {out / LOG}",
                    fix="free space in the output directory; a rerun resumes",
                )
            log.write(
                "end",
                interrupted=result.interrupted,
                passed=tally.passed,
                failed=tally.failed,
                errors=tally.errors,
                not_run=result.not_run,
            )
            return result
        finally:
            log.close()


def _to_the_end(fn: Callable[P, Generator[Any, None, R]]) -> Callable[P, R]:
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return drain(fn(*args, **kwargs))

    return run


run_batch = _to_the_end(iter_batch)
"""`iter_batch` run to its end, the outcomes ignored (same arguments)."""


def close_shared(shared: Sequence[Shared], log: EventLog) -> None:
    """Close each shared resource; one that cannot be closed (the engine went away) must not
    end the batch without its summary. It is logged without an `end`, so the next run still
    sees it open and sweeps it like an unfinished grading."""
    for res in shared:
        try:
            res.close()
        except Exception as exc:
            log.write("close-failed", id=res.name, error=f"{type(exc).__name__}: {exc}"[:500])
        else:
            log.write("end", id=res.name, grading_id=res.grading_id)


def sweep_lost(gids: list[str], sweep: SweepFn | None, log: EventLog) -> int:
    """Remove what gradings on lost nodes left behind (a node may be gone only from the
    cluster, its engine still running them). An id that cannot be swept stays open in the log,
    so the next run sweeps it again."""
    removed = 0
    for gid in gids:
        if sweep is None:
            continue
        try:
            removed += sweep(gid)
        except Exception as exc:
            log.write("sweep-failed", lost_grading_id=gid, error=f"{exc}"[:500])
            continue
        remove_tempdirs(gid)
        log.write("recovered", grading_id=gid)
    return removed


def _resume(
    out: Path,
    jobs: list[Job],
    tasks: dict[Path, Task],
    private_key: Ed25519PrivateKey,
    tally: Tally,
    log: EventLog,
) -> tuple[list[Job], list[str], list[Outcome]]:
    todo: list[Job] = []
    invalid: list[str] = []
    resumed: list[Outcome] = []
    for job in jobs:
        task = tasks[job.task_path.resolve()]
        path = envelope_path(out, job.id)
        if not (path.exists() or path.is_symlink()):
            todo.append(job)
            continue
        try:
            v, envelope = finished_verdict(out, job, task, private_key)
        except (VerificationError, OSError) as exc:
            reason = exc.reason if isinstance(exc, VerificationError) else type(exc).__name__
            log.write("regrade", id=job.id, reason=reason)
            invalid.append(job.id)
            todo.append(job)
            continue
        reasons, notes = reasons_and_notes(v)
        o = Outcome(
            job.id,
            "passed" if v.passed else "failed",
            reasons,
            grading_id=v.grading_id,
            resumed=True,
            verdict=v,
            envelope=envelope,
            notes=notes,
        )
        tally.add(o)
        resumed.append(o)
        log.write("skipped", id=job.id, grading_id=v.grading_id, passed=v.passed)
    return todo, invalid, resumed


@dataclass
class _Run:
    """One run's shared state; workers only touch `log` (locked) and the queues."""

    out: Path
    tasks: dict[Path, Task]
    grade: GradeFn
    private_key: Ed25519PrivateKey
    log: EventLog
    tally: Tally
    progress: Progress
    cancel: CancelFn | None
    facts: FactsFn | None = None
    intr: _Interrupts = field(default_factory=_Interrupts)
    running: dict[str, str] = field(default_factory=dict)  # grading id -> job id
    running_lock: threading.Lock = field(default_factory=threading.Lock)
    engine_gone: threading.Event = field(default_factory=threading.Event)
    lost: list[str] = field(default_factory=list)  # grading ids whose node was lost

    def schedule(self, todo: list[Job], parallelism: int) -> Iterator[Outcome]:
        work: queue.SimpleQueue[Job] = queue.SimpleQueue()
        for job in todo:
            work.put(job)
        results: queue.SimpleQueue[Outcome | None] = queue.SimpleQueue()

        def worker() -> None:
            try:
                while not (self.intr.stop.is_set() or self.engine_gone.is_set()):
                    try:
                        job = work.get_nowait()
                    except queue.Empty:
                        return
                    o: Outcome | None = None
                    for attempt in range(1, MAX_ATTEMPTS + 1):
                        gid = new_grading_id()
                        with self.running_lock:
                            if self.intr.stop.is_set():
                                return
                            self.running[gid] = job.id
                        try:
                            o = self.grade_one(job, gid, last=attempt == MAX_ATTEMPTS)
                        finally:
                            with self.running_lock:
                                self.running.pop(gid, None)
                        if o is not None:
                            break
                    assert o is not None
                    if o.error and o.error.startswith("engine:"):
                        self.engine_gone.set()
                    results.put(o)
            finally:
                results.put(None)  # this worker is done

        n_workers = min(parallelism, len(todo))
        for _ in range(n_workers):
            threading.Thread(target=worker, daemon=True).start()
        alive = n_workers

        def drain() -> Outcome | None:
            nonlocal alive
            try:
                item = results.get(timeout=0.25)
            except queue.Empty:
                return None
            if item is None:
                alive -= 1
                return None
            if item.status == "aborted":
                return None
            self.tally.add(item)
            self.progress.on_outcome(item, self.tally)
            return item

        try:
            while alive:
                if (outcome := drain()) is not None:
                    yield outcome
        except GeneratorExit:
            # The consumer stopped early: no verdict of this run may be left half-made, and no
            # worker may outlive the run (its judge pool and log are closed next).
            self.intr.stop.set()
            self.abort_running()
            while alive:
                drain()
            raise
        except KeyboardInterrupt:
            self.intr.stop.set()
            with self.running_lock:
                n_running = len(self.running)
            self.log.write("interrupt", running=n_running)
            try:
                self.progress.on_stopping(n_running)
                while alive:
                    if (outcome := drain()) is not None:
                        yield outcome
            except KeyboardInterrupt:
                self.abort_running()
                while alive:
                    with contextlib.suppress(KeyboardInterrupt):
                        drain()

    def abort_running(self) -> None:
        # Flag first, then kill: a worker whose grading we touched is guaranteed to see the
        # flag and discard what the grading returns.
        self.intr.abort.set()
        with self.running_lock:
            gids = list(self.running)
        self.log.write("abort", running=gids)
        if self.cancel is None:
            return
        for gid in gids:
            # Best effort: whatever survives is removed by the grading's scope as it unwinds.
            with contextlib.suppress(Exception):
                self.cancel(gid)

    def grade_one(self, job: Job, gid: str, *, last: bool = True) -> Outcome | None:
        """The job's outcome, or None when its node was lost and it is to be graded again
        (a fresh grading under a new id; the lost id stays open in the log until swept)."""
        task = self.tasks[job.task_path.resolve()]
        self.log.write("start", id=job.id, grading_id=gid)
        t0 = time.monotonic()
        try:
            judged = self.grade(task, job.submission, gid)
            verdict = judged.verdict
            if self.intr.abort.is_set():
                self.log.write("aborted", id=job.id, grading_id=gid)
                return Outcome(job.id, "aborted", grading_id=gid)
            envelope = sign_verdict(verdict, self.private_key)
            try:
                publish(envelope_path(self.out, job.id), envelope)
            except OSError as exc:
                # No verdict on disk means no verdict: the next run grades it again.
                msg = f"output: could not write the verdict ({exc.strerror or exc})"
                return self.errored(job, gid, msg, t0)
            self.write_diagnostics(job.id, gid, judged.diagnostics)
            try:
                record_patch(self.out, job.id, job.submission, verdict)
            except OSError:
                pass  # without the record, a rerun grades the patch again: nothing is lost
        except NodeLostError as exc:
            with self.running_lock:
                self.lost.append(gid)
            if last or self.intr.abort.is_set():
                return self.errored(job, gid, f"{type(exc).__name__}: {exc}", t0)
            self.log.write("lost", id=job.id, lost_grading_id=gid, error=str(exc)[:500])
            return None
        except EngineUnavailableError as exc:
            return self.errored(job, gid, f"engine: {exc}", t0)
        except AssayError as exc:
            return self.errored(job, gid, f"{type(exc).__name__}: {exc}", t0)
        except Exception as exc:  # one grading's bug must not end the batch; it is no pass
            return self.errored(job, gid, f"internal: {type(exc).__name__}: {exc}", t0)
        wall = time.monotonic() - t0
        reasons, notes = reasons_and_notes(verdict)
        self.log.write(
            "end",
            id=job.id,
            grading_id=gid,
            passed=verdict.passed,
            score=verdict.score,
            reasons=list(reasons),
            notes=list(notes),
            wall_s=round(wall, 4),
            **(self.facts(gid) if self.facts else {}),
        )
        return Outcome(
            job.id,
            "passed" if verdict.passed else "failed",
            reasons,
            grading_id=gid,
            wall_s=wall,
            verdict=verdict,
            envelope=envelope,
            diagnostics=judged.diagnostics,
            notes=notes,
        )

    def write_diagnostics(self, job_id: str, gid: str, diagnostics: Diagnostics | None) -> None:
        """Beside the verdict, replacing an earlier run's: an explanation, so a file that
        cannot be written is logged, never an error of the grading."""
        path = diagnostics_path(self.out, job_id)
        try:
            path.unlink(missing_ok=True)
            if diagnostics is not None:
                publish(path, diagnostics.to_json())
        except OSError as exc:
            self.log.write("diagnostics-lost", id=job_id, grading_id=gid, error=str(exc)[:200])

    def errored(self, job: Job, gid: str, message: str, t0: float) -> Outcome:
        message = message[:500]
        self.log.write("error", id=job.id, grading_id=gid, error=message)
        return Outcome(job.id, "error", error=message, grading_id=gid, wall_s=time.monotonic() - t0)


def write_summary(out: Path, result: BatchResult, started_at: datetime) -> None:
    t = result.tally
    summary = {
        "schema": "assay.batch-summary/v1",
        "total": t.total,
        "passed": t.passed,
        "failed": t.failed,
        "errors": t.errors,
        "not_run": result.not_run,
        # Over every job: an error or a job not yet run is not a pass.
        "pass_rate": round(t.passed / t.total, 6) if t.total else 0.0,
        "graded_this_run": t.graded,
        "resumed": t.resumed,
        "regraded_invalid": result.regraded_invalid,
        "recovered_containers": result.recovered_containers,
        "interrupted": result.interrupted,
        "engine_lost": result.aborted_engine,
        "complete": t.done == t.total and t.errors == 0,
        "started_at": started_at.isoformat(timespec="seconds"),
        "wall_s": round(result.wall_s, 3),
        "failures": sorted(t.failures, key=lambda f: str(f["id"])),
        "error_details": sorted(t.error_list, key=lambda f: str(f["id"])),
        # Informational, apart from `failures`: how many verdicts carry each note.
        "notes": dict(sorted(t.notes.items())),
    }
    atomic_write(out / SUMMARY, (json.dumps(summary, indent=2) + "\n").encode())
