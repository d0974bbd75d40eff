"""What every tier's controller shares: one grading's identity, clock, facts and intake.

The controller alone fills these fields of the verdict; no container output reaches them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from time import monotonic
from typing import BinaryIO

from assay.errors import (
    AssayError,
    ImageMissingError,
    InternalError,
    TaskEnvironmentError,
    UnsafeInputsError,
)

from ...model.envcontext import environment_ref
from ...model.languages import language_image
from ...model.task import Task, vcs_history
from ...model.verdict import ControllerFacts, Tier, Verdict, error_verdict
from ...runtime import GradingScope, Runtime
from ...runtime.scope import new_grading_id
from .intake import Refused, Submission, from_path, from_stream, run_agent
from .patchapply import apply_patch


@dataclass(frozen=True)
class Source:
    """Where the submission comes from: an agent run, or files produced elsewhere."""

    agent_cmd: str | None = None
    agent_dir: Path | None = None
    path: Path | None = None
    stream: BinaryIO | None = None
    """A seekable tar stream made on the host from a caller's mapping or file object, read from
    its start through the same firewall as a path (`intake.from_stream`)."""
    collect: Callable[[GradingScope, frozenset[tuple[str, str]]], Submission | Refused] | None = (
        None
    )
    """A live agent container driven from the host (`Grader.session`): freezes it and takes
    its workspace, inside the grading's scope (with `take_submission`'s `same_links`)."""
    agent_image: str | None = None
    """The image that live agent container runs, for the verdict's image digests."""
    patch: bytes | None = None
    """A diff to apply in an agent container of the task's image (`patchapply`)."""
    refused: Refused | None = None
    """Refused before any container (a file object larger than its raw cap): the grading
    fails with its reason, as a firewall refusal does, never a usage error."""


def check_agent_inputs(task: Task) -> None:
    """Refuse task inputs that would hand the agent past or future answers."""
    if leaks := vcs_history(task.inputs_dir):
        raise UnsafeInputsError(
            str(task.inputs_dir),
            f"holds version-control history ({', '.join(leaks[:3])}); the agent could "
            "read past or future answers from it. Ship a plain export of the tree.",
        )


@contextmanager
def contained(grading_id: str) -> Iterator[None]:
    """The one place where an exception assay did not raise on purpose (an OSError from the
    host, a bug) becomes an infrastructure error: every tier's grading runs inside it, so
    `grade` exits 3 rather than 1 (the code for FAILED) with a traceback, and a batch or the
    proof matrix records the error and goes on."""
    try:
        yield
    except AssayError:
        raise
    except Exception as exc:
        raise InternalError(grading_id, exc) from exc


def task_image(rt: Runtime, task: Task, base_image: str) -> str:
    """The image of the task's agent and candidate: its `[environment]` image, which must be
    on the engine already (`assay build`, or the Grader's build on first use), else
    `base_image`. The judge of a strict task always runs `base_image`: it never runs task code."""
    ref = environment_ref(task)
    if ref is None and task.config.stdio is not None:
        # The agent of a program task gets its first language's toolchain; the candidate runs
        # the image of the language it submitted (strict/program.py).
        return language_image_of(rt, task, task.config.stdio.languages[0], base_image)
    if ref is None:
        return base_image
    env = task.environment
    how = "load it locally" if env is not None and env.image else f"assay build {task.root}"
    _require_image(rt, task, ref, how)
    return ref


def _require_image(rt: Runtime, task: Task, ref: str, fix: str) -> None:
    """Raises TaskEnvironmentError (exit 2) naming `fix` when `ref` is not on the engine."""
    try:
        rt.image_digest(ref)
    except ImageMissingError:
        raise TaskEnvironmentError(
            str(task.root / "task.toml"),
            f"the image {ref} of task {task.id!r} is not on this Docker engine",
            fix=fix,
        ) from None


def language_image_of(rt: Runtime, task: Task, name: str, base_image: str) -> str:
    """The image `name`'s programs build and run in, which must be on the engine already."""
    ref = language_image(name, base_image)
    if ref != base_image:
        _require_image(rt, task, ref, f"assay build --languages {name}")
    return ref


@dataclass
class Grading:
    rt: Runtime
    task: Task
    tier: Tier
    image: str
    gid: str = field(default_factory=new_grading_id)
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    timings: dict[str, float] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)
    """Container role -> id of the image it ran, for every role this grading used."""
    submission: Submission | None = None
    task_image: str = ""
    """What the agent and candidate run: the task's `[environment]` image, else `image`."""

    def __post_init__(self) -> None:
        self.task_image = task_image(self.rt, self.task, self.image)

    @contextmanager
    def scope(self) -> Iterator[GradingScope]:
        """The grading's containers and temp dirs, removed on every exit; each container's role
        image is recorded; an unexpected exception inside leaves as an InternalError
        (docs/security.md, "Errors")."""
        with (
            contained(self.gid),
            GradingScope(self.rt, self.gid, lambda spec: self.used(spec.role, spec.image)) as scope,
        ):
            yield scope

    def used(self, role: str, image: str) -> None:
        """Record a container of `role` that ran `image` (also one the scope did not create)."""
        self.images[role] = self.rt.image_digest(image)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Add the block's wall time to `phase`. A block left by an exception adds nothing (no
        verdict carries it), and a verdict made inside the block has not counted it yet."""
        t0 = monotonic()
        yield
        self.timings[phase] = round(self.timings.get(phase, 0.0) + monotonic() - t0, 6)

    def facts(self) -> ControllerFacts:
        return ControllerFacts(
            grading_id=self.gid,
            task_id=self.task.id,
            task_digest=self.task.digest,
            tier=self.tier,
            runtime=self.rt.name,
            submission_digest=self.submission.digest if self.submission else None,
            started_at=self.started,
            ended_at=datetime.now(UTC),
            timings=self.timings,
            image_digests=self.images,
        )

    def fail(self, code: str, extra: list[str] | None = None) -> Verdict:
        return error_verdict(self.facts(), code, extra or [])

    def take_submission(
        self,
        scope: GradingScope,
        source: Source,
        same_links: frozenset[tuple[str, str]] = frozenset(),
    ) -> Submission | Refused:
        """Run the agent, or read the given path; either way through the firewall.
        `same_links`: a repository's own links, dropped from the submission when unchanged."""
        taken: Submission | Refused
        if source.refused is not None:
            taken = source.refused
        elif source.collect is not None:
            with self.timed("agent"):
                if source.agent_image is not None:
                    self.used("agent", source.agent_image)
                taken = source.collect(scope, same_links)
        elif source.patch is not None:
            with self.timed("agent"):
                check_agent_inputs(self.task)
                taken = apply_patch(scope, self.task, self.task_image, source.patch, same_links)
        elif source.agent_cmd is not None:
            with self.timed("agent"):
                check_agent_inputs(self.task)
                taken, _run = run_agent(
                    scope, self.task, self.task_image, source.agent_cmd, source.agent_dir,
                    same_links,
                )  # fmt: skip
        else:
            with self.timed("intake"):
                if source.stream is not None:
                    taken = from_stream(scope, self.task, source.stream, same_links)
                elif source.path is not None:
                    taken = from_path(scope, self.task, source.path, same_links)
                else:
                    raise ValueError("a Source needs agent_cmd, path or stream")
        if isinstance(taken, Submission):
            self.submission = taken
        return taken
