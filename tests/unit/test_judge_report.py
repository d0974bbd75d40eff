from __future__ import annotations

import json

import pytest
from helpers.verdicts import facts
from hypothesis import given, settings
from hypothesis import strategies as st

from assay._internal.model.diagnostics import printable
from assay._internal.tiers.strict.judge_report import (
    INVALID_OUTPUT,
    JudgeReportError,
    parse_judge_report,
    verdict_from_judge,
)

GOOD = b'{"cases": [{"id": "c1", "status": "pass", "duration_s": 0.012}, {"id": "c2", "status": "pass", "duration_s": 0.5}]}'


def _report(**top: object) -> bytes:
    body = {"cases": [{"id": "c1", "status": "pass", "duration_s": 0.01}], **top}
    return json.dumps(body).encode()


def test_valid_report_parses() -> None:
    report = parse_judge_report(GOOD)
    assert [(c.id, c.status, c.duration_s) for c in report.cases] == [
        ("c1", "pass", 0.012),
        ("c2", "pass", 0.5),
    ]
    assert report.reasons == []


def test_valid_report_with_reasons_parses() -> None:
    report = parse_judge_report(_report(reasons=["compare:mismatch"]))
    assert report.reasons == ["compare:mismatch"]


def test_valid_report_becomes_a_pass_through_the_controller() -> None:
    v = verdict_from_judge(facts(), GOOD, expected_case_count=2).verdict
    assert (v.passed, v.score) == (True, 1.0)


def test_judge_reasons_fail_the_verdict() -> None:
    v = verdict_from_judge(
        facts(), _report(reasons=["compare:mismatch"]), expected_case_count=1
    ).verdict
    assert v.passed is False
    assert v.reason_codes == ["compare:mismatch"]


def test_fewer_cases_than_the_task_declares_fail() -> None:
    v = verdict_from_judge(facts(), GOOD, expected_case_count=3).verdict
    assert v.passed is False
    assert "cases:count-mismatch" in v.reason_codes


BAD: list[tuple[str, bytes, str, str]] = [
    ("empty", b"", "not-json", "not JSON"),
    ("truncated", GOOD[:-7], "not-json", "not JSON"),
    ("text", b"all tests passed", "not-json", "not JSON"),
    ("bom", b"\xef\xbb\xbf" + GOOD, "not-json", "byte-order mark"),
    ("latin1", b'{"cases": [], "reasons": ["x:\xe9"]}', "not-utf8", "UTF-8"),
    (
        "surrogate",
        b'{"cases": [{"id": "\xed\xa0\x80", "status": "pass", "duration_s": 0}]}',
        "not-utf8",
        "UTF-8",
    ),
    (
        "dup-top",
        b'{"cases": [], "cases": [{"id": "c1", "status": "pass", "duration_s": 0}]}',
        "duplicate-key",
        "duplicate key 'cases'",
    ),
    (
        "dup-case",
        b'{"cases": [{"id": "c1", "status": "fail", "status": "pass", "duration_s": 0}]}',
        "duplicate-key",
        "duplicate key 'status'",
    ),
    (
        "nan",
        b'{"cases": [{"id": "c1", "status": "pass", "duration_s": NaN}]}',
        "non-finite-number",
        "NaN",
    ),
    (
        "inf",
        b'{"cases": [{"id": "c1", "status": "pass", "duration_s": Infinity}]}',
        "non-finite-number",
        "Infinity",
    ),
    (
        "-inf",
        b'{"cases": [{"id": "c1", "status": "pass", "duration_s": -Infinity}]}',
        "non-finite-number",
        "-Infinity",
    ),
    (
        "overflow",
        b'{"cases": [{"id": "c1", "status": "pass", "duration_s": 1e999}]}',
        "non-finite-number",
        "overflows",
    ),
    ("deep", b'{"cases": [], "reasons": ' + b"[" * 50 + b"]" * 50 + b"}", "too-deep", "depth"),
    ("very-deep", b"[" * 200_000 + b"]" * 200_000, "too-deep", "depth"),
    (
        "huge-int",
        b'{"cases": [{"id": "c1", "status": "pass", "duration_s": 1' + b"0" * 5000 + b"}]}",
        "not-json",
        "digits",
    ),
    ("array", b"[]", "schema", "JSON object"),
    ("missing-cases", b'{"reasons": []}', "schema", "cases"),
    ("extra-top", _report(verdict="pass"), "schema", "verdict"),
    (
        "extra-case",
        b'{"cases": [{"id": "c1", "status": "fail", "duration_s": 0, "expected": 4}]}',
        "schema",
        "expected",
    ),
    (
        "status",
        b'{"cases": [{"id": "c1", "status": "passed", "duration_s": 0}]}',
        "schema",
        "status",
    ),
    (
        "negative",
        b'{"cases": [{"id": "c1", "status": "pass", "duration_s": -1}]}',
        "schema",
        "duration_s",
    ),
    (
        "string-num",
        b'{"cases": [{"id": "c1", "status": "pass", "duration_s": "0.1"}]}',
        "schema",
        "duration_s",
    ),
    (
        "bool-num",
        b'{"cases": [{"id": "c1", "status": "pass", "duration_s": true}]}',
        "schema",
        "duration_s",
    ),
    ("int-id", b'{"cases": [{"id": 1, "status": "pass", "duration_s": 0}]}', "schema", "id"),
    (
        "ansi-id",
        b'{"cases": [{"id": "\\u001b[2J", "status": "pass", "duration_s": 0}]}',
        "schema",
        "id",
    ),
    ("bad-reason", _report(reasons=["ALL GOOD"]), "schema", "reasons"),
    ("null-cases", b'{"cases": null}', "schema", "cases"),
]


@pytest.mark.parametrize(("raw", "detail", "match"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_report_is_rejected_specifically(raw: bytes, detail: str, match: str) -> None:
    with pytest.raises(JudgeReportError, match=match) as info:
        parse_judge_report(raw)
    assert info.value.detail == detail
    v = verdict_from_judge(facts(), raw, expected_case_count=1).verdict
    assert (v.passed, v.score) == (False, 0.0)
    assert v.reason_codes[:2] == [INVALID_OUTPUT, f"judge:{detail}"]


@pytest.mark.parametrize(
    "field",
    [
        "passed",
        "score",
        "tier",
        "submission_digest",
        "timings",
        "image_digests",
        "task_digest",
        "grading_id",
        "runtime",
        "assay_version",
        "expected_case_count",
        "started_at",
    ],
)
def test_judge_cannot_set_controller_owned_fields(field: str) -> None:
    raw = _report(**{field: "x"})
    with pytest.raises(JudgeReportError, match=f"controller-owned field.*{field}") as info:
        parse_judge_report(raw)
    assert info.value.detail == "controller-field"
    assert verdict_from_judge(facts(), raw, 1).verdict.passed is False


def test_byte_cap_applies_before_any_decoding() -> None:
    raw = GOOD + b" " * 100
    assert parse_judge_report(raw, max_bytes=len(raw)).cases
    with pytest.raises(JudgeReportError, match="exceeds the cap") as info:
        parse_judge_report(b"\xff" * 101, max_bytes=100)
    assert info.value.detail == "oversize"


def test_default_cap_is_one_mebibyte() -> None:
    padded = GOOD[:-1] + b" " * ((1 << 20) - len(GOOD)) + b"}"
    assert len(padded) == 1 << 20
    assert parse_judge_report(padded).cases
    with pytest.raises(JudgeReportError, match="exceeds"):
        parse_judge_report(padded + b" ")


def test_non_bytes_input_is_rejected() -> None:
    with pytest.raises(JudgeReportError, match="expected bytes"):
        parse_judge_report("{}")  # type: ignore[arg-type]


@settings(max_examples=300)
@given(data=st.data())
def test_mutated_reports_never_raise_out_of_the_controller(data: st.DataObject) -> None:
    raw = bytearray(GOOD)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    v = verdict_from_judge(facts(), bytes(raw), expected_case_count=2).verdict
    if v.passed:
        # Only a mutation that still yields two distinct passing cases may pass.
        report = parse_judge_report(bytes(raw))
        assert len({c.id for c in report.cases}) == 2
        assert all(c.status == "pass" for c in report.cases)


@given(st.binary(max_size=256))
def test_arbitrary_bytes_never_raise_out_of_the_controller(raw: bytes) -> None:
    v = verdict_from_judge(facts(), raw, expected_case_count=1).verdict
    assert v.passed is False


def test_hostile_key_names_are_escaped_in_messages() -> None:
    evil = b'{"cases": [], "\\u001b]0;owned\\u0007": 1}'
    with pytest.raises(JudgeReportError) as info:
        parse_judge_report(evil)
    assert "\x1b" not in str(info.value) and "\x07" not in str(info.value)
    assert "\\x1b" in str(info.value)
    dup = b'{"cases": [], "\\u202e": 1, "\\u202e": 2}'
    with pytest.raises(JudgeReportError, match=r"duplicate key '\\u202e'"):
        parse_judge_report(dup)


# -- diagnostics: returned beside the verdict, never able to change it ------------------------------

FAILED = [{"id": "c1", "status": "fail", "duration_s": 0.01}]
DIAG = {"id": "c1", "reason": "compare:mismatch", "expected": "4\n", "actual": "<b>5\n"}


def test_diagnostics_are_returned_for_the_owner_under_the_grading_id() -> None:
    raw = json.dumps({"cases": FAILED, "reasons": ["compare:mismatch"], "diagnostics": [DIAG]})
    judged = verdict_from_judge(facts(grading_id="g-diag-kept"), raw.encode(), 1)
    v, kept = judged.verdict, judged.diagnostics
    assert not v.passed and v.reason_codes == ["compare:mismatch"]
    assert "diagnostics" not in v.model_dump() and "<b>5" not in v.model_dump_json()
    assert kept is not None and kept.grading_id == "g-diag-kept"
    assert kept.cases[0].actual == "<b>5\n"


@pytest.mark.parametrize(
    "bad",
    [
        [{**DIAG, "actual": "x" * 5000}],  # over the cap
        [{**DIAG, "extra": 1}],  # a field the schema does not have
        [DIAG] * 21,  # too many
        [{**DIAG, "reason": "Not A Code\x1b[2J"}],
        "not a list",
    ],
)
def test_bad_diagnostics_are_dropped_and_the_verdict_stands(bad: object) -> None:
    raw = json.dumps({"cases": FAILED, "reasons": ["compare:mismatch"], "diagnostics": bad})
    judged = verdict_from_judge(facts(grading_id="g-diag-bad"), raw.encode(), 1)
    v = judged.verdict
    assert v.reason_codes == ["compare:mismatch"] and INVALID_OUTPUT not in v.reason_codes
    assert judged.diagnostics is None


def test_printable_escapes_what_could_steer_a_terminal() -> None:
    shown = printable("a\x1b[2J\u202eb\u2066c\x07\r\nd")
    assert shown == "a\\u001b[2J\\u202eb\\u2066c\\u0007\\u000d\nd"
