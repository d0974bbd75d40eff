"""Read the judge's report. The judge is trusted code, but it reads candidate output, so its own
output is treated as hostile bytes: bounded, unambiguous JSON with exactly the judge's fields.

`verdict_from_judge` is the entry point the controller uses: it cannot raise on bad judge output
and it cannot return a pass from it. It returns the verdict with the judge's diagnostics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay._internal.model.diagnostics import CaseDiagnostic, Diagnostics, Judged, parse_cases
from assay._internal.model.strict_json import StrictJSONError, loads_strict, shown
from assay._internal.model.verdict import (
    MAX_CASES,
    MAX_REASONS,
    CaseResult,
    ControllerFacts,
    ReasonCode,
    Verdict,
    build_verdict,
    error_verdict,
)
from assay.errors import JudgeReportError

DEFAULT_MAX_BYTES = 1 << 20
MAX_DEPTH = 8  # {"cases": [{...}]} is depth 3; anything much deeper is not a judge report
INVALID_OUTPUT = "judge:invalid-output"

# Fields a judge might try to set to promote itself; naming them makes the rejection legible.
_CONTROLLER_FIELDS = frozenset(Verdict.model_fields) - {"cases", "reason_codes"}


class JudgeReport(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    cases: Annotated[list[CaseResult], Field(max_length=MAX_CASES)]
    reasons: Annotated[list[ReasonCode], Field(max_length=MAX_REASONS)] = Field(
        default_factory=list
    )
    # Not part of the verdict: checked apart (bad ones are dropped) and kept for the owner.
    diagnostics: list[CaseDiagnostic] | None = None


def _describe(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(shown(str(part)) for part in first["loc"]) or "<root>"
    return f"{where}: {first['msg']} ({exc.error_count()} problem(s))"


def parse_judge_report(raw: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> JudgeReport:
    """Parse the judge's stdout, or raise JudgeReportError saying which rule it broke."""
    try:
        data = loads_strict(raw, max_bytes=max_bytes, max_depth=MAX_DEPTH)
    except StrictJSONError as exc:
        raise JudgeReportError(exc.code, str(exc)) from None
    if not isinstance(data, dict):
        raise JudgeReportError("schema", f"expected a JSON object, got {type(data).__name__}")
    if owned := sorted(_CONTROLLER_FIELDS.intersection(data)):
        raise JudgeReportError(
            "controller-field", f"sets controller-owned field(s) {', '.join(owned)}"
        )
    explained = parse_cases(data.pop("diagnostics", None))
    try:
        return JudgeReport.model_validate({**data, "diagnostics": explained})
    except ValidationError as exc:
        raise JudgeReportError("schema", _describe(exc)) from None


def verdict_from_judge(
    facts: ControllerFacts,
    raw: bytes,
    expected_case_count: int,
    extra_reasons: Sequence[str] = (),
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Judged:
    """The verdict for a grading whose judge printed `raw`, and its failed cases explained; an
    invalid report is an error verdict carrying `judge:invalid-output` and the specific rule it
    broke, with nothing explained."""
    try:
        report = parse_judge_report(raw, max_bytes)
    except JudgeReportError as exc:
        first, detail = exc.reason_codes
        return Judged(error_verdict(facts, first, [detail, *extra_reasons]))
    verdict = build_verdict(
        facts, report.cases, expected_case_count, [*report.reasons, *extra_reasons]
    )
    if not report.diagnostics:
        return Judged(verdict)
    return Judged(verdict, Diagnostics(grading_id=facts.grading_id, cases=report.diagnostics))
