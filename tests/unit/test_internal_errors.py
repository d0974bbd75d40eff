"""Issue 10, finding 1: an exception assay did not raise on purpose, anywhere in a grading, ends as
an infrastructure error naming `infra:internal-error` and the exception (exit 3), never as a
traceback with exit 1 (the code for FAILED), a dead batch or a dead proof matrix.

The fault is injected in the in-memory runtime: the candidate's runner "raises" the OSError the
controller met on a 4,047-byte output path. The end-to-end attack is in test_strict_docker.py.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from e2e import EXAMPLES

from assay._internal.api import grader as grading
from assay._internal.batch.run import jobs_from_dir, load_tasks, run_batch
from assay._internal.model.task import load_task
from assay._internal.proof import matrix
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.strict.grade import grade_strict
from assay.cli import main
from assay.errors import InfrastructureError, InternalError

ADD = EXAMPLES / "add"
INPUTS = json.dumps([{"id": "one", "input": [1, 2]}]).encode()


def _faulty(
    c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
) -> tuple[int, bytes, bytes]:
    if argv[2] == "/assay/judge.py" and argv[3] == "prepare":
        return 0, INPUTS, b""
    raise OSError(errno.ENAMETOOLONG, "File name too long", "/tmp/assay-g-x-output-files/...")


def _runtime() -> FakeRuntime:
    return FakeRuntime(programs={"python3": _faulty})


def test_strict_grading_turns_the_fault_into_an_internal_error_and_cleans_up() -> None:
    rt = _runtime()
    with pytest.raises(InternalError) as caught:
        grade_strict(rt, load_task(ADD), Source(path=ADD / "solutions/correct"), "img")
    err = caught.value
    assert isinstance(err, InfrastructureError) and err.exit_code == 3
    assert str(err).startswith("infra:internal-error in grading g-"), str(err)
    assert "OSError" in str(err) and err.exception_type == "OSError"
    assert isinstance(err.__cause__, OSError)
    assert rt.leftovers() == [] and rt.containers == {}


def test_grade_exits_3_naming_the_reason_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grading, "open_runtime", lambda *_, **__: _runtime())
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    out = tmp_path / "verdict.json"
    args = ["grade", str(ADD), "--submission", str(ADD / "solutions/correct"), "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 3, (result.exit_code, result.output, result.exception)
    assert "infra:internal-error" in result.output and "OSError" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_a_batch_records_the_error_and_grades_the_rest(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    for name in ("a-boom", "b-fine"):
        (subs / name).mkdir(parents=True)
        (subs / name / "solution.py").write_text("def add(a, b):\n    return a + b\n")
    jobs = jobs_from_dir(ADD, subs)

    def grade(task, submission, gid):  # type: ignore[no-untyped-def]
        if submission.name == "a-boom":
            return grade_strict(_runtime(), task, Source(path=submission), "img", gid)
        from test_strict_controller import Script

        rt = FakeRuntime(programs={"python3": Script()})
        return grade_strict(rt, task, Source(path=submission), "img", gid)

    out = tmp_path / "out"
    res = run_batch(out, jobs, load_tasks(jobs), grade, Ed25519PrivateKey.generate(), 1)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["errors"], res.tally.done) == (1, 2), summary
    (error,) = summary["error_details"]
    assert error["id"] == "a-boom" and "infra:internal-error" in error["error"], error
    assert not (out / "a-boom.dsse.json").exists() and (out / "b-fine.dsse.json").exists()


def test_the_matrix_records_an_error_row_instead_of_dying() -> None:
    ctx = matrix._Ctx(runtime_factory=_runtime, image="img", examples=EXAMPLES)
    control = matrix.Control("add-correct", "add", "solutions/correct", True)
    row = matrix._control_row(ctx, control, "t3")
    assert row.observed == "error" and "infra:internal-error" in row.reason, row
