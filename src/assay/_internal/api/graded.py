"""`Graded`: what a grading returns (its own module so that a session can return one too)."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.diagnostics import Diagnostics
from ..model.verdict import Verdict


@dataclass(frozen=True)
class Graded:
    """One grading's result: the verdict, and the same verdict signed (a DSSE envelope)."""

    verdict: Verdict
    envelope: bytes
    job_id: str | None = None
    """The job's id, for results of `Grader.grade_many`."""
    diagnostics: Diagnostics | None = None
    """Failed cases explained for the task's owner (expected, actual, a diff); not signed,
    and never to be shown to the agent that was graded (docs/verdicts.md)."""
