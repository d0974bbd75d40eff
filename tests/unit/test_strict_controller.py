"""The controller's trust decisions in the strict tier, on the in-memory runtime.

Each test scripts what the judge and the runner print (hostile or broken) and checks that
the verdict fails closed: never a pass from an error, and the reason says why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest
from e2e import EXAMPLES
from helpers.fakejudge import FakeWorker, install

from assay._internal.model.task import Task, load_task
from assay._internal.runtime import RuntimeError_, base
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.tiers.strict.grade import MAX_REPORT_BYTES, Source, grade_strict
from assay._internal.tiers.strict.judgepool import JudgePool

TASK = load_task(EXAMPLES / "add")  # a fixed cases file: the controller makes the inputs
GEN_TASK = load_task(EXAMPLES / "canary")  # a generator: the judge prepares them
SOLUTION = EXAMPLES / "add/solutions/correct"
IDS = ["small", "zero", "negative", "large"]
INPUTS = json.dumps([{"id": i, "input": [1, 2]} for i in IDS]).encode()
RUNNER = json.dumps({"runner": "x", "cases": []}).encode()


def report(statuses: Mapping[str, str] | None = None, **extra: object) -> bytes:
    statuses = statuses or {i: "pass" for i in IDS}
    body: dict[str, object] = {
        "cases": [{"id": i, "status": s, "duration_s": 0.01} for i, s in statuses.items()]
    }
    body.update(extra)
    return json.dumps(body).encode()


class Script:
    """What each trusted program 'prints' in this simulated grading."""

    def __init__(
        self,
        prepare: tuple[int, bytes] = (0, INPUTS),
        runner: tuple[int, bytes] = (0, RUNNER),
        compare: tuple[int, bytes] | None = None,
    ) -> None:
        self.prepare, self.runner = prepare, runner
        self.compare = compare or (0, report())
        self.calls: list[str] = []
        self.inputs: object = None  # what the runner found in /inputs

    def __call__(
        self, c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        step = argv[3] if argv[2] == "/assay/judge.py" else "runner"
        self.calls.append(step)
        if step == "runner":
            (inputs,) = (b.source for b in c.spec.binds if b.target == "/inputs")
            self.inputs = json.loads((inputs / "cases.json").read_bytes())
        code, out = {"prepare": self.prepare, "runner": self.runner, "compare": self.compare}[step]
        return code, out, b""


def run(
    script: Script, submission: Path | None = None, task: Task = TASK
) -> tuple[FakeRuntime, object]:
    rt = FakeRuntime(programs={"python3": script})
    sub = submission or EXAMPLES / "add/solutions/correct"
    verdict = grade_strict(rt, task, Source(path=sub), "img").verdict
    assert rt.leftovers() == [], "the grading left containers behind"
    return rt, verdict


def test_honest_script_passes() -> None:
    # The control: without it, every failing test below could fail for an unrelated reason.
    script = Script()
    _, v = run(script, task=GEN_TASK)
    assert v.passed and v.score == 1.0 and v.reason_codes == []  # type: ignore[attr-defined]
    assert script.calls == ["prepare", "runner", "compare"]
    assert script.inputs == json.loads(INPUTS)


def test_a_fixed_cases_file_gives_the_inputs_without_a_prepare_in_the_judge() -> None:
    script = Script()
    _, v = run(script)
    assert v.passed and v.score == 1.0 and v.reason_codes == []  # type: ignore[attr-defined]
    assert script.calls == ["runner", "compare"]
    # The candidate gets each case's id and input from the task's file, never its expected value.
    cases = json.loads((TASK.judge_dir / "cases.json").read_text())
    assert script.inputs == [{"id": c["id"], "input": c["input"]} for c in cases]


@pytest.mark.parametrize(
    ("prepare", "reason"),
    [
        ((0, b"not json"), "judge:invalid-inputs"),
        ((0, b'{"a": 1, "a": 2}'), "judge:invalid-inputs"),
    ],
)
def test_broken_prepare_is_an_error_verdict(prepare: tuple[int, bytes], reason: str) -> None:
    script = Script(prepare=prepare)
    _, v = run(script, task=GEN_TASK)
    assert not v.passed and reason in v.reason_codes  # type: ignore[attr-defined]
    assert "runner" not in script.calls


def test_failed_prepare_is_an_infrastructure_error_not_a_fail() -> None:
    # Prepare runs before any candidate output exists, so its failure is never the submission's
    # doing: a signed fail here would cost a correct submission its pass (fault table,
    # docs/security.md), and resume would keep it.
    script = Script(prepare=(1, INPUTS))
    rt = FakeRuntime(programs={"python3": script})
    with pytest.raises(RuntimeError_, match="prepare step failed"):
        grade_strict(rt, GEN_TASK, Source(path=SOLUTION), "img")
    assert rt.leftovers() == []
    assert "runner" not in script.calls


class StoppedFromOutside(Script):
    """The container running `step` is killed from outside while the step runs."""

    def __init__(self, step: str, partial: bytes = b"") -> None:
        super().__init__()
        self.step, self.partial = step, partial

    def __call__(
        self, c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        res = super().__call__(c, argv, env)
        if self.calls[-1:] == [self.step]:
            c.state = "exited"
            return 137, self.partial, b""
        return res


def test_judge_stopped_during_compare_is_an_infrastructure_error() -> None:
    rt = FakeRuntime(programs={"python3": StoppedFromOutside("compare")})
    with pytest.raises(RuntimeError_, match="stopped during compare"):
        grade_strict(rt, TASK, Source(path=SOLUTION), "img")
    assert rt.leftovers() == []


def test_candidate_container_stopped_from_outside_is_an_infrastructure_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(base, "STOPPED_GRACE_S", 0.5)  # the fake has no OOM event to lag
    rt = FakeRuntime(
        programs={"python3": StoppedFromOutside("runner", b'{"runner": "x", "cases": [')}
    )
    with pytest.raises(RuntimeError_, match="candidate's container stopped"):
        grade_strict(rt, TASK, Source(path=SOLUTION), "img")
    assert rt.leftovers() == []


def test_runner_that_fails_on_its_own_is_a_fail() -> None:
    # The control: a runner that ends of its own accord with an error (no signal: its status
    # is below 128) broke on something inside its container, which the submission may have
    # caused; that is judged, a signed fail, never a retry.
    script = Script(
        runner=(1, b'{"runner": "x", "cases": ['),
        compare=(0, report({i: "fail" for i in IDS}, reasons=["runner:invalid-output"])),
    )
    _, v = run(script)
    assert script.calls == ["runner", "compare"]  # judged, not an error
    assert not v.passed and "runner:invalid-output" in v.reason_codes  # type: ignore[attr-defined]


def test_runner_ended_by_a_signal_at_no_limit_is_an_infrastructure_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(base, "STOPPED_GRACE_S", 0.5)  # the fake has no OOM event to lag
    # The runner is its container's own process, under ids no candidate process has: a signal
    # that ends it at no ceiling came from outside (the memory limit is the one inside).
    script = Script(runner=(137, b'{"runner": "x", "cases": ['))
    rt = FakeRuntime(programs={"python3": script})
    with pytest.raises(RuntimeError_, match="candidate's container stopped"):
        grade_strict(rt, TASK, Source(path=SOLUTION), "img")
    assert rt.leftovers() == [] and script.calls == ["runner"]


def test_a_judge_killed_at_its_report_cap_is_a_failed_compare_not_an_error() -> None:
    """Issue 36: past its deadline or its output cap, the exec itself kills the judge's
    container; that stop was taken for the engine's (no verdict), though the candidate's
    output can make a judge that slow or that verbose (the deadline: the Docker tests)."""
    _, v = run(Script(compare=(0, b"x" * (MAX_REPORT_BYTES + 1))))
    assert v.reason_codes == ["judge:compare-failed"]  # type: ignore[attr-defined]


def test_judge_that_fails_while_running_is_a_fail_not_an_error() -> None:
    # The control for the test above: a judge still running that exits non-zero may have
    # choked on the candidate's bytes, so it stays a signed fail, never a pass or a retry.
    _, v = run(Script(compare=(1, report())))
    assert not v.passed and "judge:compare-failed" in v.reason_codes  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("compare", "reason"),
    [
        ((1, report()), "judge:compare-failed"),
        ((0, b"{"), "judge:invalid-output"),
        ((0, report(passed=True)), "judge:controller-field"),
        ((0, report(tier="t3")), "judge:controller-field"),
        ((0, report(submission_digest="sha256:" + "0" * 64)), "judge:controller-field"),
        ((0, b'{"cases": [], "cases": []}'), "judge:invalid-output"),
        ((0, report({i: "pass" for i in IDS[:3]})), "cases:count-mismatch"),
        ((0, report({**{i: "pass" for i in IDS}, "surplus": "pass"})), "cases:count-mismatch"),
        ((0, report(reasons=["compare:mismatch"])), "compare:mismatch"),
        ((0, report().replace(b"0.01", b"NaN", 1)), "judge:invalid-output"),
    ],
)
def test_hostile_or_broken_judge_report_never_passes(
    compare: tuple[int, bytes], reason: str
) -> None:
    _, v = run(Script(compare=compare))
    assert not v.passed, v
    assert reason in v.reason_codes, v.reason_codes  # type: ignore[attr-defined]


def test_runner_flooding_its_channel_fails_even_if_the_judge_says_pass() -> None:
    flood = (0, b"x" * (len(IDS) * ((1 << 20) * 4 // 3 + 1024) + 65536 + 1))
    _, v = run(Script(runner=flood))
    assert not v.passed and "limit:runner-output" in v.reason_codes  # type: ignore[attr-defined]


def test_firewall_refusal_stops_before_the_candidate(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    os.symlink("/etc/passwd", sub / "solution.py")
    script = Script()
    _, v = run(script, sub)
    assert not v.passed
    assert any(r.startswith("firewall:") for r in v.reason_codes), v.reason_codes  # type: ignore[attr-defined]
    assert script.calls == []  # the runner never started (nor did a prepare: a fixed file)


def test_image_digests_name_each_role_and_the_image_it_ran() -> None:
    """Issue 10 finding 10b: one entry per container role used, not one `base`."""
    img = FakeRuntime().image_digest("img")
    _, v = run(Script())
    assert v.image_digests == {"judge": img, "candidate": img}  # type: ignore[attr-defined]

    rt = FakeRuntime(programs={"python3": Script(), "sh": lambda c, a, e: (0, b"", b"")})
    agent = grade_strict(rt, TASK, Source(agent_cmd="true"), "img").verdict
    assert agent.image_digests == {"agent": img, "judge": img, "candidate": img}

    pool = JudgePool(rt)  # a judge the pool created, not the grading's scope, is recorded too
    try:
        for gid in ("g-0000000000000001", "g-0000000000000002"):
            pooled = grade_strict(rt, TASK, Source(path=SOLUTION), "img", gid, judges=pool).verdict
            pool.finish(gid)
            assert pooled.image_digests == {"judge": img, "candidate": img}
        assert pool.reused == 1
    finally:
        pool.close()


def test_verdict_carries_controller_facts() -> None:
    _, v = run(Script())
    assert v.tier == "t3" and v.runtime == "fake" and v.task_digest == TASK.digest  # type: ignore[attr-defined]
    assert v.submission_digest and v.submission_digest.startswith("sha256:")  # type: ignore[attr-defined]
    assert {"judge_prepare", "intake", "candidate", "judge_compare"} <= set(v.timings)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("oom", "reason"), [(True, "limit:agent-memory"), (False, "limit:agent-freeze")]
)
def test_agent_that_cannot_be_frozen_names_the_ceiling_it_hit(oom: bool, reason: str) -> None:
    def agent(c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]):  # type: ignore[no-untyped-def]
        # A gVisor sandbox at its memory limit: OOM-killed and no longer running, so it
        # cannot be frozen (the control: not OOM-killed, the reason stays agent-freeze).
        c.oom, c.state = oom, "dying"
        return 137, b"", b""

    rt = FakeRuntime(programs={"python3": Script(), "sh": agent})
    v = grade_strict(rt, TASK, Source(agent_cmd="true"), "img").verdict
    assert not v.passed and reason in v.reason_codes, v.reason_codes
    assert rt.leftovers() == []


class _DiesAt(FakeWorker):
    """A judge worker that dies (its container with it) instead of answering `step`."""

    step = "compare"

    def answer(self, req: dict[str, object]) -> bytes | None:
        if req["op"] == self.step:
            return None
        return super().answer(req)  # type: ignore[arg-type]


class _DiesAtPrepare(_DiesAt):
    step = "prepare"


class _AnswersGarbage(FakeWorker):
    def answer(self, req: dict[str, object]) -> bytes | None:
        return b"\x00\x00\x00\x08garbage!" if req["op"] == "compare" else super().answer(req)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("worker", "task"),
    [(_DiesAt, TASK), (_DiesAtPrepare, GEN_TASK), (_AnswersGarbage, TASK)],
)
@pytest.mark.parametrize("pooled", [False, True])
def test_a_judge_worker_that_dies_or_answers_out_of_frame_is_no_verdict(
    monkeypatch: pytest.MonkeyPatch, worker: type[FakeWorker], task: Task, pooled: bool
) -> None:
    """Issue 38: never a pass and never a fail: the grading ends as an infrastructure error
    (exit 3, graded again on resume), its judge is removed, and the next grading is whole."""
    install(monkeypatch, worker)
    script = Script()
    rt = FakeRuntime(programs={"python3": script})
    pool = JudgePool(rt) if pooled else None
    try:
        with pytest.raises(RuntimeError_, match="the judge's worker"):
            grade_strict(rt, task, Source(path=SOLUTION), "img", "g-0000000000000001", pool)
        if pool is not None:
            pool.finish("g-0000000000000001")
            assert pool.faults == 1 and pool.discarded == 1
        install(monkeypatch, FakeWorker)
        v = grade_strict(rt, task, Source(path=SOLUTION), "img", "g-0000000000000002", pool)
        assert v.verdict.passed
        if pool is not None:
            pool.finish("g-0000000000000002")
    finally:
        if pool is not None:
            pool.close()
    assert rt.leftovers() == []
