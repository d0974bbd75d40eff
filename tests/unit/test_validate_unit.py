"""`assay validate` without an engine: the leak scan, the test-id check, the exit-code rule,
what counts as a reference, the repository checks over verdicts, and a task the loader refuses
(reported by name, never raised). tests/docker/test_validate_docker.py runs the gradings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from e2e import EXAMPLES

import assay
from assay._incontainer import judge as judge_program
from assay._internal.api import validate as v
from assay._internal.api.repocollect import file_part, parse_collection
from assay._internal.api.submission import Agent, Patch
from assay._internal.api.taskscan import (
    MIN_EXPECTED_LEAK,
    MIN_FILE_LEAK,
    added_lines,
    expected_texts,
    junk_ids,
    normalise,
    raw_repository_ids,
    read_tree,
    scan_leaks,
    task_dirs,
)
from assay.cli import main
from assay.cli.validate import exit_code

# -- the leak scan ----------------------------------------------------------------------------

CASES = b'[{"id": "c1", "input": [1, 2], "expected": 3}, {"id": "c2", "input": [5], "expected": 5}]'


def test_normalise_collapses_whitespace_runs() -> None:
    assert normalise(b"  a\t\tb\n\n c  ") == b"a b c"


def test_an_inputs_file_identical_to_a_judge_file_is_a_leak() -> None:
    leaks = scan_leaks({"inputs/cases.json": CASES}, {"judge/cases.json": CASES})
    assert [str(x) for x in leaks] == ["inputs/cases.json: is judge/cases.json, byte for byte"]


def test_a_short_identical_file_is_a_leak_too_but_an_empty_one_is_not() -> None:
    assert scan_leaks({"inputs/a": b"42\n"}, {"judge/b": b"42\n"})
    assert scan_leaks({"inputs/a": b""}, {"judge/__init__.py": b""}) == []
    assert scan_leaks({"inputs/a": b"\n \n"}, {"judge/b": b"\n \n"}) == []


def test_a_judge_file_inside_an_inputs_file_is_a_leak_even_rewrapped() -> None:
    secret = b"def generate(seed):\n    return [{'id': 'x', 'expected': seed * 7}]\n"
    readme = b"# Task\n\nHint, the grader does:\n\n  def generate(seed):  return [{'id': 'x',\n"
    readme += b"      'expected': seed * 7}]\n\nGood luck.\n"
    leaks = scan_leaks({"inputs/README.md": readme}, {"judge/gen.py": secret})
    assert [str(x) for x in leaks] == ["inputs/README.md: holds the whole of judge/gen.py"]


def test_a_short_judge_file_inside_an_inputs_file_is_not_flagged() -> None:
    short = b"x" * (MIN_FILE_LEAK - 1)
    assert scan_leaks({"inputs/README.md": b"see " + short + b" here"}, {"judge/k": short}) == []
    long = b"x" * MIN_FILE_LEAK
    assert scan_leaks({"inputs/README.md": b"see " + long + b" here"}, {"judge/k": long})


def test_an_expected_stdout_in_the_readme_is_a_leak() -> None:
    tests = [
        {"id": "t1", "input": {"stdin": "a b\n"}, "expected": {"stdout": "1 2 3 4 5 6 7 8 9 10\n"}},
        {"id": "t2", "input": {"stdin": "x\n"}, "expected": {"stdout": "3\n"}},
    ]
    expected = expected_texts(tests)
    readme = b"Example: for the hidden test the answer is\n1 2 3 4 5 6 7 8\n9 10\n"
    leaks = scan_leaks({"inputs/README.md": readme}, {}, expected)
    assert len(leaks) == 1
    assert str(leaks[0]).startswith("inputs/README.md: holds the expected value of case 't1'")
    # "3\n" is in the README too, but an expected value that short is in any text.
    assert all("'t2'" not in str(x) for x in leaks)


def test_an_expected_value_shorter_than_the_threshold_is_not_flagged() -> None:
    value = "y" * (MIN_EXPECTED_LEAK - 1)
    cases = [{"id": "c", "input": [], "expected": value}]
    assert scan_leaks({"inputs/R": value.encode()}, {}, expected_texts(cases)) == []
    cases = [{"id": "c", "input": [], "expected": value + "y"}]
    assert scan_leaks({"inputs/R": (value + "y").encode()}, {}, expected_texts(cases))


def test_expected_texts_takes_each_kinds_values() -> None:
    cases = [
        {
            "id": "f",
            "input": [1],
            "expected": {"$tuple": [12345678901234567, "a long return string"]},
        },
        {"id": "c", "input": {"args": []}, "expected": {"stdout": "out\n", "exit_code": 0}},
        {"id": "t", "input": {"files": {}}, "expected": {"files": {"o.txt": "file text"}}},
        {"id": "no-expected", "input": []},
    ]
    texts = {text for _, text in expected_texts(cases)}
    assert {"12345678901234567", "a long return string", "out\n", "file text"} <= texts
    assert "$tuple" not in texts and "stdout" not in texts
    assert all(
        label != "the expected value of case 'no-expected'" for label, _ in expected_texts(cases)
    )
    assert expected_texts({"not": "a list"}) == []


PATCH = b"""diff --git a/tests/test_v.py b/tests/test_v.py
--- a/tests/test_v.py
+++ b/tests/test_v.py
@@ -1,3 +1,7 @@
 import semverlite
+import pytest
+from semverlite.version import Version, compare, parse_version_string
+
+def test_numeric_identifiers_compare_numerically():
+    assert compare("1.0.0-alpha.2", "1.0.0-alpha.10") < 0
+++ this added line starts with two pluses and is long enough
 def test_old():
     pass
"""


def test_added_lines_reads_hunks_by_their_counts() -> None:
    lines = added_lines(PATCH)
    assert lines == [
        "def test_numeric_identifiers_compare_numerically():",
        'assert compare("1.0.0-alpha.2", "1.0.0-alpha.10") < 0',
        "++ this added line starts with two pluses and is long enough",
    ]
    # Imports are boilerplate an honest issue quotes; short lines are everywhere.


def test_a_line_of_the_test_patch_in_the_issue_is_a_leak() -> None:
    issue = b'compare is wrong. The fix must make\n  assert compare("1.0.0-alpha.2", "1.0.0-alpha.10") < 0\n'
    issue += b"from semverlite.version import Version, compare, parse_version_string\n"
    leaks = scan_leaks({"inputs/ISSUE.md": issue}, {}, (), added_lines(PATCH))
    assert [str(x) for x in leaks] == [
        "inputs/ISSUE.md: holds a line the test patch adds: "
        '\'assert compare("1.0.0-alpha.2", "1.0.0-alpha.10") < 0\''
    ]


def test_clean_inputs_have_no_leak() -> None:
    expected = expected_texts(json.loads(CASES))
    readme = b"Write add(a, b) returning the sum of two integers.\n"
    assert scan_leaks({"inputs/README.md": readme}, {"judge/cases.json": CASES}, expected) == []


def test_read_tree_skips_links(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_bytes(b"a")
    (tmp_path / "outside").write_bytes(b"secret")
    (tmp_path / "d" / "link").symlink_to(tmp_path / "outside")
    assert read_tree(tmp_path / "d", "inputs") == {"inputs/a.txt": b"a"}
    assert read_tree(tmp_path / "missing", "inputs") == {}


# -- test ids ---------------------------------------------------------------------------------

GOOD_IDS = [
    "tests/test_version.py::test_parse_core",
    "tests/test_version.py::test_parse_rejects[1.2.3-]",
    "tests/test_x.py::TestA::test_b[a b-100%]",
    "test_top.py::test_t",
]


def test_good_ids_are_not_junk() -> None:
    assert junk_ids(GOOD_IDS) == []


@pytest.mark.parametrize(
    ("node_id", "why"),
    [
        ("[100%]", "not a relative path to a .py file"),
        ('"', "not a relative path to a .py file"),
        ("", "an empty id"),
        ("tests/test_version.py", "not a pytest node id"),
        ("tests/test_version.py::", "not a pytest node id"),
        ("tests/data.txt::test_a", "not a relative path to a .py file"),
        ("../tests/test_a.py::test_a", "not a relative path to a .py file"),
        ("/abs/test_a.py::test_a", "not a relative path to a .py file"),
        ("tests/test_é.py::test_a", "not printable ASCII"),
        ("tests/t.py::" + "x" * 300, "not printable ASCII"),
    ],
)
def test_junk_ids_are_named_with_why(node_id: str, why: str) -> None:
    found = junk_ids([*GOOD_IDS, node_id])
    assert len(found) == 1 and found[0][0] == node_id and why in found[0][1]


def test_two_ids_with_one_junit_name_are_junk() -> None:
    found = junk_ids(["tests/a.py::test_x", "tests/a.py::test_x"])
    assert found == [("tests/a.py::test_x", "listed twice")]
    found = junk_ids(["tests/a.py::T::test_x", "tests/a/T.py::test_x"])
    assert found and "same JUnit name" in found[0][1]


def _repo_task(tmp_path: Path, extra_f2p: str) -> Path:
    task = tmp_path / "semver-junk"
    shutil.copytree(EXAMPLES / "semver-pytest", task)
    toml = task / "task.toml"
    text = toml.read_text()
    toml.write_text(
        text.replace("fail_to_pass = [\n", f"fail_to_pass = [\n    {extra_f2p!r},\n", 1)
    )
    return task


def test_raw_ids_are_read_even_when_the_loader_refuses_them(tmp_path: Path) -> None:
    task = _repo_task(tmp_path, "[100%]")
    with pytest.raises(assay.errors.TaskError, match="100%"):
        assay.load_task(task)
    ids = raw_repository_ids(task)
    assert ids is not None and ids[0] == "[100%]" and len(ids) == 14
    assert raw_repository_ids(EXAMPLES / "add") is None


def test_a_task_the_loader_refuses_is_reported_by_name_not_raised(tmp_path: Path) -> None:
    """The loader refuses the id (outside test_dirs): the report says it does not load, with
    the loader's message naming the id, and the test-id check names it as junk; no grading
    is attempted (the grader here would fail any)."""
    task = _repo_task(tmp_path, "[100%]")
    report = v.validate_one(_NoGrader(), task)  # type: ignore[arg-type]
    assert not report.gradeable
    assert [c.name for c in report.checks] == ["loads", "test-ids"]
    loads, ids = report.checks
    assert not loads.ok and "not loadable" in loads.detail and "[100%]" in loads.detail
    assert not ids.ok and "'[100%]'" in ids.detail
    json.loads(report.to_json())  # serialisable


def test_a_bare_quote_id_is_named(tmp_path: Path) -> None:
    task = _repo_task(tmp_path, '"')
    report = v.validate_one(_NoGrader(), task)  # type: ignore[arg-type]
    assert "'\"'" in report.checks[1].detail


class _NoGrader:
    def grade(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("no grading for a task that does not load")

    def build(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("no build for a task that does not load")


# -- the repository checks over verdicts ------------------------------------------------------


def _verdict(*cases: tuple[str, str, str | None]) -> Any:
    return SimpleNamespace(
        cases=[SimpleNamespace(id=i, status=s, reason=r) for i, s, r in cases],
        score=0.0, expected_case_count=len(cases), reason_codes=[], passed=False,
    )  # fmt: skip


def test_a_run_that_lost_ids_is_seen_and_case_level_misses_are_named() -> None:
    ids = ["t.py::a", "t.py::gone", "t.py::absent"]
    ref = _verdict(("t.py::a", "pass", None), ("t.py::gone", "fail", "junit:missing"))
    assert v.lost_ids(ids, [ref]) == (True, ["t.py::gone", "t.py::absent"])
    assert v.lost_ids(["t.py::a"], [ref]) == (False, [])
    # What a repository grading gives when pytest refused the run: every case an error with
    # no reason of its own, junit:missing among the verdict's reasons; nothing is named.
    aborted = _verdict(("t.py::a", "error", None), ("t.py::b", "error", None))
    aborted.reason_codes = ["junit:missing", "pytest:exit-code"]
    assert v.lost_ids(["t.py::a", "t.py::b"], [aborted]) == (True, [])


def test_no_run_with_results_cannot_check_the_ids() -> None:
    check = v._ids_in_results(_NoGrader(), None, ["t.py::a"], [], [])  # type: ignore[arg-type]
    assert not check.ok and check.could_not_check


CONSOLE = """
==================================== ERRORS ====================================
______________________ ERROR collecting tests/test_bad.py ______________________
ImportError while importing test module '/w/tests/test_bad.py'.
E   ModuleNotFoundError: No module named 'nonexistent_mod'
ERROR: not found: /w/tests/test_ok.py::test_zzz
(no name '/w/tests/test_ok.py::test_zzz' in any of [<Module tests/test_ok.py>])

ERROR: not found: /w/tests/test_more.py::test_p[3]
(no name '/w/tests/test_more.py::test_p[3]' in any of [<Module tests/test_more.py>])

ERROR: not found: /w/tests/test_bad.py::test_b
ERROR: not found: /w/tests/unlisted.py::test_q
ERROR: not found: /elsewhere/tests/test_ok.py::test_a
"""


def test_pytests_console_names_the_missing_ids() -> None:
    """pytest 7.2.1's own output (assay-base's), from a collection of these ids."""
    ids = [
        "tests/test_ok.py::test_a", "tests/test_ok.py::test_zzz", "tests/test_more.py::test_p[3]",
        "tests/test_more.py::test_p[1]", "tests/test_bad.py::test_b",
    ]  # fmt: skip
    missing, unimportable = parse_collection(CONSOLE, "/w", ids)
    assert missing == ["tests/test_ok.py::test_zzz", "tests/test_more.py::test_p[3]"]
    assert unimportable == ["tests/test_bad.py::test_b"]  # its module failed to import
    assert parse_collection(CONSOLE, "/w/", ["tests/test_ok.py::test_zzz"])[0] == [
        "tests/test_ok.py::test_zzz"
    ]
    assert file_part("tests/a.py::T::t[x::y]") == "tests/a.py"


def test_a_fail_to_pass_test_that_passes_unchanged_is_named() -> None:
    empty = _verdict(("t.py::f1", "fail", "junit:failure"), ("t.py::f2", "pass", None))
    check = v._fail_before_fix(["t.py::f1", "t.py::f2"], empty)
    assert not check.ok and "'t.py::f2'" in check.detail and "t.py::f1" not in check.detail
    assert v._fail_before_fix(["t.py::f1"], empty).ok
    assert v._fail_before_fix(["t.py::f1"], None).could_not_check
    aborted = _verdict(("t.py::f1", "error", None))
    aborted.reason_codes = ["junit:missing", "pytest:exit-code"]
    assert v._fail_before_fix(["t.py::f1"], aborted).could_not_check


# -- references -------------------------------------------------------------------------------


def test_every_kind_of_reference_is_found(tmp_path: Path) -> None:
    sols = tmp_path / "solutions"
    for d in ("correct", "correct-2", "correct-c", "wrong", "reference"):
        (sols / d).mkdir(parents=True)
    (sols / "correct-c" / "agent.sh").write_text("cc x.c\n")
    (sols / "reference" / "solve.sh").write_text("echo hi\n")
    (sols / "gold.patch").write_bytes(b"--- a/x\n+++ b/x\n")
    found = dict(v.find_references(tmp_path))
    assert list(found) == [
        "solutions/correct", "solutions/correct-2", "solutions/correct-c",
        "solutions/reference", "solutions/gold.patch",
    ]  # fmt: skip
    assert found["solutions/correct"] == sols / "correct"
    assert found["solutions/correct-c"] == Agent("sh /agent/agent.sh", directory=sols / "correct-c")
    assert found["solutions/reference"] == Agent(
        "bash /agent/solve.sh", directory=sols / "reference"
    )
    assert found["solutions/gold.patch"] == Patch(b"--- a/x\n+++ b/x\n")
    assert v.find_references(EXAMPLES / "canary") == []


def test_the_judge_state_path_is_the_judges() -> None:
    assert v.JUDGE_STATE == judge_program.STATE


# -- paths and the exit code ------------------------------------------------------------------


def test_task_dirs_takes_tasks_and_directories_of_tasks(tmp_path: Path) -> None:
    for name in ("b", "a"):
        (tmp_path / "tree" / name).mkdir(parents=True)
        (tmp_path / "tree" / name / "task.toml").write_text("")
    (tmp_path / "tree" / "not-a-task").mkdir()
    got = task_dirs([EXAMPLES / "add", tmp_path / "tree", EXAMPLES / "add"])
    assert got == [EXAMPLES / "add", tmp_path / "tree" / "a", tmp_path / "tree" / "b"]
    with pytest.raises(assay.errors.UsageError, match="no such directory"):
        task_dirs([tmp_path / "missing"])
    with pytest.raises(assay.errors.UsageError, match="no task directory in it"):
        task_dirs([tmp_path / "tree" / "not-a-task"])


def test_the_exit_code_rule() -> None:
    assert exit_code([True]) == 0
    assert exit_code([True, True]) == 0
    assert exit_code([True, False]) == 1
    assert exit_code([False]) == 1
    assert exit_code([]) == 1  # nothing was shown gradeable


def test_a_report_is_gradeable_only_when_every_check_held() -> None:
    ok = v.ValidationCheck("reference", True, "passed")
    bad = v.ValidationCheck("empty-fails", False, "could not check: x", True)
    assert assay.ValidationReport("t", Path("t"), (ok,)).gradeable
    assert not assay.ValidationReport("t", Path("t"), (ok, bad)).gradeable
    assert not assay.ValidationReport("t", Path("t"), ()).gradeable
    data = json.loads(assay.ValidationReport("t", Path("t"), (ok, bad)).to_json())
    assert data["gradeable"] is False and data["checks"][1]["could_not_check"] is True


def _fake_validate(*reports: assay.ValidationReport) -> Any:
    def fake(tasks: Any, **kw: Any) -> list[assay.ValidationReport]:
        for r in reports:
            kw["progress"](r)
        return list(reports)

    return fake


def test_the_command_exits_0_1_and_writes_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = assay.ValidationReport("good", EXAMPLES / "add", (v.ValidationCheck("loads", True),))
    bad = assay.ValidationReport(
        "bad",
        EXAMPLES / "add",
        (v.ValidationCheck("reference", False, "solutions/correct: \x1b[2J"),),
    )
    monkeypatch.setattr(assay, "validate", _fake_validate(good))
    res = CliRunner().invoke(main, ["validate", str(EXAMPLES / "add")])
    assert res.exit_code == 0, res.output
    assert "GRADEABLE good" in res.output and "all 1 task(s) gradeable" in res.output

    monkeypatch.setattr(assay, "validate", _fake_validate(good, bad))
    out = tmp_path / "v.json"
    res = CliRunner().invoke(main, ["validate", str(EXAMPLES / "add"), "--json", str(out)])
    assert res.exit_code == 1, res.output
    assert "NOT GRADEABLE bad" in res.output and "FAIL  reference" in res.output
    assert "\x1b" not in res.output  # a task's bytes never steer the terminal
    data = json.loads(out.read_text())
    assert data["gradeable"] is False and [t["task_id"] for t in data["tasks"]] == ["good", "bad"]


def test_a_path_that_is_no_task_exits_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert res.exit_code == 2 and "not a task directory" in res.output
    res = CliRunner().invoke(main, ["validate"])
    assert res.exit_code == 2
    res = CliRunner().invoke(main, ["validate", str(EXAMPLES / "add"), "--jobs", "0"])
    assert res.exit_code == 2
