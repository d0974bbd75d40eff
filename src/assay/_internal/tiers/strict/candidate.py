"""The candidate's run: its container, the trusted runner's command line, and one exec of the
runner, with the ceilings it hit and the probe of a container that stopped under it.

The strict tier runs a grading's cases this way (`grade`), and the sandbox one program
(`sandbox/execute.py`); both read what comes back with `runner_report`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...model.task import Task
from ...runtime import Bind, ContainerSpec, ExecResult, Limits, Runtime, RuntimeError_, Scratch
from ...runtime.base import ceilings_hit, stopped_ceilings
from ...runtime.scope import GradingScope
from ..core.paths import INCONTAINER

SPAWN = "fork"
"""How the runner starts a function case (runner.py): "fork" from itself (default) or "exec" a
new interpreter (kept for A/B measurement: scripts/bench_ab.py)."""
RUNNER_CASES_BYTES = 16 << 20
"""The most of /inputs/cases.json the runner reads (its MAX_CASES_BYTES)."""
RUNNER_SLACK_S = 30.0
"""The runner's own time around its cases', before its exec is given up on."""
STOPPED_PROBE_S = 2.0


def candidate_container(
    image: str,
    gid: str,
    files: Path,
    inputs: Path,
    limits: Limits,
    scratch: tuple[Scratch, ...] = (),
) -> ContainerSpec:
    """A candidate container: `files` at /candidate and `inputs` at /inputs, read-only, and the
    runner at /assay."""
    return ContainerSpec(
        image=image,
        grading_id=gid,
        role="candidate",
        binds=(Bind(files, "/candidate"), Bind(inputs, "/inputs"), Bind(INCONTAINER, "/assay")),
        scratch=scratch,
        limits=limits,
        workdir="/candidate",
        # The runner keeps a uid the candidate does not share (docs/security.md).
        switch_user=True,
    )


def candidate_spec(task: Task, image: str, gid: str, files: Path, inputs: Path) -> ContainerSpec:
    lim = task.config.limits
    scratch = (Scratch("/output", lim.artifact_bytes),) if task.config.kind == "transform" else ()
    limits = Limits(memory_bytes=lim.memory_mb * 2**20, pids=lim.pids, cpus=lim.cpus)
    return candidate_container(image, gid, files, inputs, limits, scratch)


def runner_command(
    kind: str,
    case_timeout: float,
    output_cap: int,
    *,
    entry: str | None = None,
    spawn: str | None = None,
    command: Sequence[str] | None = None,
    cpu_seconds: float | None = None,
    keep_stderr: bool = False,
) -> tuple[str, ...]:
    """The runner's argv. `entry`: a function case's `module:function`; `command`: what a cli,
    transform or stdio case runs; `cpu_seconds`: RLIMIT_CPU of each case's process;
    `keep_stderr`: report a stdio program's stderr too (`runner_report.STDERR_FIELD`)."""
    argv = [
        "python3", "-I", "/assay/runner.py", "--kind", kind,
        "--case-timeout", str(case_timeout), "--output-cap", str(output_cap),
    ]  # fmt: skip
    if entry is not None:
        argv += ["--entry", entry, "--spawn", spawn or SPAWN]
    if command is not None:
        argv += ["--command-json", json.dumps(list(command))]
    if cpu_seconds is not None:
        argv += ["--cpu-seconds", repr(cpu_seconds)]
    if keep_stderr:
        argv.append("--keep-stderr")
    return tuple(argv)


def runner_argv(
    task: Task, spawn: str | None = None, command: tuple[str, ...] | None = None
) -> tuple[str, ...]:
    """A grading's runner argv. `command`: a `stdio` program's run argv (its language's)."""
    c, lim = task.config, task.config.limits
    spec = c.cli or c.transform
    if c.stdio is not None:
        assert command is not None
    return runner_command(
        c.kind, lim.case_timeout, lim.output_bytes, spawn=spawn,
        entry=c.function.entry if c.function is not None else None,
        command=spec.command if spec is not None else (command if c.stdio is not None else None),
        cpu_seconds=(lim.cpu_seconds or lim.case_timeout) if c.stdio is not None else None,
    )  # fmt: skip


def write_cases(inputs: Path, raw: bytes) -> None:
    """The runner's /inputs/cases.json, readable by the runner's uid."""
    (inputs / "cases.json").write_bytes(raw)
    (inputs / "cases.json").chmod(0o644)


def runner_deadline(cases: int, case_timeout: float, total_timeout: float = math.inf) -> float:
    """How long the runner's exec may take: its cases' time and the runner's own, at most
    `total_timeout`."""
    return min(total_timeout, cases * case_timeout + RUNNER_SLACK_S)


@dataclass(frozen=True)
class CandidateRun:
    """One exec of the runner in a candidate container, and what the engine saw of it."""

    result: ExecResult
    """The runner's exec; its stdout is the report, hostile bytes (`runner_report`)."""
    hit: tuple[str, ...]
    """The container's ceilings hit, as `ceilings_hit` named them once the exec had ended."""
    stopped: bool
    """The container stopped under the runner. Only its memory limit may do that (anything
    else raised), but `hit` may not show it: the engine can record the stop first."""

    @property
    def late_memory(self) -> bool:
        """The container stopped at its memory limit, which `hit` did not show yet."""
        return self.stopped and "memory" not in self.hit


def run_candidate(
    scope: GradingScope, cid: str, argv: Sequence[str], deadline_s: float, report_cap: int
) -> CandidateRun:
    """Run the runner's `argv` in the candidate container `cid` under `deadline_s`, its report
    capped at `report_cap` bytes. Raises `RuntimeError_` when the container stopped under the
    runner at no limit: no verdict and no result, rather than one the candidate did not earn."""
    rt: Runtime = scope.runtime
    run = rt.exec(cid, tuple(argv), deadline_s=deadline_s, output_cap=report_cap)
    hit = ceilings_hit(rt, cid)
    # The candidate's uid can signal neither init nor the keep-alive (root), so a container
    # that stopped under the runner at no limit was stopped from outside or by the engine:
    # no verdict, rather than a signed fail for a correct submission. Probed only when the
    # runner did not exit 0, so an honest run never waits for it; a run past its deadline or
    # its cap was stopped by the exec itself.
    stopped = run.exited or (
        run.exit_code != 0
        and not (run.timed_out or run.truncated)
        and rt.wait(cid, STOPPED_PROBE_S) is not None
    )
    if stopped and "memory" not in hit and "memory" not in stopped_ceilings(rt, cid):
        raise RuntimeError_("the candidate's container stopped during its run at no limit")
    return CandidateRun(run, tuple(hit), stopped)
