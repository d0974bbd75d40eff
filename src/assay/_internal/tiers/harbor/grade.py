"""The Harbor tier: Harbor's separate-verifier mode, as assay runs it. Compat-class.

  agent phase + firewall: exactly the strict tier's (`intake`): only the declared artifacts
          leave the agent's container, as the firewall's normalised archive.
  verify: a fresh, hardened, offline container from the task's environment image (the
          holder) holds the verifier's files: its workdir as the image has it, the artifacts
          restored over it (when the artifact is the whole workdir, exactly the agent's
          workdir), /logs/verifier (checked to be empty), and judge/tests/ read-only at
          /tests (never in the agent's container or the image's build context). No code of
          the candidate ever runs in it. `bash /tests/test.sh` runs as PID 1 of a second
          container that mounts the holder's files (the tests container), under the verifier
          time limit: when the script's process exits, the kernel ends every other process in
          that container before the container counts as stopped. Only then is the reward read,
          from the holder, through the firewall, and parsed strictly (`harbor_reward`).

The candidate's code runs beside test.sh, with the same uid, so while the script runs it can do
anything the script can, the reward included (docs/compat.md, "Harbor tier"). What this tier
guarantees is narrower: the reward was not present before the tests ran, nothing the candidate
started runs once the test script's process has exited, and an unreadable reward is a failure.

The two baselines model what Harbor itself does, to show the attacks of the proof matrix live.
T0 is Harbor's shared mode: the tests run in the agent's own container after it finished.
T1 is Harbor's separate verifier as Harbor runs it: the same fresh verifier, but test.sh is an
exec in it and the reward is read when that exec returns, while whatever the candidate left
running still runs.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from pathlib import Path
from typing import Literal

from assay.errors import UsageError

from ...firewall.check import FirewallLimits
from ...model.task import HARBOR_TEST, Task
from ...model.verdict import CaseResult, Verdict, build_verdict
from ...runtime import Bind, ContainerSpec, GradingScope, Limits, Runtime, Scratch
from ...runtime.base import ceilings_hit, stopped_ceilings
from ...runtime.scope import new_grading_id
from ..core.controller import Grading, Source
from ..core.intake import Crossing, Refused, Submission, take_from_container, tmpfs_bytes
from ..core.paths import INCONTAINER
from ..core.seed import seed_workdir
from .reward import JSON, MAX_JSON_BYTES, TXT, BadReward, Rewards, parse_reward

LOGS = "/logs/verifier"
TESTS = "/tests"
LOGS_BYTES = 1 << 20
TEST_ARGV = ("bash", f"{TESTS}/test.sh")
INCONTAINER_HARBOR = INCONTAINER / "harbor"
INIT_DIR = "/assay/harbor"
INIT_ARGV = ("python3", "-I", "-S", f"{INIT_DIR}/init.py", *TEST_ARGV)
# init.py's exit codes: 0 the script ended alone; LEFTOVER another process was alive then.
INIT_LEFTOVER = 3
_NAME_CHARS = re.compile(r"[^a-z0-9_.-]+")

__all__ = ["LOGS", "TESTS", "grade_harbor", "verifier_spec"]


def workdir_of(task: Task) -> str:
    """Where the agent worked and the artifacts are restored (Harbor's `[environment] workdir`)."""
    return task.workdir


def whole_workdir(task: Task) -> bool:
    """The task's artifact is its whole workdir (`assay import harbor`'s rule for a Harbor task
    that declares none)."""
    return list(task.config.artifacts) == ["**"]


def verifier_spec(task: Task, image: str, gid: str, restored: int = 0) -> ContainerSpec:
    """`restored`: what the artifacts restored into the workdir take there (`tmpfs_bytes`), on
    top of the task's own room for what the image holds there and what the tests write."""
    lim = task.config.limits
    harbor = task.config.harbor
    workdir = Scratch(workdir_of(task), lim.artifact_bytes + restored)
    return ContainerSpec(
        image=image,
        grading_id=gid,
        role="verifier",
        binds=(Bind(task.judge_dir / "tests", TESTS),),
        scratch=(workdir, Scratch(LOGS, LOGS_BYTES)),
        limits=Limits(memory_bytes=lim.memory_mb * 2**20, pids=lim.pids, cpus=lim.cpus),
        env=dict(harbor.verifier_env) if harbor else {},
        workdir=workdir_of(task),
    )


def grade_harbor(
    rt: Runtime,
    task: Task,
    source: Source,
    image: str,
    grading_id: str | None = None,
    *,
    baseline: Literal["t0", "t1"] | None = None,
) -> Verdict:
    if task.config.kind != "harbor":
        raise UsageError(f"task {task.id!r} is kind {task.config.kind!r}; not a harbor task")
    if not (task.judge_dir / HARBOR_TEST).is_file():
        raise UsageError(f"task {task.id!r} has no judge/{HARBOR_TEST}")
    g = Grading(rt, task, baseline or "harbor", image, gid=grading_id or new_grading_id())
    with g.scope() as scope:
        if baseline == "t0":
            return _shared(g, scope, source)
        taken = g.take_submission(scope, source)
        if isinstance(taken, Refused):
            return g.fail(taken.reason)
        # The verifier runs the task's environment image (an imported task always has one,
        # built by `assay build` or on first use), as the agent did.
        with g.timed("verify"):
            outcome = _verify(scope, task, g.task_image, taken, harbors_own=baseline == "t1")
        return _verdict(g, outcome)


Outcome = Rewards | BadReward | list[str]
"""What the verifier concluded: rewards, a refused reward file, or failing reason codes."""


def _verdict(g: Grading, outcome: Outcome) -> Verdict:
    if isinstance(outcome, list):
        return g.fail(outcome[0], outcome[1:])
    if isinstance(outcome, BadReward):
        return g.fail(outcome.reason)
    cases = [CaseResult(id=k, status="pass" if v == 1.0 else "fail", duration_s=0.0)
             for k, v in outcome.values]  # fmt: skip
    return build_verdict(g.facts(), cases, len(cases))


def _verify(
    scope: GradingScope, task: Task, image: str, sub: Submission, harbors_own: bool
) -> Outcome:
    rt = scope.runtime
    # The firewall capped the artifacts' bytes, but a tmpfs holds each file in whole pages: a
    # workdir sized by the bytes alone would refuse thousands of small files (an engine error).
    spec = verifier_spec(task, image, scope.grading_id, tmpfs_bytes(sub.accepted.manifest))
    cid = scope.container(spec)
    # The workdir as the image has it (Harbor's verifier starts from the environment too),
    # then the artifacts over it, root-owned so the tests' uid cannot rewrite them. When the
    # artifact is the whole workdir, it is the workdir: no seed under it, so what the agent
    # deleted stays deleted and the tests see exactly the agent's final workdir.
    if task.environment is not None and not whole_workdir(task):
        seed_workdir(scope, task, image, cid)
    rt.put_archive(cid, workdir_of(task), sub.archive.read_bytes())
    before = _read_logs(scope, cid, "before")
    if isinstance(before, list):
        return before
    if before:
        return ["harbor:reward-before-tests", *(_code("file", n) for n in sorted(before)[:4])]
    run_tests = _exec_tests if harbors_own else _tests_as_init
    failed = run_tests(scope, task, cid, spec)
    if failed:
        scope.discard(cid)
        return failed
    after = _read_logs(scope, cid, "after")
    scope.discard(cid)
    if isinstance(after, list):
        return after
    return parse_reward(after)


def _tests_as_init(scope: GradingScope, task: Task, holder: str, spec: ContainerSpec) -> list[str]:
    """test.sh under assay's init (`_incontainer/harbor/init.py`), PID 1 of a container of its
    own that mounts the holder's files. The init stops the script at its exit, before anything
    of it can be seen, kills every other process at once, and reports any it found; as it
    exits, the kernel ends the namespace, and the engine counts the container stopped only
    after that. So once `wait` returns, no process of the candidate runs anywhere, and none
    ran after the script ended. (A listing after the tests could only see the processes still
    there: a writer that waits for the script to exit, writes and exits at once was gone.)"""
    rt = scope.runtime
    tests = ContainerSpec(
        image=spec.image,
        grading_id=spec.grading_id,
        role="tests",
        command=INIT_ARGV,
        env=spec.env,
        binds=(Bind(INCONTAINER_HARBOR, INIT_DIR),),
        limits=spec.limits,
        workdir=spec.workdir,
        init=False,
        mounts_of=holder,
    )
    tid = scope.container(tests)
    code = rt.wait(tid, task.config.limits.total_timeout)
    limits = [f"limit:{c}" for c in ceilings_hit(rt, tid)]
    scope.discard(tid)  # a script past its deadline still runs: removing it ends it
    if code is None:
        return ["limit:verifier-time", *limits]
    if limits:
        return limits
    if code == INIT_LEFTOVER:
        return ["harbor:leftover-process"]
    return [] if code == 0 else ["harbor:tests-interrupted"]


def _exec_tests(scope: GradingScope, task: Task, holder: str, spec: ContainerSpec) -> list[str]:
    """T1, Harbor's own verifier: test.sh is an exec in the verifier, and the reward is read
    when the exec returns, beside whatever the candidate's program left running there."""
    rt = scope.runtime
    run = rt.exec(
        holder, TEST_ARGV, deadline_s=task.config.limits.total_timeout, output_cap=0,
        env=spec.env, workdir=workdir_of(task), capture=False,
    )  # fmt: skip
    if run.timed_out:
        return ["limit:verifier-time"]
    if run.exited:
        return [f"limit:{c}" for c in stopped_ceilings(rt, holder)] or ["limit:verifier-time"]
    return [f"limit:{c}" for c in ceilings_hit(rt, holder)]


def _code(kind: str, name: str) -> str:
    """A reason code naming a hostile process or file name: lower-case, bounded, printable."""
    # A reason code's name starts with [a-z0-9]; anything else would make the verdict invalid.
    return f"{kind}:{_NAME_CHARS.sub('-', name.lower()).lstrip('-._')[:40] or 'unnamed'}"


def _read_logs(scope: GradingScope, cid: str, purpose: str) -> dict[str, bytes] | list[str]:
    """The regular files of /logs/verifier (at most MAX_JSON_BYTES + 1 bytes each), read
    through the firewall: the candidate's code could have written anything there."""
    limits = FirewallLimits(max_total_bytes=LOGS_BYTES, max_file_bytes=LOGS_BYTES)
    cap = LOGS_BYTES * 2 + (1 << 20)
    how = Crossing(limits, None, "verifier", f"logs-{purpose}", "reward-firewall")
    taken = take_from_container(scope, cid, LOGS, cap, how)
    if isinstance(taken, Refused):
        return ["harbor:reward-unreadable", taken.reason]
    found: dict[str, bytes] = {}
    for entry in taken.accepted.manifest:
        if entry.kind == "dir":
            continue
        if purpose == "after" and entry.path not in (TXT, JSON):
            continue
        found[entry.path] = _read_capped(taken.files / entry.path, MAX_JSON_BYTES + 1)
    return found


def _read_capped(path: Path, cap: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(cap)


def _shared(g: Grading, scope: GradingScope, source: Source) -> Verdict:
    """The naive baseline: Harbor's shared mode. The agent and the tests share one container,
    and the reward is whatever /logs/verifier holds at the end. Unsafe on purpose."""
    rt, task = scope.runtime, g.task
    if source.agent_cmd is None:
        raise UsageError("the naive harbor baseline grades an agent run (--agent-cmd)")
    lim = task.config.limits
    spec = ContainerSpec(
        image=g.task_image,
        grading_id=scope.grading_id,
        role="agent",
        binds=(
            Bind(task.inputs_dir, "/task"),
            *((Bind(source.agent_dir.resolve(), "/agent"),) if source.agent_dir else ()),
        ),
        scratch=(
            Scratch(workdir_of(task), lim.artifact_bytes),
            Scratch(LOGS, LOGS_BYTES),
            Scratch(TESTS, 16 << 20),
        ),
        limits=Limits(memory_bytes=max(lim.memory_mb, 512) * 2**20, pids=lim.pids, cpus=lim.cpus),
        workdir=workdir_of(task),
    )
    cid = scope.container(spec)
    if task.environment is not None:
        seed_workdir(scope, task, g.task_image, cid)
    with g.timed("agent"):
        rt.exec(cid, ("sh", "-c", source.agent_cmd), deadline_s=lim.agent_timeout, output_cap=0,
                workdir=workdir_of(task), capture=False)  # fmt: skip
    with g.timed("verify"):
        rt.put_archive(cid, TESTS, _tests_tar(task.judge_dir / "tests"))
        rt.exec(cid, TEST_ARGV, deadline_s=lim.total_timeout, output_cap=0,
                workdir=workdir_of(task), capture=False)  # fmt: skip
        rt.pause(cid)
        logs = _read_logs(scope, cid, "after")
    return _verdict(g, logs if isinstance(logs, list) else parse_reward(logs))


def _tests_tar(tests: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for path in sorted(tests.rglob("*")):
            if path.is_file() and not path.is_symlink():
                tf.add(path, path.relative_to(tests).as_posix(), recursive=False)
    return buf.getvalue()
