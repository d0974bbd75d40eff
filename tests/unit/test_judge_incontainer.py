"""The in-container judge's parser and comparators, run directly (judge.py is stdlib-only).

Each protection here was removed by a mutation audit with every test still green (issue 10,
finding 9); scripts/mutation_gate.py now removes each again and needs these tests to fail.
`compare` is driven through `cmd_compare` itself, with its /state file and the runner's output
in a temp dir, so what is checked is the status the verdict would carry, not a helper.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
from pathlib import Path
from typing import Any

import pytest

from assay._incontainer import judge

ROOT = Path(__file__).resolve().parents[2]
NAN_BLIND = ROOT / "corpus" / "json-nan-comparator" / "nan-blind" / "judge" / "compare.py"
CAP = 1 << 20


# -- exact: bool is not int -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        (1, True),
        (True, 1),
        (0, False),
        (False, 0),
        (1.0, True),
        (True, 1.0),
        ([1, 0], [True, False]),
        ({"ok": 1}, {"ok": True}),
        ([[0]], [[False]]),
    ],
)
def test_exact_keeps_bool_apart_from_numbers(expected: Any, actual: Any) -> None:
    assert expected == actual  # Python's own == would pass these ...
    assert judge.same(expected, actual) is False  # ... the judge must not


@pytest.mark.parametrize(
    ("expected", "actual"),
    [(True, True), (False, False), (7, 7), ([1, True], [1, True]), ({"a": [0.5]}, {"a": [0.5]})],
)
def test_exact_accepts_equal_values_of_the_same_types(expected: Any, actual: Any) -> None:
    assert judge.same(expected, actual) is True


def test_float_comparator_keeps_bool_apart_from_numbers() -> None:
    assert judge.close(1, True, 1e-9, 1e-9) is False
    assert judge.close([0.0], [False], 1e-9, 1e-9) is False
    assert judge.close(1.0, 1.0 + 1e-12, 1e-9, 1e-9) is True


# -- strict JSON --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1, "a": 2}',
        b'[{"x": {"k": 0, "k": 0}}]',
        b"NaN",
        b"[Infinity]",
        b'{"v": -Infinity}',
        b"[" * 65 + b"]" * 65,
        b'"\xff"',
        b"[1,]",
    ],
    ids=[
        "dup-key",
        "nested-dup-key",
        "nan",
        "infinity",
        "minus-infinity",
        "depth-65",
        "bad-utf8",
        "trailing-comma",
    ],
)
def test_parse_json_refuses_what_strict_json_does_not_allow(raw: bytes) -> None:
    with pytest.raises(judge.Invalid):
        judge.parse_json(raw, CAP)


def test_parse_json_refuses_oversize_and_accepts_the_limits() -> None:
    with pytest.raises(judge.Invalid):
        judge.parse_json(b"1" * 11, 10)
    assert judge.parse_json(b"[" * 64 + b"]" * 64, CAP) is not None
    assert judge.parse_json(b'{"a": [1, 2.5, "x", null, true]}', CAP) == {
        "a": [1, 2.5, "x", None, True]
    }


# -- cmd_compare: the report a verdict is built from ------------------------------------------


def compare(
    tmp_path: Path,
    outputs: list[bytes],
    expected: list[Any],
    *,
    comparator: str = "exact",
    custom: Path | None = None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str = "function",
    diagnostics: str = "none",
) -> dict[str, Any]:
    """Run the judge's compare step on these raw case outputs; returns its report."""
    given: Any = {"stdin": ""} if kind == "cli" else None
    cases = [{"id": f"c{i}", "input": given or [i], "expected": e} for i, e in enumerate(expected)]
    state = tmp_path / "cases.json"
    state.write_text(json.dumps(cases))
    runner = tmp_path / "runner.json"
    runner.write_text(json.dumps({"runner": "test", "cases": [
        {"id": f"c{i}", "status": "ok", "duration_s": 0.01, "exit_code": 0,
         "output_b64": base64.b64encode(out).decode()}
        for i, out in enumerate(outputs)
    ]}))  # fmt: skip
    monkeypatch.setattr(judge, "STATE", str(state))
    args = argparse.Namespace(
        kind=kind,
        diagnostics=diagnostics,
        comparator=comparator,
        rel_tol=1e-9,
        abs_tol=1e-9,
        custom=str(custom) if custom else None,  # absolute: os.path.join("/judge", abs) is abs
        output_cap=CAP,
        runner_output=str(runner),
    )
    judge.cmd_compare(args)
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def statuses(report: dict[str, Any]) -> list[str]:
    return [c["status"] for c in report["cases"]]


def write_comparator(tmp_path: Path, returns: str) -> Path:
    path = tmp_path / "cmp.py"
    path.write_text(f"def compare(expected, actual):\n    return {returns}\n")
    return path


@pytest.mark.parametrize("returns", ["1", "'yes'", "[True]", "2.0", "object()"])
def test_custom_comparator_passes_only_on_a_real_true(
    tmp_path: Path, returns: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    custom = write_comparator(tmp_path, returns)
    report = compare(tmp_path, [b"5"], [5], comparator="custom", custom=custom,
                     monkeypatch=monkeypatch, capsys=capsys)  # fmt: skip
    assert statuses(report) == ["fail"]
    assert report["reasons"] == ["compare:mismatch"]


def test_custom_comparator_returning_true_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    custom = write_comparator(tmp_path, "True")
    report = compare(tmp_path, [b"5"], [5], comparator="custom", custom=custom,
                     monkeypatch=monkeypatch, capsys=capsys)  # fmt: skip
    assert statuses(report) == ["pass"]


def test_exact_compare_fails_true_for_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = compare(tmp_path, [b"true", b"1", b"false"], [1, 1, 0],
                     monkeypatch=monkeypatch, capsys=capsys)  # fmt: skip
    assert statuses(report) == ["fail", "pass", "fail"]


def test_nan_never_reaches_a_comparator_that_trusts_finite_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """corpus/json-nan-comparator in one process: only the strict parse stops the pass."""
    namespace: dict[str, Any] = {}
    exec(NAN_BLIND.read_text(), namespace)  # the task's own comparator, as the judge loads it
    assert namespace["compare"](123, math.nan) is True  # the weakness the parser must cover
    assert namespace["compare"](123, 124.0) is False
    report = compare(tmp_path, [b"NaN", b"-Infinity", b"123.25"], [123, 123, 123],
                     comparator="custom", custom=NAN_BLIND,
                     monkeypatch=monkeypatch, capsys=capsys)  # fmt: skip
    assert statuses(report) == ["error", "error", "pass"]
    assert report["reasons"] == ["candidate:invalid-output"]


def test_duplicate_keys_in_a_case_output_are_an_error_not_last_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = compare(tmp_path, [b'{"v": 0, "v": 1}'], [{"v": 1}],
                     monkeypatch=monkeypatch, capsys=capsys)  # fmt: skip
    assert statuses(report) == ["error"]
    assert report["reasons"] == ["candidate:invalid-output"]


# -- diagnostics for the task owner -------------------------------------------------------------


def test_diagnostics_explain_a_failed_cli_case_with_a_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = [{"stdout": "4\n", "exit_code": 0}, {"stdout": "5\n", "exit_code": 0}]
    report = compare(tmp_path, [b"4\n", b"<script>x()</script>\n"], expected, kind="cli",
                     diagnostics="owner", monkeypatch=monkeypatch, capsys=capsys)  # fmt: skip
    assert statuses(report) == ["pass", "fail"]
    [d] = report["diagnostics"]
    assert d["id"] == "c1" and d["reason"] == "compare:mismatch"
    assert d["expected"].startswith("5\n") and d["actual"].startswith("<script>x()</script>\n")
    assert "-5" in d["diff"].splitlines() and "+<script>x()</script>" in d["diff"].splitlines()


def test_diagnostics_are_bounded_and_off_when_the_task_says_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = b'"' + b"x" * 500_000 + b'"'
    report = compare(tmp_path, [huge] * 30, ["y"] * 30, diagnostics="owner",
                     monkeypatch=monkeypatch, capsys=capsys)  # fmt: skip
    diags = report["diagnostics"]
    assert 0 < len(diags) <= judge.DIAG_CASES
    assert all(len(d["actual"]) <= judge.DIAG_CHARS + 40 for d in diags)
    assert len(json.dumps(diags)) < judge.DIAG_BYTES
    quiet = compare(tmp_path, [huge], ["y"], monkeypatch=monkeypatch, capsys=capsys)
    assert statuses(quiet) == ["fail"] and "diagnostics" not in quiet


def test_diagnostics_of_a_transform_case_diff_its_files_and_a_function_case_shows_reprs() -> None:
    case = {"id": "t", "input": {}, "expected": {"files": {"a.txt": "x\n", "b.txt": "y\n"}}}
    got = judge.diagnose(case, {"files": {"a.txt": "x\n", "b.txt": "z\n"}}, "compare:mismatch")
    assert "-y" in got["diff"].splitlines() and "+z" in got["diff"].splitlines()
    assert got["expected"] == "=== a.txt\nx\n=== b.txt\ny\n"
    fn = {"id": "f", "input": [[1]], "expected": {"$tuple": [1, 2]}}
    got = judge.diagnose(fn, [1, 2], "compare:mismatch")
    assert (got["expected"], got["actual"], got["diff"]) == ("(1, 2)", "[1, 2]", "")
