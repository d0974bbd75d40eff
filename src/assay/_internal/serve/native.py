"""The native routes' requests and answers: grade a submission against a task the server
loaded or one made from a row's tests, and say apart passed, failed and infrastructure error
so that a trainer can mask the last instead of learning from it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

import assay
from assay.errors import AssayError, InfrastructureError, UsageError

log = logging.getLogger("assay.serve")

MAX_FILES = 256
MAX_BATCH = 1024


class GradeRequest(BaseModel):
    """Exactly one of `task`, `input_output` (APPS/TACO form) and `ground_truth` (verl's form);
    exactly one of `code` (with `language`) and `files`."""

    model_config = ConfigDict(extra="forbid")

    task: str | None = Field(None, max_length=200)
    input_output: dict[str, Any] | str | None = None
    ground_truth: dict[str, Any] | str | None = None
    code: str | None = None
    language: str | None = Field(None, max_length=32)
    files: dict[str, str] | None = Field(None, max_length=MAX_FILES)
    tier: Literal["t2", "t3"] | None = None

    @model_validator(mode="after")
    def _one_of_each(self) -> GradeRequest:
        given = [
            k for k in ("task", "input_output", "ground_truth") if getattr(self, k) is not None
        ]
        if len(given) != 1:
            raise ValueError("give exactly one of task, input_output, ground_truth")
        if (self.code is None) == (self.files is None):
            raise ValueError("give exactly one of code, files")
        if self.files is not None and self.language is not None:
            raise ValueError("language goes with code; files name their own sources")
        return self


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    requests: list[GradeRequest] = Field(min_length=1, max_length=MAX_BATCH)


Status = Literal["passed", "failed", "invalid", "infra_error"]


def answer(
    status: Status,
    graded: assay.Graded | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """One grading's answer. `score`/`reward` is null unless a verdict exists: an
    infrastructure error or an invalid request never reads as a score of 0."""
    v = graded.verdict if graded is not None else None
    reward = None
    if v is not None:
        # A failed verdict never rewards 1.0: every test passed but a limit or a security
        # reason failed it (assay.integrations.rewards.verdict_reward, the same rule).
        reward = v.score if v.passed or v.score < 1.0 else 0.0
    return {
        "status": status,
        "score": v.score if v is not None else None,
        "reward": reward,
        "reason_codes": list(v.reason_codes) if v is not None else [],
        "grading_id": v.grading_id if v is not None else None,
        "verdict": v.model_dump(mode="json") if v is not None else None,
        "envelope": graded.envelope.decode() if graded is not None else None,
        "error": error,
    }


class NativeGrading:
    """Grades on worker threads with one shared `Grader`; tasks loaded at start (`tasks`) or
    made from rows (`inline`)."""

    def __init__(
        self, grader: assay.Grader, tasks: Mapping[str, assay.Task], inline: assay.InlineTasks
    ) -> None:
        self.grader, self.tasks, self.inline = grader, tasks, inline

    def task_of(self, req: GradeRequest) -> assay.Task:
        if req.task is not None:
            found = self.tasks.get(req.task)
            if found is None:
                raise UsageError(f"no task {req.task!r} on this server (GET /v1/tasks lists them)")
            return found
        if req.input_output is not None:
            return self.inline.task(req.input_output, "apps")
        assert req.ground_truth is not None
        return self.inline.task(req.ground_truth, "verl")

    def grade(self, req: GradeRequest) -> dict[str, Any]:
        """Runs on a worker thread; never raises."""
        try:
            task = self.task_of(req)
            if req.files is not None:
                submission: dict[str, str] = req.files
            else:
                assert req.code is not None
                submission = assay.code_submission(task, req.code, req.language)
            graded = self.grader.grade(task, submission, tier=req.tier)
        except UsageError as exc:
            return answer("invalid", error=exc.diagnostics())
        except InfrastructureError as exc:
            log.warning("grading: infrastructure error: %s", exc)
            return answer("infra_error", error=exc.diagnostics())
        except AssayError as exc:  # e.g. an archive over its cap: no verdict was made
            log.warning("grading: no verdict: %s", exc)
            return answer("infra_error", error=exc.diagnostics())
        except Exception as exc:
            log.exception("grading: unexpected error")
            return answer("infra_error", error=f"internal error: {type(exc).__name__}: {exc}")
        return answer("passed" if graded.verdict.passed else "failed", graded)
