"""The answer of `assay serve`'s native routes (`POST /v1/grade`, `POST /v1/grade/batch`) on
the wire: its status values, its fields, the reward rule and a strict reader, written once for
the server that writes it and every client that reads it (`assay.integrations.rewards`, and
through it verl's and TRL's reward functions). Pure: nothing here does I/O.

An answer is a JSON object with exactly the fields `FIELDS`:

- `status`: "passed" or "failed" (a verdict exists), "invalid" (the request cannot be graded
  as asked: an unknown task, a row that is no test set, a language the task does not take) or
  "infra_error" (no verdict could be made: the engine failed, the item timed out in the queue);
- `score`: the verdict's score, the fraction of the tests passed; null without a verdict;
- `reward`: what a trainer learns from, `reward_of(passed, score)`; null without a verdict;
- `tamper`: the verdict's tamper signals, the reason codes of the tamper family
  (`assay.reason_family`): [] for an honest verdict and without a verdict. A subset of
  `reason_codes`, never on a passed answer. A trainer that wants to punish tampering more
  than a wrong answer reads it (`assay.integrations.rewards`' `tamper_reward`); `reward`
  itself stays the rule's;
- `reason_codes`: the verdict's reason codes, [] without a verdict;
- `grading_id`, `verdict` (the verdict as JSON), `envelope` (the signed verdict, DSSE JSON):
  null without a verdict;
- `error`: why there is no verdict; null with one.

The batch route answers `{"results": [answer, ...]}`, one answer per request, in order. A
reader refuses anything else (`assay.errors.AnswerError`), so an answer that contradicts
itself can never be read as a score.

An answer of a server older than `tamper` lacks the field: it is read, with the verdict
object's own `tamper` (signed with it; absent from older verdicts, then empty). A `tamper`
that is there but malformed, repeats a code, names a code the reasons lack, differs from the
verdict's, or sits on a passed answer refuses the whole answer: it is never read as empty.

>>> from assay import wire
>>> wire.reward_of(passed=False, score=1.0)  # every test passed, but a limit failed the run
0.0
>>> raw = (b'{"status": "infra_error", "score": null, "reward": null, "tamper": [],'
...        b' "reason_codes": [], "grading_id": null, "verdict": null, "envelope": null,'
...        b' "error": "engine:gone"}')
>>> answer = wire.read_answer(raw)
>>> answer.status, answer.reward, answer.tamper, answer.error
('infra_error', None, (), 'engine:gone')
>>> wire.read_answer(raw.replace(b'"reward": null', b'"reward": 0.0'))
Traceback (most recent call last):
  ...
assay.errors.AnswerError: an infra_error answer carries a verdict's fields
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from assay._internal.model.strict_json import StrictJSONError, exact_fields, loads_strict, shown
from assay._internal.model.verdict import (
    MAX_REASONS,
    ReasonCode,
    Token,
    Verdict,
    is_failing_reason,
)
from assay.errors import AnswerError

__all__ = [
    "FIELDS",
    "MAX_ANSWER_BYTES",
    "STATUSES",
    "Answer",
    "Status",
    "parse_answer",
    "read_answer",
    "read_results",
    "reward_of",
]

Status = Literal["passed", "failed", "invalid", "infra_error"]
STATUSES: Final[tuple[Status, ...]] = ("passed", "failed", "invalid", "infra_error")
FIELDS: Final = (
    "status", "score", "reward", "tamper", "reason_codes", "grading_id", "verdict", "envelope",
    "error",
)  # fmt: skip
"""The fields of every answer, in the order the server writes them. A reader also takes an
answer without `tamper` (a server older than it)."""
_ALL: Final = frozenset(FIELDS)
_BEFORE_TAMPER: Final = _ALL - {"tamper"}

MAX_ANSWER_BYTES: Final = 64 << 20
"""The default cap on an answer's bytes: a batch of 1,024 verdicts with their envelopes."""

_VERDICT_FIELDS: Final = ("score", "reward", "grading_id", "verdict", "envelope")
# The verdict's own types, so that the wire accepts exactly the codes and ids a verdict may hold.
_STRICT = ConfigDict(strict=True)
_REASON_CODES: TypeAdapter[list[str]] = TypeAdapter(
    Annotated[list[ReasonCode], Field(max_length=MAX_REASONS)], config=_STRICT
)
_GRADING_ID: TypeAdapter[str] = TypeAdapter(Token, config=_STRICT)


def reward_of(passed: bool, score: float) -> float:
    """The reward of a verdict: its score, except that a failed verdict never rewards 1.0
    (every test passed, but a limit or a security rule failed the run, and a trainer must not
    learn that as a success)."""
    return score if passed or score < 1.0 else 0.0


@dataclass(frozen=True)
class Answer:
    """One grading's answer, as the fields above say. Make one with `of_verdict` or
    `no_verdict` (the server), or read one with `read_answer`/`parse_answer` (a client)."""

    status: Status
    score: float | None
    reward: float | None
    reason_codes: tuple[str, ...]
    grading_id: str | None
    verdict: dict[str, Any] | None
    envelope: str | None
    error: str | None
    tamper: tuple[str, ...] = ()
    """The verdict's tamper signals (a subset of `reason_codes`); () for an honest verdict and
    without a verdict. Last, so that an `Answer` made by position before it still is one."""

    @property
    def has_verdict(self) -> bool:
        """True for "passed" and "failed": `score` and `reward` are numbers."""
        return self.status in ("passed", "failed")

    @classmethod
    def of_verdict(cls, verdict: Verdict, envelope: bytes) -> Answer:
        """The answer for a verdict and its signed envelope."""
        return cls(
            status="passed" if verdict.passed else "failed",
            score=verdict.score,
            reward=reward_of(verdict.passed, verdict.score),
            reason_codes=tuple(verdict.reason_codes),
            grading_id=verdict.grading_id,
            verdict=verdict.model_dump(mode="json"),
            envelope=envelope.decode(),
            error=None,
            tamper=tuple(verdict.tamper),
        )

    @classmethod
    def no_verdict(cls, status: Literal["invalid", "infra_error"], error: str) -> Answer:
        """The answer when no verdict exists: `score` and `reward` are null, so it can never be
        read as a wrong answer."""
        if status not in ("invalid", "infra_error"):
            raise ValueError(f"a status without a verdict is invalid or infra_error: {status}")
        return cls(status, None, None, (), None, None, None, error or "no reason given")

    def to_json(self) -> dict[str, Any]:
        """The answer as the JSON object the server sends (`FIELDS`, in order)."""
        return {
            "status": self.status,
            "score": self.score,
            "reward": self.reward,
            "tamper": list(self.tamper),
            "reason_codes": list(self.reason_codes),
            "grading_id": self.grading_id,
            "verdict": self.verdict,
            "envelope": self.envelope,
            "error": self.error,
        }


def read_answer(raw: bytes, *, max_bytes: int = MAX_ANSWER_BYTES) -> Answer:
    """The answer of `POST /v1/grade` in `raw` (strict JSON: UTF-8, no duplicate keys, no
    NaN, bounded nesting and size). Raises `AnswerError` for anything else."""
    return parse_answer(_loads(raw, max_bytes))


def read_results(
    raw: bytes, count: int, *, max_bytes: int = MAX_ANSWER_BYTES
) -> list[Answer | AnswerError]:
    """The `count` answers of `POST /v1/grade/batch` in `raw`, in order. Raises `AnswerError`
    when the whole cannot be read (not JSON, not `{"results": [...]}`, another count); an item
    that cannot be read is its `AnswerError` at its place, so one bad item spoils no other."""
    found = _loads(raw, max_bytes)
    try:
        results = exact_fields(found, frozenset({"results"}), "the batch answer")["results"]
    except StrictJSONError as exc:
        raise AnswerError(str(exc)) from None
    if not isinstance(results, list):
        raise AnswerError('the batch answer is not {"results": [...]}')
    if len(results) != count:
        raise AnswerError(f"{len(results)} results for {count} requests")
    out: list[Answer | AnswerError] = []
    for item in results:
        try:
            out.append(parse_answer(item))
        except AnswerError as exc:
            out.append(exc)
    return out


def parse_answer(obj: object) -> Answer:
    """An answer from JSON already parsed (a strict reader's output): exactly `FIELDS` (or all
    but `tamper`: an older server), each of its type, and nothing that contradicts the rest (a
    reward other than `reward_of` of the score, "passed" below 1.0 or with a failing reason,
    tamper signals not among the failing reasons, a verdict whose own fields differ).
    Raises `AnswerError` naming the first problem."""
    expected = _ALL if isinstance(obj, dict) and "tamper" in obj else _BEFORE_TAMPER
    try:
        fields = exact_fields(obj, expected, "an answer")
    except StrictJSONError as exc:
        raise AnswerError(str(exc)) from None
    status = fields["status"]
    if not isinstance(status, str) or status not in STATUSES:
        raise AnswerError(f"unknown status {shown(repr(status), 40)}")
    error = fields["error"]
    if error is not None and not isinstance(error, str):
        raise AnswerError("error is not a string")
    if status == "invalid" or status == "infra_error":
        if (
            any(fields[k] is not None for k in _VERDICT_FIELDS)
            or fields["reason_codes"] != []
            or fields.get("tamper", []) != []
        ):
            raise AnswerError(f"an {status} answer carries a verdict's fields")
        if not error:
            raise AnswerError(f"an {status} answer without an error")
        return Answer(status, None, None, (), None, None, None, error)
    passed = status == "passed"
    if error is not None:
        raise AnswerError("an error with a verdict")
    score = _fraction(fields["score"], "score")
    reward = _fraction(fields["reward"], "reward")
    if passed and score != 1.0:
        raise AnswerError(f"passed with a score of {score}")
    if reward != reward_of(passed, score):
        raise AnswerError(
            f"reward {reward} contradicts a {status} verdict's score {score} "
            f"(the rule gives {reward_of(passed, score)})"
        )
    codes = _reason_codes(fields["reason_codes"])
    if passed and any(is_failing_reason(c) for c in codes):
        raise AnswerError("passed with a failing reason code")
    try:
        grading_id = _GRADING_ID.validate_python(fields["grading_id"])
    except ValidationError:
        raise AnswerError("grading_id is not a grading id") from None
    verdict, envelope = fields["verdict"], fields["envelope"]
    if not isinstance(verdict, dict):
        raise AnswerError("verdict is not an object")
    if not isinstance(envelope, str) or not envelope:
        raise AnswerError("envelope is not a string")
    said = (verdict.get("passed"), verdict.get("score"), verdict.get("reason_codes"),
            verdict.get("grading_id"))  # fmt: skip
    if said[0] is not passed or _number(said[1]) != score or said[2:] != (list(codes), grading_id):
        raise AnswerError("the verdict differs from the answer's status, score or reasons")
    # A verdict signed before the field existed has none: it then names no tamper signal.
    signed_tamper = verdict.get("tamper", [])
    tamper = _tamper(fields.get("tamper", signed_tamper), codes)
    if list(tamper) != signed_tamper:
        raise AnswerError("tamper differs from the verdict's")
    # (A passed answer has no failing reason, so no tamper signal either: `_tamper` refused it.)
    return Answer(status, score, reward, codes, grading_id, verdict, envelope, None, tamper)


def _loads(raw: bytes, max_bytes: int) -> Any:
    try:
        return loads_strict(raw, max_bytes=max_bytes)
    except StrictJSONError as exc:
        raise AnswerError(f"not the JSON of an answer: {exc}") from None


def _number(value: object) -> float | None:
    # bool is an int to Python, and a JSON `true` is no score.
    if type(value) not in (int, float):
        return None
    assert isinstance(value, int | float)
    return float(value)


def _fraction(value: object, name: str) -> float:
    number = _number(value)
    if number is None or not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise AnswerError(f"{name} is not a number in [0, 1]")
    return number


def _reason_codes(value: object) -> tuple[str, ...]:
    try:
        codes = _REASON_CODES.validate_python(value)
    except ValidationError:
        raise AnswerError("reason_codes are not a list of reason codes") from None
    if len(set(codes)) != len(codes):
        raise AnswerError("reason_codes repeat a code")
    return tuple(codes)


def _tamper(value: object, reasons: tuple[str, ...]) -> tuple[str, ...]:
    try:
        codes = _REASON_CODES.validate_python(value)
    except ValidationError:
        raise AnswerError("tamper is not a list of reason codes") from None
    if len(set(codes)) != len(codes):
        raise AnswerError("tamper repeats a code")
    if not set(codes) <= set(reasons) or not all(is_failing_reason(c) for c in codes):
        raise AnswerError("tamper names a code that is not among the failing reasons")
    return tuple(codes)
