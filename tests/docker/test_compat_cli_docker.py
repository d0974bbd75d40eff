"""`assay grade` picks T2 for pytest tasks and refuses to run them on T3."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e import EXAMPLES, assay


@pytest.mark.docker
@pytest.mark.parametrize(
    ("task", "submission", "code"),
    [
        ("add-pytest", "solutions/correct", 0),
        ("add-pytest", "solutions/wrong", 1),
        ("canary-pytest", "attempts/honest", 1),
    ],
)
def test_pytest_task_grades_on_t2(task: str, submission: str, code: int, tmp_path: Path) -> None:
    g = assay(
        "grade",
        str(EXAMPLES / task),
        "--submission",
        str(EXAMPLES / task / submission),
        tmp=tmp_path,
    )
    assert g.exit_code == code, g.stderr
    assert g.verdict is not None and g.verdict["tier"] == "t2"
    assert g.verdict["passed"] is (code == 0)


def test_pytest_task_on_t3_is_a_usage_error(tmp_path: Path) -> None:
    task = EXAMPLES / "add-pytest"
    g = assay(
        "grade",
        str(task),
        "--tier",
        "t3",
        "--submission",
        str(task / "solutions/correct"),
        tmp=tmp_path,
    )
    assert g.exit_code == 2
    assert "never does" in g.stderr and "t2" in g.stderr


@pytest.mark.docker
@pytest.mark.parametrize("tier", ["t0", "t1"])
def test_baselines_need_the_flag_warn_and_grade(tier: str, tmp_path: Path) -> None:
    task = EXAMPLES / "add-pytest"
    sub = str(task / "solutions/correct")
    refused = assay("grade", str(task), "--tier", tier, "--submission", sub, tmp=tmp_path)
    assert refused.exit_code == 2 and "--unsafe-baseline" in refused.stderr
    g = assay(
        "grade", str(task), "--tier", tier, "--unsafe-baseline", "--submission", sub, tmp=tmp_path
    )
    assert g.exit_code == 0, g.stderr
    assert "UNSAFE baseline" in g.stderr
    assert g.verdict is not None and g.verdict["tier"] == tier
