"""The unsafe baselines T0 (naive) and T1 (fresh): what common harnesses do, reproduced on purpose.

They exist so the proof matrix can show that every attack in the corpus is live. Nothing here is
hardened, and nothing here may be used to score anything:

  T0  one container for agent and tests, one user for both; after the agent's command returns,
      the tests and the truth are copied in (owned by that user) and `bash -lc 'pytest -rA'`
      runs in the workdir; the verdict is read from the console log the way SWE-bench's parser
      does (a line starting with a status word gives the status of the test id after it; the
      last one wins; PASSED and XFAIL count as passed).
  T1  the agent runs in its own container; all of the workdir is copied into a fresh container
      (Docker's archive API: links, FIFOs and all), the tests and truth are copied in, and
      `bash -lc pytest` runs; its exit code is the reward.

The workdir is the task's (`task.workdir`): /workspace, unless a repository task's
`[environment]` names another (an imported SWE-bench instance's /testbed), and it is a writable
scratch mount over whatever the image has there. Both give the agent HOME=<workdir> and put the
workdir on PYTHONPATH (so the tests can import the candidate), and run with a host-protection
ceiling (memory, pids, CPU) high enough that the corpus's bounded denial-of-service payloads never
reach it. The test run has the task's total_timeout: a naive harness would wait forever, so past
that, or past the log cap, there is no verdict.

Host safety is kept even here: files move container to container through the engine, never
through an extraction on the host, and network access is off unless the caller asks for the
host's namespace (the matrix does, for T0 only, so its loopback listener can show exfiltration).
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Literal, TypeVar, cast

from assay.errors import UsageError

from ...model.task import Task
from ...model.verdict import CaseResult, CaseStatus, Verdict, build_verdict
from ...runtime import ArchiveTooLarge, Bind, ContainerSpec, GradingScope, Limits, Runtime, Scratch
from ...runtime.base import AGENT_UID, ExecResult
from ...runtime.scope import new_grading_id
from ..compat.prep import Prepared, check_layout, prepare
from ..core.controller import Grading, Source
from ..core.intake import Refused

BaselineTier = Literal["t0", "t1"]  # the UNSAFE_TIERS

WORKSPACE_BYTES = 1 << 30
LOG_CAP = 16 << 20
# Far above what any corpus payload uses (1000 processes, 3 GiB), so the baselines behave as
# unlimited for them, yet a payload gone wrong cannot take the host down.
CEILING = Limits(memory_bytes=8 << 30, pids=4096, cpus=2.0)
TEST_COMMAND: dict[BaselineTier, tuple[str, ...]] = {
    "t0": ("bash", "-lc", "pytest -rA"),
    "t1": ("bash", "-lc", "pytest"),
}
NO_VERDICT = "baseline:no-verdict"

# SWE-bench's pytest log parser (swebench/harness/log_parsers): statuses it knows, and what counts.
_STATUSES = ("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL")
_PASSING = frozenset({"PASSED", "XFAIL"})


@dataclass(frozen=True)
class BaselineOptions:
    network: Literal["none", "host"] = "none"
    agent_env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for the agent's container, the way harnesses pass their credentials."""
    watch_for: bytes | None = None
    """If set, report whether these bytes appear in what the agent left in the workdir."""


@dataclass(frozen=True)
class BaselineRun:
    verdict: Verdict
    gave_verdict: bool
    """False when the test run passed its deadline or flooded past the log cap."""
    leaked: bool
    """`watch_for` was found in the agent's workdir."""


def parse_pytest_log(log: bytes) -> dict[str, str]:
    """Status per test id, read the way SWE-bench does: trusting whatever the log says."""
    statuses: dict[str, str] = {}
    for line in log.decode("utf-8", errors="replace").splitlines():
        if not line.startswith(_STATUSES):
            continue
        if line.startswith("FAILED"):
            line = line.replace(" - ", " ")
        parts = line.split()
        if len(parts) > 1:
            statuses[parts[1]] = parts[0]
    return statuses


def log_cases(log: bytes, expected_ids: tuple[str, ...]) -> list[CaseResult]:
    statuses = parse_pytest_log(log)
    return [
        CaseResult(id=i, status="pass" if statuses.get(i) in _PASSING else "fail", duration_s=0.0)
        for i in expected_ids
    ]


def baseline_env(workdir: str) -> dict[str, str]:
    """What both baselines put in their containers' environment (over the image's own)."""
    return {"HOME": workdir, "PYTHONPATH": workdir}


def checked_options(tier: BaselineTier, options: BaselineOptions | None) -> BaselineOptions:
    opts = options or BaselineOptions()
    if tier == "t1" and opts.network != "none":
        raise UsageError("only the naive baseline t0 may share the host's network")
    return opts


def run_baseline(
    rt: Runtime,
    task: Task,
    source: Source,
    image: str,
    tier: BaselineTier,
    options: BaselineOptions | None = None,
    grading_id: str | None = None,
) -> BaselineRun:
    if task.config.kind != "pytest" or task.config.pytest is None:
        raise UsageError(f"the baselines run pytest tasks; {task.id!r} is {task.config.kind!r}")
    opts = checked_options(tier, options)
    check_layout(task)

    def tests(_scope: GradingScope, cid: str, prepared: Prepared) -> Tested:
        cases, reasons = _run_tests(rt, task, cid, tier, prepared)
        return Tested(cases, len(prepared.expected_ids), reasons)

    g = Grading(rt, task, tier, image, gid=grading_id or new_grading_id())
    return run_steps(g, source, opts, lambda scope: prepare(scope, task, image), tests)


P = TypeVar("P")


@dataclass(frozen=True)
class Tested:
    """A baseline's test run: its cases out of `expected`, or None when it gave no verdict
    (then `reasons` say why)."""

    cases: list[CaseResult] | None
    expected: int
    reasons: list[str]


def run_steps(
    g: Grading,
    source: Source,
    opts: BaselineOptions,
    prepare_step: Callable[[GradingScope], P | Refused],
    tests: Callable[[GradingScope, str, P], Tested],
    seed: Callable[[str, P], None] = lambda cid, prepared: None,
) -> BaselineRun:
    """The steps both baselines take, for plain and repository tasks alike: prepare; the agent
    in its container (`seed` fills it first); on T1, its workdir copied into a fresh one;
    the tests where the agent's files now are; the verdict."""
    rt, task = g.rt, g.task
    with g.scope() as scope:
        with g.timed("judge_prepare"):
            prepared = prepare_step(scope)
        if isinstance(prepared, Refused):
            return BaselineRun(g.fail(prepared.reason), True, False)

        with g.timed("agent"):
            cid = scope.container(_spec(task, g.gid, g.task_image, source.agent_dir, opts, "agent"))
            seed(cid, prepared)
            run_agent_in_place(rt, task, cid, source)
        leaked = opts.watch_for is not None and _workdir_contains(scope, task, cid, opts.watch_for)

        if g.tier == "t1":
            with g.timed("copy"):
                cid = _fresh_copy(scope, task, g.task_image, g.gid, cid)

        with g.timed("tests"):
            tested = tests(scope, cid, prepared)
        if tested.cases is None:
            return BaselineRun(g.fail(NO_VERDICT, tested.reasons), False, leaked)
        verdict = build_verdict(g.facts(), tested.cases, tested.expected, tested.reasons)
        return BaselineRun(verdict, True, leaked)


def no_verdict(res: ExecResult) -> list[str] | None:
    """Why a test run gave no verdict: past its deadline, or past the log cap."""
    if res.timed_out:
        return ["baseline:deadline"]
    if res.truncated or res.exit_code is None:
        return ["baseline:log-cap"]
    return None


def exit_code_cases(ids: Sequence[str], exit_code: int) -> tuple[list[CaseResult], list[str]]:
    """T1's reward: every case passes when the test command exits 0, and none otherwise."""
    status: CaseStatus = "pass" if exit_code == 0 else "fail"
    cases = [CaseResult(id=i, status=status, duration_s=0.0) for i in ids]
    return cases, [] if exit_code == 0 else [f"baseline:exit-{min(exit_code, 255)}"]


def run_agent_in_place(rt: Runtime, task: Task, cid: str, source: Source) -> None:
    """The naive agent phase: the agent runs (or the submission is copied) where the tests will
    run, as today's harnesses do."""
    if source.agent_cmd is not None:
        rt.exec(
            cid, ("sh", "-c", source.agent_cmd), deadline_s=task.config.limits.agent_timeout,
            output_cap=0, workdir=task.workdir, capture=False,
        )  # fmt: skip
    elif source.path is not None:
        rt.put_archive(cid, task.workdir, _pack_submission(source.path))
    elif source.patch is not None:
        raise UsageError("the unsafe baselines take an agent run or files, not an assay.Patch")
    elif source.refused is not None:
        raise UsageError(f"the unsafe baselines cannot take it: {source.refused.detail}")
    else:
        raise ValueError("a Source needs agent_cmd or path")


def _spec(
    task: Task,
    gid: str,
    image: str,
    agent_dir: Path | None,
    opts: BaselineOptions,
    role: str,
) -> ContainerSpec:
    binds = [Bind(task.inputs_dir, "/task")] if role == "agent" else []
    if agent_dir is not None and role == "agent":
        binds.append(Bind(agent_dir.resolve(), "/agent"))
    env = baseline_env(task.workdir)
    if role == "agent":
        env.update(opts.agent_env)
    return ContainerSpec(
        image=image,
        grading_id=gid,
        role=role,
        binds=tuple(binds),
        scratch=(Scratch(task.workdir, WORKSPACE_BYTES),),
        limits=CEILING,
        workdir=task.workdir,
        env=env,
        hardened=False,
        network=opts.network if role == "agent" else "none",
    )


def _fresh_copy(scope: GradingScope, task: Task, image: str, gid: str, agent_cid: str) -> str:
    """T1: all of the agent's workdir, as the engine archives it, into a fresh container (the
    archive's top directory is the workdir's name, so it lands where it was)."""
    rt = scope.runtime
    buf = io.BytesIO()
    try:
        rt.get_archive(agent_cid, task.workdir, buf, WORKSPACE_BYTES * 2)
    except ArchiveTooLarge:
        buf = io.BytesIO(_empty_tar())
    scope.discard(agent_cid)
    cid = scope.container(_spec(task, gid, image, None, BaselineOptions(), "tests"))
    rt.put_archive(cid, str(PurePosixPath(task.workdir).parent), buf.getvalue())
    return cid


def _run_tests(
    rt: Runtime, task: Task, cid: str, tier: BaselineTier, prepared: Prepared
) -> tuple[list[CaseResult] | None, list[str]]:
    rt.put_archive(cid, task.workdir, _tree_tar(task.judge_dir / "tests", "tests"))
    if prepared.state is not None:
        rt.put_archive(cid, "/", _tree_tar(prepared.state, "judge-state"))
    res = rt.exec(
        cid, TEST_COMMAND[tier], deadline_s=task.config.limits.total_timeout,
        output_cap=LOG_CAP, workdir=task.workdir,
    )  # fmt: skip
    if (why := no_verdict(res)) is not None:
        return None, why
    assert res.exit_code is not None
    if tier == "t0":
        return log_cases(res.stdout + b"\n" + res.stderr, prepared.expected_ids), []
    return exit_code_cases(prepared.expected_ids, res.exit_code)


def _workdir_contains(scope: GradingScope, task: Task, cid: str, needle: bytes) -> bool:
    """Whether `needle` occurs anywhere in the archived workdir (streamed, overlap-safe)."""

    finder = _Finder(needle)
    try:
        scope.runtime.get_archive(cid, task.workdir, cast(BinaryIO, finder), WORKSPACE_BYTES * 2)
    except ArchiveTooLarge:
        pass
    return finder.found


class _Finder:
    """A write-only sink that remembers whether `needle` went through it."""

    def __init__(self, needle: bytes) -> None:
        self.needle = needle
        self.found = False
        self._tail = b""

    def write(self, data: bytes) -> int:
        window = self._tail + bytes(data)
        self.found = self.found or self.needle in window
        keep = len(self.needle) - 1
        self._tail = window[-keep:] if keep > 0 else b""
        return len(data)


def _owned(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if "__pycache__" in info.name.split("/"):
        return None
    info.uid = info.gid = AGENT_UID
    info.uname = info.gname = ""
    return info


def _tree_tar(src: Path, arcname: str) -> bytes:
    """A directory as the naive harness copies it in: owned by the user the tests run as."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        tf.add(src, arcname=arcname, recursive=True, filter=_owned)
    return buf.getvalue()


def _pack_submission(path: Path) -> bytes:
    if path.is_file():
        return path.read_bytes()
    if not path.is_dir():
        raise UsageError(f"--submission {path}: no such file or directory")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for child in sorted(path.iterdir()):
            tf.add(child, arcname=child.name, recursive=True, filter=_owned)
    return buf.getvalue()


def _empty_tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w"):
        pass
    return buf.getvalue()
