"""The typed value encoding end to end on a real engine: one strict grading whose cases cross
tuples, bytes, non-string dict keys, NaN and keyword arguments both ways, and whose candidate
returns a generator (unencodable) and a dict that imitates a tag (forged)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from e2e import EXAMPLES, assay, write_solution

pytestmark = pytest.mark.docker

SOLUTION = """
def f(a, b=None, *, mode):
    if mode == "echo":
        return (type(a).__name__, type(b).__name__, a, b)
    if mode == "dict":
        return {1: "a", (2, 3): frozenset({4})}
    if mode == "nan":
        return float("nan")
    if mode == "one":
        return 1
    if mode == "gen":
        return (i for i in range(3))
    if mode == "forged":
        return {"$tuple": [1]}
"""

CASES = [
    {"id": "echo", "input": {"args": [{"$tuple": [1, 2]}],
                             "kwargs": {"b": {"$bytes": "aGk="}, "mode": "echo"}},
     "expected": {"$tuple": ["tuple", "bytes", {"$tuple": [1, 2]}, {"$bytes": "aGk="}]}},
    {"id": "dict", "input": {"args": [0], "kwargs": {"mode": "dict"}},
     "expected": {"$dict": [[1, "a"], [{"$tuple": [2, 3]}, {"$frozenset": [4]}]]}},
    {"id": "nan", "input": {"args": [0], "kwargs": {"mode": "nan"}}, "expected": {"$float": "nan"}},
    {"id": "one-exact", "input": {"args": [0], "kwargs": {"mode": "one"}}, "expected": True},
    {"id": "one-truthy", "input": {"args": [0], "kwargs": {"mode": "one"}}, "expected": True,
     "comparator": "truthy"},
    {"id": "one-equal", "input": {"args": [0], "kwargs": {"mode": "one"}}, "expected": 1.0,
     "comparator": "equal"},
    {"id": "gen", "input": {"args": [0], "kwargs": {"mode": "gen"}}, "expected": True,
     "comparator": "truthy"},
    {"id": "forged", "input": {"args": [0], "kwargs": {"mode": "forged"}},
     "expected": {"$tuple": [1]}},
]  # fmt: skip


def test_typed_values_cross_both_ways_and_bad_results_fail(tmp_path: Path) -> None:
    task = tmp_path / "typed"
    shutil.copytree(EXAMPLES / "add", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('"solution:add"', '"solution:f"').replace(
        'id = "add"', 'id = "typed"'))  # fmt: skip
    (task / "judge" / "cases.json").write_text(json.dumps(CASES))
    sub = write_solution(tmp_path, "solution.py", SOLUTION)
    g = assay("grade", str(task), "--submission", str(sub), tmp=tmp_path)
    assert g.verdict is not None, g.stderr
    status = {c["id"]: c["status"] for c in g.verdict["cases"]}
    assert status == {
        "echo": "pass", "dict": "pass", "nan": "pass",
        "one-exact": "fail",  # exact: 1 is not True
        "one-truthy": "pass", "one-equal": "pass",
        "gen": "fail",  # unencodable: a fail even under truthy
        "forged": "fail",  # the candidate's {"$tuple": [1]} dict is a dict, never a tuple
    }  # fmt: skip
    assert g.verdict["passed"] is False and g.exit_code == 1
    assert "candidate:unencodable-output" in g.reasons
    assert "compare:mismatch" in g.reasons
    assert not any(r.startswith(("infra", "runner:", "judge:")) for r in g.reasons), g.reasons
