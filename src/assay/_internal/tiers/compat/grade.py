"""The compat tier (T2, ADR 0002): hardened pytest for tests that must import the candidate.

  prep (trusted, no candidate): truth files and/or the expected test ids
  agent phase + firewall: exactly the strict tier's (`intake`)
  verify: a fresh non-root, read-only, offline container; `python3 -I -m pytest` with the
          trusted ini (-c) and rootdir conftest; the JUnit report is read from a capped
          scratch volume while the container is paused, parsed strictly, reconciled with
          pytest's exit code. Console output is never captured, let alone parsed.

The candidate shares the pytest process with the tests and the truth; docs/compat.md lists
what that leaves open. Nothing here pretends otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from assay.errors import UsageError

from ...firewall.check import FirewallLimits
from ...model.task import Task
from ...model.verdict import CaseResult, Verdict, build_verdict
from ...runtime import (
    Bind,
    ContainerSpec,
    GradingScope,
    Limits,
    Runtime,
    RuntimeError_,
    Scratch,
)
from ...runtime.base import ceilings_hit, stopped_ceilings
from ...runtime.scope import new_grading_id
from ..core.controller import Grading, Source
from ..core.intake import (
    Crossing,
    Refused,
    Submission,
    take_from_container,
)
from .junit import OVERSIZE, JUnitOutcome, parse_junit, reconcile
from .prep import (
    INCONTAINER_COMPAT,
    PYTEST_ARGV,
    PYTEST_ENV,
    Prepared,
    check_layout,
    judge_binds,
    prepare,
)

REPORT = "junit.xml"
REPORT_BYTES = 4 << 20
OUT_BYTES = 8 << 20
NO_REPORT = "junit:no-report"
VERIFY_ARGV = (*PYTEST_ARGV, f"--junitxml=/out/{REPORT}", "/judge/tests")

__all__ = [
    "INCONTAINER_COMPAT", "REPORT_BYTES", "VERIFY_ARGV", "grade_compat", "run_verification",
    "verify_spec",
]  # fmt: skip


def verify_spec(task: Task, image: str, gid: str, files: Path, state: Path | None) -> ContainerSpec:
    lim = task.config.limits
    binds = [*judge_binds(task), Bind(files, "/candidate")]
    if state is not None:
        binds.append(Bind(state, "/judge-state"))
    return ContainerSpec(
        image=image,
        grading_id=gid,
        role="candidate",
        binds=tuple(binds),
        scratch=(Scratch("/out", OUT_BYTES),),
        limits=Limits(memory_bytes=lim.memory_mb * 2**20, pids=lim.pids, cpus=lim.cpus),
        workdir="/tmp",  # neutral: -I keeps it off sys.path, and nothing of ours lives there
    )


def grade_compat(
    rt: Runtime, task: Task, source: Source, image: str, grading_id: str | None = None
) -> Verdict:
    if task.config.kind != "pytest":
        raise UsageError(f"task {task.id!r} is kind {task.config.kind!r}; t2 grades pytest tasks")
    check_layout(task)
    g = Grading(rt, task, "t2", image, gid=grading_id or new_grading_id())
    with g.scope() as scope:
        with g.timed("judge_prepare"):
            prepared = prepare(scope, task, image)
        if isinstance(prepared, Refused):
            return g.fail(prepared.reason)

        taken = g.take_submission(scope, source)
        if isinstance(taken, Refused):
            return g.fail(taken.reason)

        with g.timed("verify"):
            cases, extra = _verify(scope, task, g.task_image, taken, prepared)
        return build_verdict(g.facts(), cases, len(prepared.expected_ids), extra)


def _verify(
    scope: GradingScope, task: Task, image: str, submission: Submission, prepared: Prepared
) -> tuple[list[CaseResult], list[str]]:
    ids = prepared.expected_ids
    spec = verify_spec(task, image, scope.grading_id, submission.files, prepared.state)
    return run_verification(
        scope, task, spec, VERIFY_ARGV, PYTEST_ENV, ids,
        lambda raw, code: reconcile(parse_junit(raw, ids, max_bytes=REPORT_BYTES), code),
    )  # fmt: skip


def run_verification(
    scope: GradingScope,
    task: Task,
    spec: ContainerSpec,
    argv: Sequence[str],
    env: Mapping[str, str],
    ids: Sequence[str],
    judge: Callable[[bytes, int | None], JUnitOutcome],
) -> tuple[list[CaseResult], list[str]]:
    """Run pytest in a fresh container from `spec`, freeze it, read the JUnit report through
    the firewall and let `judge` turn its bytes and pytest's exit code into cases."""
    rt = scope.runtime
    cid = scope.container(spec)
    # Not captured: the verdict never depends on console output, and a flood has nowhere to go.
    run = rt.exec(
        cid, tuple(argv), deadline_s=task.config.limits.total_timeout, output_cap=0,
        env=dict(env), workdir="/tmp", capture=False,
    )  # fmt: skip
    limits = [f"limit:{c}" for c in reversed(ceilings_hit(rt, cid))]
    if run.exited:
        # The container stopped under the tests (gVisor stops its whole sandbox at the memory
        # limit): a failed verdict when a ceiling explains it, an engine fault otherwise.
        limits = limits or [f"limit:{c}" for c in reversed(stopped_ceilings(rt, cid))]
        scope.discard(cid)
        if not limits:
            raise RuntimeError_("the test container stopped during the tests at no limit")
        return [CaseResult(id=i, status="error", duration_s=0.0) for i in ids], limits
    if run.timed_out:
        scope.discard(cid)
        timeouts = [CaseResult(id=i, status="timeout", duration_s=0.0) for i in ids]
        return timeouts, ["limit:total-time", *limits]
    try:
        rt.pause(cid)  # freeze anything the candidate left running before reading the report
    except RuntimeError_:
        # Unfreezable even after retries: the report cannot be read consistently.
        scope.discard(cid)
        errors = [CaseResult(id=i, status="error", duration_s=0.0) for i in ids]
        return errors, ["limit:freeze", *limits]
    raw = _read_report(scope, cid)
    scope.discard(cid)
    if isinstance(raw, str):
        outcome = reconcile(JUnitOutcome((), (raw,)), run.exit_code)
        errors = [CaseResult(id=i, status="error", duration_s=0.0) for i in ids]
        return errors, [*outcome.reasons, *limits]
    outcome = judge(raw, run.exit_code)
    cases = [CaseResult(id=c.id, status=c.status, duration_s=c.duration_s) for c in outcome.cases]
    return cases, [*outcome.reasons, *limits]


def _read_report(scope: GradingScope, cid: str) -> bytes | str:
    """The report's bytes (at most REPORT_BYTES + 1), or the reason code why there are none.

    /out is written by the candidate's process too, so it crosses the firewall like any
    archive, and only a regular file named junit.xml is read."""
    limits = FirewallLimits(max_total_bytes=OUT_BYTES, max_file_bytes=OUT_BYTES)
    cap = OUT_BYTES * 2 + (1 << 20)
    taken = take_from_container(
        scope, cid, "/out", cap, Crossing(limits, [REPORT], "out", "report")
    )
    if isinstance(taken, Refused):
        return OVERSIZE if taken.reason.startswith("limit:") else NO_REPORT
    try:
        fd = os.open(taken.files / REPORT, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return NO_REPORT
    with os.fdopen(fd, "rb") as fh:
        return fh.read(REPORT_BYTES + 1)
