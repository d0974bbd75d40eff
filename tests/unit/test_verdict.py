from __future__ import annotations

import importlib.util
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from helpers.verdicts import SUBMISSION, cases, facts, verdict
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from assay._internal.batch.run import reasons_and_notes
from assay._internal.model.verdict import (
    CaseResult,
    Verdict,
    build_verdict,
    error_verdict,
)
from assay._internal.signing.sign import (
    PAYLOAD_TYPE,
    sign_payload,
    statement_for,
    subject_for,
    verify_envelope,
)

ROOT = Path(__file__).resolve().parents[2]


def _dump(**changes: Any) -> dict[str, Any]:
    data = verdict().model_dump(mode="json")
    data.update(changes)
    return data


# --- build_verdict: the only way a pass is made -------------------------------------------


def test_all_cases_pass_is_a_pass() -> None:
    v = verdict(("pass", "pass", "pass"))
    assert v.passed is True
    assert v.score == 1.0
    assert v.reason_codes == []
    assert v.submission_digest == SUBMISSION
    assert v.started_at == "2026-11-05T14:03:07.125000Z"
    assert v.ended_at == "2026-11-05T14:03:11.375000Z"


@pytest.mark.parametrize("bad", ["fail", "error", "timeout", "limit"])
def test_any_non_pass_status_fails(bad: str) -> None:
    v = verdict(("pass", bad, "pass", "pass"))
    assert v.passed is False
    assert v.score == 0.75


def test_zero_expected_cases_never_passes() -> None:
    v = build_verdict(facts(), [], 0)
    assert (v.passed, v.score) == (False, 0.0)
    assert "cases:none-expected" in v.reason_codes


def test_missing_cases_fail_and_count_against_the_score() -> None:
    v = build_verdict(facts(), cases("pass", "pass"), 4)
    assert v.passed is False
    assert v.score == 0.5
    assert "cases:count-mismatch" in v.reason_codes


def test_surplus_cases_fail_and_cannot_lift_score_above_one() -> None:
    v = build_verdict(facts(), cases("pass", "pass", "pass"), 2)
    assert v.passed is False
    assert v.score == 1.0
    assert "cases:count-mismatch" in v.reason_codes


def test_duplicate_case_ids_fail_and_count_once() -> None:
    dup = [CaseResult(id="c1", status="pass", duration_s=0.0)] * 2
    v = build_verdict(facts(), dup, 2)
    assert v.passed is False
    assert v.score == 0.5
    assert "cases:duplicate-id" in v.reason_codes


def test_a_case_reported_both_pass_and_fail_counts_as_failed() -> None:
    mixed = [
        CaseResult(id="c1", status="pass", duration_s=0.0),
        CaseResult(id="c1", status="fail", duration_s=0.0),
    ]
    assert build_verdict(facts(), mixed, 1).score == 0.0


@pytest.mark.parametrize("code", ["firewall:link", "limit:memory", "junit:count-mismatch"])
def test_controller_reason_fails_even_when_every_case_passed(code: str) -> None:
    v = build_verdict(facts(reason_codes=[code]), cases("pass", "pass"), 2)
    assert v.passed is False
    assert v.score == 1.0
    assert v.reason_codes == [code]


def test_extra_reason_fails_even_when_every_case_passed() -> None:
    v = build_verdict(facts(), cases("pass"), 1, ["compare:mismatch"])
    assert v.passed is False
    assert v.reason_codes == ["compare:mismatch"]


def test_informational_reason_does_not_fail() -> None:
    v = build_verdict(facts(reason_codes=["note:key-created"]), cases("pass"), 1)
    assert v.passed is True


def test_notes_are_kept_apart_from_the_reasons_that_explain_a_failure() -> None:
    v = build_verdict(
        facts(reason_codes=["note:judge-reused"]), cases("fail"), 1, ["compare:mismatch"]
    )
    assert (v.passed, v.reason_codes, v.notes) == (
        False,
        ["compare:mismatch"],
        ["note:judge-reused"],
    )
    ok = build_verdict(facts(), cases("pass"), 1, ["note:judge-reused"])
    assert (ok.passed, ok.reason_codes, ok.notes) == (True, [], ["note:judge-reused"])


def test_a_verdict_signed_before_notes_had_their_field_still_verifies() -> None:
    """Such a verdict has no `notes` and its note among the reason codes; verify() accepts it
    and the batch summary still lists the note apart from the failure reasons."""
    legacy = _dump(cases=[{"id": "c1", "status": "fail", "duration_s": 0.0}], passed=False,
                   score=0.0, expected_case_count=1,
                   reason_codes=["note:judge-reused", "compare:mismatch"])  # fmt: skip
    del legacy["notes"]
    statement = {**statement_for(verdict()), "predicate": legacy}
    statement["subject"] = [subject_for(Verdict.model_validate(legacy))]
    key = Ed25519PrivateKey.generate()
    env = sign_payload(json.dumps(statement).encode(), PAYLOAD_TYPE, key)
    v = verify_envelope(env, key.public_key())
    assert v.notes == [] and v.reason_codes == ["note:judge-reused", "compare:mismatch"]
    assert reasons_and_notes(v) == (("compare:mismatch",), ("note:judge-reused",))


def test_tamper_lists_the_tamper_family_of_the_reasons_and_a_wrong_answer_has_none() -> None:
    tried = build_verdict(facts(reason_codes=["policy:conftest"]), cases("fail"), 1,
                          ["junit:failure"])  # fmt: skip
    assert (tried.passed, tried.tamper) == (False, ["policy:conftest"])
    wrong = build_verdict(facts(), cases("fail"), 1, ["compare:mismatch"])
    assert wrong.tamper == []
    assert error_verdict(facts(), "firewall:link").tamper == ["firewall:link"]


def test_a_report_cut_short_by_a_limit_is_not_tampering() -> None:
    """An honest slow program killed at its limit leaves no report; that is not an attempt."""
    killed = build_verdict(facts(), cases("fail"), 1, ["limit:time", "pytest:exit-code"])
    assert killed.tamper == []
    forged = build_verdict(facts(), cases("fail"), 1, ["pytest:exit-code"])
    assert forged.tamper == ["pytest:exit-code"]


def test_a_verdict_signed_before_tamper_existed_still_verifies() -> None:
    legacy = _dump(cases=[{"id": "c1", "status": "fail", "duration_s": 0.0}], passed=False,
                   score=0.0, expected_case_count=1, reason_codes=["policy:conftest"])  # fmt: skip
    del legacy["tamper"]
    statement = {**statement_for(verdict()), "predicate": legacy}
    statement["subject"] = [subject_for(Verdict.model_validate(legacy))]
    key = Ed25519PrivateKey.generate()
    env = sign_payload(json.dumps(statement).encode(), PAYLOAD_TYPE, key)
    assert verify_envelope(env, key.public_key()).tamper == []


def test_notes_hold_only_the_note_namespace() -> None:
    with pytest.raises(ValidationError, match="pattern"):
        Verdict.model_validate(_dump(notes=["compare:mismatch"]))


def test_reasons_are_deduplicated_in_order() -> None:
    v = build_verdict(facts(reason_codes=["a:x", "b:y"]), cases("pass"), 1, ["b:y", "c:z"])
    assert v.reason_codes == ["a:x", "b:y", "c:z"]


def test_error_verdict_is_a_zero_score_failure() -> None:
    v = error_verdict(facts(submission_digest=None), "firewall:link")
    assert (v.passed, v.score, v.cases) == (False, 0.0, [])
    assert v.reason_codes == ["firewall:link"]
    assert v.submission_digest is None


def test_error_verdict_refuses_an_informational_reason() -> None:
    with pytest.raises(ValueError, match="informational"):
        error_verdict(facts(), "note:fine")


def test_facts_reject_naive_timestamps() -> None:
    with pytest.raises(ValidationError, match="timezone-aware"):
        facts(started_at=datetime(2026, 1, 1))


# --- the model refuses verdicts that contradict themselves or the schema ------------------


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"passed": False}, "contradicts"),
        ({"score": 0.5}, "score contradicts"),
        ({"cases": _dump()["cases"][:2]}, "contradicts"),
        ({"expected_case_count": 0}, "contradicts"),
        ({"reason_codes": ["firewall:link"]}, "contradicts"),
        ({"reason_codes": ["note:a", "note:a"]}, "duplicates"),
        ({"notes": ["note:a", "note:a"]}, "duplicates"),
        ({"tamper": ["policy:conftest"]}, "not among the reason codes"),
        ({"ended_at": "2026-11-05T14:03:07.000000Z"}, "before"),
        ({"started_at": "2026-13-45T14:03:07Z"}, "month"),
        ({"started_at": "2026-11-05T14:03:07+00:00"}, "pattern"),
        ({"score": "1.0"}, "valid number"),
        ({"passed": 1}, "valid boolean"),
        ({"score": float("nan")}, "finite"),
        ({"tier": "t9"}, "t0"),
        ({"submission_digest": "sha256:XYZ"}, "pattern"),
        ({"task_digest": "md5:" + "0" * 32}, "pattern"),
        ({"schema_version": "assay.verdict/v2"}, "assay.verdict/v1"),
        ({"grading_id": "g\x1b[2J"}, "pattern"),
        ({"image_digests": {"judge": "latest"}}, "pattern"),
        ({"timings": {"judge": -1.0}}, "greater than or equal"),
        ({"rogue": 1}, "Extra inputs"),
    ],
)
def test_model_rejects(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        Verdict.model_validate(_dump(**changes))


def test_model_rejects_a_missing_field() -> None:
    data = _dump()
    del data["runtime"]
    with pytest.raises(ValidationError, match="runtime"):
        Verdict.model_validate(data)


def test_case_result_carries_no_expected_values() -> None:
    # `checker` and `reason` are names (a checker, a reason code), too narrow to carry output.
    assert set(CaseResult.model_fields) == {"id", "status", "duration_s", "checker", "reason"}
    with pytest.raises(ValidationError, match="Extra inputs"):
        CaseResult.model_validate({"id": "c", "status": "fail", "duration_s": 0, "expected": 4})
    for field, value in (("checker", "3 1 2"), ("checker", "x" * 33), ("reason", "42")):
        with pytest.raises(ValidationError):
            CaseResult.model_validate({"id": "c", "status": "fail", "duration_s": 0, field: value})


def test_a_case_without_a_checker_serialises_as_it_always_did() -> None:
    plain = CaseResult(id="c", status="pass", duration_s=0.5)
    assert plain.model_dump(mode="json") == {"id": "c", "status": "pass", "duration_s": 0.5}
    checked = CaseResult(id="c", status="fail", duration_s=0.5, checker="numbers",
                         reason="compare:wrong-answer")  # fmt: skip
    assert checked.model_dump(mode="json")["checker"] == "numbers"


def test_case_id_with_terminal_escape_is_rejected() -> None:
    with pytest.raises(ValidationError):
        CaseResult(id="c1\x1b]0;pwned\x07", status="pass", duration_s=0.0)


def test_verdict_is_frozen() -> None:
    v = verdict()
    with pytest.raises(ValidationError):
        v.passed = False


def test_round_trips_through_json() -> None:
    v = verdict(("pass", "fail"))
    assert Verdict.model_validate(json.loads(v.model_dump_json())) == v


def test_model_rejects_a_pass_with_fewer_cases_than_expected() -> None:
    # The score agrees with the two cases present, so only the case count can refuse this pass.
    two = _dump()["cases"][:2]
    with pytest.raises(ValidationError, match="passed=True contradicts"):
        Verdict.model_validate(_dump(cases=two, score=2 / 3))


@given(
    statuses=st.lists(st.sampled_from(["pass", "fail", "error", "timeout", "limit"]), max_size=8),
    expected=st.integers(min_value=-2, max_value=10),
    duplicate=st.booleans(),
    reasons=st.lists(st.sampled_from(["note:x", "limit:memory", "compare:mismatch"]), max_size=2),
)
def test_pass_implies_every_condition(
    statuses: list[str], expected: int, duplicate: bool, reasons: list[str]
) -> None:
    results = cases(*statuses)
    if duplicate and results:
        results.append(results[0])
    v = build_verdict(facts(), results, expected, reasons)
    assert 0.0 <= v.score <= 1.0
    honest = (
        expected > 0
        and len(results) == expected
        and len({c.id for c in results}) == len(results)
        and all(c.status == "pass" for c in results)
        and all(r.startswith("note:") for r in reasons)
    )
    assert v.passed is honest
    assert Verdict.model_validate(v.model_dump(mode="json")) == v


# --- the committed JSON Schema matches the model ------------------------------------------


def _gen_schema() -> Any:
    spec = importlib.util.spec_from_file_location("gen_schema", ROOT / "scripts" / "gen_schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_schema_is_in_sync_with_the_model() -> None:
    committed = (ROOT / "docs" / "schema" / "verdict.v1.json").read_text(encoding="utf-8")
    assert committed == _gen_schema().render(), "run: python scripts/gen_schema.py"


def test_schema_check_detects_drift(tmp_path: Path) -> None:
    gen = _gen_schema()
    stale = tmp_path / "verdict.v1.json"
    stale.write_text(gen.render().replace('"passed"', '"passed_"', 1), encoding="utf-8")
    assert gen.main(["--check", "--path", str(stale)]) == 1
    assert gen.main(["--path", str(stale)]) == 0
    assert gen.main(["--check", "--path", str(stale)]) == 0


def test_schema_forbids_extra_fields_and_requires_every_field() -> None:
    schema = json.loads((ROOT / "docs" / "schema" / "verdict.v1.json").read_text())
    assert schema["additionalProperties"] is False
    # `notes` and `tamper` may be absent: verdicts signed before they existed still verify.
    assert set(schema["required"]) == set(Verdict.model_fields) - {"notes", "tamper"}
    assert schema["$defs"]["CaseResult"]["additionalProperties"] is False
