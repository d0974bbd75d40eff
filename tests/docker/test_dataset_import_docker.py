"""`assay import apps|taco|codecontests|livecodebench` end to end on real containers (runc):
the fixtures (tests/fixtures/datasets) are imported, and every imported task grades its
correct solutions as passed and a wrong one as failed on a wrong answer: stdio tasks in Python,
C++ and Java (CodeContests), APPS/TACO fn_name function tasks, and the LeetCode `class
Solution` tasks of APPS and LiveCodeBench (entry `solution:Solution.<method>`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import assay
from assay.cli import main

pytestmark = pytest.mark.docker

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"
DATASETS = ("apps", "taco", "codecontests", "livecodebench")

# (dataset, task, solution, passes): every imported task, its correct solutions in every
# language the fixtures hold, and one wrong solution.
CASES = [
    ("apps", "apps-4001", "correct-0", True),  # stdio, tokens
    ("apps", "apps-4001", "wrong-1", False),
    ("apps", "apps-4002", "correct-0", True),  # stdio, numbers
    ("apps", "apps-4002", "wrong-1", False),
    ("apps", "apps-4003", "correct-0", True),  # fn_name: a module-level function
    ("apps", "apps-4003", "wrong-1", False),
    ("apps", "apps-4004", "correct-0", True),  # fn_name of class Solution: a method
    ("apps", "apps-4004", "wrong-1", False),
    ("taco", "taco-0", "correct-0", True),
    ("taco", "taco-0", "wrong-1", False),
    ("taco", "taco-1", "correct-0", True),
    ("taco", "taco-1", "wrong-1", False),
    ("codecontests", "cc-1000_a-sum-of-two", "correct-0", True),  # Python
    ("codecontests", "cc-1000_a-sum-of-two", "correct-1", True),  # C++
    ("codecontests", "cc-1000_a-sum-of-two", "wrong-0", False),
    ("codecontests", "cc-1000_b-circle-area", "correct-0", True),  # Python
    ("codecontests", "cc-1000_b-circle-area", "correct-1", True),  # Java
    ("codecontests", "cc-1000_b-circle-area", "wrong-0", False),
    ("codecontests", "cc-1000_c-even-or-odd", "correct-0", True),  # tokens-ci
    ("codecontests", "cc-1000_c-even-or-odd", "wrong-0", False),
    ("livecodebench", "lcb-abc999_a", "correct-1", True),
    ("livecodebench", "lcb-abc999_a", "wrong-1", False),
    ("livecodebench", "lcb-1999_a", "correct-1", True),
    ("livecodebench", "lcb-1999_a", "wrong-1", False),
    ("livecodebench", "lcb-1", "correct-1", True),  # functional: Solution().twoSum
    ("livecodebench", "lcb-1", "correct-2", True),  # returns a tuple: a list to LCB too
    ("livecodebench", "lcb-1", "wrong-1", False),
]


@pytest.fixture(scope="module")
def grader() -> Iterator[assay.Grader]:
    g = assay.Grader(oci_runtime="runc")
    yield g
    g.close()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each fixture imported by the CLI into its own directory (the hostile LCB row refused)."""
    root = tmp_path_factory.mktemp("imported")
    out = {}
    for name in DATASETS:
        out[name] = root / name
        r = CliRunner().invoke(main, ["import", name, str(FIXTURES / f"{name}.jsonl"), "--out",
                                      str(out[name]), "--solutions",
                                      str(FIXTURES / "solutions.json")])  # fmt: skip
        report = json.loads((out[name] / "import-report.json").read_text())
        refused = [row["id"] for row in report["rows"] if row["status"] == "refused"]
        assert refused == (["lcb-abc999_z"] if name == "livecodebench" else []), r.output
    return out


def test_every_imported_task_is_graded(imported: dict[str, Path]) -> None:
    tasks = {(d, p.parent.name) for d, out in imported.items() for p in out.glob("*/task.toml")}
    assert tasks == {(d, t) for d, t, _, _ in CASES}
    kinds = {t: assay.load_task(imported[d] / t).config.kind for d, t in tasks}
    assert kinds["apps-4004"] == kinds["lcb-1"] == "function"


@pytest.mark.parametrize(("dataset", "task", "solution", "passes"), CASES,
                         ids=[f"{t}-{s}" for _, t, s, _ in CASES])  # fmt: skip
def test_imported_task_grades_its_solution(
    grader: assay.Grader,
    imported: dict[str, Path],
    dataset: str,
    task: str,
    solution: str,
    passes: bool,
) -> None:
    task_dir = imported[dataset] / task
    sol = task_dir / "solutions" / solution
    assert sol.is_dir(), sorted(p.name for p in (task_dir / "solutions").iterdir())
    verdict = grader.grade(task_dir, sol).verdict
    codes = verdict.reason_codes
    if passes:
        assert verdict.passed and verdict.score == 1.0, (codes, verdict.cases)
        return
    assert not verdict.passed and verdict.score < 1.0, codes
    # Failed on the answer, not on a crash, a compile error or a missing entry.
    assert codes and all(c.startswith("compare:") for c in codes), (codes, verdict.cases)
