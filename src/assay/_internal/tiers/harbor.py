"""The Harbor tier: Harbor's separate-verifier mode, as assay runs it. Compat-class.

  agent phase + firewall: exactly the strict tier's (`intake`): only the declared artifacts
          leave the agent's container, as the firewall's normalised archive.
  verify: a fresh, hardened, offline container from the task's environment image; its
          workdir as the image has it, the artifacts restored over it (when the artifact is
          the whole workdir, exactly the agent's workdir); /logs/verifier is checked to be
          empty;
          judge/tests/ is mounted read-only at /tests (it was never in the agent's container
          or the image's build context); `bash /tests/test.sh` runs under the verifier time
          limit. Then the container is frozen, the engine lists its processes from outside
          (any process started since the container began is a leftover of the candidate and
          fails the grading, naming it), and the reward file is read through the firewall
          and parsed strictly (`harbor_reward`).

The candidate's code runs in the same container as test.sh, with the same uid, so it can do
anything the test script can (docs/compat.md, "Harbor tier"). What this tier guarantees is
narrower: the reward was not present before the tests ran, nothing the candidate started
outlives the tests, and an unreadable reward is a failure.

`shared=True` is the naive baseline (T0): Harbor's shared mode, where the tests run in the
agent's own container after it finished and the reward is read without either check. It
exists only to show the attacks of the proof matrix are live.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from pathlib import Path
from time import monotonic, sleep

from assay.errors import UsageError

from ..firewall.check import FirewallLimits
from ..model.task import HARBOR_TEST, Task
from ..model.verdict import CaseResult, Verdict, build_verdict
from ..runtime import Bind, ContainerSpec, GradingScope, Limits, Runtime, RuntimeError_, Scratch
from ..runtime.base import ceilings_hit, stopped_ceilings
from ..runtime.scope import new_grading_id
from .controller import Grading, Source
from .harbor_reward import JSON, MAX_JSON_BYTES, TXT, BadReward, Rewards, parse_reward
from .intake import Refused, Submission, take_from_container
from .seed import seed_workdir

LOGS = "/logs/verifier"
TESTS = "/tests"
LOGS_BYTES = 1 << 20
TEST_ARGV = ("bash", f"{TESTS}/test.sh")
OWN_WAIT_S = 30.0
_NAME_CHARS = re.compile(r"[^a-z0-9_.-]+")

__all__ = ["LOGS", "TESTS", "grade_harbor", "verifier_spec"]


def workdir_of(task: Task) -> str:
    """Where the agent worked and the artifacts are restored (Harbor's `[environment] workdir`)."""
    return task.workdir


def whole_workdir(task: Task) -> bool:
    """The task's artifact is its whole workdir (`assay import harbor`'s rule for a Harbor task
    that declares none)."""
    return list(task.config.artifacts) == ["**"]


def verifier_spec(task: Task, image: str, gid: str) -> ContainerSpec:
    lim = task.config.limits
    harbor = task.config.harbor
    return ContainerSpec(
        image=image,
        grading_id=gid,
        role="verifier",
        binds=(Bind(task.judge_dir / "tests", TESTS),),
        scratch=(Scratch(workdir_of(task), lim.artifact_bytes), Scratch(LOGS, LOGS_BYTES)),
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
    shared: bool = False,
    check_processes: bool = True,
) -> Verdict:
    """`check_processes=False` exists for the attack tests only: it shows the leftover-process
    check is what blocks a candidate that writes the reward after the tests."""
    if task.config.kind != "harbor":
        raise UsageError(f"task {task.id!r} is kind {task.config.kind!r}; not a harbor task")
    if not (task.judge_dir / HARBOR_TEST).is_file():
        raise UsageError(f"task {task.id!r} has no judge/{HARBOR_TEST}")
    g = Grading(rt, task, "t0" if shared else "harbor", image, gid=grading_id or new_grading_id())
    with g.scope() as scope:
        if shared:
            return _shared(g, scope, source)
        taken = g.take_submission(scope, source)
        if isinstance(taken, Refused):
            return g.fail(taken.reason)
        t0 = monotonic()
        # The verifier runs the task's environment image (an imported task always has one,
        # built by `assay build` or on first use), as the agent did.
        outcome = _verify(scope, task, g.task_image, taken, check_processes)
        g.lap("verify", t0)
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
    scope: GradingScope, task: Task, image: str, sub: Submission, check_processes: bool
) -> Outcome:
    rt = scope.runtime
    spec = verifier_spec(task, image, scope.grading_id)
    cid = scope.container(spec)
    own = _own_processes(rt, cid, spec.command[0])
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
    run = rt.exec(
        cid, TEST_ARGV, deadline_s=task.config.limits.total_timeout, output_cap=0,
        env=spec.env, workdir=workdir_of(task),
        capture=False,
    )  # fmt: skip
    limits = [f"limit:{c}" for c in ceilings_hit(rt, cid)]
    if run.exited:
        limits = limits or [f"limit:{c}" for c in stopped_ceilings(rt, cid)]
        scope.discard(cid)
        if not limits:
            raise RuntimeError_("the verifier container stopped during the tests at no limit")
        return limits
    if run.timed_out:
        scope.discard(cid)
        return ["limit:verifier-time", *limits]
    try:
        rt.pause(cid)  # nothing may write the reward between the check below and the read
    except RuntimeError_:
        scope.discard(cid)
        return ["limit:freeze", *limits]
    leftovers = sorted({name for pid, name in rt.processes(cid) if pid not in own})
    if leftovers and check_processes:
        scope.discard(cid)
        return ["harbor:leftover-process", *(_code("process", n) for n in leftovers[:4])]
    if limits:
        scope.discard(cid)
        return limits
    after = _read_logs(scope, cid, "after")
    scope.discard(cid)
    if isinstance(after, list):
        return after
    return parse_reward(after)


def _own_processes(rt: Runtime, cid: str, keep_alive: str) -> set[int]:
    """The container's own processes (its init and keep-alive), once the keep-alive runs:
    nothing of the candidate has run yet, so any other process after the tests is a leftover.
    Listed too early, the keep-alive would be missing and later taken for the candidate's."""
    deadline = monotonic() + OWN_WAIT_S
    while True:
        procs = rt.processes(cid)
        if any(name == keep_alive for _, name in procs):
            return {pid for pid, _ in procs}
        if monotonic() > deadline:
            raise RuntimeError_(f"the verifier's {keep_alive!r} did not start in {OWN_WAIT_S} s")
        sleep(0.05)


def _code(kind: str, name: str) -> str:
    """A reason code naming a hostile process or file name: lower-case, bounded, printable."""
    # A reason code's name starts with [a-z0-9]; anything else would make the verdict invalid.
    return f"{kind}:{_NAME_CHARS.sub('-', name.lower()).lstrip('-._')[:40] or 'unnamed'}"


def _read_logs(scope: GradingScope, cid: str, purpose: str) -> dict[str, bytes] | list[str]:
    """The regular files of /logs/verifier (at most MAX_JSON_BYTES + 1 bytes each), read
    through the firewall: the candidate's code could have written anything there."""
    limits = FirewallLimits(max_total_bytes=LOGS_BYTES, max_file_bytes=LOGS_BYTES)
    cap = LOGS_BYTES * 2 + (1 << 20)
    taken = take_from_container(
        scope, cid, LOGS, cap, limits, None, "verifier", f"logs-{purpose}", "reward-firewall"
    )
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
        binds=(Bind(task.inputs_dir, "/task"),),
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
    t0 = monotonic()
    rt.exec(cid, ("sh", "-c", source.agent_cmd), deadline_s=lim.agent_timeout, output_cap=0,
            workdir=workdir_of(task), capture=False)  # fmt: skip
    g.lap("agent", t0)
    t0 = monotonic()
    rt.put_archive(cid, TESTS, _tests_tar(task.judge_dir / "tests"))
    rt.exec(cid, TEST_ARGV, deadline_s=lim.total_timeout, output_cap=0,
            workdir=workdir_of(task), capture=False)  # fmt: skip
    rt.pause(cid)
    logs = _read_logs(scope, cid, "after")
    g.lap("verify", t0)
    return _verdict(g, logs if isinstance(logs, list) else parse_reward(logs))


def _tests_tar(tests: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for path in sorted(tests.rglob("*")):
            if path.is_file() and not path.is_symlink():
                tf.add(path, path.relative_to(tests).as_posix(), recursive=False)
    return buf.getvalue()
