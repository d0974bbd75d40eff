"""The native routes' requests and answers: grade a submission against a task the server
loaded or one made from a row's tests, and say apart passed, failed and infrastructure error
so that a trainer can mask the last instead of learning from it. The answer's shape and the
reward rule are `assay.wire`'s, which the clients read with."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

import assay
from assay.errors import AssayError, InfrastructureError, UsageError
from assay.wire import Answer

log = logging.getLogger("assay.serve")

MAX_FILES = 256
MAX_BATCH = 1024
MAX_STATEMENT_CHARS = 1 << 20  # the importers' statement cap (1 MiB), in characters


class GradeRequest(BaseModel):
    """Exactly one of `task`, `input_output` (APPS/TACO form) and `ground_truth` (verl's form);
    exactly one of `code` (with `language`) and `files`. With a row's tests, `statement` is the
    problem text the model was shown: the tests it shows are visible, the rest hidden, and a
    row with no hidden test is refused unless `allow_visible_only` (assay.InlineTasks)."""

    model_config = ConfigDict(extra="forbid")

    task: str | None = Field(None, max_length=200)
    input_output: dict[str, Any] | str | None = None
    ground_truth: dict[str, Any] | str | None = None
    code: str | None = None
    language: str | None = Field(None, max_length=32)
    files: dict[str, str] | None = Field(None, max_length=MAX_FILES)
    tier: Literal["t2", "t3"] | None = None
    statement: str | None = Field(None, max_length=MAX_STATEMENT_CHARS)
    allow_visible_only: bool = False

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
        if self.task is not None and (self.statement is not None or self.allow_visible_only):
            raise ValueError("statement and allow_visible_only go with a row's tests, not a task")
        return self


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    requests: list[GradeRequest] = Field(min_length=1, max_length=MAX_BATCH)


class NativeGrading:
    """Grades on worker threads with one shared `Grader`; tasks loaded at start (`tasks`) or
    made from rows (`inline`)."""

    def __init__(
        self, grader: assay.Grader, tasks: Mapping[str, assay.Task], inline: assay.InlineTasks
    ) -> None:
        self.grader, self.tasks, self.inline = grader, tasks, inline

    def task_of(self, req: GradeRequest) -> AbstractContextManager[assay.Task]:
        """The request's task, held for the grading: an inline task is leased, so the cache
        never removes it under a grading, and one made for a request refused before any
        verdict goes with it."""
        if req.task is not None:
            found = self.tasks.get(req.task)
            if found is None:
                raise UsageError(f"no task {req.task!r} on this server (GET /v1/tasks lists them)")
            return nullcontext(found)
        apps_form = req.input_output is not None
        tests = req.input_output if apps_form else req.ground_truth
        form = "apps" if apps_form else "verl"
        assert tests is not None
        return self.inline.lease(
            tests, form, statement=req.statement, allow_visible_only=req.allow_visible_only
        )

    def grade(self, req: GradeRequest) -> dict[str, Any]:
        """Runs on a worker thread; never raises."""
        try:
            with self.task_of(req) as task:
                if req.files is not None:
                    submission: dict[str, str] = req.files
                else:
                    assert req.code is not None
                    submission = assay.code_submission(task, req.code, req.language)
                graded = self.grader.grade(task, submission, tier=req.tier)
        except UsageError as exc:
            return Answer.no_verdict("invalid", exc.diagnostics()).to_json()
        except InfrastructureError as exc:
            log.warning("grading: infrastructure error: %s", exc)
            return Answer.no_verdict("infra_error", exc.diagnostics()).to_json()
        except AssayError as exc:  # e.g. an archive over its cap: no verdict was made
            log.warning("grading: no verdict: %s", exc)
            return Answer.no_verdict("infra_error", exc.diagnostics()).to_json()
        except Exception as exc:
            log.exception("grading: unexpected error")
            why = f"internal error: {type(exc).__name__}: {exc}"
            return Answer.no_verdict("infra_error", why).to_json()
        return Answer.of_verdict(graded.verdict, graded.envelope).to_json()
