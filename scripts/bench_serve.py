"""Figures for `assay serve` (issue 28) in docs/performance.md: requests/s and p50/p99 latency of
the native route (`POST /v1/grade`) and of SandboxFusion's `POST /run_code` at 64 and 256
requests in flight, next to `assay grade-many` on the same native submissions, with the machine
CPU seconds per graded completion, the server's RSS and what was lost.

    .venv/bin/python scripts/bench_serve.py [--requests 2000] [--in-flight 64,256]
        [--routes native,run_code] [--workers 2] [--hostile-share 0.04] [--json OUT]

For each in-flight value and each route (or `mixed`: both routes in one run), a fresh server
(tests/helpers/serve.py: `assay serve --runtime runc` on 127.0.0.1, stopped with SIGTERM, then
checked to have exited 0 and left no container and no temporary file) gets a seeded mix of
`--requests` requests (tests/helpers/serve_load.py: correct and wrong solutions of one inline
APPS-style problem, hostile programs, bodies over `--max-body-mb`), after a warm-up of 16
requests. Then `assay grade-many --jobs WORKERS` grades the native run's submissions (the
problem written as a task by `assay import apps`). Latency is the client's: send to answer,
queueing included. CPU is the whole machine's (/proc/stat) over the run, the driver's own
threads included and also shown apart. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers import serve_load as load  # noqa: E402
from helpers.serve import ASSAY, running_server  # noqa: E402

ROUTES = {"native": (load.NATIVE,), "run_code": (load.RUN_CODE,),
          "mixed": (load.NATIVE, load.RUN_CODE)}  # fmt: skip


def weights(hostile_share: float) -> dict[str, float]:
    """The kinds' shares: oversized 12%, the hostile share, the rest correct 55 : wrong 45."""
    rest = 1.0 - 0.12 - hostile_share
    return {"correct": 0.55 * rest, "wrong": 0.45 * rest, "hostile": hostile_share,
            "oversized": 0.12}  # fmt: skip


def serve_run(a: argparse.Namespace, route: str, in_flight: int, tmp: Path) -> dict[str, Any]:
    items = load.build_mix(a.requests, a.seed, a.max_body_mb << 20, weights(a.hostile_share),
                           routes=ROUTES[route])  # fmt: skip
    queue = str(max(512, in_flight * 2))
    args = ("--workers", str(a.workers), "--queue", queue, "--queue-timeout",
            str(a.queue_timeout), "--max-body-mb", str(a.max_body_mb))  # fmt: skip
    with running_server(tmp, *args) as s:
        run = load.run_load(s.url, {}, s.proc.pid, items, in_flight, load.warmup_mix(),
                            timeout=a.client_timeout)  # fmt: skip
        after = load.metrics(s.url, {})
    rows = {}
    for r in ROUTES[route]:
        rows[r] = run.route_figures(r)
        for verdict in ("lost", "infra", "unexpected"):
            rows[r][verdict] = sum(x.item.route == r and x.verdict == verdict for x in run.results)
    graded = len(run.graded)
    kinds: dict[str, int] = {}
    for it in items:
        kinds[it.kind] = kinds.get(it.kind, 0) + 1
    return {
        "route": route,
        "in_flight": in_flight,
        "requests": len(items),
        "kinds": kinds,
        "wall_s": run.wall,
        "graded": graded,
        "per_route": rows,
        "lost": len(run.lost),
        "infra": len(run.infra),
        "unexpected": len(run.unexpected),
        "unexpected_detail": load.describe(run.unexpected, 10) if run.unexpected else "",
        "infra_detail": load.describe(run.infra, 10) if run.infra else "",
        "rss_mib": run.rss,
        "machine_cpu_s": run.machine_cpu,
        "driver_cpu_s": run.driver_cpu,
        "cpu_per_graded": run.machine_cpu / graded if graded else float("nan"),
        "server_cpu_per_graded": (run.machine_cpu - run.driver_cpu) / graded
        if graded
        else float("nan"),
        "rejected": sum(v for (n, _), v in after.items() if n == "assay_serve_rejected_total"),
        "_native_items": [it for it in items if it.route == load.NATIVE and it.kind != "oversized"],
    }


def write_task(work: Path) -> Path:
    """The inline problem as a task directory, written by `assay import apps` from one row."""
    row = {
        "problem_id": 28,
        "question": load.STATEMENT,
        "input_output": json.dumps(load.INPUT_OUTPUT),
        "solutions": json.dumps(load.CORRECT),
    }
    rows = work / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n")
    out = work / "tasks"
    subprocess.run([str(ASSAY), "import", "apps", str(rows), "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    return out / "apps-28"


def grade_many(a: argparse.Namespace, items: list[load.Item], work: Path) -> dict[str, Any]:
    task = write_task(work)
    subs = work / "subs"
    for it in items:
        d = subs / f"s{it.index:05d}-{it.variant}"
        d.mkdir(parents=True)
        (d / "main.py").write_text(json.loads(it.body)["code"])
    out = work / "out"
    argv = [str(ASSAY), "grade-many", str(task), "--submissions", str(subs), "--out", str(out),
            "--jobs", str(a.workers), "--runtime", "runc"]  # fmt: skip
    m0, t0 = load.machine_cpu_seconds(), time.monotonic()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall, cpu = time.monotonic() - t0, load.machine_cpu_seconds() - m0
    if proc.returncode not in (0, 3):
        raise SystemExit(f"grade-many exited {proc.returncode}:\n{proc.stderr.decode()[-3000:]}")
    s = json.loads((out / "summary.json").read_text())
    graded = s["passed"] + s["failed"]
    want = {"correct": 0, "wrong": 0, "hostile": 0}
    for it in items:
        want[it.kind] += 1
    return {
        "jobs": len(items),
        "wall_s": wall,
        "passed": s["passed"],
        "failed": s["failed"],
        "errors": s["errors"],
        "expected_passed": want["correct"],
        "per_min": graded / wall * 60,
        "machine_cpu_s": cpu,
        "cpu_per_graded": cpu / graded if graded else float("nan"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000, help="per run (default 2000)")
    ap.add_argument("--in-flight", default="64,256", help="comma-separated (default 64,256)")
    ap.add_argument(
        "--routes",
        default="native,run_code",
        help="comma-separated: native, run_code, mixed (default native,run_code)",
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-body-mb", type=int, default=1)
    ap.add_argument("--hostile-share", type=float, default=0.04)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--queue-timeout", type=float, default=1800.0,
                    help="the server's --queue-timeout: long, so that a deep queue is measured, "
                    "not cut (default 1800)")  # fmt: skip
    ap.add_argument("--client-timeout", type=float, default=1800.0)
    ap.add_argument("--no-grade-many", action="store_true")
    ap.add_argument("--json", type=Path, help="also write every figure here")
    a = ap.parse_args()
    in_flights = [int(x) for x in a.in_flight.split(",")]
    routes = [r.strip() for r in a.routes.split(",")]
    for r in routes:
        if r not in ROUTES:
            ap.error(f"--routes: {r!r} is not one of {', '.join(ROUTES)}")
    started = datetime.now(UTC)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    runs = []
    native_items: list[load.Item] = []
    for route in routes:
        for n in in_flights:
            with tempfile.TemporaryDirectory(prefix="assay-benchserve-") as tmp:
                print(f"... {route}, {n} in flight, {a.requests} requests", file=sys.stderr)
                run = serve_run(a, route, n, Path(tmp))
            native_items = native_items or run["_native_items"]
            runs.append(run)
    gm = None
    if not a.no_grade_many and native_items:
        print(f"... grade-many, {len(native_items)} submissions", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="assay-benchserve-gm-") as tmp:
            gm = grade_many(a, native_items, Path(tmp))
    ended = datetime.now(UTC)
    load1 = os.getloadavg()[0]

    print(f"assay serve benchmark: {started:%Y-%m-%d %H:%M}-{ended:%H:%M} UTC, main at {head}, "
          f"runc, {os.cpu_count()} CPUs, --workers {a.workers}, {a.requests} requests per run "
          f"(seed {a.seed}; hostile {a.hostile_share:.0%}, oversized 12% over "
          f"--max-body-mb {a.max_body_mb}), server --queue-timeout {a.queue_timeout:g}; "
          f"1-minute load at the end {load1:.1f}")  # fmt: skip
    print(f"command: {' '.join(['.venv/bin/python', 'scripts/bench_serve.py', *sys.argv[1:]])}")
    print()
    print(
        "| route | in flight | graded | graded/s | p50 s | p99 s | lost | infra | unexpected | "
        "CPU s per graded (machine / w/o driver) | server RSS MiB start / warm / end / peak |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for run in runs:
        rss = run["rss_mib"]
        for r, f in run["per_route"].items():
            print(f"| {r}{' (mixed)' if run['route'] == 'mixed' else ''} | {run['in_flight']} | "
                  f"{f['n']} | {f['per_s']:.2f} | {f['p50']:.2f} | {f['p99']:.2f} | "
                  f"{f['lost']} | {f['infra']} | {f['unexpected']} | "
                  f"{run['cpu_per_graded']:.3f} / {run['server_cpu_per_graded']:.3f} | "
                  f"{rss['start']:.0f} / {rss['warm']:.0f} / {rss['end']:.0f} / "
                  f"{rss['peak']:.0f} |")  # fmt: skip
    if gm is not None:
        print()
        print(f"`assay grade-many --jobs {a.workers}` on the native runs' {gm['jobs']} graded "
              f"submissions: {gm['per_min']:.1f} gradings/min ({gm['per_min'] / 60:.2f}/s), "
              f"wall {gm['wall_s']:.1f} s, {gm['passed']} passed (expected "
              f"{gm['expected_passed']}) / {gm['failed']} failed / {gm['errors']} errors, "
              f"machine CPU {gm['cpu_per_graded']:.3f} s per grading")  # fmt: skip
    for run in runs:
        print()
        print(f"{run['route']} at {run['in_flight']} in flight: {run['requests']} requests "
              f"{run['kinds']}, wall {run['wall_s']:.1f} s, {run['graded']} graded, machine CPU "
              f"{run['machine_cpu_s']:.0f} s (driver {run['driver_cpu_s']:.0f} s), "
              f"429/503 {run['rejected']:.0f}")  # fmt: skip
        for r, f in run["per_route"].items():
            print(f"  {r}: {f['per_s'] * 60:.1f} gradings/min, mean latency {f['mean']:.2f} s")
        if run["unexpected_detail"]:
            print("  unexpected:\n    " + run["unexpected_detail"].replace("\n", "\n    "))
        if run["infra_detail"]:
            print("  infrastructure errors:\n    " + run["infra_detail"].replace("\n", "\n    "))
    if a.json:
        for run in runs:
            run.pop("_native_items", None)
        a.json.write_text(json.dumps({"runs": runs, "grade_many": gm}, indent=2) + "\n")


if __name__ == "__main__":
    main()
