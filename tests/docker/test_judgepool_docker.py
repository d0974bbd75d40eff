"""A pooled judge on a real engine: the reset between gradings kills what a compromised judge
left running and empties every writable place; a judge it cannot clean is replaced."""

from __future__ import annotations

import base64
import io
import json
import shutil
import tarfile
import tempfile
from pathlib import Path

import pytest

from assay._internal.model.task import load_task
from assay._internal.runtime.docker import DockerRuntime
from assay._internal.tiers.strict.fixedcases import fixed_cases
from assay._internal.tiers.strict.grade import compare_argv, prepare_argv
from assay._internal.tiers.strict.judgepool import JudgePool, Lent

# Every temp dir a pool makes is removed: each test fails on one left (conftest.py).
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("private_tempdir")]

ADD = Path(__file__).resolve().parents[2] / "examples" / "add"
WORDCOUNT = ADD.parent / "wordcount"
CANARY = ADD.parent / "canary"
# The runner's report of a correct add(a, b) on the task's cases.
RUNNER = json.dumps(
    {
        "runner": "x",
        "cases": [
            {"id": c["id"], "status": "ok", "duration_s": 0.0,
             "output_b64": base64.b64encode(json.dumps(sum(c["input"])).encode()).decode()}
            for c in json.loads((ADD / "judge" / "cases.json").read_text())
        ],
    }
).encode()  # fmt: skip

# What a judge compromised through its input could leave behind: detached processes (one
# renamed to look like the keep-alive) and files in every writable place.
MESS = (
    "setsid sleep infinity </dev/null >/dev/null 2>&1 & "
    "setsid sh -c 'while :; do sleep 1; done' </dev/null >/dev/null 2>&1 & "
    "for d in /state /exchange /tmp /dev/shm; do echo planted > $d/planted; "
    "mkdir -p $d/sub/deeper && echo x > $d/sub/deeper/f; done"
)
SURVEY = (
    "import os, json\n"
    "procs = {}\n"
    "for e in os.listdir('/proc'):\n"
    "    if e.isdigit():\n"
    "        try:\n"
    "            s = open(f'/proc/{e}/stat').read().rsplit(')', 1)[1].split()\n"
    "            c = open(f'/proc/{e}/cmdline', 'rb').read().replace(b'\\0', b' ').decode()\n"
    "        except OSError:\n"
    "            continue\n"
    "        if s[0] != 'Z':\n"
    "            procs[e] = c\n"
    "files = {d: os.listdir(d) for d in ('/state', '/exchange', '/tmp', '/dev/shm')}\n"
    "print(json.dumps({'procs': procs, 'files': files, 'me': os.getpid()}))\n"
)


def _lend(pool: JudgePool, image: str, gid: str, task_dir: Path = ADD) -> Lent:
    """As the strict tier does: a generator task's judge prepares, a fixed file's does not."""
    task = load_task(task_dir)
    prepare = None if fixed_cases(task) else prepare_argv(task, "7")
    lent = pool.acquire(task, image, gid, prepare, 60.0, 1 << 20)
    assert lent.prepare is None or lent.prepare.exit_code == 0, lent.prepare.stderr
    return lent


def _survey(rt: DockerRuntime, cid: str) -> dict[str, object]:
    res = rt.exec(cid, ("python3", "-I", "-c", SURVEY), deadline_s=30, output_cap=1 << 20)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def _mess(rt: DockerRuntime, cid: str, baseline: set[str]) -> None:
    rt.exec(cid, ("sh", "-c", MESS), deadline_s=30, output_cap=0, capture=False)
    rt.put_archive(cid, "/exchange", _tar_file("runner.json", b"{}"))
    dirty = _survey(rt, cid)
    assert len(dirty["procs"]) >= len(baseline) + 3  # type: ignore[arg-type]
    # The decoy has the keep-alive's exact command line.
    cmdlines = list(dirty["procs"].values())  # type: ignore[attr-defined]
    assert cmdlines.count("sleep infinity ") == 2, cmdlines
    assert all(dirty["files"].values())  # type: ignore[attr-defined]


def _others(survey: dict[str, object]) -> set[str]:
    return {p for p in survey["procs"] if int(p) != survey["me"]}  # type: ignore[attr-defined]


def _judge_ls(rt: DockerRuntime, cid: str) -> list[str]:
    res = rt.exec(cid, ("ls", "-A", "/judge"), deadline_s=30, output_cap=1 << 20)
    return sorted(res.stdout.decode().split())


def _judge_file(rt: DockerRuntime, cid: str) -> bytes:
    return rt.exec(cid, ("cat", "/judge/cases.json"), deadline_s=30, output_cap=1 << 20).stdout


def test_reset_kills_leftover_processes_and_empties_writable_places(
    docker_runtime: DockerRuntime, base_image: str
) -> None:
    rt = docker_runtime
    pool = JudgePool(rt)
    try:
        cid = _lend(pool, base_image, "g-a").cid
        baseline = _others(_survey(rt, cid))
        assert len(baseline) == 2  # init and the keep-alive
        pool.release("g-a")
        pool.finish("g-a")
        # Planted after the release (past the pool's census, which would have discarded the
        # judge): the reset is the second line, and must hold on its own too.
        _mess(rt, cid, baseline)

        # A generator task: its files are swapped in, and the reset runs first, then
        # prepare, in one exec: what prepare wrote is all that is left.
        again = _lend(pool, base_image, "g-b", CANARY)
        assert (again.cid, again.reused, pool.switched) == (cid, True, 1)
        assert again.prepare is not None and json.loads(again.prepare.stdout)  # the inputs
        after = _survey(rt, cid)
        assert _others(after) == baseline
        assert after["files"] == {
            "/state": ["cases.json"],
            "/exchange": [],
            "/tmp": [],
            "/dev/shm": [],
        }
        assert _judge_ls(rt, cid) == sorted(p.name for p in (CANARY / "judge").iterdir())
        pool.release("g-b")
        _mess(rt, cid, baseline)

        # A fixed cases file: no exec runs before the candidate's, so the mess is still there
        # until compare resets the judge first, in its own exec.
        third = _lend(pool, base_image, "g-c")
        assert (third.cid, third.reused, third.prepare, pool.switched) == (cid, True, None, 2)
        assert _judge_file(rt, cid) == (ADD / "judge" / "cases.json").read_bytes()
        assert len(_others(_survey(rt, cid))) > len(baseline)
        task = load_task(ADD)
        used, res = pool.compare(
            "g-c", task, compare_argv(task, "/handoff/runner.json"), RUNNER, 60.0, 1 << 20
        )
        assert used == cid and res.exit_code == 0, res.stderr
        report = json.loads(res.stdout)  # the proof of the reset is not part of it
        assert [c["status"] for c in report["cases"]] == ["pass"] * len(report["cases"])
        after = _survey(rt, cid)
        assert _others(after) == baseline
        assert after["files"] == {d: [] for d in ("/state", "/exchange", "/tmp", "/dev/shm")}
        pool.finish("g-c")
    finally:
        pool.close()
    assert rt.leftovers(pool.gid) == []


@pytest.mark.parametrize("when", ["prepare", "compare"])
def test_a_judge_the_reset_cannot_empty_is_replaced(
    docker_runtime: DockerRuntime, base_image: str, when: str
) -> None:
    """A generator task's judge is reset with its prepare; a fixed cases file's, with its
    compare (its inputs come from the cache). Either way a judge the reset cannot empty is
    removed and a new one does the step."""
    task_dir = CANARY if when == "prepare" else ADD
    pool = JudgePool(docker_runtime)
    try:
        cid = _lend(pool, base_image, "g-a", task_dir).cid
        # A root-owned directory with content: the judge's user cannot empty it.
        docker_runtime.put_archive(cid, "/exchange", _tar_dir_with_file("locked", "f"))
        pool.release("g-a")
        other = _lend(pool, base_image, "g-b", task_dir)
        if when == "compare":
            assert other.cid == cid and other.reused  # no exec yet
            task = load_task(ADD)
            argv = compare_argv(task, "/handoff/runner.json")
            used, res = pool.compare("g-b", task, argv, RUNNER, 60.0, 1 << 20)
            assert used != cid and res.exit_code == 0, res.stderr
            assert json.loads(res.stdout)["cases"]  # the new judge compared
        else:
            assert other.cid != cid and not other.reused
        assert pool.discarded == 1 and cid not in {c.id for c in _pool_containers(pool)}
        pool.finish("g-b")
    finally:
        pool.close()
    assert docker_runtime.leftovers(pool.gid) == []


def _pool_containers(pool: JudgePool) -> list[object]:
    import docker

    flt = {"label": f"assay.grading={pool.gid}"}
    return docker.from_env().containers.list(all=True, filters=flt)  # type: ignore[no-any-return]


def _tar_file(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _tar_dir_with_file(dirname: str, fname: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        d = tarfile.TarInfo(dirname)
        d.type, d.mode = tarfile.DIRTYPE, 0o755
        tf.addfile(d)
        info = tarfile.TarInfo(f"{dirname}/{fname}")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"x"))
    return buf.getvalue()


def test_idle_judges_stay_under_one_cap_across_many_tasks(
    docker_runtime: DockerRuntime, base_image: str, tmp_path: Path
) -> None:
    """Issue 10 finding 7: six tasks at parallelism 2, the pool capped at 2 idle judges. Per
    task capping kept one judge per task (6) alive until the batch ended. Issue 17: a judge
    serves the next task instead (its judge files swapped), so no more than two are made."""
    import tempfile
    import threading

    import docker
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    import assay
    from assay._internal.api.grader import batch_grader
    from assay._internal.batch.run import jobs_from_manifest, load_tasks, run_batch
    from assay._internal.runtime.observed import ObservedRuntime

    cap, parallel = 2, 2
    lines = []
    for i in range(6):
        task = tmp_path / f"t{i}"
        shutil.copytree(ADD, task, ignore=shutil.ignore_patterns("solutions"))
        toml = task / "task.toml"
        toml.write_text(toml.read_text().replace('description = "', f'description = "#{i} '))
        sub = ADD / "solutions" / "correct"
        lines.append(json.dumps({"task": str(task), "submission": str(sub), "id": f"j{i}"}))
    (tmp_path / "m.jsonl").write_text("\n".join(lines) + "\n")
    jobs = jobs_from_manifest(tmp_path / "m.jsonl")
    tasks = load_tasks(jobs)
    assert len({t.digest for t in tasks.values()}) == 6

    rt = ObservedRuntime(docker_runtime)
    pool = JudgePool(rt, cap)
    client = docker.from_env()
    labels = {"label": [f"assay.grading={pool.gid}", "assay.role=judge"]}

    def judges() -> int:
        return len(client.api.containers(all=True, filters=labels))  # no per-item inspect

    def handoffs() -> int:
        return len(list(Path(tempfile.gettempdir()).glob(f"assay-{pool.gid}-handoff-*")))

    most, done = 0, threading.Event()

    def sample() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, judges())
            done.wait(0.2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        tiers = {t.id: assay.Grader.tier_for(t) for t in tasks.values()}
        grade = batch_grader(rt, tiers, base_image, pool)
        res = run_batch(
            tmp_path / "out", jobs, tasks, grade, Ed25519PrivateKey.generate(), parallel
        )
        assert res.tally.passed == 6, (res.tally.failures, res.tally.error_list)
        assert (judges(), handoffs()) == (pool.created,) * 2  # idle after the batch: no more
        # Six tasks, at most two gradings at a time: judges serve one task after another.
        assert pool.created <= parallel and pool.evicted == 0
        assert pool.switched == pool.reused == 6 - pool.created
    finally:
        done.set()
        sampler.join()
        pool.close()
    assert most <= cap + parallel
    assert (judges(), handoffs()) == (0, 0)
    assert docker_runtime.leftovers(pool.gid) == []


def test_a_graders_judges_serve_its_later_batches_and_go_with_it(
    docker_runtime: DockerRuntime, base_image: str, tmp_path: Path
) -> None:
    """An RL loop grades a batch per step with one Grader: the second batch, of other tasks,
    starts no judge; closing the grader removes them; a grader never closed is cleaned up by
    its finalizer."""
    import gc

    import assay

    def batch(grader: assay.Grader, n: int) -> list[bool]:
        jobs = [
            assay.Job(str(task), task / "solutions" / "correct", id=f"{task.name}-{n}-{i}")
            for i, task in enumerate((ADD, WORDCOUNT, ADD, WORDCOUNT))
        ]
        return [g.verdict.passed for g in grader.grade_many(jobs, parallel=2)]

    grader = assay.Grader(runtime=docker_runtime, image=base_image, reuse_judges=True)
    assert batch(grader, 1) == [True] * 4
    pool = grader._judges
    assert pool is not None and 1 <= pool.created <= 2
    made = pool.created
    assert batch(grader, 2) == [True] * 4
    assert grader._judges is pool and pool.created == made and pool.reused == 8 - made
    assert len(_pool_containers(pool)) == made  # idle between batches, not removed
    grader.close()
    assert _pool_containers(pool) == [] and docker_runtime.leftovers(pool.gid) == []

    forgotten = assay.Grader(runtime=docker_runtime, image=base_image, reuse_judges=True)
    assert batch(forgotten, 3) == [True] * 4
    pool = forgotten._judges
    assert pool is not None and _pool_containers(pool)
    del forgotten
    gc.collect()
    assert _pool_containers(pool) == [] and docker_runtime.leftovers(pool.gid) == []


# A process a compromised compare could leave behind: it waits for the judge's next command
# and ptrace-attaches to it as it starts, the way it would to forge the reset's proof.
ATTACHER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
me = os.getpid()
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    for e in os.listdir("/proc"):
        if not e.isdigit() or int(e) in (1, me):
            continue
        try:
            cmd = open(f"/proc/{e}/cmdline", "rb").read()
        except OSError:
            continue
        if b"the-next" + b"-command" in cmd:  # split: its own command line holds this source
            if os.fork() == 0:  # a child attaches and exits, which detaches: the target goes on
                ok = libc.ptrace(0x4206, int(e), 0, 0) == 0  # PTRACE_SEIZE: no stop
                open("/tmp/attached", "w").write("yes" if ok else os.strerror(ctypes.get_errno()))
                os._exit(0)
            os.wait()
            time.sleep(60)  # and stay, for the judge's next grading
            sys.exit(0)
    time.sleep(0.005)
"""


def test_a_process_left_in_a_judge_can_ptrace_its_next_command(
    docker_runtime: DockerRuntime, base_image: str
) -> None:
    """The attack primitive the pool's census closes (docs/security.md): the judge's own uid,
    under every hardening the judge has, may attach to a later exec's process."""
    rt = docker_runtime
    pool = JudgePool(rt)
    try:
        cid = _lend(pool, base_image, "g-a").cid
        background = ("sh", "-c", 'python3 -c "$0" >/dev/null 2>&1 &', ATTACHER)
        rt.exec(cid, background, deadline_s=30, output_cap=1024)
        nxt = ("python3", "-c", "import time; time.sleep(1.5)  # the-next-command")
        assert rt.exec(cid, nxt, deadline_s=30, output_cap=1024).exit_code == 0
        seen = rt.exec(cid, ("cat", "/tmp/attached"), deadline_s=30, output_cap=1024)
        assert seen.stdout == b"yes", seen
        # The pool does not lend this judge again: its census at release sees the attacker.
        pool.release("g-a")
        assert pool.leftovers == 1 and pool.discarded == 1
        assert cid not in {c.id for c in _pool_containers(pool)}
    finally:
        pool.close()
    assert rt.leftovers(pool.gid) == []


def test_an_honest_judge_passes_its_census_and_is_lent_again(
    docker_runtime: DockerRuntime, base_image: str
) -> None:
    """The control for the test above: after a real compare nothing is left, so reuse holds."""
    pool = JudgePool(docker_runtime)
    try:
        task = load_task(ADD)
        for gid in ("g-a", "g-b", "g-c"):
            lent = _lend(pool, base_image, gid)
            argv = compare_argv(task, "/handoff/runner.json")
            _, res = pool.compare(gid, task, argv, RUNNER, 60.0, 1 << 20)
            assert res.exit_code == 0, res.stderr
            pool.release(gid)
            assert lent.reused == (gid != "g-a")
        assert (pool.created, pool.leftovers, pool.discarded) == (1, 0, 0)
    finally:
        pool.close()
    assert docker_runtime.leftovers(pool.gid) == []


def test_a_grader_never_closed_leaves_no_judge_at_interpreter_exit(
    docker_runtime: DockerRuntime, base_image: str, tmp_path: Path
) -> None:
    """At exit no new thread can start: the finalizer must remove the judges all the same."""
    import subprocess
    import sys

    script = (
        "import assay, sys\n"
        f"g = assay.Grader(image={base_image!r}, reuse_judges=True, key={str(tmp_path / 'k')!r})\n"
        f"v = g.grade({str(ADD)!r}, {str(ADD / 'solutions' / 'correct')!r}).verdict\n"
        "print(g._judges.gid)\n"
        "sys.exit(0 if v.passed else 1)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    gid = proc.stdout.strip()
    assert gid.startswith("g-") and docker_runtime.leftovers(gid) == []
    assert not list(Path(tempfile.gettempdir()).glob(f"assay-{gid}-*"))
