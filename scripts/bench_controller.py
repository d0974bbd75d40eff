"""The controller's own work per strict (T3) grading: where the host's milliseconds go.

    python scripts/bench_controller.py [--tasks DIR | --task DIR ...] [--n 300] [--warmup 30]
        [--path grade|batch|both] [--submission mapping|dir] [--fresh-judge]
        [--runtime fake|runc] [--tmpdir DIR] [--out-root DIR] [--plain] [--json F]

Grades a HumanEval-sized submission (one file: a `{"solution.py": ...}` mapping, or a
directory holding it) `--n` times, one at a time, through the public paths: `Grader.grade`
(`--path grade`) and a `Grader.batch(...).run(out)` into an output directory, as `assay
grade-many` does (`--path batch`: the journal's verdict files and log included). With
`--runtime fake` (the default) every container is the in-memory fake runtime's, which answers
the runner and the judge with honest reports at once, so what is measured is the controller
alone; `--runtime runc` grades with the real backend (use a small `--n`).

Per phase, the median and mean over the gradings of the milliseconds of this process's CPU
(the thread's user + system time) and the median of its wall time, attributed exclusively: a
phase's time excludes the phases it calls (the runtime's calls inside the judge pool are
"containers", not "judge pool"). "unattributed" is the rest of the process's CPU per grading
(the tier's own code, the batch's scheduling, the interpreter). The total is the process's CPU
per grading (every thread, user + system). It is measured first in a loop without any timing
wrapper (`uninstrumented`, the figure to compare between versions), then in the loop that
times the phases. A grading's container processes (runc, the runner, the judge) are not this
process's and are never counted; where the judge is a resident worker, the fake runtime's
worker runs on a thread here and its answers count as "containers".

`--tmpdir DIR` roots the grading's temp dirs in DIR (for instance a tmpfs such as /dev/shm)
for this process only, to show what the filesystem under them costs; the batch's output
directory stays under `--out-root` (default: the system temp dir). `--plain` times only
the total (no wrappers at all). Default tasks: examples/add; `assay import humaneval --out
DIR` makes HumanEval's.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import importlib.util
import itertools
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import assay
from assay._internal.batch.jobs import Job
from assay._internal.batch.run import drain
from assay._internal.model.task import Task, load_task
from assay._internal.runtime.fake import FakeContainer, FakeRuntime

ROOT = Path(__file__).resolve().parents[1]

# (module, attribute, phase). A method is "Class.method". Each is wrapped where it is looked
# up: a name imported with `from x import f` is patched in the importing module too. A name
# the code at hand does not have (an older or newer version) is skipped and listed.
PHASES: tuple[tuple[str, str, str], ...] = (
    ("assay._internal.api.grader", "_task", "task load"),
    ("assay._internal.api.grader", "pick_tier", "task load"),
    ("assay._internal.api.grader", "_environment", "task load"),
    ("assay._internal.api.submission", "write_mapping_tar", "submission spool"),
    ("assay._internal.api.submission", "_copy_capped", "submission spool"),
    ("assay._internal.runtime.scope", "grading_tempdir", "temp dirs"),
    ("assay._internal.api.submission", "grading_tempdir", "temp dirs"),
    ("assay._internal.tiers.strict.judgepool", "grading_tempdir", "temp dirs"),
    ("assay._internal.runtime.scope", "GradingScope._remove_dirs", "temp dirs"),
    ("shutil", "rmtree", "temp dirs"),
    ("assay._internal.tiers.core.intake", "check", "firewall"),
    ("assay._internal.tiers.core.intake", "materialise", "materialise"),
    ("assay._internal.tiers.strict.grade", "INPUTS.inputs", "inputs"),
    ("assay._internal.tiers.strict.grade", "loads_strict", "inputs"),
    ("assay._internal.tiers.strict.grade", "write_cases", "inputs"),
    ("assay._internal.tiers.strict.grade", "verdict_from_judge", "verdict"),
    ("assay._internal.tiers.core.controller", "Grading.facts", "verdict"),
    ("assay._internal.tiers.core.controller", "Grading.fail", "verdict"),
    ("assay._internal.api.grader", "sign_verdict", "sign"),
    ("assay._internal.batch.run", "sign_verdict", "sign"),
    ("assay._internal.tiers.strict.judgepool", "JudgePool.acquire", "judge pool"),
    ("assay._internal.tiers.strict.judgepool", "JudgePool.compare", "judge pool"),
    ("assay._internal.tiers.strict.judgepool", "JudgePool.release", "judge pool"),
    ("assay._internal.tiers.strict.judgepool", "JudgePool.finish", "judge pool"),
    ("assay._internal.tiers.core.overlap", "Background.__init__", "helper threads"),
    ("assay._internal.tiers.core.overlap", "Background.join", "helper threads"),
    ("assay._internal.batch.run", "atomic_write", "journal: verdict file"),
    ("assay._internal.batch.run", "publish", "journal: verdict file"),
    ("assay._internal.batch.run", "_Run.write_diagnostics", "journal: verdict file"),
    ("assay._internal.batch.run", "record_patch", "journal: verdict file"),
    ("assay._internal.batch.journal", "EventLog.write", "journal: log"),
    # The resident judge's worker on the fake runtime runs on a thread of this process: its
    # work is the judge's, not the controller's.
    ("helpers.fakejudge", "FakeWorker.answer", "containers"),
    ("helpers.fakejudge", "FakeWorker.send", "containers"),
)
RUNTIME_CALLS = (
    "create", "start", "exec", "remove", "sweep", "wait", "kill", "pause", "put_archive",
    "get_archive", "census", "processes", "image_digest", "limit_events", "oom_killed",
)  # fmt: skip
RUNTIME_PHASE = "containers"
RESET_ARGV = ("python3", "-I", "/assay/judge_reset.py")
"""A pooled judge's reset, which then runs the grading's step in the same exec."""
OK_CASE = {"signal": None, "status": "ok", "limit": None, "exit_code": 0, "duration_s": 0.01,
           "output_b64": "eyIkIjogdHJ1ZX0="}  # fmt: skip
UNATTRIBUTED = "unattributed"
GC_PHASE = "garbage collector"


@dataclass
class _Frame:
    phase: str
    cpu0: float
    wall0: float
    child_cpu: float = 0.0
    child_wall: float = 0.0


@dataclass
class Recorder:
    """Exclusive CPU and wall per phase, bucketed by the grading running at the time (one at
    a time, so a grading's helper threads land in its bucket too)."""

    grading: int = -1
    cpu: dict[str, dict[int, float]] = field(default_factory=dict)
    wall: dict[str, dict[int, float]] = field(default_factory=dict)
    _local: threading.local = field(default_factory=threading.local)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self, phase: str) -> None:
        stack: list[_Frame] = self._local.__dict__.setdefault("stack", [])
        stack.append(_Frame(phase, time.thread_time(), time.perf_counter()))

    def exit(self) -> None:
        stack: list[_Frame] = self._local.stack
        frame = stack.pop()
        cpu = time.thread_time() - frame.cpu0
        wall = time.perf_counter() - frame.wall0
        if stack:
            stack[-1].child_cpu += cpu
            stack[-1].child_wall += wall
        with self._lock:
            for table, value in ((self.cpu, cpu - frame.child_cpu),
                                 (self.wall, wall - frame.child_wall)):  # fmt: skip
                row = table.setdefault(frame.phase, {})
                row[self.grading] = row.get(self.grading, 0.0) + value


def _timed(rec: Recorder, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        rec.enter(phase)
        try:
            return fn(*args, **kwargs)
        finally:
            rec.exit()

    return wrapper


def instrument(rec: Recorder, runtime: object) -> Callable[[], None]:
    """Wrap every phase's function; the returned callable undoes it."""
    undo: list[Callable[[], None]] = []
    missing: list[str] = []

    def patch(owner: Any, name: str, phase: str) -> None:
        original = getattr(owner, name)
        if isinstance(original, type) or not callable(original):
            raise SystemExit(f"{owner!r}.{name} is not a function: update PHASES")
        # A name looked up on an instance (not its class) is a bound method already.
        setattr(owner, name, _timed(rec, phase, original))
        undo.append(lambda: setattr(owner, name, original))

    for module_name, attr, phase in PHASES:
        if importlib.util.find_spec(module_name.split(".")[0]) is None:
            missing.append(f"{module_name}.{attr}")
            continue
        owner: Any = importlib.import_module(module_name)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is None or not hasattr(owner, name):
            missing.append(f"{module_name}.{attr}")
            continue
        if isinstance(getattr(owner, name, None), type):  # a class: time its construction
            cls = getattr(owner, name)
            patch(cls, "__init__", phase)
            continue
        patch(owner, name, phase)
    for call in RUNTIME_CALLS:
        if hasattr(runtime, call):
            patch(runtime, call, RUNTIME_PHASE)
    if missing:
        print(f"(not in this code, not timed: {', '.join(missing)})")

    def collector(event: str, _info: dict[str, int]) -> None:
        # The collector runs inside whatever allocated last: its time is a phase of its own.
        if event == "start":
            rec.enter(GC_PHASE)
        else:
            rec.exit()

    gc.callbacks.append(collector)
    undo.append(lambda: gc.callbacks.remove(collector))

    def restore() -> None:
        for step in reversed(undo):
            step()

    return restore


# -- a HumanEval-sized grading on the fake runtime ---------------------------------------------


def honest_programs() -> dict[str, Callable[..., tuple[int, bytes, bytes]]]:
    """The runner and the judge as the fake runtime's `python3`: the reports an honest runner
    and judge print for a correct submission, made at once."""
    reports: dict[bytes, tuple[bytes, bytes]] = {}

    def made(judge_dir: Path) -> tuple[bytes, bytes]:
        # By content: a pooled judge's /judge is one directory refilled for each task it serves.
        key = (judge_dir / "cases.json").read_bytes()
        if key not in reports:
            ids = [str(c["id"]) for c in json.loads(key)]
            runner = {
                "runner": "assay-runner/1",
                "cases": [dict(OK_CASE, id=i) for i in ids],
            }
            judge = {"cases": [{"id": i, "status": "pass", "duration_s": 0.01} for i in ids]}
            reports[key] = (json.dumps(runner).encode(), json.dumps(judge).encode())
        return reports[key]

    def python3(
        c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        if argv[:3] == RESET_ARGV:  # a pooled judge: reset, then the step in the same exec
            code, out, err = python3(c, argv[4:], env)
            return code, b"clean\n" + out, err
        if argv[2] == "/assay/judge.py":
            judge_dir = next(b.source for b in c.spec.binds if b.target == "/judge")
            return 0, made(judge_dir)[1], b""
        return 0, b'{"runner": "assay-runner/1", "cases": []}', b""

    return {"python3": python3}


def speak_the_judges_protocol() -> Callable[[], None]:
    """Where the judge is a resident worker (`tiers/strict/judgewire.py`), its worker on the fake
    runtime is the tests' (tests/helpers/fakejudge.py), which runs each step as the fake's
    `python3`; where the judge is exec'd per step, nothing is needed. Returns the undo."""
    if importlib.util.find_spec("assay._internal.tiers.strict.judgewire") is None:
        return lambda: None
    import pytest

    sys.path.insert(0, str(ROOT / "tests"))
    fakejudge = importlib.import_module("helpers.fakejudge")
    patches = pytest.MonkeyPatch()
    fakejudge.install(patches)
    return patches.undo


@dataclass(frozen=True)
class Workload:
    tasks: list[Task]
    submission: str  # "mapping" or "dir"
    subs_root: Path

    def submission_of(self, i: int) -> tuple[Task, Any]:
        task = self.tasks[i % len(self.tasks)]
        if self.submission == "mapping":
            text = (task.root / "solutions" / "correct" / "solution.py").read_text()
            return task, {"solution.py": text}
        return task, str(self.subs_root / f"s{i}")

    def make_dirs(self, n: int) -> None:
        for i in range(n):
            task = self.tasks[i % len(self.tasks)]
            d = self.subs_root / f"s{i}"
            d.mkdir(parents=True, exist_ok=True)
            shutil.copy(task.root / "solutions" / "correct" / "solution.py", d)


def _grade_loop(
    grader: assay.Grader, work: Workload, n: int, rec: Recorder | None, first: int
) -> tuple[list[float], float]:
    """`Grader.grade` n times; the CPU of each grading and the loop's wall."""
    per: list[float] = []
    w0 = time.perf_counter()
    for i in range(first, first + n):
        task, sub = work.submission_of(i)
        if rec is not None:
            rec.grading = i
        c0 = time.process_time()
        graded = grader.grade(task, sub)
        per.append(time.process_time() - c0)
        if not graded.verdict.passed:
            raise SystemExit(f"grading {i} did not pass: {graded.verdict.reason_codes}")
    return per, time.perf_counter() - w0


def _batch_loop(
    grader: assay.Grader, work: Workload, n: int, rec: Recorder | None, first: int, out: Path
) -> tuple[list[float], float]:
    """One batch of n jobs into `out`, one at a time; the CPU between one grading's start and
    the next's (the batch's bookkeeping included) and the batch's wall."""
    jobs = []
    for i in range(first, first + n):
        task, sub = work.submission_of(i)
        jobs.append(Job(f"job-{i}", task.root, Path(sub) if isinstance(sub, str) else sub,
                        f"job {i}"))  # fmt: skip
    marks: list[float] = []
    from assay._internal.batch import run as batch_run

    original = batch_run._Run.grade_one

    def grade_one(self: Any, job: Job, gid: str, *, last: bool = True) -> Any:
        marks.append(time.process_time())
        if rec is not None:
            rec.grading = int(job.id.rsplit("-", 1)[1])
        return original(self, job, gid, last=last)

    batch_run._Run.grade_one = grade_one  # type: ignore[method-assign]
    try:
        w0 = time.perf_counter()
        result = drain(grader.batch(jobs, parallel=1).run(out))
        wall = time.perf_counter() - w0
        marks.append(time.process_time())
    finally:
        batch_run._Run.grade_one = original  # type: ignore[method-assign]
    if result.tally.passed != n:
        raise SystemExit(f"batch: {result.tally}")
    return [b - a for a, b in itertools.pairwise(marks)], wall


def _ms(values: list[float]) -> float:
    return round(1000 * statistics.median(values), 3) if values else 0.0


def measure(args: argparse.Namespace, path: str, work: Workload) -> dict[str, Any]:
    runtime: Any
    if args.runtime == "fake":
        runtime = FakeRuntime(programs=honest_programs())
        undo_protocol = speak_the_judges_protocol()
    else:
        from assay._internal.runtime.engine import open_runtime

        runtime = open_runtime(args.runtime)
        undo_protocol = lambda: None  # noqa: E731
    keydir = Path(tempfile.mkdtemp(prefix="bench-controller-key-"))
    grader = assay.Grader(runtime=runtime, key=keydir / "signing.key",
                          reuse_judges=not args.fresh_judge)  # fmt: skip
    # The batch's output directory stays where --out-root says (the system temp dir by
    # default) whatever --tmpdir does: it stands for a user's OUT, not a grading's temp dirs.
    outs = Path(tempfile.mkdtemp(prefix="bench-controller-out-", dir=args.out_root))
    try:

        def loop(n: int, rec: Recorder | None, first: int) -> tuple[list[float], float]:
            if path == "grade":
                return _grade_loop(grader, work, n, rec, first)
            return _batch_loop(grader, work, n, rec, first, outs / f"out-{first}")

        loop(args.warmup, None, 0)  # imports, caches, the pool's first judge
        before = resource.getrusage(resource.RUSAGE_SELF)
        plain, plain_wall = loop(args.n, None, args.warmup)
        after = resource.getrusage(resource.RUSAGE_SELF)
        row: dict[str, Any] = {
            "path": path,
            "gradings": args.n,
            "uninstrumented_cpu_ms_mean": round(1000 * sum(plain) / len(plain), 3),
            "uninstrumented_cpu_ms_median": _ms(plain),
            "uninstrumented_wall_ms_mean": round(1000 * plain_wall / args.n, 3),
            # User time is the Python; system time mostly the file system under the temp dirs.
            "uninstrumented_user_ms_mean": round(
                1000 * (after.ru_utime - before.ru_utime) / args.n, 3
            ),
            "uninstrumented_sys_ms_mean": round(
                1000 * (after.ru_stime - before.ru_stime) / args.n, 3
            ),
        }
        if args.plain:
            return row
        rec = Recorder()
        restore = instrument(rec, runtime)
        try:
            per, wall = loop(args.n, rec, args.warmup + args.n)
        finally:
            restore()
        phases: dict[str, dict[str, float]] = {}
        for phase in sorted(rec.cpu):
            ids = range(args.warmup + args.n, args.warmup + 2 * args.n)
            cpu = [rec.cpu[phase].get(i, 0.0) for i in ids]
            wl = [rec.wall[phase].get(i, 0.0) for i in ids]
            phases[phase] = {"cpu_ms": _ms(cpu), "wall_ms": _ms(wl),
                             "cpu_ms_mean": round(1000 * statistics.fmean(cpu), 3)}  # fmt: skip
        attributed = sum(p["cpu_ms_mean"] for p in phases.values())
        total = 1000 * sum(per) / len(per)
        phases[UNATTRIBUTED] = {"cpu_ms": round(total - attributed, 3), "wall_ms": 0.0,
                                "cpu_ms_mean": round(total - attributed, 3)}  # fmt: skip
        row.update(
            instrumented_cpu_ms_mean=round(total, 3),
            instrumented_wall_ms_mean=round(1000 * wall / args.n, 3),
            phases=phases,
        )
        return row
    finally:
        grader.close()
        undo_protocol()
        shutil.rmtree(outs, ignore_errors=True)
        shutil.rmtree(keydir, ignore_errors=True)


def show(row: dict[str, Any]) -> None:
    print(f"\n== {row['path']}: {row['gradings']} gradings ==")
    user, system = row["uninstrumented_user_ms_mean"], row["uninstrumented_sys_ms_mean"]
    print(f"CPU per grading (uninstrumented): mean {row['uninstrumented_cpu_ms_mean']:.3f} ms "
          f"(user {user:.3f} + system {system:.3f}), median "
          f"{row['uninstrumented_cpu_ms_median']:.3f} ms; wall per grading "
          f"{row['uninstrumented_wall_ms_mean']:.3f} ms")  # fmt: skip
    if "phases" not in row:
        return
    print(f"instrumented: CPU {row['instrumented_cpu_ms_mean']:.3f} ms, wall "
          f"{row['instrumented_wall_ms_mean']:.3f} ms per grading")  # fmt: skip
    print(f"{'phase':<24}{'CPU ms (median)':>17}{'CPU ms (mean)':>15}{'wall ms (median)':>18}")
    phases: dict[str, dict[str, float]] = row["phases"]
    for name, p in sorted(phases.items(), key=lambda kv: -kv[1]["cpu_ms_mean"]):
        print(f"{name:<24}{p['cpu_ms']:>17.3f}{p['cpu_ms_mean']:>15.3f}{p['wall_ms']:>18.3f}")


@contextlib.contextmanager
def temp_root(path: str | None) -> Iterator[None]:
    if path is None:
        yield
        return
    before = tempfile.tempdir
    tempfile.tempdir = path
    try:
        yield
    finally:
        tempfile.tempdir = before


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=Path, help="a directory of task directories")
    ap.add_argument("--task", type=Path, action="append", default=[])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--path", choices=("grade", "batch", "both"), default="both")
    ap.add_argument("--submission", choices=("mapping", "dir"), default="mapping")
    ap.add_argument("--fresh-judge", action="store_true", help="no judge reuse")
    ap.add_argument("--runtime", default="fake", help="fake (default), or a backend: runc...")
    ap.add_argument("--tmpdir", help="root the grading temp dirs here (this process only)")
    ap.add_argument(
        "--out-root",
        default=tempfile.gettempdir(),
        help="where the batch's output directory goes (default: the temp dir)",
    )
    ap.add_argument("--plain", action="store_true", help="the total only, no phase wrappers")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    roots = list(args.task)
    if args.tasks is not None:
        roots += sorted(p.parent for p in args.tasks.glob("*/task.toml"))
    tasks = [load_task(r) for r in (roots or [ROOT / "examples" / "add"])]
    subs_root = Path(tempfile.mkdtemp(prefix="bench-controller-subs-"))
    rows = []
    try:
        with temp_root(args.tmpdir):
            work = Workload(tasks, args.submission, subs_root)
            if args.submission == "dir":
                work.make_dirs(args.warmup + 2 * args.n)
            print(f"{len(tasks)} task(s), {args.submission} submissions, runtime "
                  f"{args.runtime}, temp dirs in {tempfile.gettempdir()}, "
                  f"{'fresh' if args.fresh_judge else 'reused'} judges")  # fmt: skip
            for path in ("grade", "batch") if args.path == "both" else (args.path,):
                rows.append(measure(args, path, work))
                show(rows[-1])
    finally:
        shutil.rmtree(subs_root, ignore_errors=True)
    if args.json is not None:
        meta = {"argv": sys.argv[1:], "cpus": os.cpu_count(), "python": sys.version.split()[0]}
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
