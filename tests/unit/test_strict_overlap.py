"""The strict tier's overlapped phases, on the fake runtime: the runner only ever starts after
the judge's inputs are in place, and every exit path (a failing judge, an engine error in the
helper thread, a refused submission) leaves nothing behind."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from assay._internal.model.task import load_task
from assay._internal.runtime import ContainerSpec, RuntimeError_
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.core.overlap import Background
from assay._internal.tiers.strict.grade import grade_strict

# A generator task: its judge prepares the inputs while the candidate's container starts (a
# fixed cases file's inputs are made by the controller before either starts).
GEN = Path(__file__).resolve().parents[2] / "examples" / "canary"
CASES = [{"id": f"c{i}", "args": [i, i]} for i in range(3)]


class Judge:
    """Stands in for python3 in the judge and candidate containers."""

    def __init__(self, prepare_exit: int = 0) -> None:
        self.prepare_exit = prepare_exit
        self.runner_saw_inputs: list[bool] = []

    def __call__(
        self, c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        if "prepare" in argv:
            time.sleep(0.05)  # slower than intake: the candidate container exists before it ends
            return self.prepare_exit, json.dumps(CASES).encode(), b""
        if "/assay/runner.py" in argv:
            inputs = next(b.source for b in c.spec.binds if b.target == "/inputs")
            self.runner_saw_inputs.append((inputs / "cases.json").is_file())
            return 0, b"{}", b""
        report = {"cases": [{"id": x["id"], "status": "pass", "duration_s": 0.0} for x in CASES]}
        return 0, json.dumps(report).encode(), b""


class FailingJudgeCreate(FakeRuntime):
    def create(self, spec: ContainerSpec) -> str:
        if spec.role == "judge":
            time.sleep(0.05)
            raise RuntimeError_("engine refused the judge")
        return super().create(spec)


def _source(tmp: Path, text: str = "def add(a, b):\n    return a + b\n") -> Source:
    (tmp / "sub").mkdir()
    (tmp / "sub" / "solution.py").write_text(text)
    return Source(path=tmp / "sub")


def test_runner_starts_only_after_the_inputs_exist(tmp_path: Path) -> None:
    judge = Judge()
    rt = FakeRuntime({"python3": judge})
    v = grade_strict(rt, load_task(GEN), _source(tmp_path), "img").verdict
    assert v.passed, v.reason_codes
    assert judge.runner_saw_inputs == [True]
    assert {"judge_prepare", "candidate_start", "candidate", "judge_compare"} <= set(v.timings)
    assert rt.leftovers() == []


def test_failed_prepare_is_no_verdict_and_removes_the_started_candidate(tmp_path: Path) -> None:
    # No candidate output exists when prepare runs: a signed fail would blame the submission.
    judge = Judge(prepare_exit=1)
    rt = FakeRuntime({"python3": judge})
    with pytest.raises(RuntimeError_, match="prepare step failed"):
        grade_strict(rt, load_task(GEN), _source(tmp_path), "img")
    assert judge.runner_saw_inputs == []  # the candidate never ran
    assert rt.leftovers() == []


def test_engine_error_in_the_judge_thread_raises_and_leaves_nothing(tmp_path: Path) -> None:
    rt = FailingJudgeCreate({"python3": Judge()})
    with pytest.raises(RuntimeError_, match="refused the judge"):
        grade_strict(rt, load_task(GEN), _source(tmp_path), "img")
    assert rt.leftovers() == []


def test_refused_submission_starts_no_candidate(tmp_path: Path) -> None:
    rt = FakeRuntime({"python3": Judge()})
    created: list[str] = []
    real_create = rt.create

    def create(spec: ContainerSpec) -> str:
        created.append(spec.role)
        return real_create(spec)

    rt.create = create  # type: ignore[method-assign]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "solution.py").symlink_to("/etc/passwd")
    v = grade_strict(rt, load_task(GEN), Source(path=tmp_path / "sub"), "img").verdict
    assert not v.passed and any(r.startswith("firewall:") for r in v.reason_codes)
    assert created == ["judge"]
    assert rt.leftovers() == []


def test_background_returns_raises_and_holds_ctrl_c_until_done() -> None:
    assert Background(lambda: 42).result() == 42
    with pytest.raises(ZeroDivisionError):
        Background(lambda: 1 // 0).result()
    finished = threading.Event()

    def slow() -> None:
        time.sleep(0.2)
        finished.set()

    bg = Background(slow)
    timer = threading.Timer(0.05, lambda: __import__("_thread").interrupt_main())
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        bg.join()
    assert finished.is_set()  # the interrupt waited for the helper
