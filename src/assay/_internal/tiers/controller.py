"""What every tier's controller shares: one grading's identity, clock, facts and intake.

The controller alone fills these fields of the verdict; no container output reaches them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from time import monotonic

from assay.errors import UnsafeInputsError

from ..model.task import Task, vcs_history
from ..model.verdict import ControllerFacts, Tier, Verdict, error_verdict
from ..runtime import GradingScope, Runtime
from ..runtime.scope import new_grading_id
from .intake import Refused, Submission, from_path, run_agent


@dataclass(frozen=True)
class Source:
    """Where the submission comes from: an agent run, or files produced elsewhere."""

    agent_cmd: str | None = None
    agent_dir: Path | None = None
    path: Path | None = None


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

    def scope(self) -> GradingScope:
        """The grading's scope; every container it creates has its role's image recorded."""
        return GradingScope(self.rt, self.gid, lambda spec: self.used(spec.role, spec.image))

    def used(self, role: str, image: str) -> None:
        """Record a container of `role` that ran `image` (also one the scope did not create)."""
        self.images[role] = self.rt.image_digest(image)

    def lap(self, phase: str, t0: float) -> None:
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

    def take_submission(self, scope: GradingScope, source: Source) -> Submission | Refused:
        """Run the agent, or read the given path; either way through the firewall."""
        t0 = monotonic()
        if source.agent_cmd is not None:
            if leaks := vcs_history(self.task.inputs_dir):
                raise UnsafeInputsError(
                    str(self.task.inputs_dir),
                    f"holds version-control history ({', '.join(leaks[:3])}); the agent could "
                    "read past or future answers from it. Ship a plain export of the tree.",
                )
            taken, _run = run_agent(
                scope, self.task, self.image, source.agent_cmd, source.agent_dir
            )
            self.lap("agent", t0)
        else:
            if source.path is None:
                raise ValueError("a Source needs agent_cmd or path")
            taken = from_path(scope, self.task, source.path)
            self.lap("intake", t0)
        if isinstance(taken, Submission):
            self.submission = taken
        return taken
