"""Impossible twins without an engine: what each kind's twin writer changes, that no output
passes a case and its contradiction, that the tests a pytest twin changes fail for a right and
a wrong solution alike (run with the venv's pytest), the refusals by name, the verdict's marks
and `assay validate`'s reading of a reference on a twin. The gradings are in
tests/docker/test_impossible_docker.py."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

import assay
from assay._incontainer import checkers
from assay._internal.api import validate as v
from assay._internal.api.taskscan import twin_reference_problem
from assay._internal.model.diagnostics import Judged
from assay._internal.model.task import load_task
from assay._internal.model.verdict import (
    CaseResult,
    ControllerFacts,
    Verdict,
    build_verdict,
    error_verdict,
)
from assay._internal.tiers.core.twin import NOTE, PASSED, mark_twin
from assay._internal.twins.asserts import contradict_line, contradict_module, contradict_patch
from assay._internal.twins.values import accepts, contradict_case, mutate_stdout, mutate_text
from assay.cli import main
from assay.errors import TaskError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _twin(name: str, out: Path) -> Path:
    return assay.make_impossible(EXAMPLES / name, out)


def _cases(task_dir: Path, name: str = "cases.json") -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((task_dir / "judge" / name).read_text())
    return data


# -- the mark ---------------------------------------------------------------------------------


def test_a_twin_is_the_task_with_its_own_id_and_the_mark(tmp_path: Path) -> None:
    twin_dir = _twin("add", tmp_path)
    assert twin_dir == tmp_path / "add.impossible"
    twin, original = load_task(twin_dir), load_task(EXAMPLES / "add")
    assert twin.id == "add.impossible" and twin.config.impossible
    assert not original.config.impossible
    assert twin.digest != original.digest
    raw = tomllib.loads((twin_dir / "task.toml").read_text())
    before = tomllib.loads((EXAMPLES / "add" / "task.toml").read_text())
    assert raw == {**before, "id": "add.impossible", "impossible": True}
    # The reference solutions come along, so `assay validate` can show them failing.
    assert (twin_dir / "solutions" / "correct" / "solution.py").is_file()
    # Nothing else is left in the output directory (the twin is built aside and renamed).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["add.impossible"]


def test_comments_of_task_toml_are_kept(tmp_path: Path) -> None:
    text = (_twin("semver-pytest", tmp_path) / "task.toml").read_text()
    assert text.startswith("# A repository task")
    assert 'id = "semver-pytest.impossible"\nimpossible = true\n' in text


def test_the_mark_is_a_task_key_that_defaults_to_false(tmp_path: Path) -> None:
    task = tmp_path / "t"
    shutil.copytree(EXAMPLES / "add", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('id = "add"', 'id = "add"\nimpossible = "yes"'))
    with pytest.raises(TaskError, match="impossible"):
        load_task(task)


# -- strict kinds: a contradicting case beside every case -------------------------------------


def test_function_twin_keeps_every_case_and_contradicts_each(tmp_path: Path) -> None:
    before = _cases(EXAMPLES / "add")
    after = _cases(_twin("add", tmp_path))
    assert after[0::2] == before
    for orig, contra in zip(after[0::2], after[1::2], strict=True):
        assert contra["id"] == orig["id"] + ".contra"
        assert contra["input"] == orig["input"]
        assert contra["expected"] != orig["expected"]
        # The right answer fails the contradiction, its answer fails the original.
        assert not accepts("exact", contra["expected"], orig["expected"], 1e-9, 1e-9)
        assert not accepts("exact", orig["expected"], contra["expected"], 1e-9, 1e-9)


@pytest.mark.parametrize("name", ["wordcount", "csv-sum", "semver", "c-wordfreq"])
def test_cli_and_transform_twins_contradict_every_case(tmp_path: Path, name: str) -> None:
    task = load_task(EXAMPLES / name)
    assert task.config.judge is not None and task.config.judge.cases is not None
    before = _cases(EXAMPLES / name, task.config.judge.cases)
    after = _cases(_twin(name, tmp_path), task.config.judge.cases)
    assert len(after) == 2 * len(before) and after[0::2] == before
    kind = task.config.judge.comparator
    for orig, contra in zip(after[0::2], after[1::2], strict=True):
        assert contra["input"] == orig["input"]
        assert not accepts(kind, contra["expected"], orig["expected"], 1e-9, 1e-9)


VALUES: list[Any] = [
    0, 7, -2, 2**80, True, False, None, 0.0, -1.0, 0.5, 1e300, -1.7e308, 3.25e-9,
    "", "abc", "zz", "Z9", "!?", "4\n", b"", b"\x01\x02", [], [1, 2], [[1], "x"], (), (1, "a"),
    set(), {1, 2}, frozenset({"a"}), {}, {"k": 1, "j": [2.5]}, {1: "a", (2, 3): None},
    float("nan"), float("inf"), -float("inf"),
]  # fmt: skip


def _encoded(value: Any) -> Any:
    from assay._incontainer import values

    return values.encode(value)


def _probes(*trees: Any) -> list[Any]:
    """Outputs to try against a case and its contradiction: both expected values, and numbers
    between and around them (where closeness could reach both)."""
    from assay._incontainer import values

    found = list(trees)
    nums = [values.decode(t) for t in trees]
    if all(isinstance(n, int | float) and not isinstance(n, bool) for n in nums):
        lo, hi = sorted(float(n) for n in nums)
        if math.isfinite(lo) and math.isfinite(hi):
            found += [_encoded(lo + (hi - lo) * k / 16) for k in range(-4, 21)]
    return found


@pytest.mark.parametrize("kind", ["exact", "equal", "float"])
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_no_output_passes_a_case_and_its_contradiction(kind: str, value: Any) -> None:
    case = {"id": "c", "input": [1], "expected": _encoded(value)}
    rel, abs_ = 1e-6, 1e-3
    contra = contradict_case(case, kind, rel, abs_)
    assert contra is not None and contra["input"] == case["input"]
    # The contradiction is a real expected value: its own answer passes it.
    if not (kind == "equal" and isinstance(value, float) and math.isnan(value)):
        assert accepts(kind, contra["expected"], contra["expected"], rel, abs_)
    for out in _probes(case["expected"], contra["expected"]):
        both = accepts(kind, case["expected"], out, rel, abs_) and accepts(
            kind, contra["expected"], out, rel, abs_
        )
        assert not both, (value, contra["expected"], out)


def test_unordered_truthy_and_falsy_are_contradicted_and_custom_is_not() -> None:
    case = {"id": "c", "input": [1], "expected": [3, 1, 2]}
    contra = contradict_case(case, "unordered", 1e-9, 1e-9)
    assert contra is not None and contra["expected"] == [3, 1, 2, 2]
    assert not accepts("unordered", contra["expected"], [1, 2, 3], 1e-9, 1e-9)
    assert contradict_case({**case, "expected": 5}, "unordered", 0, 0) is None
    assert contradict_case(case, "truthy", 0, 0) == {**case, "comparator": "falsy"}
    assert contradict_case({**case, "comparator": "falsy"}, "exact", 0, 0) == {
        **case,
        "comparator": "truthy",
    }
    assert contradict_case(case, "custom", 0, 0) is None
    # A relative tolerance that makes half the line close to a value is not contradicted.
    assert contradict_case({**case, "expected": 1.0}, "float", 0.5, 0) is None


def test_text_changes_keep_its_look() -> None:
    assert mutate_text("41\n") == "42\n"
    assert mutate_text("x9") == "x0"
    assert mutate_text("Hello, Ada!") == "Hello, Adb!"
    assert mutate_text("...") == "...0"


# -- stdio: one line more than the answer -----------------------------------------------------


ANSWERS = ["3\n", "1 2 3\n4 5\n", "a\r\nb\r\n", "", "   \n", "x", "0.5\n0.25\n"]


@pytest.mark.parametrize("name", checkers.CHECKERS)
@pytest.mark.parametrize("answer", ANSWERS, ids=repr)
def test_no_program_output_passes_a_test_and_its_contradiction(name: str, answer: str) -> None:
    changed = mutate_stdout(answer)
    outputs = [answer, changed, answer.rstrip("\n"), answer + "\n", answer.upper(), changed + " "]
    for out in outputs:
        passes_both = (
            checkers.check(name, out.encode(), answer.encode(), abs_tol=1e-6, rel_tol=1e-6)[0]
            and checkers.check(name, out.encode(), changed.encode(), abs_tol=1e-6, rel_tol=1e-6)[0]
        )  # fmt: skip
        assert not passes_both, (name, answer, out)


def test_stdio_twin_contradicts_every_test(tmp_path: Path) -> None:
    before = _cases(EXAMPLES / "stdio-sort", "tests.json")
    after = _cases(_twin("stdio-sort", tmp_path), "tests.json")
    assert after[0::2] == before
    for orig, contra in zip(after[0::2], after[1::2], strict=True):
        assert contra["input"] == orig["input"]
        right = orig["expected"]["stdout"].encode()
        ok, _ = checkers.check("numbers", right, contra["expected"]["stdout"].encode())
        assert not ok


def test_a_stdio_task_judged_by_a_checker_program_is_refused_by_name(tmp_path: Path) -> None:
    task = tmp_path / "checked"
    shutil.copytree(EXAMPLES / "stdio-sort", task)
    (task / "judge" / "checker.py").write_text("def check(i, o, a):\n    return True\n")
    toml = task / "task.toml"
    toml.write_text(
        toml.read_text().replace('checker = "numbers"', 'checker = "python"\n'
                                 'checker_program = "checker.py"')
    )  # fmt: skip
    with pytest.raises(TaskError, match=r"checked: no impossible twin: .*checker 'python'"):
        assay.make_impossible(task, tmp_path / "out")
    assert not (tmp_path / "out" / "stdio-sort.impossible").exists()


def test_a_custom_comparator_task_is_refused_and_a_generator_too(tmp_path: Path) -> None:
    task = tmp_path / "custom"
    shutil.copytree(EXAMPLES / "add", task)
    (task / "judge" / "cmp.py").write_text("def compare(e, a):\n    return True\n")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('comparator = "exact"', 'comparator = "custom"\n'
                                             'custom = "cmp.py"'))  # fmt: skip
    with pytest.raises(TaskError, match=r"custom: no impossible twin: .*comparator 'custom'"):
        assay.make_impossible(task, tmp_path / "out")
    with pytest.raises(TaskError, match=r"canary: no impossible twin: judge.generator"):
        assay.make_impossible(EXAMPLES / "canary", tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


# -- pytest: an assert no value satisfies -----------------------------------------------------


def _run_pytest(tests: Path, solution: str, ids: list[str]) -> dict[str, str]:
    """Run `ids` under the venv's pytest beside `solution` (a tmp copy); outcome per id."""
    (tests / "solution.py").write_text(solution)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-q", *ids],
        cwd=tests, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    outcomes = {}
    for line in proc.stdout.splitlines():
        word, _, node = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR"):
            outcomes[node.split(" - ")[0]] = word
    return outcomes


def test_the_changed_pytest_tests_fail_for_a_right_and_a_wrong_solution(tmp_path: Path) -> None:
    twin = _twin("add-pytest", tmp_path / "out")
    ids = load_task(twin).config.pytest.tests  # type: ignore[union-attr]
    assert ids is not None
    right = (EXAMPLES / "add" / "solutions" / "correct" / "solution.py").read_text()
    off_by_one = "def add(a, b):\n    return a + b + 1\n"  # a wrong answer, not a trick
    original = tmp_path / "original"
    shutil.copytree(EXAMPLES / "add-pytest" / "judge", original)
    assert set(_run_pytest(original, right, ids).values()) == {"PASSED"}  # the control
    for solution in (right, off_by_one):
        work = tmp_path / f"twin-{len(solution)}"
        shutil.copytree(twin / "judge", work)
        assert _run_pytest(work, solution, ids) == dict.fromkeys(ids, "FAILED")


def test_only_the_first_top_level_assert_of_each_test_changes() -> None:
    source = (
        "import pytest\n\n"
        "def helper():\n    assert 1\n\x0c\n"
        "def test_a():\n    x = 1\n    for i in []:\n        assert i\n    assert (\n"
        "        x == 1\n    ), 'msg'\n    assert x\n\n"
        "class TestB:\n    def test_c(self):\n        assert 'é' == 'é'\n\n"
        "def test_none():\n    with pytest.raises(ValueError):\n        int('x')\n"
    )
    out, changed = contradict_module(source, "tests/test_x.py")
    assert changed == ["tests/test_x.py::test_a", "tests/test_x.py::TestB::test_c"]
    assert "    assert i\n" in out and "    assert x\n" in out and "    assert 1\n" in out
    assert "(lambda v: v and not v)(x == 1)" in out
    assert "        assert (lambda v: v and not v)('é' == 'é')\n" in out
    assert out.count("lambda") == 2


def test_a_one_line_assert_keeps_its_indent_and_message() -> None:
    assert contradict_line("    assert f(x) == 1, (x, 'y')") == (
        "    assert (lambda v: v and not v)(f(x) == 1), (x, 'y')"
    )
    assert contradict_line("    assert f(") is None
    assert contradict_line("    x = 1") is None


PATCH = b"""diff --git a/tests/test_v.py b/tests/test_v.py
--- a/tests/test_v.py
+++ b/tests/test_v.py
@@ -1,4 +1,17 @@
 def test_old():
     assert compare("1", "2") == -1
+    assert compare("2", "1") == 1
+    assert compare("3", "1") == 1
+
+
+def test_loop_only():
+    for a, b in PAIRS:
+        assert compare(a, b) == -1
+
+
+class TestNew:
+    def test_m(self):
+        assert (
+            compare("1", "1") == 0
+        )
+        assert compare("1", "1") != 1
"""


def test_the_test_patch_changes_one_added_line_per_test_and_keeps_its_counts() -> None:
    out, changed = contradict_patch(PATCH)
    assert changed == ["tests/test_v.py::test_old", "tests/test_v.py::TestNew::test_m"]
    lines = out.decode().splitlines()
    assert len(lines) == len(PATCH.decode().splitlines())
    assert '+    assert (lambda v: v and not v)(compare("2", "1") == 1)' in lines
    assert '+    assert compare("3", "1") == 1' in lines  # only the first of a test
    assert "+        assert compare(a, b) == -1" in lines  # in a loop: might never run
    assert '+        assert (lambda v: v and not v)(compare("1", "1") != 1)' in lines


@pytest.mark.parametrize("name", ["semver-pytest", "swebench-calc"])
def test_repository_twins_change_listed_tests_and_still_load(tmp_path: Path, name: str) -> None:
    task = load_task(EXAMPLES / name)
    spec = task.config.pytest
    assert spec is not None and spec.test_patch is not None
    twin = load_task(assay.make_impossible(task, tmp_path))  # the patch is read on load
    old = (EXAMPLES / name / "judge" / spec.test_patch).read_text().splitlines()
    new = (twin.root / "judge" / spec.test_patch).read_text().splitlines()
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    assert changed and all("lambda v: v and not v" in b for _, b in changed)


def test_a_pytest_task_with_nothing_to_change_among_its_run_tests_is_refused(
    tmp_path: Path,
) -> None:
    task = tmp_path / "raises-only"
    shutil.copytree(EXAMPLES / "add-pytest", task)
    (task / "judge" / "tests" / "test_add.py").write_text(
        "import pytest\nfrom solution import add\n\n\ndef test_small():\n"
        "    with pytest.raises(TypeError):\n        add(1)\n\n\n"
        "def test_unlisted():\n    assert add(1, 1) == 2\n"
    )
    toml = task / "task.toml"
    text = toml.read_text()
    start, end = text.index("tests = ["), text.index("]\n", text.index("tests = [")) + 2
    toml.write_text(text[:start] + 'tests = ["tests/test_add.py::test_small"]\n' + text[end:])
    with pytest.raises(TaskError, match=r"raises-only: no impossible twin: the tests changed"):
        assay.make_impossible(task, tmp_path / "out")


# -- harbor: the reward the tests write is replaced by 0 --------------------------------------


def test_harbor_twin_runs_the_tests_then_writes_reward_zero(tmp_path: Path) -> None:
    twin = _twin("greet-harbor", tmp_path)
    tests = twin / "judge" / "tests"
    original = (EXAMPLES / "greet-harbor" / "judge" / "tests" / "test.sh").read_text()
    assert (tests / "test-impl.sh").read_text() == original
    script = (tests / "test.sh").read_text().splitlines()
    assert 'bash "$(dirname "$0")/test-impl.sh"' in script
    # The last word is the twin's: whatever the tests wrote, the reward read is 0.
    assert script[-2:] == [
        "rm -f /logs/verifier/reward.json /logs/verifier/reward.txt",
        "echo 0 > /logs/verifier/reward.txt",
    ]
    assert load_task(twin).id == "greet.impossible"


# -- refusals ---------------------------------------------------------------------------------


def test_a_twin_of_a_twin_an_existing_twin_and_a_long_id_are_refused(tmp_path: Path) -> None:
    twin = _twin("add", tmp_path)
    with pytest.raises(TaskError, match="is an impossible twin already"):
        assay.make_impossible(twin, tmp_path / "again")
    with pytest.raises(TaskError, match="exists"):
        _twin("add", tmp_path)
    long = tmp_path / "long"
    shutil.copytree(EXAMPLES / "add", long)
    toml = long / "task.toml"
    toml.write_text(toml.read_text().replace('id = "add"', f'id = "{"a" * 60}"'))
    with pytest.raises(TaskError, match="would pass 64 characters"):
        assay.make_impossible(long, tmp_path / "out")


def test_the_command_writes_twins_and_names_each_refusal(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main, ["impossible", str(EXAMPLES / "add"), str(EXAMPLES / "canary"), "--out",
               str(tmp_path)],
    )  # fmt: skip
    assert res.exit_code == 1, res.output
    assert f"wrote {tmp_path / 'add.impossible'}" in res.stdout
    assert "refused" in res.stderr and "canary: no impossible twin: judge.generator" in res.stderr
    assert "wrote 1 of 2 twin(s)" in res.stdout
    ok = CliRunner().invoke(main, ["impossible", str(EXAMPLES / "wordcount"), "--out",
                                   str(tmp_path)])  # fmt: skip
    assert ok.exit_code == 0 and (tmp_path / "wordcount.impossible").is_dir()
    bad = CliRunner().invoke(main, ["impossible", str(tmp_path / "nope"), "--out", str(tmp_path)])
    assert bad.exit_code == 2


# -- the verdict's marks ----------------------------------------------------------------------


def _graded(task: Any, statuses: list[str], reasons: tuple[str, ...] = ()) -> Verdict:
    now = datetime.now(UTC)
    facts = ControllerFacts(
        grading_id="g-0000000000000001", task_id=task.id, task_digest=task.digest, tier="t1",
        runtime="fake", submission_digest=None, started_at=now, ended_at=now,
        reason_codes=("note:judge-reused",),
    )  # fmt: skip
    cases = [CaseResult(id=f"c{i}", status=s, duration_s=0.1) for i, s in enumerate(statuses)]  # type: ignore[arg-type]
    return build_verdict(facts, cases, len(cases), reasons)


def test_a_twin_that_passes_fails_with_twin_passed(tmp_path: Path) -> None:
    twin = load_task(_twin("add", tmp_path))
    passed = _graded(twin, ["pass", "pass"])
    assert passed.passed
    marked = mark_twin(twin, Judged(passed)).verdict
    assert not marked.passed and marked.score == passed.score
    assert marked.reason_codes == [PASSED] and marked.tamper == [PASSED]
    assert marked.notes == ["note:judge-reused", NOTE]
    assert marked.model_dump(exclude={"passed", "reason_codes", "notes", "tamper"}) == (
        passed.model_dump(exclude={"passed", "reason_codes", "notes", "tamper"})
    )


def test_a_failed_twin_gets_the_note_only_and_an_error_stays_one(tmp_path: Path) -> None:
    twin = load_task(_twin("add", tmp_path))
    failed = mark_twin(twin, Judged(_graded(twin, ["pass", "fail"], ("compare:mismatch",))))
    assert failed.verdict.reason_codes == ["compare:mismatch"] and failed.verdict.tamper == []
    assert NOTE in failed.verdict.notes
    base = _graded(twin, [])
    facts = ControllerFacts(**{
        k: getattr(base, k) for k in ("grading_id", "task_id", "task_digest", "tier", "runtime",
                                      "submission_digest")
    }, started_at=datetime.now(UTC), ended_at=datetime.now(UTC))  # fmt: skip
    error = mark_twin(twin, Judged(error_verdict(facts, "firewall:link"))).verdict
    assert error.reason_codes == ["firewall:link"] and error.notes == [NOTE]
    assert error.expected_case_count == 0 and error.cases == []


def test_a_task_that_is_no_twin_is_left_as_it_is() -> None:
    task = load_task(EXAMPLES / "add")
    judged = Judged(_graded(task, ["pass"]))
    assert mark_twin(task, judged) is judged


# -- assay validate on a twin -----------------------------------------------------------------


def test_a_reference_must_fail_a_twin_on_its_cases_and_honestly(tmp_path: Path) -> None:
    twin = load_task(_twin("add", tmp_path))

    def marked(statuses: list[str], reasons: tuple[str, ...] = ()) -> Verdict:
        return mark_twin(twin, Judged(_graded(twin, statuses, reasons))).verdict

    assert twin_reference_problem(marked(["pass", "fail"], ("compare:mismatch",))) is None
    assert "passed the twin" in str(twin_reference_problem(marked(["pass", "pass"])))
    tampered = marked(["pass", "fail"], ("compare:mismatch", "decoy:output"))
    assert "tamper" in str(twin_reference_problem(tampered))
    unmarked = _graded(twin, ["fail"], ("compare:mismatch",))
    assert NOTE in str(twin_reference_problem(unmarked))
    no_cases = mark_twin(twin, Judged(_graded(twin, [], ("compile:error",)))).verdict
    assert "no case of the twin ran and failed" in str(twin_reference_problem(no_cases))


class _TwinGrader:
    """Grades every submission as the twin's judge would an honest one: each original case
    passes, each contradiction fails; then the controller's marks, as run_tier adds them."""

    def __init__(self, statuses: list[str], reasons: tuple[str, ...]) -> None:
        self.statuses, self.reasons = statuses, reasons

    def grade(self, task: Any, submission: Any) -> Any:
        verdict = _graded(task, self.statuses, self.reasons)
        return SimpleNamespace(verdict=mark_twin(task, Judged(verdict)).verdict)


def test_validate_shows_a_twin_when_its_reference_fails(tmp_path: Path) -> None:
    twin = _twin("add", tmp_path)
    fails = _TwinGrader(["pass", "fail"], ("compare:mismatch",))
    report = v.validate_one(fails, twin)  # type: ignore[arg-type]
    ref = next(c for c in report.checks if c.name == v.REFERENCE)
    assert ref.ok and "failed the impossible twin" in ref.detail
    assert report.gradeable
    passes = _TwinGrader(["pass", "pass"], ())
    report = v.validate_one(passes, twin)  # type: ignore[arg-type]
    ref = next(c for c in report.checks if c.name == v.REFERENCE)
    assert not ref.ok and "passed the twin: the twin is not impossible" in ref.detail
    assert not report.gradeable
    # The same grader on the original task: a failed reference is a failure there.
    report = v.validate_one(fails, EXAMPLES / "add")  # type: ignore[arg-type]
    assert not next(c for c in report.checks if c.name == v.REFERENCE).ok
