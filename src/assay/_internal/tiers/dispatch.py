"""The one place that decides which tier grades a task, and runs it.

The command line, the batch engine, the public `Grader`, the proof matrix and the benchmark
all call `pick_tier` and `run_tier`; no other module knows which kind of task goes where.
"""

from __future__ import annotations

from typing import Literal, get_args

from assay.errors import UsageError

from ..model.diagnostics import Judged
from ..model.task import STRICT_KINDS, Task
from ..model.verdict import UNSAFE_TIERS, Tier
from ..runtime import Runtime
from ..runtime.images import DEFAULT_BASE_IMAGE
from .baselines.grade import BaselineOptions, BaselineRun, run_baseline
from .baselines.repo import run_repo_baseline
from .compat.grade import grade_compat
from .core.controller import Source
from .core.twin import mark_twin
from .harbor.grade import grade_harbor
from .repo.grade import grade_repository
from .strict.grade import grade_strict
from .strict.judgepool import JudgePool

ALL_TIERS: tuple[Tier, ...] = get_args(Tier)
TIERS: tuple[Tier, ...] = ALL_TIERS
"""The proof matrix's columns. An attack is graded on the tiers that can grade its task
(`tiers_for`): the harbor tier only Harbor tasks, T2 and T3 never one."""

DEFAULT_IMAGE = DEFAULT_BASE_IMAGE


def default_tier(task: Task) -> Tier:
    """Strict kinds never import the candidate, so they go to T3; pytest tasks to T2; tasks
    imported from Harbor to the harbor tier (its separate-verifier mode)."""
    if task.config.kind == "harbor":
        return "harbor"
    return "t3" if task.config.kind in STRICT_KINDS else "t2"


def is_repository(task: Task) -> bool:
    return task.config.pytest is not None and task.config.pytest.is_repository


def tiers_for(task: Task) -> tuple[Tier, ...]:
    """Every tier that can grade `task` at all (the unsafe baselines included)."""
    if task.config.kind == "harbor":
        return ("t0", "t1", "harbor")
    return ("t3",) if task.config.kind in STRICT_KINDS else ("t0", "t1", "t2")


def pick_tier(task: Task, requested: str | None, unsafe_baseline: bool) -> Tier:
    default = default_tier(task)
    if requested is None:
        return default
    if requested not in ALL_TIERS:
        raise UsageError(f"unknown tier {requested!r}; choose one of {', '.join(ALL_TIERS)}")
    tier = next(t for t in ALL_TIERS if t == requested)
    if tier in UNSAFE_TIERS and not unsafe_baseline:
        raise UsageError(
            f"{tier} is an unsafe baseline that exists to prove attacks are live; "
            "pass --unsafe-baseline if that is really what you want"
        )
    if tier == "t3" and task.config.kind == "pytest":
        raise UsageError(
            f"task {task.id!r} is kind {task.config.kind!r}: its tests import the candidate, "
            "which the strict tier never does; grade it on t2 (the default for it)"
        )
    if tier not in tiers_for(task):
        raise UsageError(
            f"tier {tier} cannot grade {task.id!r} (kind {task.config.kind!r}); "
            f"it takes {', '.join(tiers_for(task))}"
        )
    return tier


def run_tier(
    rt: Runtime,
    task: Task,
    source: Source,
    tier: Tier,
    image: str,
    *,
    grading_id: str | None = None,
    judges: JudgePool | None = None,
    baseline: BaselineOptions | None = None,
) -> tuple[Judged, BaselineRun | None]:
    """Grade on `tier` (already picked): the verdict with its diagnostics (only the strict
    tier's judge explains failed cases); a baseline also returns what it observed. An
    impossible twin's verdict is marked here, whichever tier made it (`core/twin.py`)."""
    judged, run = _run(rt, task, source, tier, image, grading_id, judges, baseline)
    return mark_twin(task, judged), run


def _run(
    rt: Runtime,
    task: Task,
    source: Source,
    tier: Tier,
    image: str,
    grading_id: str | None,
    judges: JudgePool | None,
    baseline: BaselineOptions | None,
) -> tuple[Judged, BaselineRun | None]:
    if tier == "t3":
        return grade_strict(rt, task, source, image, grading_id, judges=judges), None
    if tier == "t2" and is_repository(task):
        return Judged(grade_repository(rt, task, source, image, grading_id)), None
    if tier == "t2":
        return Judged(grade_compat(rt, task, source, image, grading_id)), None
    if tier == "harbor" or task.config.kind == "harbor":
        # The baselines model Harbor itself: T0 its shared mode, T1 its own separate verifier.
        harbors: Literal["t0", "t1"] | None = "t0" if tier == "t0" else None
        harbors = "t1" if tier == "t1" else harbors
        return Judged(grade_harbor(rt, task, source, image, grading_id, baseline=harbors)), None
    if is_repository(task):
        run = run_repo_baseline(rt, task, source, image, tier, baseline, grading_id=grading_id)
    else:
        run = run_baseline(rt, task, source, image, tier, baseline, grading_id=grading_id)
    return Judged(run.verdict), run
