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
