"""Figures for docs/scale.md, measured on a real local Ray cluster (tests/helpers/raycluster.py:
nodes started with `ray start`, token authentication on, in a loopback-only network namespace;
every node uses this machine's one Docker engine).

  .venv/bin/python scripts/bench_ray.py table [--n 20]      local vs Ray 1 node vs Ray 2 nodes
  .venv/bin/python scripts/bench_ray.py done-when [--n 40]  two nodes, one killed mid-batch
  .venv/bin/python scripts/bench_ray.py memory [--n 1000]   the driver's RSS across a batch
                                    (touch $TMPDIR/assay-bench-ray.stop to Ctrl-C it early)

Each prints its figures; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.raycluster import LocalCluster, start_cluster  # noqa: E402

ADD = ROOT / "examples" / "add"
JOBS = 4


def submissions(where: Path, n: int) -> dict[str, bool]:
    expect = {}
    for i in range(n):
        good = i % 2 == 0
        name = f"s{i:04d}-{'correct' if good else 'wrong'}"
        shutil.copytree(ADD / "solutions" / ("correct" if good else "wrong"), where / name)
        expect[name] = good
    return expect


def argv(subs: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "assay", "grade-many", str(ADD), "--submissions", str(subs),
            "--out", str(out), "--jobs", str(JOBS), *extra]  # fmt: skip


def rss_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process, in KiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def run(cmd: list[str], env: dict[str, str], out: Path) -> tuple[float, dict[str, object], int]:
    """Run one batch; (wall seconds, summary, the driver's peak RSS in KiB)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, rss_kb(_driver_pid(proc.pid))[1])
        except (OSError, KeyError, ValueError):
            pass
        time.sleep(0.5)
    wall = time.monotonic() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"batch failed (exit {proc.returncode}):\n{err[-3000:]}")
    return wall, json.loads((out / "summary.json").read_text()), peak


def _driver_pid(pid: int) -> int:
    """The python process itself (under `nsenter`, the child of the nsenter pid)."""
    comm = Path(f"/proc/{pid}/comm").read_text().strip()
    if comm != "nsenter":
        return pid
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                return int(p.name)
    return pid


def env_for(cluster: LocalCluster | None, work: Path) -> dict[str, str]:
    base = cluster.env() if cluster else dict(os.environ)
    base["XDG_CONFIG_HOME"] = str(work / "config")
    base.setdefault("ASSAY_BASE_IMAGE", "assay-base:latest")
    return base


def table(n: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="assay-benchray-"))
    cluster = None
    try:
        subs = work / "subs"
        submissions(subs, n)
        rows = []
        local = argv(subs, work / "local", "--fresh-judge")
        wall, s, peak = run(local, env_for(None, work), work / "local")
        rows.append(("local grade-many --fresh-judge", wall, s, peak))
        wall, s, peak = run(
            argv(subs, work / "local-reused"), env_for(None, work), work / "local-reused"
        )
        rows.append(("local grade-many (reused judges)", wall, s, peak))
        cluster = start_cluster(nodes=1, slots=JOBS)
        e = env_for(cluster, work)
        out = work / "ray1"
        wall, s, peak = run(cluster.inside(argv(subs, out, "--ray", cluster.address)), e, out)
        rows.append(("Ray, 1 node (4 slots)", wall, s, peak))
        cluster.stop()
        cluster = start_cluster(nodes=2, slots=JOBS // 2)
        out = work / "ray2"
        e = env_for(cluster, work)
        wall, s, peak = run(cluster.inside(argv(subs, out, "--ray", cluster.address)), e, out)
        rows.append(("Ray, 2 nodes (2 slots each)", wall, s, peak))
    finally:
        if cluster:
            cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    fresh = rows[0][1] / n
    print(f"{n} submissions of examples/add (half correct), --jobs {JOBS}, load {os.getloadavg()}")
    print("| run | wall s | s/grading | vs local fresh | pass/fail/err | driver peak RSS |")
    print("|---|---|---|---|---|---|")
    for name, wall, s, peak in rows:
        per = wall / n
        print(
            f"| {name} | {wall:.1f} | {per:.2f} | {(per / fresh - 1) * 100:+.1f}% | "
            f"{s['passed']}/{s['failed']}/{s['errors']} | {peak / 1024:.0f} MiB |"
        )


def done_when(n: int) -> None:
    from assay._internal.runtime.docker import DockerRuntime
    from assay._internal.signing.keys import load_public_key
    from assay._internal.signing.sign import verify_envelope

    work = Path(tempfile.mkdtemp(prefix="assay-benchray-"))
    cluster = start_cluster(nodes=2, slots=2)
    try:
        expect = submissions(work / "subs", n)
        out = work / "out"
        t0 = time.monotonic()
        proc = subprocess.Popen(
            cluster.inside(argv(work / "subs", out, "--ray", cluster.address)),
            env=env_for(cluster, work), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        while len(list(out.glob("*.dsse.json"))) < n // 4:
            if proc.poll() is not None:
                raise SystemExit(proc.stderr.read().decode() if proc.stderr else "failed")
            time.sleep(0.2)
        raylet = cluster.nodes[1].raylet_pid()
        done_at_kill = len(list(out.glob("*.dsse.json")))
        os.kill(raylet, signal.SIGKILL)
        print(f"killed node1's raylet (pid {raylet}) with {done_at_kill}/{n} verdicts written")
        _, err = proc.communicate(timeout=3600)
        wall = time.monotonic() - t0
        print(f"grade-many exit {proc.returncode} in {wall:.1f}s")
        print("\n".join(err.decode().splitlines()[-3:]))
        pub = load_public_key(work / "config" / "assay" / "signing.pub")
        right = 0
        for jid, good in expect.items():
            v = verify_envelope((out / f"{jid}.dsse.json").read_bytes(), pub)
            right += v.passed is good
        events = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines() if x]
        gids = {str(e["grading_id"]) for e in events if e.get("event") == "start"}
        lost = [e for e in events if e.get("event") == "lost"]
        nodes = {str(e.get("node")) for e in events if e.get("event") == "end" and "id" in e}
        left = [x for gid in sorted(gids) for x in DockerRuntime().leftovers(gid)]
        print(f"{right}/{n} verdicts verify and are right; {len(lost)} grading(s) lost with the "
              f"node and graded again; nodes that finished gradings: {sorted(nodes)}; "
              f"leftovers on the engine: {left}")  # fmt: skip
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


def memory(n: int) -> None:
    stop_file = Path(tempfile.gettempdir()) / "assay-bench-ray.stop"
    if stop_file.exists():  # an earlier run's request to stop, not this one's
        raise SystemExit(f"{stop_file} exists from an earlier run: remove it first")
    work = Path(tempfile.mkdtemp(prefix="assay-benchray-"))
    cluster = start_cluster(nodes=2, slots=2)
    try:
        submissions(work / "subs", n)
        out = work / "out"
        t0 = time.monotonic()
        proc = subprocess.Popen(
            cluster.inside(argv(work / "subs", out, "--ray", cluster.address)),
            env=env_for(cluster, work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        next_mark, peak = 0, 0
        print("| gradings done | driver RSS MiB | driver peak RSS MiB | elapsed s |")
        print("|---|---|---|---|")
        stopping = False
        while proc.poll() is None:
            if stop_file.exists() and not stopping:
                # Like Ctrl-C: no new gradings, the running ones finish, exit 130. (SIGINT is
                # ignored by a process a non-interactive shell started in the background.)
                os.kill(_driver_pid(proc.pid), signal.SIGTERM)
                print(f"stopped early ({stop_file} exists)", flush=True)
                stopping = True
            done = len(list(out.glob("*.dsse.json"))) if out.exists() else 0
            try:
                rss, hwm = rss_kb(_driver_pid(proc.pid))
            except (OSError, KeyError, ValueError):
                time.sleep(1)
                continue
            peak = max(peak, hwm)
            if done >= next_mark:
                print(f"| {done} | {rss / 1024:.0f} | {hwm / 1024:.0f} | "
                      f"{time.monotonic() - t0:.0f} |", flush=True)  # fmt: skip
                next_mark = done + max(1, n // 10)
            time.sleep(1)
        print(f"exit {proc.returncode} after {time.monotonic() - t0:.0f}s; driver peak RSS "
              f"{peak / 1024:.0f} MiB")  # fmt: skip
        summary = json.loads((out / "summary.json").read_text())
        print({k: summary[k] for k in ("passed", "failed", "errors", "not_run", "wall_s")})
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("what", choices=["table", "done-when", "memory"])
    p.add_argument("--n", type=int)
    a = p.parse_args()
    if a.what == "table":
        table(a.n or 20)
    elif a.what == "done-when":
        done_when(a.n or 40)
    else:
        memory(a.n or 1000)


if __name__ == "__main__":
    main()
