"""Impossible twins graded for real (docs/tamper.md, "Impossible twins").

- For one example of each kind (function, stdio, pytest, repository, Harbor): the reference
  solution passes the task and fails its twin, with `note:impossible-twin` and no tamper code,
  in a signed verdict.
- A cheating submission (corpus/monkeypatch-pytest-reports' solution, with an `add` that
  returns 0) passes add-pytest on T1 and T2, as the proof matrix says it does; on the twin it
  shows `twin:passed` there, the proof a twin catches what passed; the strict tier blocks
  it on add's twin (no twin:passed). The same for Harbor: corpus/harbor-late-reward-writer
  passes canary-harbor's twin on T1 (`twin:passed`), and the harbor tier blocks it.
- Every example that has a reference solution: the reference fails its twin the same way
  (canary, whose cases come from a generator, is refused by name:
  tests/unit/test_impossible.py), and `assay validate` on a twin says so.

Kept lean: one batch of gradings in parallel (two cores here), one validation.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from e2e import EXAMPLES, ROOT

import assay
from assay._internal.api.taskscan import twin_reference_problem
from assay._internal.api.validate import REFERENCE, find_references
from assay._internal.tiers.core.twin import NOTE, PASSED

# One worker: the module's twins and gradings (about 45 s) are made once, not per worker.
pytestmark = [pytest.mark.docker, pytest.mark.xdist_group("impossible")]

KINDS = ["add", "stdio-sort", "add-pytest", "semver-pytest", "greet-harbor"]
"""One example of each kind: function, stdio, pytest, repository, Harbor."""
CORPUS = ROOT / "corpus"


@pytest.fixture(scope="module")
def grader(tmp_path_factory: pytest.TempPathFactory, base_image: str) -> Iterator[assay.Grader]:
    key = tmp_path_factory.mktemp("key") / "signing.key"
    with assay.Grader(key=key, image=base_image) as g:
        yield g


WITH_REFERENCE = [
    d.name for d in sorted(EXAMPLES.iterdir()) if (d / "task.toml").is_file() and find_references(d)
]


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("twins")
    for task in [*WITH_REFERENCE, "canary-harbor"]:
        assay.make_impossible(EXAMPLES / task, out)
    return out


def _twin_dir(twins: Path, task: str) -> Path:
    return twins / f"{assay.load_task(EXAMPLES / task).id}.impossible"


def _cheat_add() -> dict[str, str]:
    """corpus/monkeypatch-pytest-reports' solution (every pytest report says passed), with an
    add() that is wrong, so the tests collect and nothing honest could pass."""
    attack = (CORPUS / "monkeypatch-pytest-reports" / "agent" / "solution.py").read_text()
    return {"solution.py": attack + "\n\ndef add(a, b):\n    return 0\n"}


def _late_writer() -> assay.Agent:
    agent = CORPUS / "harbor-late-reward-writer" / "agent"
    return assay.Agent("sh /agent/run.sh", directory=agent)


@pytest.fixture(scope="module")
def graded(grader: assay.Grader, twins: Path) -> dict[str, assay.Verdict]:
    """Every grading of this file's first tests, at once; each verdict checked against its
    signed envelope."""
    jobs: dict[str, tuple[Path, Any, str | None]] = {}
    for task in WITH_REFERENCE:
        [(_, reference), *_] = find_references(EXAMPLES / task)
        jobs[f"{task}:twin"] = (_twin_dir(twins, task), reference, None)
        if task in KINDS:
            jobs[f"{task}:task"] = (EXAMPLES / task, reference, None)
    for tier in ("t1", "t2"):
        jobs[f"cheat:add-pytest:{tier}"] = (EXAMPLES / "add-pytest", _cheat_add(), tier)
        jobs[f"cheat:add-pytest-twin:{tier}"] = (_twin_dir(twins, "add-pytest"), _cheat_add(), tier)
    jobs["cheat:add-twin:t3"] = (_twin_dir(twins, "add"), _cheat_add(), "t3")
    for tier in ("t1", "harbor"):
        jobs[f"cheat:canary-harbor-twin:{tier}"] = (
            _twin_dir(twins, "canary-harbor"), _late_writer(), tier,
        )  # fmt: skip

    def grade(name: str) -> assay.Verdict:
        task, submission, tier = jobs[name]
        result = grader.grade(task, submission, tier=tier, unsafe_baseline=tier == "t1")
        assert assay.verify(result.envelope, grader.public_key) == result.verdict
        return result.verdict

    with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
        return dict(zip(jobs, pool.map(grade, jobs), strict=True))


@pytest.mark.parametrize("task", KINDS)
def test_the_reference_passes_the_task_and_fails_its_twin(
    graded: dict[str, assay.Verdict], task: str
) -> None:
    original, twin = graded[f"{task}:task"], graded[f"{task}:twin"]
    assert original.passed and NOTE not in original.notes, original
    assert not twin.passed, twin
    assert NOTE in twin.notes and twin.tamper == [] and PASSED not in twin.reason_codes
    assert any(c.status != "pass" for c in twin.cases)
    assert twin.task_id.endswith(".impossible")


@pytest.mark.parametrize("tier", ["t1", "t2"])
def test_a_cheat_that_passes_a_tier_shows_twin_passed_on_the_twin(
    graded: dict[str, assay.Verdict], tier: str
) -> None:
    assert graded[f"cheat:add-pytest:{tier}"].passed  # the exploit, live on this tier
    twin = graded[f"cheat:add-pytest-twin:{tier}"]
    # Every case passed on a task no solution can pass: proof of cheating, in the verdict.
    assert all(c.status == "pass" for c in twin.cases) and twin.cases
    assert not twin.passed and twin.tamper == [PASSED] and NOTE in twin.notes


def test_the_strict_tier_blocks_the_same_cheat_on_the_twin(
    graded: dict[str, assay.Verdict],
) -> None:
    strict = graded["cheat:add-twin:t3"]
    assert not strict.passed and PASSED not in strict.reason_codes and NOTE in strict.notes


def test_a_late_reward_writer_shows_twin_passed_where_it_wins(
    graded: dict[str, assay.Verdict],
) -> None:
    baseline = graded["cheat:canary-harbor-twin:t1"]
    assert not baseline.passed and PASSED in baseline.tamper, baseline
    harbor = graded["cheat:canary-harbor-twin:harbor"]
    assert not harbor.passed and PASSED not in harbor.reason_codes and NOTE in harbor.notes


@pytest.mark.parametrize("task", WITH_REFERENCE)
def test_every_examples_twin_fails_its_reference(
    graded: dict[str, assay.Verdict], task: str
) -> None:
    """The done-when of issue 40: every example with a reference solution has a twin, and
    that reference fails it on its cases, with the note and no tamper code."""
    twin = graded[f"{task}:twin"]
    assert twin_reference_problem(twin) is None, twin


def test_validate_shows_the_reference_failing_a_twin(grader: assay.Grader, twins: Path) -> None:
    [report] = assay.validate([_twin_dir(twins, "add")], grader=grader)
    [ref] = [c for c in report.checks if c.name == REFERENCE]
    assert ref.ok and "failed the impossible twin" in ref.detail, report.to_json()
    assert report.gradeable, report.to_json()


def test_there_is_an_example_of_each_kind_with_a_reference() -> None:
    assert len(WITH_REFERENCE) >= 15 and set(KINDS) <= set(WITH_REFERENCE)
