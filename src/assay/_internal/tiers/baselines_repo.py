"""The unsafe baselines for repository tasks: SWE-bench's harness, reproduced on purpose.

  T0  swebench 5.0.2's evaluation, in one container: the agent edits the repository at
      /workspace; then the files the test patch touches are written over whatever it left
      (the eval script's reset + `git apply`), and the eval script's shape runs in the same
      container: `>>>>> Start Test Output`, `pytest -rA <test files>`, `>>>>> End Test Output`,
      `>>>>> Test Exit Code: N`. The log is graded as `harness/grading.py` does: the status map
      from the log between the markers (its pytest parser: a line starting with a status word
      gives the status of the id after it, last one wins), the run refused when the FIRST
      exit-code marker in the log is non-zero while no test FAILED or ERRORed (the PR #620
      cross-check, `parse_test_exit_code` uses `re.search`), FAIL_TO_PASS needing PASSED or
      XFAIL, PASS_TO_PASS PASSED, XFAIL or SKIPPED.
  T1  the agent's /workspace copied into a fresh container, the test files written as on T0,
      `bash -lc 'pytest <test files>'`; its exit code is the reward.

As in `baselines`, nothing here is hardened and nothing here may score anything.
"""

from __future__ import annotations

import re
from time import monotonic

from assay.errors import UsageError

from ..model.task import Task
from ..model.verdict import CaseResult, Verdict, build_verdict
from ..runtime import Runtime
from .baselines import (
    NO_VERDICT,
    WORKSPACE,
    BaselineOptions,
    BaselineRun,
    BaselineTier,
    _fresh_copy,
    _spec,
    _workspace_contains,
    parse_pytest_log,
    run_agent_in_place,
)
from .controller import Grading, Source
from .repo import load_test_patch, spec_of
from .repo_patch import touched_paths
from .repo_tree import pack, patched_test_files, read_pristine

START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"
EXIT_MARKER = ">>>>> Test Exit Code"
_EXIT_RE = re.compile(rf"{re.escape(EXIT_MARKER)}:\s*(-?\d+)")
LOG_CAP = 16 << 20
_PASSED = frozenset({"PASSED", "XFAIL"})
_MAINTAINED = _PASSED | {"SKIPPED"}


def eval_script(test_files: tuple[str, ...]) -> str:
    files = " ".join(test_files)
    return (
        f'echo "{START}"; pytest -rA {files}; SWEBENCH_TEST_EXIT_CODE=$?; '
        f'echo "{END}"; echo "{EXIT_MARKER}: $SWEBENCH_TEST_EXIT_CODE"'
    )


def parse_test_exit_code(log: str) -> int | None:
    """swebench 5.0.2: the first marker in the log, wherever it came from."""
    m = _EXIT_RE.search(log)
    return int(m.group(1)) if m else None


def swebench_status(log: str) -> dict[str, str] | None:
    """The status map `get_logs_eval` keeps, or None when it declares the run invalid."""
    if START not in log or END not in log:
        return None
    sliced = log.split(START, 1)[1].split(END, 1)[0]
    statuses = parse_pytest_log(sliced.encode()) or parse_pytest_log(log.encode())
    if not statuses:
        return None
    code = parse_test_exit_code(log)
    failed = any(s in ("FAILED", "ERROR") for s in statuses.values())
    if code not in (None, 0) and not failed:
        return None
    return statuses


def swebench_cases(log: str, f2p: list[str], p2p: list[str]) -> tuple[list[CaseResult], bool]:
    statuses = swebench_status(log)
    if statuses is None:
        return [CaseResult(id=i, status="error", duration_s=0.0) for i in (*f2p, *p2p)], False
    cases = [
        CaseResult(id=i, status="pass" if statuses.get(i) in ok else "fail", duration_s=0.0)
        for ids, ok in ((f2p, _PASSED), (p2p, _MAINTAINED))
        for i in ids
    ]
    return cases, True


def run_repo_baseline(
    rt: Runtime,
    task: Task,
    source: Source,
    image: str,
    tier: BaselineTier,
    options: BaselineOptions | None = None,
    grading_id: str | None = None,
) -> BaselineRun:
    opts = options or BaselineOptions()
    spec = spec_of(task)
    assert spec.fail_to_pass is not None
    if task.workdir != WORKSPACE:
        raise UsageError(f"the baselines run repositories at {WORKSPACE}, not {task.workdir}")
    if tier == "t1" and opts.network != "none":
        raise UsageError("only the naive baseline t0 may share the host's network")
    patches = load_test_patch(task)
    test_files = tuple(p for p in touched_paths(patches) if p.endswith(".py"))
    g = Grading(rt, task, tier, image)
    if grading_id is not None:
        g.gid = grading_id
    with g.scope() as scope:
        t0 = monotonic()
        pristine = read_pristine(scope, task, g.task_image)
        g.lap("judge_prepare", t0)

        t0 = monotonic()
        cid = scope.container(_spec(task, g.gid, g.task_image, source.agent_dir, opts, "agent"))
        rt.put_archive(cid, WORKSPACE, pack(pristine))
        run_agent_in_place(rt, task, cid, source)
        g.lap("agent", t0)
        leaked = opts.watch_for is not None and _workspace_contains(scope, cid, opts.watch_for)
        if tier == "t1":
            t0 = monotonic()
            cid = _fresh_copy(scope, task, g.task_image, g.gid, cid)
            g.lap("copy", t0)

        t0 = monotonic()
        rt.put_archive(cid, WORKSPACE, pack(patched_test_files(scope.tempdir("tests"), pristine,
                                                                patches)))  # fmt: skip
        script = eval_script(test_files) if tier == "t0" else f"pytest {' '.join(test_files)}"
        res = rt.exec(
            cid, ("bash", "-lc", script), deadline_s=task.config.limits.total_timeout,
            output_cap=LOG_CAP, workdir=WORKSPACE,
        )  # fmt: skip
        g.lap("tests", t0)
        if res.timed_out:
            return BaselineRun(g.fail(NO_VERDICT, ["baseline:deadline"]), False, leaked)
        if res.truncated or res.exit_code is None:
            return BaselineRun(g.fail(NO_VERDICT, ["baseline:log-cap"]), False, leaked)
        log = res.stdout + b"\n" + res.stderr
        verdict = _verdict(g, tier, log, res.exit_code, spec.fail_to_pass, spec.pass_to_pass)
        return BaselineRun(verdict, True, leaked)


def _verdict(
    g: Grading, tier: BaselineTier, log: bytes, exit_code: int, f2p: list[str], p2p: list[str]
) -> Verdict:
    ids = (*f2p, *p2p)
    if tier == "t1":
        status = "pass" if exit_code == 0 else "fail"
        cases = [CaseResult(id=i, status=status, duration_s=0.0) for i in ids]
        reasons = [] if exit_code == 0 else [f"baseline:exit-{min(exit_code, 255)}"]
        return build_verdict(g.facts(), cases, len(ids), reasons)
    cases, valid = swebench_cases(log.decode("utf-8", errors="replace"), f2p, p2p)
    return build_verdict(g.facts(), cases, len(ids), [] if valid else ["baseline:invalid-log"])


__all__ = ["eval_script", "run_repo_baseline", "swebench_status"]
