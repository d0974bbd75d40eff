"""Dispatch one grading to its tier. The tier rules (which kind may run where) live here."""

from __future__ import annotations

from assay.errors import UsageError

from ..model.task import STRICT_KINDS, Task
from ..model.verdict import Tier, Verdict
from ..runtime.docker import DockerRuntime
from ..runtime.images import DEFAULT_BASE_IMAGE
from .baselines import grade_baseline
from .compat import grade_compat
from .controller import Source
from .strict import grade_strict

TIERS: tuple[Tier, ...] = ("t0", "t1", "t2", "t3")

DEFAULT_IMAGE = DEFAULT_BASE_IMAGE


def pick_tier(task: Task, requested: str | None, unsafe_baseline: bool) -> Tier:
    default: Tier = "t3" if task.config.kind in STRICT_KINDS else "t2"
    tier = requested if requested in TIERS else default
    if requested is not None and requested not in TIERS:
        raise UsageError(f"unknown tier {requested!r}; choose one of {', '.join(TIERS)}")
    if tier in ("t0", "t1") and not unsafe_baseline:
        raise UsageError(
            f"{tier} is an unsafe baseline that exists to prove attacks are live; "
            "pass --unsafe-baseline if that is really what you want"
        )
    if tier == "t3" and task.config.kind not in STRICT_KINDS:
        raise UsageError(
            f"task {task.id!r} is kind {task.config.kind!r}: its tests import the candidate, "
            "which the strict tier never does; grade it on t2 (the default for it)"
        )
    if tier in ("t0", "t1", "t2") and task.config.kind in STRICT_KINDS and tier != default:
        raise UsageError(f"tier {tier} runs pytest tasks; {task.id!r} is a strict task")
    return tier


def grade(task: Task, source: Source, tier: Tier, image: str, oci_runtime: str = "runc") -> Verdict:
    rt = DockerRuntime(oci_runtime=None if oci_runtime == "runc" else oci_runtime)
    if tier == "t3":
        return grade_strict(rt, task, source, image)
    if tier == "t2":
        return grade_compat(rt, task, source, image)
    if tier == "t0" or tier == "t1":
        return grade_baseline(rt, task, source, image, tier)
    raise UsageError(f"tier {tier} is not available in this build yet")
