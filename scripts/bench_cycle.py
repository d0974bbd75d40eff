"""The container cycle per backend: how many hardened containers a second each backend makes.

    python scripts/bench_cycle.py [--backends runc docker] [--cycles exec oneshot] [--floor]
        [--n 200] [--jobs 2] [--round 20] [--phases] [--json F]

Each cycle runs through the backend's Runtime inside a `GradingScope` of its own (so that its
container is removed on every exit path, Ctrl-C and SIGTERM included). Two kinds (`--cycles`):

- `exec`: create a hardened container (`ContainerSpec(image=IMAGE, grading_id=gid,
  role="bench")`: keep-alive `sleep infinity` under an init, every hardening on), start it,
  one exec of `true`, remove it: what every container with a keep-alive costs.
- `exec-candidate`: the strict candidate's cycle as it was before issue 38: the candidate's
  container (the same binds, `switch_user`, hardening and limits) with a keep-alive under an
  init, started, one exec of `python3 -I -S -c pass` (as the runner's was: root with the three
  capabilities), its ceilings read, removed. It runs on the code of either side of that
  change, for a before/after.
- `oneshot`: the strict candidate's cycle: a candidate container as the strict tier makes it
  (`candidate_container`: read-only binds at /candidate, /inputs and /assay, `switch_user`,
  every hardening and limit on) whose own process is `python3 -I -S -c pass`, started once
  with `Runtime.run` (no exec), its ceilings read after the run (`ceilings_hit`), removed.

`--floor` adds the raw floor of issue 38, outside assay: `runc run` of `python3 -I -S -c pass`
in a fresh bundle per run (its own pid, net, ipc, uts and mount namespaces; read-only root, the
image's unpacked root filesystem; uid 1000; memory+swap, pids and CPU limits), in the
foreground, runc removing the container itself at the end (no `--keep`). Its containers live
in a state root and cgroup parent of their own, removed at the end.

Each row runs `--n` cycles, `--jobs` at a time; the rows take turns in rounds of `--round`
cycles (the order rotating per round), so load drift on a shared machine hits them all alike.
A first round of 2 x jobs cycles per row warms caches and is not counted.

Per row: cycles per second and per minute in total and per core (total / os.cpu_count(),
whatever --jobs is), the median and p90 seconds of one cycle (scope closed included), the
machine's CPU seconds per cycle (/proc/stat: user+nice+system+irq+softirq jiffies /
SC_CLK_TCK over that row's own rounds: every process counts, runc's and anything else running
on the machine meanwhile, so a loaded machine inflates it) and this process's own CPU seconds
per cycle (its threads, not the runc processes it starts). `--phases`: the median seconds of
each call per row. Published anchors are printed alongside for context, never compared
automatically: they were measured on other machines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay._internal.runtime import Bind, ContainerSpec, GradingScope, Limits, Runtime
from assay._internal.runtime.base import ceilings_hit
from assay._internal.runtime.engine import BACKENDS, engine_client, open_runtime
from assay._internal.runtime.oci.rootfs import RootfsCache
from assay._internal.runtime.scope import new_grading_id
from assay._internal.tiers.core.paths import INCONTAINER
from assay._internal.tiers.strict.candidate import candidate_container

IMAGE = os.environ.get("ASSAY_BASE_IMAGE", "assay-base:latest")
EXEC_DEADLINE_S = 30.0
EXEC_OUTPUT_CAP = 64 * 1024
WORK = ("python3", "-I", "-S", "-c", "pass")
"""What a one-shot and a floor container run: CPython's cheapest start."""
PHASES: dict[str, tuple[str, ...]] = {
    "exec": ("create", "start", "exec", "remove", "scope_close"),
    "exec-candidate": ("create", "start", "exec", "ceilings", "remove", "scope_close"),
    "oneshot": ("create", "run", "ceilings", "remove", "scope_close"),
    "floor": ("bundle", "runc_run", "cleanup"),
}
FLOOR = "floor"
FLOOR_STATE = Path("/run/assay-bench-floor")
FLOOR_CGROUP = "assay-bench-floor"
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
    """One row's counted cycles and the time slices they ran in."""

    phase_names: tuple[str, ...]
    cycles: list[float] = field(default_factory=list)
    phases: dict[str, list[float]] = field(default_factory=dict)
    wall_s: float = 0.0
    machine_cpu_s: float = 0.0
    controller_cpu_s: float = 0.0
    failed: list[str] = field(default_factory=list)


Result = tuple[float, dict[str, float], str | None]
"""(seconds, seconds per call, why it failed or None) of one cycle."""


Cycle = Callable[[set[str], threading.Event], Result]


def timed(names: tuple[str, ...], body: Callable[[Callable[[], None]], str | None]) -> Result:
    """Run `body`, which calls `mark()` after each of its phases and returns why it failed or
    None; a failure is recorded, not raised (its traceback goes to stderr)."""
    marks = [time.monotonic()]
    try:
        failure = body(lambda: marks.append(time.monotonic()))
    except Exception as exc:
        traceback.print_exc()
        failure = f"{type(exc).__name__}: {exc}"
    marks.append(time.monotonic())
    # A failed cycle's calls are not timed: which ones ran depends on where it failed.
    ph: dict[str, float] = {}
    if failure is None and len(marks) == len(names) + 1:
        ph = {p: marks[i + 1] - marks[i] for i, p in enumerate(names)}
    return marks[-1] - marks[0], ph, failure


def exec_cycle(rt: Runtime) -> Cycle:
    """create, start, one exec of `true`, remove, in a scope of its own."""

    def one(gids: set[str], stop: threading.Event) -> Result:
        if stop.is_set():
            return 0.0, {}, "stopped"
        gid = new_grading_id()
        gids.add(gid)

        def body(mark: Callable[[], None]) -> str | None:
            failure = None
            with GradingScope(rt, gid) as scope:
                spec = ContainerSpec(image=IMAGE, grading_id=gid, role="bench")
                cid = scope.container(spec, start=False)
                mark()
                rt.start(cid)
                mark()
                res = rt.exec(
                    cid, ("true",), deadline_s=EXEC_DEADLINE_S, output_cap=EXEC_OUTPUT_CAP
                )
                mark()
                if res.exit_code != 0:
                    failure = f"exec true: exit {res.exit_code}, stderr {res.stderr[:200]!r}"
                scope.discard(cid)
                mark()
            return failure

        return timed(PHASES["exec"], body)

    return one


def exec_candidate_cycle(rt: Runtime, files: Path, inputs: Path) -> Cycle:
    """The candidate's container with a keep-alive, started, one exec of `WORK`, ceilings
    read, removed, in a scope of its own (the spec written out, as the strict tier's was)."""

    def one(gids: set[str], stop: threading.Event) -> Result:
        if stop.is_set():
            return 0.0, {}, "stopped"
        gid = new_grading_id()
        gids.add(gid)

        def body(mark: Callable[[], None]) -> str | None:
            failure = None
            with GradingScope(rt, gid) as scope:
                binds = (Bind(files, "/candidate"), Bind(inputs, "/inputs"))
                spec = ContainerSpec(
                    image=IMAGE, grading_id=gid, role="candidate",
                    binds=(*binds, Bind(INCONTAINER, "/assay")), limits=Limits(),
                    workdir="/candidate", switch_user=True,
                )  # fmt: skip
                cid = scope.container(spec, start=False)
                mark()
                rt.start(cid)
                mark()
                res = rt.exec(cid, WORK, deadline_s=EXEC_DEADLINE_S, output_cap=EXEC_OUTPUT_CAP)
                mark()
                if res.exit_code != 0:
                    failure = f"exec: exit {res.exit_code}, stderr {res.stderr[:200]!r}"
                if ceilings_hit(rt, cid):
                    failure = failure or f"ceilings hit: {ceilings_hit(rt, cid)}"
                mark()
                scope.discard(cid)
                mark()
            return failure

        return timed(PHASES["exec-candidate"], body)

    return one


def oneshot_cycle(rt: Runtime, files: Path, inputs: Path) -> Cycle:
    """The strict candidate's container, its own process `WORK`, run once, ceilings read,
    removed, in a scope of its own."""

    def one(gids: set[str], stop: threading.Event) -> Result:
        if stop.is_set():
            return 0.0, {}, "stopped"
        gid = new_grading_id()
        gids.add(gid)

        def body(mark: Callable[[], None]) -> str | None:
            failure = None
            with GradingScope(rt, gid) as scope:
                spec = candidate_container(IMAGE, gid, files, inputs, Limits(), WORK)
                cid = scope.container(spec, start=False)
                mark()
                res = rt.run(cid, deadline_s=EXEC_DEADLINE_S, output_cap=EXEC_OUTPUT_CAP)
                mark()
                if res.exit_code != 0:
                    failure = f"run: exit {res.exit_code}, stderr {res.stderr[:200]!r}"
                if ceilings_hit(rt, cid):
                    failure = failure or f"ceilings hit: {ceilings_hit(rt, cid)}"
                mark()
                scope.discard(cid)
                mark()
            return failure

        return timed(PHASES["oneshot"], body)

    return one


def floor_config(rootfs: Path, cid: str) -> dict[str, Any]:
    """The raw floor's OCI config: `WORK` as uid 1000 with no capability and no new privileges,
    its own pid, net, ipc, uts and mount namespaces, the image's unpacked root read-only (only
    mount points the image has), memory+swap 512 MiB, 128 pids, one CPU."""
    nosuid = ["nosuid", "noexec", "nodev"]
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": 1000, "gid": 1000},
            "args": list(WORK),
            "env": ["PATH=/usr/local/bin:/usr/bin:/bin"],
            "cwd": "/",
            "capabilities": {k: [] for k in ("bounding", "effective", "permitted")},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
            "noNewPrivileges": True,
        },
        "root": {"path": str(rootfs), "readonly": True},
        "hostname": "floor",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc", "options": nosuid},
            {
                "destination": "/dev",
                "type": "tmpfs",
                "source": "tmpfs",
                "options": ["nosuid", "strictatime", "mode=755", "size=65536k"],
            },
            {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": [*nosuid, "ro"]},
        ],
        "linux": {
            "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
            "cgroupsPath": f"/{FLOOR_CGROUP}/{cid}",
            "resources": {
                "devices": [{"allow": False, "access": "rwm"}],
                "memory": {"limit": 512 * 2**20, "swap": 512 * 2**20},
                "pids": {"limit": 128},
                "cpu": {"quota": 100_000, "period": 100_000},
            },
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/sys/firmware"],
            "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger"],
        },
    }


def floor_cycle(rootfs: Path, work: Path) -> Cycle:
    """A fresh bundle, `runc run` in the foreground (runc deletes the container itself), the
    bundle removed."""
    runc = shutil.which("runc") or "runc"

    def one(gids: set[str], stop: threading.Event) -> Result:
        if stop.is_set():
            return 0.0, {}, "stopped"
        cid = "floor-" + uuid.uuid4().hex[:16]
        gids.add(cid)

        def body(mark: Callable[[], None]) -> str | None:
            bundle = work / cid
            bundle.mkdir()
            (bundle / "config.json").write_text(json.dumps(floor_config(rootfs, cid)))
            mark()
            out = subprocess.run(
                [runc, "--root", str(FLOOR_STATE), "run", "--bundle", str(bundle), cid],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                check=False, timeout=60,
            )  # fmt: skip
            mark()
            shutil.rmtree(bundle)
            if out.returncode != 0:
                return f"runc run: exit {out.returncode}: {out.stderr[-300:]!r}"
            return None

        return timed(PHASES["floor"], body)

    return one


def floor_cleanup() -> None:
    """Whatever a floor container interrupted left: runc's records, its cgroups."""
    runc = shutil.which("runc") or "runc"
    if FLOOR_STATE.is_dir():
        for d in FLOOR_STATE.iterdir():
            subprocess.run(
                [runc, "--root", str(FLOOR_STATE), "delete", "--force", d.name],
                capture_output=True, check=False, timeout=60,
            )  # fmt: skip
        shutil.rmtree(FLOOR_STATE, ignore_errors=True)
    for ctl in Path("/sys/fs/cgroup").iterdir():
        base = ctl / FLOOR_CGROUP
        if base.is_dir():
            for g in base.iterdir():
                if g.is_dir():
                    g.rmdir()
            base.rmdir()


def run_round(
    ex: ThreadPoolExecutor,
    one: Cycle,
    n: int,
    tally: Tally | None,
    gids: set[str],
    stop: threading.Event,
) -> None:
    """`n` cycles of `one`, `ex`'s workers at a time; counted in `tally` unless None."""
    busy0, cpu0, t0 = machine_busy_s(), time.process_time(), time.monotonic()
    futures: list[Future[Result]] = [ex.submit(one, gids, stop) for _ in range(n)]
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
            tally.phases.setdefault(k, []).append(v)
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
        "cycles_per_min": round(per_s * 60, 1),
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
        "--backends", nargs="*", default=["runc", "docker"], choices=BACKENDS,
        help="backends to measure (default: runc docker)",
    )  # fmt: skip
    ap.add_argument(
        "--cycles", nargs="+", default=["exec", "oneshot"],
        choices=["exec", "exec-candidate", "oneshot"],
        help="cycle kinds per backend (default: both)",
    )  # fmt: skip
    ap.add_argument("--floor", action="store_true", help="add the raw `runc run` floor")
    ap.add_argument("--n", type=int, default=200, help="counted cycles per row")
    ap.add_argument("--jobs", type=int, default=2, help="cycles at once")
    ap.add_argument("--round", type=int, default=20, help="cycles per row per turn")
    ap.add_argument("--phases", action="store_true", help="median seconds of each call")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    backends = list(dict.fromkeys(a.backends))
    cores = os.cpu_count() or 1
    load = [os.getloadavg()[0]]
    runtimes: dict[str, Runtime] = {b: open_runtime(b, parallel=a.jobs) for b in backends}
    binds = Path(tempfile.mkdtemp(prefix="assay-bench-cycle-"))
    files, inputs = binds / "files", binds / "inputs"
    for d in (binds, files, inputs):
        d.mkdir(exist_ok=True)
        d.chmod(0o755)
    rows: dict[str, Cycle] = {}
    kinds: dict[str, str] = {}
    owners: dict[str, Runtime] = {}
    for b in backends:
        for kind in a.cycles:
            name = f"{b} {kind}"
            rt = runtimes[b]
            if kind == "exec":
                rows[name] = exec_cycle(rt)
            elif kind == "exec-candidate":
                rows[name] = exec_candidate_cycle(rt, files, inputs)
            else:
                rows[name] = oneshot_cycle(rt, files, inputs)
            kinds[name], owners[name] = kind, rt
    work = Path(tempfile.mkdtemp(prefix="assay-bench-floor-", dir="/run"))
    if a.floor:
        FLOOR_STATE.mkdir(mode=0o700, exist_ok=True)
        rootfs = RootfsCache(engine_client()).rootfs(IMAGE)[1]
        rows[FLOOR] = floor_cycle(rootfs, work)
        kinds[FLOOR] = FLOOR
    tallies = {name: Tally(PHASES[kinds[name]]) for name in rows}
    gids: dict[str, set[str]] = {name: set() for name in rows}
    names = list(rows)
    stop = threading.Event()  # set on Ctrl-C or SIGTERM
    t_start = time.monotonic()
    try:
        with ThreadPoolExecutor(a.jobs) as ex:
            for b in backends:
                runtimes[b].image_digest(IMAGE)  # a missing image fails here, once
            for name in names:
                run_round(ex, rows[name], 2 * a.jobs, None, gids[name], stop)
            rnd = 0
            while any(len(t.cycles) < a.n for t in tallies.values()):
                r = rnd % len(names)
                for name in names[r:] + names[:r]:
                    left = a.n - len(tallies[name].cycles)
                    if left > 0:
                        run_round(ex, rows[name], min(a.round, left), tallies[name], gids[name],
                                  stop)  # fmt: skip
                rnd += 1
                load.append(os.getloadavg()[0])
                done = ", ".join(f"{n} {len(t.cycles)}" for n, t in tallies.items())
                print(f"round {rnd}: {done} of {a.n}, load {load[-1]:.1f}", flush=True)
    finally:
        # Every cycle's scope removed its container; this asks each backend once for any of
        # ours still there (a cycle cut short in a way its scope could not finish).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop.set()
        for name, rt in owners.items():
            try:
                for gid in rt.gradings() & gids[name]:
                    print(f"removing what is left of {gid} on {name}", file=sys.stderr)
                    rt.sweep(gid)
            except Exception:
                traceback.print_exc()
        if a.floor:
            floor_cleanup()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(binds, ignore_errors=True)
    table = {name: row(t, cores) for name, t in tallies.items()}
    summary: dict[str, Any] = {
        "image": IMAGE,
        "cycles": {
            "exec": "create hardened (sleep infinity under an init), start, exec true, remove",
            "exec-candidate": "create a strict candidate container with a keep-alive, start, "
            f"exec {' '.join(WORK)}, read its ceilings, remove",
            "oneshot": "create a strict candidate container whose process is "
            f"{' '.join(WORK)}, run it once, read its ceilings, remove",
            FLOOR: f"raw `runc run` of {' '.join(WORK)} in a fresh bundle (pid, net, ipc, "
            "uts, mount namespaces; read-only root; uid 1000; memory+swap, pids, CPU limits)",
        },
        "cycles_per_row": a.n,
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
        "rows": table,
        "anchors": ANCHORS,
    }
    if a.phases:
        summary["phases_median_s"] = {
            n: {k: round(statistics.median(v), 4) for k, v in t.phases.items() if v}
            for n, t in tallies.items()
        }
    w = max(8, *map(len, table))
    print(
        f"{'row':{w}} {'cycles/s':>9} {'/min':>8} {'/s/core':>8} {'median s':>9} {'p90 s':>7}"
        f" {'machine cpu s':>13} {'our cpu s':>9} {'failed':>6}"
    )
    for n, x in table.items():
        print(
            f"{n:{w}} {x['cycles_per_s']:9.2f} {x['cycles_per_min']:8.1f}"
            f" {x['cycles_per_s_per_core']:8.2f}"
            f" {x['cycle_median_s']:9.4f} {x['cycle_p90_s']:7.4f}"
            f" {x['machine_cpu_s_per_cycle']:13.4f} {x['controller_cpu_s_per_cycle']:9.4f}"
            f" {x['failed']:6d}"
        )
    if a.phases:
        print("median seconds per call:")
        for n, ph in summary["phases_median_s"].items():
            print(f"  {n:{w}} " + "  ".join(f"{k} {v:.4f}" for k, v in ph.items()))
    print("anchors (published, other machines):")
    for v in ANCHORS.values():
        print(f"  {v['source']}")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}))
    if a.json:
        a.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if any(r["failed"] for r in table.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
