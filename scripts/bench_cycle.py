"""The container cycle per backend: how many hardened containers a second each backend makes.

    python scripts/bench_cycle.py [--backends runc docker] [--n 200] [--jobs 2] [--round 20]
        [--phases] [--json F]

One cycle, all through the backend's Runtime inside a `GradingScope` of its own (so that its
container is removed on every exit path, Ctrl-C and SIGTERM included): create a hardened
container (`ContainerSpec(image=IMAGE, grading_id=gid, role="bench")`: keep-alive
`sleep infinity` under an init, every hardening on), start it, one exec of `true`, remove it.
Each backend runs `--n` cycles, `--jobs` at a time; the backends take turns in rounds of
`--round` cycles (the order rotating per round), so load drift on a shared machine hits them
all alike. A first round of 2 x jobs cycles per backend warms caches and is not counted.

Per backend: cycles per second in total and per core (total / os.cpu_count(), whatever
--jobs is), the median and p90 seconds of one cycle (scope closed included), the machine's CPU
seconds per cycle (/proc/stat: user+nice+system+irq+softirq jiffies / SC_CLK_TCK over that
backend's own rounds: every process counts, the engine's, runc's and anything else running on
the machine meanwhile, so a loaded machine inflates it) and this process's own CPU seconds per
cycle (its threads, not the runc processes it starts). `--phases`: the median seconds of each
call (create, start, exec, remove, and the scope's close, which sweeps by label) per backend.
Published anchors are printed alongside for context, never compared automatically: they were
measured on other machines.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay._internal.runtime import ContainerSpec, GradingScope, Runtime
from assay._internal.runtime.engine import BACKENDS, open_runtime
from assay._internal.runtime.scope import new_grading_id

IMAGE = os.environ.get("ASSAY_BASE_IMAGE", "assay-base:latest")
EXEC_DEADLINE_S = 30.0
EXEC_OUTPUT_CAP = 64 * 1024
PHASES = ("create", "start", "exec", "remove", "scope_close")
ANCHORS = {
    "crun_create_destroy_s": {
        "value": 0.005,
        "source": "crun create+destroy of one container, ~5 ms (Red Hat, 2022)",
    },
    "firecracker_microvms_per_core_per_s": {
        "value": 5,
        "source": "Firecracker, ~5 microVMs started per core per second",
    },
}


def machine_busy_s() -> float:
    """CPU seconds every process on the machine has spent since boot: user + nice + system +
    irq + softirq (idle, iowait and steal left out)."""
    with open("/proc/stat") as fh:
        f = [int(x) for x in fh.readline().split()[1:]]
    return (f[0] + f[1] + f[2] + f[5] + f[6]) / os.sysconf("SC_CLK_TCK")


def p90(xs: Sequence[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(0.9 * len(s) + 0.5) - 1))]


@dataclass
class Tally:
    """One backend's counted cycles and the time slices they ran in."""

    cycles: list[float] = field(default_factory=list)
    phases: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    wall_s: float = 0.0
    machine_cpu_s: float = 0.0
    controller_cpu_s: float = 0.0
    failed: list[str] = field(default_factory=list)


Result = tuple[float, dict[str, float], str | None]
"""(seconds, seconds per call, why it failed or None) of one cycle."""


def cycle(rt: Runtime, gids: set[str], stop: threading.Event) -> Result:
    """One create/start/exec/remove in a scope of its own. A failure is recorded, not raised
    (its traceback goes to stderr); `stop` set: no cycle starts."""
    if stop.is_set():
        return 0.0, {}, "stopped"
    gid = new_grading_id()
    gids.add(gid)
    marks = [time.monotonic()]
    failure = None
    try:
        with GradingScope(rt, gid) as scope:
            spec = ContainerSpec(image=IMAGE, grading_id=gid, role="bench")
            cid = scope.container(spec, start=False)
            marks.append(time.monotonic())
            rt.start(cid)
            marks.append(time.monotonic())
            res = rt.exec(cid, ("true",), deadline_s=EXEC_DEADLINE_S, output_cap=EXEC_OUTPUT_CAP)
            marks.append(time.monotonic())
            if res.exit_code != 0:
                failure = f"exec true: exit {res.exit_code}, stderr {res.stderr[:200]!r}"
            scope.discard(cid)
            marks.append(time.monotonic())
    except Exception as exc:
        traceback.print_exc()
        failure = f"{type(exc).__name__}: {exc}"
    marks.append(time.monotonic())
    # A failed cycle's calls are not timed: which ones ran depends on where it failed.
    ph: dict[str, float] = {}
    if failure is None and len(marks) == len(PHASES) + 1:
        ph = {p: marks[i + 1] - marks[i] for i, p in enumerate(PHASES)}
    return marks[-1] - marks[0], ph, failure


def run_round(
    ex: ThreadPoolExecutor,
    rt: Runtime,
    n: int,
    tally: Tally | None,
    gids: set[str],
    stop: threading.Event,
) -> None:
    """`n` cycles on `rt`, `ex`'s workers at a time; counted in `tally` unless None."""
    busy0, cpu0, t0 = machine_busy_s(), time.process_time(), time.monotonic()
    futures: list[Future[Result]] = [ex.submit(cycle, rt, gids, stop) for _ in range(n)]
    try:
        results = [f.result() for f in futures]
    except BaseException:
        stop.set()  # the cycles under way finish (their scopes close); no new one starts
        for f in futures:
            f.cancel()
        raise
    if tally is None:
        return
    tally.wall_s += time.monotonic() - t0
    tally.machine_cpu_s += machine_busy_s() - busy0
    tally.controller_cpu_s += time.process_time() - cpu0
    for secs, ph, failure in results:
        tally.cycles.append(secs)
        for k, v in ph.items():
            tally.phases[k].append(v)
        if failure is not None:
            tally.failed.append(failure)


def row(t: Tally, cores: int) -> dict[str, Any]:
    n = len(t.cycles)
    per_s = n / t.wall_s
    return {
        "cycles": n,
        "failed": len(t.failed),
        "failures": t.failed[:5],
        "wall_s": round(t.wall_s, 3),
        "cycles_per_s": round(per_s, 2),
        "cycles_per_s_per_core": round(per_s / cores, 2),
        "cycle_median_s": round(statistics.median(t.cycles), 4),
        "cycle_p90_s": round(p90(t.cycles), 4),
        "machine_cpu_s_per_cycle": round(t.machine_cpu_s / n, 4),
        "controller_cpu_s_per_cycle": round(t.controller_cpu_s / n, 4),
    }


def _stop(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # so the clean-up runs on SIGTERM too


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--backends", nargs="+", default=["runc", "docker"], choices=BACKENDS,
        help="backends to measure (default: runc docker)",
    )  # fmt: skip
    ap.add_argument("--n", type=int, default=200, help="counted cycles per backend")
    ap.add_argument("--jobs", type=int, default=2, help="cycles at once")
    ap.add_argument("--round", type=int, default=20, help="cycles per backend per turn")
    ap.add_argument("--phases", action="store_true", help="median seconds of each call")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    backends = list(dict.fromkeys(a.backends))
    cores = os.cpu_count() or 1
    load = [os.getloadavg()[0]]
    runtimes: dict[str, Runtime] = {b: open_runtime(b, parallel=a.jobs) for b in backends}
    tallies = {b: Tally() for b in backends}
    gids: dict[str, set[str]] = {b: set() for b in backends}
    stop = threading.Event()  # set on Ctrl-C or SIGTERM
    t_start = time.monotonic()
    try:
        with ThreadPoolExecutor(a.jobs) as ex:
            for b in backends:
                runtimes[b].image_digest(IMAGE)  # a missing image fails here, once
                run_round(ex, runtimes[b], 2 * a.jobs, None, gids[b], stop)
            rnd = 0
            while any(len(t.cycles) < a.n for t in tallies.values()):
                r = rnd % len(backends)
                for b in backends[r:] + backends[:r]:
                    left = a.n - len(tallies[b].cycles)
                    if left > 0:
                        run_round(ex, runtimes[b], min(a.round, left), tallies[b], gids[b], stop)
                rnd += 1
                load.append(os.getloadavg()[0])
                done = ", ".join(f"{b} {len(t.cycles)}" for b, t in tallies.items())
                print(f"round {rnd}: {done} of {a.n}, load {load[-1]:.1f}", flush=True)
    finally:
        # Every cycle's scope removed its container; this asks each backend once for any of
        # ours still there (a cycle cut short in a way its scope could not finish).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop.set()
        for b in backends:
            try:
                for gid in runtimes[b].gradings() & gids[b]:
                    print(f"removing what is left of {gid} on {b}", file=sys.stderr)
                    runtimes[b].sweep(gid)
            except Exception:
                traceback.print_exc()
    rows = {b: row(t, cores) for b, t in tallies.items()}
    summary: dict[str, Any] = {
        "image": IMAGE,
        "cycle": "create hardened (sleep infinity under an init), start, exec true, remove",
        "cycles_per_backend": a.n,
        "jobs": a.jobs,
        "round": a.round,
        "cpus": cores,
        "backends": {b: runtimes[b].name for b in backends},
        "load_avg_1m": {
            "min": round(min(load), 2),
            "max": round(max(load), 2),
            "mean": round(statistics.mean(load), 2),
        },
        "bench_wall_s": round(time.monotonic() - t_start, 1),
        "rows": rows,
        "anchors": ANCHORS,
    }
    if a.phases:
        summary["phases_median_s"] = {
            b: {k: round(statistics.median(v), 4) if v else None for k, v in t.phases.items()}
            for b, t in tallies.items()
        }
    w = max(8, *map(len, rows))
    print(
        f"{'backend':{w}} {'cycles/s':>9} {'/s/core':>8} {'median s':>9} {'p90 s':>7}"
        f" {'machine cpu s':>13} {'our cpu s':>9} {'failed':>6}"
    )
    for b, x in rows.items():
        print(
            f"{b:{w}} {x['cycles_per_s']:9.2f} {x['cycles_per_s_per_core']:8.2f}"
            f" {x['cycle_median_s']:9.4f} {x['cycle_p90_s']:7.4f}"
            f" {x['machine_cpu_s_per_cycle']:13.4f} {x['controller_cpu_s_per_cycle']:9.4f}"
            f" {x['failed']:6d}"
        )
    if a.phases:
        print("median seconds per call:")
        print(f"{'backend':{w}} " + " ".join(f"{p:>11}" for p in PHASES))
        for b, ph in summary["phases_median_s"].items():
            print(f"{b:{w}} " + " ".join(f"{ph[p] or float('nan'):11.4f}" for p in PHASES))
    print("anchors (published, other machines):")
    for v in ANCHORS.values():
        print(f"  {v['source']}")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}))
    if a.json:
        a.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if any(r["failed"] for r in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
