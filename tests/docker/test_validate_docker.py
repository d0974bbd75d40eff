"""`assay validate` on the real engine: good tasks are shown gradeable, and each broken copy is
caught by the check made for it, while every other check holds (so without that check the
copy would have been taken as gradeable). Kept lean: one validation per group of tasks, run
in parallel."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e import EXAMPLES

import assay

pytestmark = pytest.mark.docker

F2P_MISSING = "tests/test_version.py::test_does_not_exist"
P2P_MOVED = "tests/test_version.py::test_parse_core"


def failed(report: assay.ValidationReport) -> list[str]:
    return [c.name for c in report.checks if not c.ok]


def check(report: assay.ValidationReport, name: str) -> assay.ValidationCheck:
    [found] = [c for c in report.checks if c.name == name]
    return found


@pytest.fixture(scope="module")
def grader(tmp_path_factory: pytest.TempPathFactory, base_image: str) -> Iterator[assay.Grader]:
    key = tmp_path_factory.mktemp("key") / "signing.key"
    with assay.Grader(key=key, image=base_image) as g:
        yield g


# -- strict tasks, through the command line ---------------------------------------------------


def _strict_copies(tmp: Path) -> dict[str, Path]:
    wrong = tmp / "add-wrong-reference"
    shutil.copytree(EXAMPLES / "add", wrong)
    shutil.rmtree(wrong / "solutions" / "correct")
    shutil.copytree(EXAMPLES / "add" / "solutions" / "wrong", wrong / "solutions" / "correct")
    leak = tmp / "add-leak"
    shutil.copytree(EXAMPLES / "add", leak)
    shutil.copyfile(leak / "judge" / "cases.json", leak / "inputs" / "cases.json")
    return {"wrong": wrong, "leak": leak}


@pytest.fixture(scope="module")
def strict_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, dict], str]:  # type: ignore[type-arg]
    tmp = tmp_path_factory.mktemp("validate-strict")
    copies = _strict_copies(tmp)
    out = tmp / "validate.json"
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp / "config"))
    env.setdefault("ASSAY_BASE_IMAGE", "assay-base:latest")
    args = [str(EXAMPLES / "add"), str(copies["wrong"]), str(copies["leak"])]
    proc = subprocess.run(
        [sys.executable, "-m", "assay", "validate", *args, "--jobs", "3", "--json", str(out)],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp,
    )  # fmt: skip
    data = json.loads(out.read_text())
    by_path = {Path(t["path"]).name: t for t in data["tasks"]}
    return proc.returncode, by_path, proc.stdout


def _failed(task: dict) -> list[str]:  # type: ignore[type-arg]
    return [c["name"] for c in task["checks"] if not c["ok"]]


def test_the_command_exits_1_when_a_task_is_not_gradeable(strict_run) -> None:  # type: ignore[no-untyped-def]
    code, _, stdout = strict_run
    assert code == 1, stdout
    assert "GRADEABLE add " in stdout and "NOT GRADEABLE add " in stdout
    assert "2 of 3 task(s) not gradeable" in stdout


def test_a_good_strict_task_is_gradeable(strict_run) -> None:  # type: ignore[no-untyped-def]
    task = strict_run[1]["add"]
    assert task["gradeable"], task
    names = [c["name"] for c in task["checks"]]
    assert names == ["loads", "no-leak", "reference", "empty-fails"]


def test_a_wrong_reference_is_caught_by_the_reference_check_alone(strict_run) -> None:  # type: ignore[no-untyped-def]
    task = strict_run[1]["add-wrong-reference"]
    assert not task["gradeable"]
    assert _failed(task) == ["reference"]  # every other check held: only this one catches it
    [ref] = [c for c in task["checks"] if c["name"] == "reference"]
    assert ref["detail"].startswith("solutions/correct: failed") and not ref["could_not_check"]


def test_a_judge_file_in_the_inputs_is_caught_by_the_leak_check_alone(strict_run) -> None:  # type: ignore[no-untyped-def]
    task = strict_run[1]["add-leak"]
    assert _failed(task) == ["no-leak"]  # the reference still passes and empty still fails
    [leak] = [c for c in task["checks"] if c["name"] == "no-leak"]
    assert "inputs/cases.json: is judge/cases.json, byte for byte" in leak["detail"]


# -- generator tasks --------------------------------------------------------------------------


def test_a_generator_that_ignores_its_seed_is_caught(grader, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fixed = tmp_path / "canary-fixed"
    shutil.copytree(EXAMPLES / "canary", fixed)
    gen = fixed / "judge" / "generate.py"
    gen.write_text(gen.read_text().replace("random.Random(seed)", "random.Random(7)"))
    # A reference that passes the fixed cases, so that only the seed check can fail.
    rng = random.Random(7)
    answers = {x: rng.getrandbits(62) for x in range(5)}
    (fixed / "solutions" / "correct").mkdir(parents=True)
    (fixed / "solutions" / "correct" / "solution.py").write_text(
        f"ANSWERS = {answers!r}\n\ndef solve(x):\n    return ANSWERS[x]\n"
    )
    canary, broken = assay.validate([EXAMPLES / "canary", fixed], grader=grader, jobs=2)
    seeds = check(canary, "generator-seeds")
    assert seeds.ok, seeds
    assert "different expected values" in seeds.detail
    assert failed(broken) == ["generator-seeds"]
    assert "gave the same 5 case(s)" in check(broken, "generator-seeds").detail


# -- repository tasks -------------------------------------------------------------------------


def _repo_copy(tmp: Path, name: str, edit: dict[str, str]) -> Path:
    task = tmp / name
    shutil.copytree(EXAMPLES / "semver-pytest", task)
    toml = task / "task.toml"
    text = toml.read_text()
    for old, new in edit.items():
        assert old in text
        text = text.replace(old, new, 1)
    toml.write_text(text)
    return task


@pytest.fixture(scope="module")
def repo_reports(grader, tmp_path_factory) -> dict[str, assay.ValidationReport]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("validate-repo")
    junk = _repo_copy(
        tmp, "semver-junk-id", {"fail_to_pass = [\n": f'fail_to_pass = [\n    "{F2P_MISSING}",\n'}
    )
    passing = _repo_copy(
        tmp,
        "semver-f2p-passes",
        {
            f'    "{P2P_MOVED}",\n': "",
            "fail_to_pass = [\n": f'fail_to_pass = [\n    "{P2P_MOVED}",\n',
        },
    )
    tasks = [EXAMPLES / "semver-pytest", junk, passing]
    reports = assay.validate(tasks, grader=grader, jobs=3)
    return {r.path.name: r for r in reports}


def test_a_repository_task_is_gradeable(repo_reports) -> None:  # type: ignore[no-untyped-def]
    report = repo_reports["semver-pytest"]
    assert report.gradeable, [str(c) for c in report.checks]
    assert [c.name for c in report.checks] == [
        "loads", "test-ids", "no-leak", "environment", "reference", "empty-fails",
        "ids-in-results", "fail-before-fix",
    ]  # fmt: skip
    assert "the unchanged repository fails" in check(report, "empty-fails").detail


def test_a_fail_to_pass_id_that_names_no_test_is_caught_by_name(repo_reports) -> None:  # type: ignore[no-untyped-def]
    report = repo_reports["semver-junk-id"]
    assert not report.gradeable
    # Well-formed, so only the reference run can tell: the id is missing from its results.
    assert check(report, "test-ids").ok
    ids = check(report, "ids-in-results")
    assert not ids.ok and not ids.could_not_check
    assert f"'{F2P_MISSING}'" in ids.detail and "missing from the reference run" in ids.detail
    # The reference fails too (pytest refuses a run naming a test it cannot find, so every
    # grading fails, naming no id), and for the same reason the unchanged repository's run
    # tells nothing about the FAIL_TO_PASS tests; only ids-in-results names the culprit.
    assert failed(report) == ["reference", "ids-in-results", "fail-before-fix"]
    assert F2P_MISSING not in check(report, "fail-before-fix").detail
    assert check(report, "fail-before-fix").could_not_check


def test_a_fail_to_pass_test_that_already_passes_is_caught_by_name(repo_reports) -> None:  # type: ignore[no-untyped-def]
    report = repo_reports["semver-f2p-passes"]
    # The reference passes and the unchanged repository still fails (on the two real
    # FAIL_TO_PASS tests): only this check sees that one of them needs no fix.
    assert failed(report) == ["fail-before-fix"]
    detail = check(report, "fail-before-fix").detail
    assert f"'{P2P_MOVED}'" in detail and "pass without the fix" in detail
