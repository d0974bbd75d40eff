"""The candidate's run: its container, the trusted runner's command line, and the one start of
that container with the runner as its own process (no exec), with the ceilings it hit and what
a runner ended by a signal means.

The strict tier runs a grading's cases this way (`grade`), and the sandbox one program
(`sandbox/execute.py`); both read what comes back with `runner_report`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ...model.task import Task
from ...runtime import Bind, ContainerSpec, ExecResult, Limits, Runtime, RuntimeError_, Scratch
from ...runtime.base import ceilings_hit, stopped_ceilings
from ...runtime.scope import GradingScope
from ..core.decoyfiles import TESTS
from ..core.paths import INCONTAINER

SPAWN = "fork"
"""How the runner starts a function case (runner.py): "fork" from itself (default) or "exec" a
new interpreter (kept for A/B measurement: scripts/bench_ab.py)."""
RUNNER_CASES_BYTES = 16 << 20
"""The most of /inputs/cases.json the runner reads (its MAX_CASES_BYTES)."""
RUNNER_SLACK_S = 30.0
"""The runner's own time around its cases', before its container is given up on."""
STOPPED_PROBE_S = 2.0
SIGNALLED = 128
"""A main process's exit status from here up is a signal's (128 + N), as `Runtime.run`
reports it: the runner's own exits are 0 and 1."""


def candidate_container(
    image: str,
    gid: str,
    files: Path,
    inputs: Path,
    limits: Limits,
    runner: Sequence[str],
    scratch: tuple[Scratch, ...] = (),
) -> ContainerSpec:
    """A candidate container: `files` at /candidate and `inputs` at /inputs, read-only, the
    runner at /assay, and the runner's argv `runner` as the container's own process (under
    init), started once by `run_candidate`."""
    return ContainerSpec(
        image=image,
        grading_id=gid,
        role="candidate",
        command=tuple(runner),
        binds=(Bind(files, "/candidate"), Bind(inputs, "/inputs"), Bind(INCONTAINER, "/assay")),
        scratch=scratch,
        limits=limits,
        workdir="/candidate",
        # The runner keeps a uid the candidate does not share (docs/security.md).
        switch_user=True,
        spawned=True,
    )


def candidate_spec(
    task: Task,
    image: str,
    gid: str,
    files: Path,
    inputs: Path,
    runner: Sequence[str],
    decoys: Path | None = None,
) -> ContainerSpec:
    """A grading's candidate container; `decoys`: the directory of decoy answer keys, bound
    read-only at `decoyfiles.TESTS`."""
    lim = task.config.limits
    scratch = (Scratch("/output", lim.artifact_bytes),) if task.config.kind == "transform" else ()
    limits = Limits(memory_bytes=lim.memory_mb * 2**20, pids=lim.pids, cpus=lim.cpus)
    spec = candidate_container(image, gid, files, inputs, limits, runner, scratch)
    if decoys is None:
        return spec
    return replace(spec, binds=(*spec.binds, Bind(decoys, TESTS)))


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
    env: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """The runner's argv. `entry`: a function case's `module:function`; `command`: what a cli,
    transform or stdio case runs; `cpu_seconds`: RLIMIT_CPU of each case's process;
    `keep_stderr`: report a stdio program's stderr too (`runner_report.STDERR_FIELD`); `env`:
    variables every case's process gets besides the runner's own few (decoys)."""
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
    if env:
        argv += ["--env-json", json.dumps(dict(env), sort_keys=True)]
    return tuple(argv)


def runner_argv(
    task: Task,
    spawn: str | None = None,
    command: tuple[str, ...] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """A grading's runner argv. `command`: a `stdio` program's run argv (its language's);
    `env`: the decoy variables of every case's process."""
    c, lim = task.config, task.config.limits
    spec = c.cli or c.transform
    if c.stdio is not None:
        assert command is not None
    return runner_command(
        c.kind, lim.case_timeout, lim.output_bytes, spawn=spawn,
        entry=c.function.entry if c.function is not None else None,
        command=spec.command if spec is not None else (command if c.stdio is not None else None),
        cpu_seconds=(lim.cpu_seconds or lim.case_timeout) if c.stdio is not None else None,
        env=env,
    )  # fmt: skip


def write_cases(inputs: Path, raw: bytes) -> None:
    """The runner's /inputs/cases.json, readable by the runner's uid."""
    (inputs / "cases.json").write_bytes(raw)
    (inputs / "cases.json").chmod(0o644)


def runner_deadline(cases: int, case_timeout: float, total_timeout: float = math.inf) -> float:
    """How long the runner's container may run: its cases' time and the runner's own, at most
    `total_timeout`."""
    return min(total_timeout, cases * case_timeout + RUNNER_SLACK_S)


@dataclass(frozen=True)
class CandidateRun:
    """The runner's one run as its container's process, and what the engine saw of it."""

    result: ExecResult
    """The container's run; its stdout is the runner's report, hostile bytes
    (`runner_report`)."""
    hit: tuple[str, ...]
    """The container's ceilings hit, as `ceilings_hit` named them once the runner had ended."""
    stopped: bool
    """A signal ended the runner. Only its memory limit may do that (anything else raised),
    but `hit` may not show it: the engine can record the stop first."""

    @property
    def late_memory(self) -> bool:
        """The container stopped at its memory limit, which `hit` did not show yet."""
        return self.stopped and "memory" not in self.hit


def run_candidate(
    scope: GradingScope, cid: str, deadline_s: float, report_cap: int
) -> CandidateRun:
    """Start the candidate container `cid` (created from `candidate_container`, never started)
    once, its runner as its own process, under `deadline_s`, its report capped at `report_cap`
    bytes; the container stays, stopped, for its ceilings (and the caller's `discard`).
    Raises `RuntimeError_` when a signal ended the runner at no limit: no verdict and no
    result, rather than one the candidate did not earn."""
    rt: Runtime = scope.runtime
    run = rt.run(cid, deadline_s=deadline_s, output_cap=report_cap)
    hit = ceilings_hit(rt, cid)
    # The runner runs as ids no candidate process has, under root's init, and exits 0 or 1 of
    # its own accord: a signal reaches it only from the kernel at the container's memory
    # limit or from outside (the engine, an operator). Outside is no verdict, rather than a
    # signed fail for a correct submission. A run past its deadline or its cap was stopped
    # by `run` itself.
    stopped = not (run.timed_out or run.truncated) and (
        run.exited or run.exit_code is None or run.exit_code >= SIGNALLED
    )
    if stopped and "memory" not in hit and "memory" not in stopped_ceilings(rt, cid):
        raise RuntimeError_("the candidate's container stopped during its run at no limit")
    return CandidateRun(run, tuple(hit), stopped)
