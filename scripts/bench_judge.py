#!/usr/bin/env python3
"""What one judge `compare` costs: a `runc exec` of a fresh `python3 -I /assay/judge.py` in a
keep-alive judge (the path before issue 38) against a request to the resident worker (now).

Both on the same task (examples/add, a fixed cases file) and the same runner report, on the
runc backend, one at a time. Machine CPU is the whole host's busy time over the loop
(/proc/stat), so run it on an otherwise idle machine; the controller's own CPU and its
children's (runc) are given apart.

    .venv/bin/python scripts/bench_judge.py [--n 90] [--image assay-base:latest]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path

from assay._internal.model.task import load_task
from assay._internal.runtime.engine import open_runtime
from assay._internal.runtime.scope import GradingScope, new_grading_id
from assay._internal.tiers.strict.grade import MAX_REPORT_BYTES, compare_argv
from assay._internal.tiers.strict.judgepool import JudgePool
from assay._internal.tiers.strict.judgespec import judge_spec

ROOT = Path(__file__).resolve().parent.parent
ADD = ROOT / "examples" / "add"


def busy_jiffies() -> int:
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields[:8]) - idle


def container_cpu_s(cids: Callable[[], list[str]]) -> float:
    """CPU of the judge containers' cgroups so far (runc backend; 0 elsewhere)."""
    from assay._internal.runtime.oci import host

    total = 0
    for cid in cids():
        try:
            total += host.cgroup(cid).counters().cpu_ns or 0
        except (OSError, NotImplementedError):
            pass
    return total / 1e9


def measure(
    label: str, n: int, once: Callable[[], None], cids: Callable[[], list[str]]
) -> dict[str, float]:
    """Per operation: wall; the whole machine's busy CPU (includes whatever else runs); the
    CPU attributable to it: this process, its children (runc), the judge container's cgroup."""
    once()  # warm
    tick = os.sysconf("SC_CLK_TCK")
    self0, kids0 = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    busy0, box0, t0 = busy_jiffies(), container_cpu_s(cids), time.perf_counter()
    for _ in range(n):
        once()
    wall = time.perf_counter() - t0
    busy = (busy_jiffies() - busy0) / tick
    box = container_cpu_s(cids) - box0
    self1, kids1 = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    ctl = (self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime)
    kids = (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
    out = {
        "wall_ms": 1000 * wall / n,
        "machine_cpu_ms": 1000 * busy / n,
        "controller_cpu_ms": 1000 * ctl / n,
        "children_cpu_ms": 1000 * kids / n,
        "container_cpu_ms": 1000 * box / n,
        "attributable_cpu_ms": 1000 * (ctl + kids + box) / n,
    }
    print(label, json.dumps({k: round(v, 2) for k, v in out.items()}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=90, help="below RECYCLE_AFTER: one judge throughout")
    ap.add_argument("--image", default=os.environ.get("ASSAY_BASE_IMAGE", "assay-base:latest"))
    ap.add_argument("--runtime", default="runc")
    a = ap.parse_args()
    rt = open_runtime(a.runtime)
    task = load_task(ADD)
    cases = json.loads((ADD / "judge" / "cases.json").read_text())
    runner = json.dumps(
        {"runner": "x", "cases": [
            {"id": c["id"], "status": "ok", "duration_s": 0.0,
             "output_b64": base64.b64encode(json.dumps(c["expected"]).encode()).decode()}
            for c in cases]}
    ).encode()  # fmt: skip
    argv = compare_argv(task, "/handoff/runner.json")

    gid = new_grading_id()
    with GradingScope(rt, gid) as scope:
        handoff = scope.tempdir("handoff")
        handoff.chmod(0o755)
        (handoff / "runner.json").write_bytes(runner)
        (handoff / "runner.json").chmod(0o644)
        judge = scope.container(judge_spec(task, a.image, gid, handoff))

        def by_exec() -> None:
            res = rt.exec(judge, argv, deadline_s=60, output_cap=MAX_REPORT_BYTES)
            assert res.exit_code == 0, res.stderr

        measure("exec", a.n, by_exec, lambda: [judge])

    pool = JudgePool(rt)
    try:
        n = [0]

        def by_request() -> None:
            g = f"g-bench-{n[0]}"
            n[0] += 1
            pool.acquire(task, a.image, g, None, 60, MAX_REPORT_BYTES)
            _, res = pool.compare(g, task, argv, runner, 60, MAX_REPORT_BYTES)
            assert res.exit_code == 0, res.stderr
            pool.release(g)
            pool.finish(g)

        measure(
            "resident (compare + reset + census per grading)", a.n, by_request,
            lambda: [*pool._idle],
        )  # fmt: skip
        assert pool.created == 1, pool.created  # one judge measured throughout
    finally:
        pool.close()


if __name__ == "__main__":
    main()
