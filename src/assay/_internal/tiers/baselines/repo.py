"""The unsafe baselines for repository tasks: SWE-bench's harness, reproduced on purpose.

  T0  swebench 5.0.2's evaluation, in one container: the agent edits the repository at the
      task's workdir (/workspace, or an imported instance's /testbed); then the files the test
      patch touches are written over whatever it left (the eval script's reset + `git apply`),
      and the eval script's shape runs in the same container: `>>>>> Start Test Output`,
      `pytest -rA <test files>`, `>>>>> End Test Output`, `>>>>> Test Exit Code: N`. The log
      is graded as `harness/grading.py` does: the status map from the log between the markers
      (its pytest parser: a line starting with a status word gives the status of the id after
      it, last one wins), the run refused when the FIRST exit-code marker in the log is
      non-zero while no test FAILED or ERRORed (the PR #620 cross-check,
      `parse_test_exit_code` uses `re.search`), FAIL_TO_PASS needing PASSED or XFAIL,
      PASS_TO_PASS PASSED, XFAIL or SKIPPED.
  T1  the agent's workdir copied into a fresh container, the test files written as on T0,
      `pytest <test files>`; its exit code is the reward.

Both run their script with `bash -c` in the image's environment, as SWE-bench's harness runs
`/bin/bash /eval.sh` (not a login shell: Debian's /etc/profile would reset PATH), so `pytest` is
the one the image puts first on PATH: an imported instance's activated conda-style env, whose
development-mode install (.pth) makes the repository importable. eval.sh's own `source
.../activate; conda activate testbed` is the same PATH the import wrote into the image's ENV.

As in `baselines`, nothing here is hardened and nothing here may score anything.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...model.task import Task
from ...model.verdict import CaseResult
from ...runtime import GradingScope, Runtime
from ...runtime.scope import new_grading_id
from ..core.controller import Grading, Source
from ..core.intake import Refused
from ..repo.grade import load_test_patch, spec_of
from ..repo.patch import touched_paths
from ..repo.tree import pack, patched_test_files, read_pristine
from .grade import (
    BaselineOptions,
    BaselineRun,
    BaselineTier,
    Tested,
    checked_options,
    exit_code_cases,
    no_verdict,
    parse_pytest_log,
    run_steps,
)

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
    spec = spec_of(task)
    f2p, p2p = spec.fail_to_pass, spec.pass_to_pass
    assert f2p is not None
    opts = checked_options(tier, options)
    workdir = task.workdir
    patches = load_test_patch(task)
    test_files = tuple(p for p in touched_paths(patches) if p.endswith(".py"))
    g = Grading(rt, task, tier, image, gid=grading_id or new_grading_id())
    n_ids = len(f2p) + len(p2p)

    def tests(scope: GradingScope, cid: str, pristine: Path) -> Tested:
        tests_dir = scope.tempdir("tests")
        rt.put_archive(cid, workdir, pack(patched_test_files(tests_dir, pristine, patches)))
        script = eval_script(test_files) if tier == "t0" else f"pytest {' '.join(test_files)}"
        res = rt.exec(
            cid, ("bash", "-c", script), deadline_s=task.config.limits.total_timeout,
            output_cap=LOG_CAP, workdir=workdir,
        )  # fmt: skip
        if (why := no_verdict(res)) is not None:
            return Tested(None, n_ids, why)
        assert res.exit_code is not None
        cases, reasons = _cases(tier, res.stdout + b"\n" + res.stderr, res.exit_code, f2p, p2p)
        return Tested(cases, n_ids, reasons)

    def read(scope: GradingScope) -> Path | Refused:
        return read_pristine(scope, task, g.task_image)

    def seed(cid: str, pristine: Path) -> None:
        rt.put_archive(cid, workdir, pack(pristine))

    return run_steps(g, source, opts, read, tests, seed)


def _cases(
    tier: BaselineTier, log: bytes, exit_code: int, f2p: list[str], p2p: list[str]
) -> tuple[list[CaseResult], list[str]]:
    if tier == "t1":
        return exit_code_cases((*f2p, *p2p), exit_code)
    cases, valid = swebench_cases(log.decode("utf-8", errors="replace"), f2p, p2p)
    return cases, [] if valid else ["baseline:invalid-log"]


__all__ = ["eval_script", "run_repo_baseline", "swebench_status"]
