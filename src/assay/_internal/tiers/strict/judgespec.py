"""The judge container's spec, shared by the strict tier and the judge pool (which reuses
judges across gradings); it lives apart from both so neither imports the other."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ...model.task import Task
from ...runtime import Bind, ContainerSpec, Limits, Scratch
from ..core.paths import INCONTAINER
from .judgewire import WORKER_ARGV

JUDGE_LIMITS = Limits(memory_bytes=1 << 30, pids=64, cpus=1.0)
HANDOFF = "/handoff"
EXCHANGE_BYTES = 512 << 20
"""The judge's /exchange, a tmpfs: a transform task's outputs of every case go there."""


def judge_spec(
    task: Task,
    image: str,
    gid: str,
    handoff: Path | None = None,
    files: Path | None = None,
    resident: bool = False,
) -> ContainerSpec:
    """`handoff`: a host directory, read-only at /handoff, where the controller leaves the
    runner's output for `compare` (a file write instead of an archive upload per grading).
    `files`: what to bind at /judge instead of the task's judge directory (a pooled judge's
    own copy, which the pool refills when the judge serves another task). `resident`: the
    container's main process is the judge's worker (`Runtime.spawn`, `judgepool.Resident`),
    started as root with the three capabilities it spends at once on a uid of its own, which
    its steps never have; otherwise a keep-alive, and each step an exec."""
    binds = [Bind(files or task.judge_dir, "/judge"), Bind(INCONTAINER, "/assay")]
    if handoff is not None:
        binds.append(Bind(handoff, HANDOFF))
    spec = ContainerSpec(
        image=image,
        grading_id=gid,
        role="judge",
        binds=tuple(binds),
        scratch=(Scratch("/state", 64 << 20), Scratch("/exchange", EXCHANGE_BYTES)),
        limits=JUDGE_LIMITS,
        workdir="/judge",
    )
    if resident:
        return replace(spec, command=WORKER_ARGV, switch_user=True, spawned=True, stdin=True)
    return spec
