"""No tier passes zero checks or an empty answer (TAXONOMY V19, issue 36).

A vacuous pass is a grader saying "nothing failed" when nothing was checked: a task with no
cases, a test run that collected nothing, a report with no testcase, a reward file with no
value, an empty output that a lenient comparison accepts. Each door is closed at its own layer;
this module walks them in one place, so a new tier or kind that forgets one shows up here.
`corpus/pytest-collect-only` is the attack that wins where a grader reads only an exit code."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.verdicts import facts

from assay._incontainer import judge
from assay._incontainer.checkers import CHECKERS, check
from assay._internal.model.task import load_task
from assay._internal.model.verdict import build_verdict
from assay._internal.tiers.compat.junit import parse_junit
from assay._internal.tiers.harbor.reward import BadReward, parse_reward
from assay.errors import TaskError

FUNCTION = """\
id = "zero"
kind = "function"
artifacts = ["solution.py"]
[function]
entry = "solution:solve"
[judge]
cases = "cases.json"
"""
STDIO = """\
id = "zero"
kind = "stdio"
[stdio]
languages = ["python3"]
[judge]
cases = "tests.json"
"""
PYTEST = """\
id = "zero"
kind = "pytest"
artifacts = ["solution.py"]
[pytest]
tests = []
"""
REPOSITORY = """\
id = "zero"
kind = "pytest"
artifacts = ["**"]
[pytest]
fail_to_pass = []
test_patch = "test.patch"
"""


def _task(root: Path, toml: str, files: dict[str, str]) -> Path:
    (root / "inputs").mkdir(parents=True)
    (root / "judge" / "tests").mkdir(parents=True)
    (root / "task.toml").write_text(toml, encoding="utf-8")
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("toml", "files", "message"),
    [
        (FUNCTION, {"judge/cases.json": "[]"}, "cases must be a non-empty list"),
        (STDIO, {"judge/tests.json": "[]"}, "cases must be a non-empty list"),
        (PYTEST, {"judge/tests/test_a.py": "def test_a(): pass\n"}, "at least one test"),
        (REPOSITORY, {"judge/test.patch": ""}, "fail_to_pass must name at least one test"),
    ],
    ids=["function", "stdio", "pytest", "repository"],
)
def test_a_task_that_checks_nothing_is_refused_at_load(
    tmp_path: Path, toml: str, files: dict[str, str], message: str
) -> None:
    """Refused before anything runs (exit 2), never graded into a verdict. SWE-bench's own
    grading counts an instance with no FAIL_TO_PASS test as fixed (`compute_fail_to_pass`
    returns 1 for zero tests); a pytest task declaring `tests = []` was loaded before issue 36."""
    root = _task(tmp_path / "zero", toml, files)
    with pytest.raises(TaskError, match=message):
        load_task(root)


def test_leaving_the_tests_out_still_loads_for_the_trusted_collection(tmp_path: Path) -> None:
    """The refusal is for an empty list, not for a task that lets collection find its tests."""
    root = _task(tmp_path / "collect", PYTEST.replace("tests = []\n", ""), {})
    assert load_task(root).config.pytest is not None


def test_a_generator_that_yields_no_case_is_refused_by_the_judge() -> None:
    """A generator runs per grading, after load: the judge refuses an empty list, so the
    grading ends with no verdict (the prepare step failed), never a pass."""
    with pytest.raises(judge.BadCase, match="non-empty"):
        judge.check_cases([], False)


def test_a_verdict_over_zero_cases_never_passes() -> None:
    verdict = build_verdict(facts(), [], 0)
    assert not verdict.passed
    assert "cases:none-expected" in verdict.reason_codes


def test_a_junit_report_with_no_testcase_fails_the_expected_ids() -> None:
    """pytest collected nothing (or the report was emptied): every expected id is missing."""
    empty = (
        b'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0"'
        b' failures="0" skipped="0" tests="0" time="0.1" timestamp="2026-01-01T00:00:00"'
        b' hostname="h"></testsuite></testsuites>'
    )
    outcome = parse_junit(empty, ["tests/test_s.py::test_a"])
    assert not outcome.passed
    assert "junit:missing" in outcome.reasons


@pytest.mark.parametrize("raw", [{}, {"reward.json": b"{}"}, {"reward.txt": b""}])
def test_a_reward_that_scores_nothing_fails(raw: dict[str, bytes]) -> None:
    assert isinstance(parse_reward(raw), BadReward)


@pytest.mark.parametrize("name", CHECKERS)
@pytest.mark.parametrize("output", [b"", b"\n", b" \n\n"])
def test_an_empty_output_fails_every_builtin_checker(name: str, output: bytes) -> None:
    """open-r1's `zip` of lines accepts an empty output (corpus/stdio-exit-before-print); no
    built-in checker does, whatever the answer."""
    for answer in (b"1\n", b"1 2\n3\n", b"x\n"):
        ok, reason = check(name, output, answer)
        assert not ok and reason is not None, (name, output, answer)


@pytest.mark.parametrize("name", CHECKERS)
def test_an_empty_output_matches_only_an_empty_answer(name: str) -> None:
    """The one case where printing nothing is right: the answer is empty. A task whose every
    answer is empty is what `assay validate` refuses (an empty submission must fail)."""
    assert check(name, b"", b"") == (True, None)
    assert check(name, b"\n", b"") == (True, None) or name == "exact"
