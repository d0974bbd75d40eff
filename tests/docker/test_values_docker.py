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


FLOOD = """
import json, os, sys

def f(mode):
    if mode != "flood":
        return {1, 2}
    # 43,000 ints that all hash to 0, written straight to the result channel (a Python set of
    # them would cost this process the quadratic build too): 1 MiB of hostile bytes.
    data = json.dumps({"$set": [k * (2**61 - 1) for k in range(1, 43001)]},
                      separators=(",", ":")).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(int(sys.argv[2]), view):]
    os._exit(0)
"""

FLOOD_CASES = [
    {"id": "honest", "input": ["x"], "expected": {"$set": [2, 1]}},
    *({"id": f"flood-{c}", "input": ["flood"], "expected": {"$set": [1, 2]}, "comparator": c}
      for c in ("exact", "equal", "float")),
    {"id": "flood-truthy", "input": ["flood"], "expected": True, "comparator": "truthy"},
]  # fmt: skip


def test_a_hash_collision_flood_is_graded_within_the_judges_time(tmp_path: Path) -> None:
    """Issue 23: four 1 MiB outputs of colliding ints cost the old judge about 40 s each, past
    the task's 60 s for the judge step; now each case gets its own, proper, status."""
    task = tmp_path / "flood"
    shutil.copytree(EXAMPLES / "add", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('"solution:add"', '"solution:f"').replace(
        'id = "add"', 'id = "flood"'))  # fmt: skip
    assert "total_timeout = 60.0" in toml.read_text()
    (task / "judge" / "cases.json").write_text(json.dumps(FLOOD_CASES))
    sub = write_solution(tmp_path, "solution.py", FLOOD)
    g = assay("grade", str(task), "--submission", str(sub), tmp=tmp_path)
    assert g.verdict is not None, g.stderr
    status = {c["id"]: c["status"] for c in g.verdict["cases"]}
    assert status == {
        "honest": "pass", "flood-exact": "fail", "flood-equal": "fail", "flood-float": "fail",
        "flood-truthy": "pass",
    }  # fmt: skip
    assert g.reasons == ["compare:mismatch"], g.reasons
