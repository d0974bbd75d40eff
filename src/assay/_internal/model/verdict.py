"""The verdict: what a grading concluded, in a form that can be signed and checked by anyone.

The judge only ever contributes per-case results (and optional reason codes); every other field
is the controller's, which is why `build_verdict` takes them from `ControllerFacts` and never from
judge output. The model re-derives `passed` and `score` from the cases on every validation, so a
verdict whose headline disagrees with its own cases cannot be constructed, signed, or verified.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from assay._internal.model.families import tamper_codes
from assay._version import __version__

SCHEMA_VERSION: Final = "assay.verdict/v1"
MAX_CASES = 100_000
MAX_REASONS = 64

# Reason codes in this namespace explain without failing; every other code fails the verdict.
# Unknown codes therefore fail closed.
INFORMATIONAL_NAMESPACE = "note"

_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)

# Identifiers end up in terminals and file names: printable ASCII only, so no escape sequences.
Printable = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[\x20-\x7e]+$")]
Token = Annotated[
    str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$")
]
Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
ReasonCode = Annotated[
    str, Field(max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*:[a-z0-9][a-z0-9_.-]*$")
]
NoteCode = Annotated[str, Field(max_length=64, pattern=r"^note:[a-z0-9][a-z0-9_.-]*$")]
"""An informational code: says how a grading ran, never why it failed (kept apart from reasons)."""
PhaseName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Tier = Literal["t0", "t1", "t2", "t3", "harbor"]
TIER_TITLES: dict[Tier, str] = {
    "t0": "naive", "t1": "fresh", "t2": "compat", "t3": "strict", "harbor": "compat-class",
}  # fmt: skip
"""What each tier is, in a word (t0 and t1 are the unsafe baselines)."""
UNSAFE_TIERS: frozenset[Tier] = frozenset({"t0", "t1"})
COMPAT_CLASS_TIERS: frozenset[Tier] = frozenset({"t2", "harbor"})
"""Tiers where candidate code runs beside the tests (docs/compat.md lists what that leaves open)."""
CaseStatus = Literal["pass", "fail", "error", "timeout", "limit"]
CheckerName = Annotated[str, Field(max_length=32, pattern=r"^[a-z][a-z0-9-]*$")]
_OPTIONAL_CASE_FIELDS = frozenset({"checker", "reason"})


def _check_timestamp(value: str) -> str:
    datetime.fromisoformat(value)  # the pattern admits 2026-13-45; this does not
    return value


Timestamp = Annotated[
    str,
    Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$"),
    AfterValidator(_check_timestamp),
]


class CaseResult(BaseModel):
    """One case as the judge saw it. Never carries expected or actual values."""

    model_config = _STRICT

    id: Printable
    status: CaseStatus
    duration_s: Seconds
    checker: CheckerName | None = None
    """The checker that decided this case (`stdio` tasks: "tokens", "numbers", "testlib"...)."""
    reason: ReasonCode | None = None
    """Why this case did not pass (`stdio` tasks), one of the verdict's reason codes."""

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A case of a kind without checkers keeps exactly the fields it always had, so its
        # signed bytes are what they were before these fields existed.
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if v is not None or k not in _OPTIONAL_CASE_FIELDS}


def is_failing_reason(code: str) -> bool:
    return code.partition(":")[0] != INFORMATIONAL_NAMESPACE


def score_of(cases: Sequence[CaseResult], expected_case_count: int) -> float:
    """Fraction of the expected cases that passed; a case id counts once, and only if every
    report of it passed, so duplicates or surplus cases can never raise the score."""
    if expected_case_count <= 0:
        return 0.0
    statuses: dict[str, bool] = {}
    for case in cases:
        statuses[case.id] = statuses.get(case.id, True) and case.status == "pass"
    return min(sum(statuses.values()), expected_case_count) / expected_case_count


def passes(cases: Sequence[CaseResult], expected_case_count: int, reasons: Sequence[str]) -> bool:
    return (
        expected_case_count > 0
        and len(cases) == expected_case_count
        and len({case.id for case in cases}) == len(cases)
        and all(case.status == "pass" for case in cases)
        and not any(is_failing_reason(code) for code in reasons)
    )


Timings = Annotated[dict[PhaseName, Seconds], Field(max_length=32)]
ImageDigests = Annotated[dict[PhaseName, Digest], Field(max_length=16)]


class _Schema(BaseModel):
    model_config = _STRICT

    schema_version: Literal["assay.verdict/v1"]


class GradingIdentity(BaseModel):
    """Which grading of what, where: the fields a verdict takes as the controller knows them."""

    model_config = _STRICT

    grading_id: Token
    task_id: Token
    task_digest: Digest
    tier: Tier
    runtime: Token
    submission_digest: Digest | None


# Pydantic orders fields base by base from the last base to the first, so `schema_version`
# leads a verdict's JSON, then its identity, then its own fields (the signed bytes' order).
class Verdict(GradingIdentity, _Schema):
    """The outcome of one grading: the predicate of the signed in-toto Statement.

    `passed` and `score` must agree with `cases`, `expected_case_count` and `reason_codes`.
    """

    model_config = _STRICT

    passed: bool
    score: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
    expected_case_count: Annotated[int, Field(ge=0, le=MAX_CASES)]
    cases: Annotated[list[CaseResult], Field(max_length=MAX_CASES)]
    reason_codes: Annotated[list[ReasonCode], Field(max_length=MAX_REASONS)]
    # Absent in verdicts signed before notes had their own field (they then sat among the
    # reason codes, which still accept the `note:` namespace so those verdicts still verify).
    notes: Annotated[list[NoteCode], Field(max_length=MAX_REASONS)] = Field(default_factory=list)
    # The reason codes that show an attempt on the grader (docs/verdicts.md, "Families"), so a
    # reader tells a submission that tried from one that was wrong. Absent in verdicts signed
    # before it existed; always a subset of `reason_codes`.
    tamper: Annotated[list[ReasonCode], Field(max_length=MAX_REASONS)] = Field(default_factory=list)
    timings: Timings
    image_digests: ImageDigests
    assay_version: Token
    started_at: Timestamp
    ended_at: Timestamp

    @model_validator(mode="after")
    def _consistent(self) -> Verdict:
        if datetime.fromisoformat(self.ended_at) < datetime.fromisoformat(self.started_at):
            raise ValueError("ended_at is before started_at")
        if len(set(self.reason_codes)) != len(self.reason_codes):
            raise ValueError("reason_codes contains duplicates")
        if len(set(self.notes)) != len(self.notes):
            raise ValueError("notes contains duplicates")
        if len(set(self.tamper)) != len(self.tamper):
            raise ValueError("tamper contains duplicates")
        if not set(self.tamper) <= set(self.reason_codes):
            raise ValueError("tamper names a code that is not among the reason codes")
        derived = passes(self.cases, self.expected_case_count, self.reason_codes)
        if self.passed != derived:
            raise ValueError(f"passed={self.passed} contradicts the cases and reason codes")
        if not math.isclose(
            self.score, score_of(self.cases, self.expected_case_count), abs_tol=1e-9
        ):
            raise ValueError("score contradicts the cases")
        return self


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC)


class ControllerFacts(GradingIdentity):
    """Everything only the controller knows. Judge output never reaches these fields."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    started_at: Annotated[datetime, AfterValidator(_utc)]
    ended_at: Annotated[datetime, AfterValidator(_utc)]
    timings: Timings = Field(default_factory=dict)
    image_digests: ImageDigests = Field(default_factory=dict)
    # Lax here only so callers may pass a list; the items stay strictly validated.
    reason_codes: Annotated[tuple[ReasonCode, ...], Field(strict=False)] = ()
    assay_version: Token = __version__


def iso_utc(moment: datetime) -> str:
    return _utc(moment).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _dedupe(codes: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(codes))


def _assemble(
    facts: ControllerFacts,
    cases: Sequence[CaseResult],
    expected_case_count: int,
    codes: list[str],
) -> Verdict:
    # Informational codes are kept apart: `reason_codes` explains a failure and nothing else.
    reasons = [c for c in codes if is_failing_reason(c)]
    notes = [c for c in codes if not is_failing_reason(c)]
    # Every fact the controller knows goes in as it is; only the times change form.
    known = facts.model_dump(exclude={"reason_codes", "started_at", "ended_at"})
    return Verdict(
        schema_version=SCHEMA_VERSION,
        **known,
        passed=passes(cases, expected_case_count, reasons),
        score=score_of(cases, expected_case_count),
        expected_case_count=expected_case_count,
        cases=list(cases),
        reason_codes=reasons,
        notes=notes,
        tamper=tamper_codes(reasons),
        started_at=iso_utc(facts.started_at),
        ended_at=iso_utc(facts.ended_at),
    )


def build_verdict(
    facts: ControllerFacts,
    cases: Sequence[CaseResult],
    expected_case_count: int,
    extra_reasons: Sequence[str] = (),
) -> Verdict:
    """Combine the controller's facts with the judge's cases. Structural problems with the cases
    become reason codes, so the verdict always states why it did not pass."""
    derived: list[str] = []
    if expected_case_count <= 0:
        derived.append("cases:none-expected")
    elif len(cases) != expected_case_count:
        derived.append("cases:count-mismatch")
    if len({case.id for case in cases}) != len(cases):
        derived.append("cases:duplicate-id")
    reasons = _dedupe([*facts.reason_codes, *extra_reasons, *derived])
    return _assemble(facts, cases, max(expected_case_count, 0), reasons)


def error_verdict(
    facts: ControllerFacts, reason_code: str, extra_reasons: Sequence[str] = ()
) -> Verdict:
    """A verdict for a grading that produced no trustworthy case results: never a pass."""
    if not is_failing_reason(reason_code):
        raise ValueError(f"{reason_code!r} is informational and cannot explain an error")
    reasons = _dedupe([*facts.reason_codes, reason_code, *extra_reasons])
    return _assemble(facts, [], 0, reasons)
