"""`Grader`: one object that owns the engine connection, the image, the signing key and judge
reuse, and grades one submission (`grade`) or many (`grade_many`)."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from assay.errors import InfrastructureError, UsageError

from ..batch.ray_cluster import RayBackend, connect
from ..batch.run import (
    BatchResult,
    GradeFn,
    Outcome,
    Progress,
    Shared,
    check_id,
    iter_batch,
    load_tasks,
    no_duplicate_ids,
)
from ..batch.run import (
    Job as BatchJob,
)
from ..environment import ensure_environment
from ..model.diagnostics import Judged
from ..model.task import Task, load_task
from ..model.verdict import UNSAFE_TIERS, Tier, Verdict
from ..runtime import Runtime
from ..runtime.docker import DockerRuntime
from ..runtime.engine import default_backend, open_runtime
from ..runtime.images import DEFAULT_BASE_IMAGE
from ..runtime.observed import ObservedRuntime
from ..runtime.oci.runtime import OciRuntime
from ..runtime.scope import TEMP_PREFIX, new_grading_id
from ..signing.keys import ensure_signing_key
from ..signing.sign import sign_verdict
from ..tiers.dispatch import pick_tier, run_tier
from ..tiers.strict.judgepool import JudgePool
from .graded import Graded
from .session import Session
from .submission import Agent, Patch, Submission, as_source

TaskLike = Task | str | os.PathLike[str]


@dataclass(frozen=True)
class Job:
    """One submission of one task for `Grader.grade_many`. `id` names the verdict file when
    an output directory is given (and makes a rerun resume); default: the job's position."""

    task: TaskLike
    submission: Submission
    id: str | None = None


def _task(task: TaskLike) -> Task:
    return task if isinstance(task, Task) else load_task(Path(task))


def _environment(rt: Runtime, task: Task, build: bool = True) -> str | None:
    """Build (or find) the task's environment image where the runtime is a Docker engine;
    on another runtime the tiers only check that the image is there."""
    inner = rt.inner if isinstance(rt, ObservedRuntime) else rt
    client = (
        getattr(inner, "client", None) if isinstance(inner, (DockerRuntime, OciRuntime)) else None
    )
    if task.environment is None or client is None:
        return None
    env = ensure_environment(client, task, build=build)
    return env.ref if env is not None else None


class Grader:
    """Grades submissions and signs the verdicts.

    `runtime`: an object implementing assay's container `Runtime` protocol (default: the
    backend `oci_runtime` names, opened on first use: "runc" (the default, or $ASSAY_RUNTIME),
    "docker" or "docker-runsc"; `assay.runtime.BACKENDS`).
    `image`: the base image (default: $ASSAY_BASE_IMAGE, else assay-base:latest).
    `key`: the signing key's path; created with its public half on first use (default: the
    per-user key, ~/.config/assay/signing.key). `reuse_judges`: lend reset judge containers
    from one grading to the next, of one task or another, instead of starting one per grading
    (docs/security.md). The judges stay, idle, between `grade` and `grade_many` calls until
    `close()` (or the end of a `with` block, or of the process).

    Raises `assay.errors.KeyFileError` if the key cannot be loaded or created.
    """

    def __init__(
        self,
        *,
        runtime: Runtime | None = None,
        image: str | None = None,
        oci_runtime: str | None = None,
        key: str | os.PathLike[str] | None = None,
        reuse_judges: bool = False,
    ) -> None:
        self.image = image or os.environ.get("ASSAY_BASE_IMAGE") or DEFAULT_BASE_IMAGE
        self.oci_runtime = oci_runtime or default_backend()
        self.reuse_judges = reuse_judges
        self._runtime = runtime
        self._private_key, pub, created = ensure_signing_key(None if key is None else Path(key))
        self.public_key: Path = pub
        """The public key that verifies this grader's envelopes (give it to `assay.verify`)."""
        self.created_key = created
        self._judges: JudgePool | None = None
        self._closer: Callable[[], object] | None = None

    # -- one submission ----------------------------------------------------------------------

    @staticmethod
    def tier_for(task: TaskLike, tier: str | None = None, *, unsafe_baseline: bool = False) -> Tier:
        """The tier `grade` would use: `tier` if the task allows it, else the task's default
        (t3 for function/cli/transform tasks, t2 for pytest tasks). Raises
        `assay.errors.UsageError` for a tier the task cannot take, or an unsafe baseline
        (t0/t1) without `unsafe_baseline=True`."""
        return pick_tier(_task(task), tier, unsafe_baseline)

    def grade(
        self,
        task: TaskLike,
        submission: Submission,
        *,
        tier: str | None = None,
        unsafe_baseline: bool = False,
    ) -> Graded:
        """Grade `submission` (a directory, a tar path or binary file object, a mapping of
        relative path to str or bytes, or an `assay.Agent`) on `tier` (default: the task's).

        Every form crosses the archive firewall; one it refuses (a `..` or absolute name, a
        NUL, a link...) gives a failed verdict whose reason names the rule. Raises
        `assay.errors.UsageError`/`TaskError` for a bad request or task and
        `assay.errors.InfrastructureError` when no verdict could be produced.
        """
        loaded = _task(task)
        chosen = pick_tier(loaded, tier, unsafe_baseline)
        rt = self.runtime()
        _environment(rt, loaded)
        judges = self._pool(rt) if self.reuse_judges else None
        gid = new_grading_id()
        try:
            # The unsafe baselines copy a path into their container as it is.
            on_disk = chosen in UNSAFE_TIERS
            with as_source(submission, loaded, gid, as_path=on_disk) as source:
                judged, _ = run_tier(
                    rt, loaded, source, chosen, self.image, grading_id=gid, judges=judges
                )
        finally:
            if judges is not None:
                judges.finish(gid)
        envelope = sign_verdict(judged.verdict, self._private_key)
        return Graded(judged.verdict, envelope, diagnostics=judged.diagnostics)

    def build(self, task: TaskLike) -> str | None:
        """Build the task's `[environment]` image unless an unchanged build context already
        has one (`grade` does this on first use); return the image reference its agent and
        candidate run, or None for a task without `[environment]`. Raises
        `assay.errors.EnvironmentBuildError` (with the build log's tail) when the Dockerfile
        fails, `assay.errors.TaskEnvironmentError` when a base image or `image =` is not on
        the engine (assay never pulls) or the image has no python3 >= 3.11."""
        return _environment(self.runtime(), _task(task))

    # -- a host-driven agent ------------------------------------------------------------------

    def session(self, task: TaskLike) -> Session:
        """An agent container for an agent loop running here (Inspect AI, your own): use it as
        `with grader.session(task) as s:`, call `s.exec`, `s.write_file`, `s.read_file`, then
        `s.grade()`. Raises `assay.errors.TaskError` for a bad task."""
        return Session(self.runtime, _task(task), self.image, self._sign, _environment)

    def _sign(self, verdict: Verdict) -> bytes:
        return sign_verdict(verdict, self._private_key)

    # -- many submissions --------------------------------------------------------------------

    def grade_many(
        self,
        jobs: Iterable[Job],
        *,
        parallel: int = 2,
        ray: str | None = None,
        ray_insecure_no_auth: bool = False,
    ) -> Iterator[Graded]:
        """Grade `jobs`, `parallel` at a time, yielding each result as it is known (not in
        job order). Ctrl-C stops taking new jobs and lets the running ones finish.

        `ray`: the address (HOST:PORT) of a Ray cluster to grade on instead of the local
        engine: each grading runs on a node advertising the resource `assay_docker`, on that
        node's Docker engine; this process signs (docs/scale.md). The cluster must use token
        authentication (`RAY_AUTH_MODE=token`) unless `ray_insecure_no_auth=True`; raises
        `assay.errors.ClusterError` when it cannot be used.

        Raises `assay.errors.UsageError`/`TaskError` before any grading if a job or task is
        invalid, and `assay.errors.InfrastructureError` at the end, after every verdict was
        yielded, naming the jobs that got none.
        """
        batch = self.batch(
            jobs, parallel=parallel, ray=ray, ray_insecure_no_auth=ray_insecure_no_auth
        )
        out = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}grade-many-"))
        try:
            result = yield from batch.run(out)
        finally:
            shutil.rmtree(out, ignore_errors=True)
        if errors := result.tally.error_list:
            shown = "; ".join(f"{e['id']}: {e['error']}" for e in errors[:5])
            raise InfrastructureError(f"{len(errors)} job(s) got no verdict: {shown}")

    def batch(
        self,
        jobs: Iterable[Job | BatchJob],
        *,
        parallel: int = 2,
        ray: str | None = None,
        ray_insecure_no_auth: bool = False,
    ) -> Batch:
        """The engine under `grade_many` and `assay grade-many`: the jobs checked up front
        (as `grade_many` does, before any grading) into a `Batch` to `run` into an output
        directory, where verdicts are kept and a rerun resumes. `jobs` may also be
        `assay.batch.BatchJob`s, as `assay.batch.jobs_from_manifest` and `jobs_from_dir`
        make them. Raises what `grade_many` raises before its first grading."""
        return Batch(self, list(jobs), parallel, ray, ray_insecure_no_auth)

    # -- lifetime ----------------------------------------------------------------------------

    def runtime(self) -> Runtime:
        """The container runtime, opened on first use."""
        if self._runtime is None:
            self._runtime = open_runtime(self.oci_runtime)
        return self._runtime

    def _pool(self, rt: Runtime, max_idle: int = 8) -> JudgePool:
        """The grader's one judge pool, shared by its gradings and batches (an RL loop's
        batch per step finds its judges warm), holding at least `max_idle` idle judges."""
        if self._judges is None:
            self._judges = JudgePool(rt, max_idle)
            # Removed with the grader or at the latest when the interpreter exits, also for
            # a caller that never closes it.
            self._closer = weakref.finalize(self, self._judges.close)
        self._judges.max_idle = max(self._judges.max_idle, max_idle)
        return self._judges

    def close(self) -> None:
        """Remove the judges kept for reuse, if any."""
        if self._judges is not None and self._closer is not None:
            self._judges = None
            self._closer()

    def __enter__(self) -> Grader:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Batch:
    """Many jobs, checked up front (tasks load, ids are unique, tiers are decided, the image
    exists); `run` grades them. Made by `Grader.batch`. `jobs` are the jobs with their ids,
    `tasks` each distinct task by its resolved path, `tiers` each task id's tier."""

    def __init__(
        self,
        grader: Grader,
        jobs: list[Job | BatchJob],
        parallel: int,
        ray: str | None = None,
        ray_insecure_no_auth: bool = False,
    ) -> None:
        self.grader = grader
        self.parallel = parallel
        self.jobs = [_batch_job(j, n) for n, j in enumerate(jobs)]
        no_duplicate_ids(self.jobs)
        self.tasks = load_tasks(self.jobs)
        self.tiers: dict[str, Tier] = {
            t.id: pick_tier(t, None, unsafe_baseline=False) for t in self.tasks.values()
        }
        self._ray: RayBackend | None = None
        if ray is not None:
            for j in self.jobs:
                if isinstance(j.submission, Agent | Patch):
                    kind = type(j.submission).__name__
                    raise UsageError(f"{j.where}: an assay.{kind} runs locally only, not on Ray")
            # Each node checks its own engine and image; this host needs no engine at all.
            connect(ray, insecure_no_auth=ray_insecure_no_auth)
            self._ray = RayBackend(self.tiers, grader.image, grader.oci_runtime)
            return
        inner = grader._runtime or open_runtime(grader.oci_runtime, parallel=parallel)
        self._rt = ObservedRuntime(inner)
        self._rt.image_digest(grader.image)  # a missing image is one error, not N job errors
        for task in self.tasks.values():
            _environment(self._rt, task)  # built once, before any grading starts

    def run(
        self, out: Path, progress: Progress | None = None
    ) -> Generator[Graded, None, BatchResult]:
        """Grade into `out` (verdict files, summary.json, log.jsonl; rerunning resumes),
        yielding each result as it is known; the generator's return value is the batch's
        `assay.batch.BatchResult` (`result = yield from batch.run(out)`, or
        `assay.batch.drain(batch.run(out))` to only wait for it). `progress` is called on this
        thread as the run plans, finishes each job, and stops on Ctrl-C (the first lets the
        running gradings finish; a second aborts them). A grading that got no verdict is
        counted in the result's tally, never yielded."""
        g = self.grader
        if self._ray is not None:
            on_ray = iter_batch(
                out, self.jobs, self.tasks, self._ray.grade, g._private_key, self.parallel,
                sweep=self._ray.sweep, cancel=self._ray.cancel, progress=progress,
                facts=self._ray.facts,
            )  # fmt: skip
            return (yield from self._results(on_ray))
        judges = g._pool(self._rt, 2 * self.parallel) if g.reuse_judges else None
        # The pool outlives the batch (the grader closes it); its label is logged so that a
        # killed run's next run sweeps its judges.
        shared = [Shared("judge-pool", judges.gid, lambda: None)] if judges else []

        grade = batch_grader(self._rt, self.tiers, g.image, judges)

        outcomes = iter_batch(
            out, self.jobs, self.tasks, grade, g._private_key, self.parallel,
            sweep=self._rt.inner.sweep, cancel=self._rt.cancel, progress=progress, shared=shared,
        )  # fmt: skip
        return (yield from self._results(outcomes))

    @staticmethod
    def _results(
        outcomes: Generator[Outcome, None, BatchResult],
    ) -> Generator[Graded, None, BatchResult]:
        while True:
            try:
                o = next(outcomes)
            except StopIteration as done:
                result: BatchResult = done.value
                return result
            if o.verdict is not None and o.envelope is not None:
                yield Graded(o.verdict, o.envelope, o.id, o.diagnostics)


def batch_grader(
    rt: ObservedRuntime, tiers: dict[str, Tier], image: str, judges: JudgePool | None
) -> GradeFn:
    """One grading of a batch: on the task's tier, with a judge from `judges` if given; the
    grading's call timings are dropped from `rt` when it ends."""

    def grade(task: Task, submission: Submission, gid: str) -> Judged:
        try:
            with as_source(submission, task, gid) as source:
                judged, _ = run_tier(
                    rt, task, source, tiers[task.id], image, grading_id=gid, judges=judges
                )
            return judged
        finally:
            if judges is not None:
                judges.finish(gid)
            rt.take(gid)

    return grade


def _batch_job(job: Job | BatchJob, n: int) -> BatchJob:
    if isinstance(job, BatchJob):
        return job
    where = f"job {n}"
    job_id = check_id(job.id, where) if job.id is not None else f"job-{n:06d}"
    task_path = job.task.root if isinstance(job.task, Task) else Path(job.task)
    return BatchJob(job_id, task_path, job.submission, where)
