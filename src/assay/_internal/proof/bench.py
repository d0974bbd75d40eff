"""`assay bench`: what grading costs on this machine, every figure measured in one run.

  floor       one bare container running `true` (created, started, waited for, removed through
              the Runtime, labelled like every other), the cost of one container
  latency     per tier and task: wall, controller CPU and whole-machine CPU per grading,
              containers started, harness overhead (wall minus the candidate's own compute)
  throughput  strict gradings per minute through the batch machinery at 1, 2, 4, 8 workers
  memory      the controller's peak RSS over the whole run
  judge       the judge's own parse, decode and compare of one 1 MiB output, honest and a
              hash-collision flood (bench_values.py; in-process, no container)

Honest tasks only; a grading that fails to pass is reported, never averaged in silently.
"""

from __future__ import annotations

import contextlib
import os
import platform
import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..batch.run import jobs_from_dir, load_tasks, run_batch
from ..model.diagnostics import Judged
from ..model.task import Task, load_task
from ..model.verdict import Tier
from ..runtime import ContainerSpec, GradingScope, Runtime
from ..runtime.observed import ObservedRuntime
from ..runtime.scope import TEMP_PREFIX, new_grading_id
from ..tiers.core.controller import Source
from ..tiers.dispatch import run_tier
from ..tiers.strict.judgepool import JudgePool
from .bench_values import judge_value_costs

TierFn = Callable[[Runtime, Task, Path, str, str], Judged]
"""(runtime, task, submission, image, grading id) -> verdict."""


@dataclass(frozen=True)
class Case:
    """One honest task a tier grades: its kind, where it lives, and its correct solution."""

    kind: str
    task: str

    def paths(self, examples: Path) -> tuple[Path, Path]:
        root = examples / self.task
        return root, root / "solutions" / "correct"


# The same function (add) is a strict task for T3 and a pytest suite for the pytest tiers: T0
# models harnesses that run the task's pytest tests next to the candidate, so it has no other form.
REUSED = "t3-reused-judge"
"""T3 as `assay grade-many` runs it by default: a reset judge borrowed per task."""
PLAN: dict[str, tuple[Case, ...]] = {
    "t3": (Case("function", "add"), Case("cli", "wordcount")),
    "t2": (Case("pytest", "add-pytest"),),
    "t0": (Case("pytest", "add-pytest"),),
    REUSED: (Case("function", "add"),),
}


@dataclass(frozen=True)
class Settings:
    samples: int = 20
    floor_samples: int = 40
    throughput_levels: tuple[int, ...] = (1, 2, 4, 8)
    per_worker: int = 6
    minimum_batch: int = 12

    @classmethod
    def quick(cls) -> Settings:
        return cls(samples=3, floor_samples=6, per_worker=1, minimum_batch=4)

    def batch_size(self, parallelism: int) -> int:
        return max(self.minimum_batch, self.per_worker * parallelism)


@dataclass
class Series:
    """Per-grading samples of one (tier, task)."""

    wall: list[float] = field(default_factory=list)
    cpu_controller: list[float] = field(default_factory=list)
    cpu_machine: list[float] = field(default_factory=list)
    overhead: list[float] = field(default_factory=list)
    containers: list[int] = field(default_factory=list)
    ops: list[dict[str, float]] = field(default_factory=list)
    phases: list[dict[str, float]] = field(default_factory=list)
    not_passed: list[str] = field(default_factory=list)


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def p90(xs: Sequence[float]) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(0.9 * len(s) + 0.5) - 1))]


def machine_cpu_s() -> float:
    """CPU seconds spent by every process on the machine (user+nice+system+irq+softirq+steal):
    the engine, containerd, runc and the containers count, not just us."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    busy = sum(fields[:8]) - fields[3] - fields[4]  # minus idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def current_rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def tier_fn(tier: Tier, judges: JudgePool | None = None) -> TierFn:
    """Grade on `tier` the way `assay grade`/`grade-many` do (`judges`: T3 with a borrowed,
    reset judge, as `assay grade-many` runs it by default)."""

    def fn(rt: Runtime, task: Task, sub: Path, image: str, gid: str) -> Judged:
        try:
            source = Source(path=sub)
            return run_tier(rt, task, source, tier, image, grading_id=gid, judges=judges)[0]
        finally:
            if judges is not None:
                judges.finish(gid)

    return fn


def available_tiers() -> tuple[dict[str, TierFn], dict[str, str]]:
    """The graders bench measures, and why any is unavailable (none is, in this build)."""
    return {tier: tier_fn(tier) for tier in ("t3", "t2", "t0")}, {}


FLOOR_WAIT_S = 60.0


def floor_spec(image: str, gid: str) -> ContainerSpec:
    """No hardening, no mounts, no volumes, no exec: what any harness pays for one container."""
    return ContainerSpec(image, gid, "floor", command=("true",), hardened=False)


def measure_floor(rt: Runtime, image: str, n: int) -> list[float]:
    """A bare container, created, started, waited for and removed through the Runtime (so it
    is labelled, and removed on every exit path, like any grading's)."""
    walls = []
    with GradingScope(rt, new_grading_id()) as scope:
        for _ in range(n):
            t0 = time.monotonic()
            cid = scope.container(floor_spec(image, scope.grading_id))
            rt.wait(cid, FLOOR_WAIT_S)
            scope.discard(cid)
            walls.append(time.monotonic() - t0)
    return walls


def sample_grading(
    s: Series, rt: ObservedRuntime, fn: TierFn, task: Task, submission: Path, image: str
) -> None:
    gid = new_grading_id()
    cpu0, mach0, t0 = time.process_time(), machine_cpu_s(), time.monotonic()
    try:
        v = fn(rt, task, submission, image, gid).verdict
    finally:
        wall = time.monotonic() - t0
        cpu, mach = time.process_time() - cpu0, machine_cpu_s() - mach0
        stats = rt.take(gid)
    if not v.passed:
        s.not_passed.append(f"{gid}: {', '.join(v.reason_codes) or 'cases failed'}")
    s.wall.append(wall)
    s.cpu_controller.append(cpu)
    s.cpu_machine.append(mach)
    s.overhead.append(max(wall - sum(c.duration_s for c in v.cases), 0.0))
    s.containers.append(stats.containers)
    s.ops.append(dict(stats.seconds))
    s.phases.append(dict(v.timings))


def measure_throughput(
    rt: ObservedRuntime, fn: TierFn, task_dir: Path, submission: Path, image: str, jobs: int, n: int
) -> tuple[float, int]:
    """Gradings per minute through run_batch (signing and atomic writes included)."""
    with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}bench-") as tmp:
        subs = Path(tmp) / "subs"
        for i in range(n):
            dest = subs / f"s{i:04d}"
            dest.mkdir(parents=True)
            for f in submission.iterdir():
                (dest / f.name).write_bytes(f.read_bytes())
        joblist = jobs_from_dir(task_dir, subs)
        tasks = load_tasks(joblist)

        def grade(task: Task, sub: Path, gid: str) -> Judged:
            try:
                return fn(rt, task, sub, image, gid)
            finally:
                rt.take(gid)

        t0 = time.monotonic()
        res = run_batch(
            Path(tmp) / "out", joblist, tasks, grade, Ed25519PrivateKey.generate(), jobs
        )
        wall = time.monotonic() - t0
    bad = res.tally.failed + res.tally.errors + res.not_run
    return res.tally.passed / wall * 60, bad


def _op_medians(series: Series) -> dict[str, float]:
    names = sorted({k for ops in series.ops for k in ops})
    return {k: round(median([ops.get(k, 0.0) for ops in series.ops]), 4) for k in names}


def _phase_medians(series: Series) -> dict[str, float]:
    names = sorted({k for ph in series.phases for k in ph})
    return {k: round(median([ph.get(k, 0.0) for ph in series.phases]), 4) for k in names}


def machine_description(client: Any, oci_runtime: str) -> dict[str, Any]:
    info = client.info()
    with open("/proc/meminfo") as fh:
        mem_kb = int(fh.readline().split()[1])
    os_name = ""
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(mem_kb / 2**20, 1),
        "os": os_name,
        "kernel": platform.release(),
        "docker": info.get("ServerVersion"),
        "cgroup": info.get("CgroupVersion"),
        "storage_driver": info.get("Driver"),
        "oci_runtime": oci_runtime,
        "python": platform.python_version(),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def _latency_row(case: Case, s: Series, floor_med: float) -> dict[str, Any]:
    n_containers = round(median(s.containers))
    return {
        "task": case.task,
        "n": len(s.wall),
        "wall_median_s": round(median(s.wall), 4),
        "wall_p90_s": round(p90(s.wall), 4),
        "cpu_controller_median_s": round(median(s.cpu_controller), 4),
        "cpu_controller_p90_s": round(p90(s.cpu_controller), 4),
        "cpu_machine_median_s": round(median(s.cpu_machine), 4),
        "cpu_machine_p90_s": round(p90(s.cpu_machine), 4),
        "overhead_median_s": round(median(s.overhead), 4),
        "containers": n_containers,
        "floor_s": round(n_containers * floor_med, 4),
        "overhead_over_floor": round(median(s.overhead) / (n_containers * floor_med), 3)
        if n_containers
        else None,
        "not_passed": s.not_passed,
        "ops_median_s": _op_medians(s),
        "phases_median_s": _phase_medians(s),
    }


def _ratio(a: Series | None, b: Series | None) -> float | None:
    return round(median(a.wall) / median(b.wall), 3) if a and b and a.wall and b.wall else None


def run_bench(
    client: Any,
    rt: ObservedRuntime,
    image: str,
    oci_runtime: str,
    settings: Settings,
    examples: Path,
    say: Callable[[str], None] = lambda s: None,
) -> dict[str, Any]:
    t_start = time.monotonic()
    machine = machine_description(client, oci_runtime)
    fns, missing = available_tiers()
    rt.image_digest(image)
    pool = JudgePool(rt)
    try:
        fns[REUSED] = tier_fn("t3", pool)
        floor, series, plan = _latency_rounds(rt, fns, image, settings, examples, say)
    finally:
        pool.close()
    floor_med = median(floor)
    latency = {
        f"{tier}/{case.kind}": _latency_row(case, series[(tier, case.task)], floor_med)
        for tier, case, _ in plan
    }

    add_dir, add_sub = Case("function", "add").paths(examples)
    rss_before = current_rss_mb()
    throughput: dict[str, dict[str, float]] = {"reused_judge": {}, "fresh_judge": {}}
    throughput_bad = 0
    for mode, per_level in throughput.items():
        for jobs in settings.throughput_levels:
            n = settings.batch_size(jobs)
            say(f"throughput: t3 function, {mode.replace('_', ' ')}, {n} gradings, --jobs {jobs}")
            level_pool = JudgePool(rt, max_idle=jobs)
            try:
                fn = tier_fn("t3", level_pool) if mode == "reused_judge" else fns["t3"]
                per_min, bad = measure_throughput(rt, fn, add_dir, add_sub, image, jobs, n)
            finally:
                level_pool.close()
            per_level[str(jobs)] = round(per_min, 1)
            throughput_bad += bad
    rss_after = current_rss_mb()

    t0 = series.get(("t0", "add-pytest"))
    t3, t3r = series.get(("t3", "add")), series.get((REUSED, "add"))
    best = throughput["reused_judge"]
    result: dict[str, Any] = {
        "machine": machine,
        "image": image,
        "settings": {
            "samples": settings.samples,
            "floor_samples": settings.floor_samples,
            "throughput_batches": {
                str(j): settings.batch_size(j) for j in settings.throughput_levels
            },
        },
        "unavailable": missing,
        "floor_s": {"median": round(floor_med, 4), "p90": round(p90(floor), 4), "n": len(floor)},
        "latency": latency,
        "throughput_per_min": throughput,
        "throughput_not_passed": throughput_bad,
        "ratio_t3_t0_wall": _ratio(t3, t0),
        "ratio_t3_t0_wall_reused_judge": _ratio(t3r, t0),
        "ratio_t3_t0_note": "t3 on examples/add vs t0 on examples/add-pytest (the same function)"
        if t0
        else f"t0 unavailable: {missing.get('t0', '')}",
        "ratio_t3_overhead_floor": latency.get("t3/function", {}).get("overhead_over_floor"),
        "ratio_t3_overhead_floor_reused_judge": latency.get(f"{REUSED}/function", {}).get(
            "overhead_over_floor"
        ),
        "strict_gradings_per_min": max(best.values()) if best else None,
        "strict_best_parallelism": int(max(best, key=lambda k: best[k])) if best else None,
        "strict_gradings_per_min_fresh_judge": max(throughput["fresh_judge"].values())
        if throughput["fresh_judge"]
        else None,
        "controller_rss_mb_before_after_throughput": [round(rss_before, 1), round(rss_after, 1)],
        "judge_values_s": judge_value_costs(repeats=1 if settings.samples < 20 else 3),
        "controller_peak_rss_mb": round(peak_rss_mb(), 1),
        "bench_wall_s": 0.0,
    }
    result["targets"] = targets(result)
    result["bench_wall_s"] = round(time.monotonic() - t_start, 1)
    return result


def _latency_rounds(
    rt: ObservedRuntime,
    fns: dict[str, TierFn],
    image: str,
    settings: Settings,
    examples: Path,
    say: Callable[[str], None],
) -> tuple[list[float], dict[tuple[str, str], Series], list[tuple[str, Case, Task]]]:
    plan = [
        (tier, case, load_task(case.paths(examples)[0]))
        for tier in ("t0", "t2", "t3", REUSED)
        if tier in fns
        for case in PLAN[tier]
    ]
    series: dict[tuple[str, str], Series] = {(t, c.task): Series() for t, c, _ in plan}
    floor: list[float] = []
    # Rounds interleave the floor and every tier, so a machine whose load drifts (other jobs,
    # thermal limits) skews all of them alike instead of whichever ran during the bad minute.
    # Round 0 warms caches (image, page cache, Python imports, the judge pool) and is not counted.
    per_round = max(1, round(settings.floor_samples / settings.samples))
    say(
        f"latency: {settings.samples} rounds of {per_round} bare container(s) + "
        + ", ".join(f"{t} {c.kind}" for t, c, _ in plan)
    )
    for rnd in range(settings.samples + 1):
        walls = measure_floor(rt.inner, image, per_round)
        if rnd:
            floor.extend(walls)
        for tier, case, task in plan:
            s = series[(tier, case.task)] if rnd else Series()
            sample_grading(s, rt, fns[tier], task, case.paths(examples)[1], image)
    return floor, series, plan


def targets(r: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Issue 7's targets, each with the measured value and whether it was met."""

    def row(value: float | None, limit: float, below: bool) -> dict[str, Any]:
        met = None if value is None else (value <= limit if below else value >= limit)
        return {"value": value, "target": limit, "met": met}

    return {
        "ratio_t3_t0_wall <= 1.5": row(r["ratio_t3_t0_wall"], 1.5, True),
        "ratio_t3_overhead_floor <= 1.2": row(r["ratio_t3_overhead_floor"], 1.2, True),
        "strict_gradings_per_min >= 60": row(r["strict_gradings_per_min"], 60, False),
        "controller_peak_rss_mb <= 100": row(r["controller_peak_rss_mb"], 100, True),
        "(reused judge) ratio_t3_t0_wall <= 1.5": row(
            r["ratio_t3_t0_wall_reused_judge"], 1.5, True
        ),
        "(fresh judge) strict_gradings_per_min >= 60": row(
            r["strict_gradings_per_min_fresh_judge"], 60, False
        ),
    }
