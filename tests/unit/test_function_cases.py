"""Function-task case files and the call path, without containers: bad case files fail at load
time (exit 2, naming file, case and place in the value); call.py passes keyword arguments and
marks unencodable results; task.toml comparator keys."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e import EXAMPLES

from assay._incontainer import values as V
from assay._internal.model.task import load_task
from assay.errors import TaskError

CALL = Path(__file__).resolve().parents[2] / "src/assay/_incontainer/call.py"


def task_with_cases(tmp_path: Path, cases: Any, toml_extra: str = "") -> Path:
    root = tmp_path / "add"
    shutil.copytree(EXAMPLES / "add", root)
    raw = cases if isinstance(cases, str) else json.dumps(cases)
    (root / "judge" / "cases.json").write_text(raw)
    if toml_extra:
        toml = root / "task.toml"
        toml.write_text(toml.read_text().replace('comparator = "exact"\n', toml_extra))
    return root


BAD = [
    ('[{"id": "a", "input": [{"$foo": 1}], "expected": 1}]', "case 'a'", "input[0]['$foo']", "unknown tag"),
    ('[{"id": "a", "input": [], "expected": {"$tuple": "x"}}]', "case 'a'", "expected['$tuple']", "takes an array"),
    ('[{"id": "a", "input": [NaN], "expected": 1}]', "case 'a'", "input[0]", "bare NaN"),
    ('[{"id": "a", "input": [], "expected": 1}, {"id": "b", "input": [], "expected": [' + "[" * 70 + "]" * 70 + "]}]",
     "case 'b'", "expected" + "[0]" * 64, "more than 64 nested containers"),
    ('[{"id": "a", "input": [], "expected": {"$int": "0x' + "f" * 300000 + '"}}]', "case 'a'", "expected['$int']",
     "more than 1048576 bits"),
    ('[{"id": "a", "input": 5, "expected": 1}]', "case 'a'", "input", "list of arguments"),
    ('[{"id": "a", "input": [], "expected": 1, "comparator": "fuzzy"}]', "case 'a'", "", "unknown comparator"),
    ('[{"id": "a", "input": [], "expected": 1, "comparator": "custom"}]', "case 'a'", "", "needs judge.custom"),
    ('[{"id": "a", "input": [], "expected": 1, "abs_tol": -1}]', "case 'a'", "", "abs_tol"),
    ('[{"id": "a", "input": [], "expected": 1, "extra": 1}]', "case 'a'", "", "unknown key 'extra'"),
    ('[{"id": "a", "input": []}]', "case 'a'", "", "missing key 'expected'"),
    ('[{"id": "a", "input": [], "expected": 1}, {"id": "a", "input": [], "expected": 1}]', "case 'a'", "",
     "duplicate id"),
    ("[]", "", "", "non-empty"),
]  # fmt: skip


@pytest.mark.parametrize(("cases", "case", "path", "msg"), BAD, ids=[b[3] for b in BAD])
def test_bad_case_file_is_refused_naming_file_case_and_path(
    tmp_path: Path, cases: str, case: str, path: str, msg: str
) -> None:
    root = task_with_cases(tmp_path, cases)
    with pytest.raises(TaskError) as err:
        load_task(root)
    text = str(err.value)
    assert str(root / "judge" / "cases.json") in text
    assert case in text and path in text and msg in text
    assert err.value.exit_code == 2


def test_bad_case_file_exits_2_on_the_command_line(tmp_path: Path) -> None:
    root = task_with_cases(
        tmp_path, '[{"id": "c1", "input": [{"$tuple": [1, NaN]}], "expected": 1}]'
    )
    p = subprocess.run(
        [sys.executable, "-m", "assay", "grade", str(root), "--submission", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 2, p.stderr
    assert "cases.json" in p.stderr and "'c1'" in p.stderr and "input[0]['$tuple'][1]" in p.stderr


def test_tagged_cases_and_per_case_comparators_load(tmp_path: Path) -> None:
    cases = [
        {"id": "t", "input": {"args": [{"$tuple": [1, 2]}], "kwargs": {"b": {"$bytes": "aGk="}}},
         "expected": {"$dict": [[1, "a"]]}},
        {"id": "f", "input": [], "expected": 1.5, "comparator": "float", "abs_tol": 0.1, "rel_tol": 0},
        {"id": "y", "input": [], "expected": True, "comparator": "truthy"},
    ]  # fmt: skip
    assert load_task(task_with_cases(tmp_path, cases)).id == "add"


def test_tolerance_keys(tmp_path: Path) -> None:
    root = task_with_cases(tmp_path, [{"id": "a", "input": [], "expected": 1}],
                           'comparator = "float"\ntolerance = 0.5\n')  # fmt: skip
    assert load_task(root).config.judge.tolerances == (0.5, 0.5)  # type: ignore[union-attr]
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace("tolerance = 0.5", "rel_tol = 0.0\nabs_tol = 1e-6"))
    assert load_task(root).config.judge.tolerances == (0.0, 1e-6)  # type: ignore[union-attr]
    toml.write_text(toml.read_text().replace("rel_tol = 0.0", "tolerance = 0.1"))
    with pytest.raises(TaskError, match="not both"):
        load_task(root)


def test_custom_without_its_module_is_refused(tmp_path: Path) -> None:
    root = task_with_cases(
        tmp_path, [{"id": "a", "input": [], "expected": 1}], 'comparator = "custom"\n'
    )
    with pytest.raises(TaskError, match=r"needs judge\.custom"):
        load_task(root)


# call.py (the candidate side of the encoding) -----------------------------------------------


def call(tmp_path: Path, source: str, wire: Any) -> bytes:
    (tmp_path / "cand").mkdir(exist_ok=True)
    (tmp_path / "cand" / "sol.py").write_text(source)
    r, w = os.pipe()
    p = subprocess.run(
        [sys.executable, str(CALL), "sol:f", str(w)],
        input=json.dumps(wire).encode(), pass_fds=(w,), capture_output=True, timeout=60,
        env={"PYTHONPATH": str(tmp_path / "cand"), "PATH": os.environ["PATH"]},
    )  # fmt: skip
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        out = fh.read()
    assert p.returncode == 0, p.stderr
    return out


def test_call_passes_typed_args_and_kwargs(tmp_path: Path) -> None:
    src = "def f(a, *, b):\n    return (type(a).__name__, type(b).__name__, a, b)\n"
    wire = {"args": [{"$tuple": [1, 2]}], "kwargs": {"b": {"$set": [1]}}}
    assert V.loads(call(tmp_path, src, wire), 1 << 20) == ("tuple", "set", (1, 2), {1})


@pytest.mark.parametrize(
    "body",
    ["(i for i in [])", "type('Own', (), {})()", "(lambda x: (x.append(x), x)[1])([])"],
    ids=["generator", "own-class", "recursive-list"],
)
def test_call_marks_unencodable_results(tmp_path: Path, body: str) -> None:
    out = call(tmp_path, f"def f():\n    return {body}\n", [])
    assert V.unencodable_reason(json.loads(out)) is not None
