"""A bytecode cache planted beside a judge file, on a real engine (issue 23, item 7c).

The canary's expected values are secret random integers drawn per grading, so a passing
verdict on it is proof the grader was fooled. A cached `generate.pyc` (unchecked-hash, so
Python loads it whatever `generate.py` holds) that emits known values made the judge run it,
and the verdict passed while naming the same task digest as the untouched canary.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from e2e import EXAMPLES, assay, write_solution
from helpers.pyc import FAKE_GENERATOR, plant_unchecked_pyc

pytestmark = pytest.mark.docker

KNOWS_THE_FAKE = "def solve(x):\n    return x * 7\n"


def test_a_planted_judge_pyc_is_refused_before_any_grading(tmp_path: Path) -> None:
    task = tmp_path / "canary"
    shutil.copytree(EXAMPLES / "canary", task)
    for d in (tmp_path, task, task / "judge"):
        d.chmod(0o755)
    plant_unchecked_pyc(task, "judge/generate.py", FAKE_GENERATOR)
    sub = write_solution(tmp_path, "solution.py", KNOWS_THE_FAKE)
    g = assay("grade", str(task), "--submission", str(sub), "--tier", "t3", tmp=tmp_path)
    assert g.verdict is None or not g.verdict["passed"], g.verdict
    assert g.exit_code == 2, (g.exit_code, g.stderr)
    assert "compiled Python in the task (judge/__pycache__)" in g.stderr, g.stderr
