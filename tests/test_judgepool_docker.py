"""A pooled judge on a real engine: the reset between gradings kills what a compromised judge
left running and empties every writable place; a judge it cannot clean is replaced."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from assay._internal.model.task import load_task
from assay._internal.runtime.docker import DockerRuntime
from assay._internal.tiers.judgepool import JudgePool

pytestmark = pytest.mark.docker

ADD = Path(__file__).resolve().parent.parent / "examples" / "add"

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


def _survey(rt: DockerRuntime, cid: str) -> dict[str, object]:
    res = rt.exec(cid, ("python3", "-I", "-c", SURVEY), deadline_s=30, output_cap=1 << 20)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def test_reset_kills_leftover_processes_and_empties_writable_places(
    docker_runtime: DockerRuntime, base_image: str
) -> None:
    pool = JudgePool(docker_runtime)
    task = load_task(ADD)
    try:
        cid, _ = pool.acquire(task, base_image, "g-a")
        clean = _survey(docker_runtime, cid)
        baseline = {p for p in clean["procs"] if int(p) != clean["me"]}  # type: ignore[attr-defined]
        assert len(baseline) == 2  # init and the keep-alive
        docker_runtime.exec(cid, ("sh", "-c", MESS), deadline_s=30, output_cap=0, capture=False)
        docker_runtime.put_archive(cid, "/exchange", _tar_file("runner.json", b"{}"))
        dirty = _survey(docker_runtime, cid)
        assert len(dirty["procs"]) >= len(baseline) + 3  # type: ignore[arg-type]
        # The decoy has the keep-alive's exact command line.
        cmdlines = list(dirty["procs"].values())  # type: ignore[attr-defined]
        assert cmdlines.count("sleep infinity ") == 2, cmdlines
        assert all(dirty["files"].values())  # type: ignore[attr-defined]
        pool.release("g-a")
        pool.finish("g-a")

        again, reused = pool.acquire(task, base_image, "g-b")
        assert (again, reused) == (cid, True)
        after = _survey(docker_runtime, cid)
        left = {p for p in after["procs"] if int(p) != after["me"]}  # type: ignore[attr-defined]
        assert left == baseline
        assert after["files"] == {d: [] for d in ("/state", "/exchange", "/tmp", "/dev/shm")}
        pool.finish("g-b")
    finally:
        pool.close()
    assert docker_runtime.leftovers(pool.gid) == []


def test_a_judge_the_reset_cannot_empty_is_replaced(
    docker_runtime: DockerRuntime, base_image: str
) -> None:
    pool = JudgePool(docker_runtime)
    task = load_task(ADD)
    try:
        cid, _ = pool.acquire(task, base_image, "g-a")
        # A root-owned directory with content: the judge's user cannot empty it.
        docker_runtime.put_archive(cid, "/exchange", _tar_dir_with_file("locked", "f"))
        pool.release("g-a")
        other, reused = pool.acquire(task, base_image, "g-b")
        assert other != cid and not reused
        assert pool.discarded == 1
        pool.finish("g-b")
    finally:
        pool.close()
    assert docker_runtime.leftovers(pool.gid) == []


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
    task capping kept one judge per task (6) alive until the batch ended."""
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
        assert (judges(), handoffs()) == (cap, cap)  # idle after the batch: the cap, no more
        assert pool.created == 6 and pool.evicted == 4
    finally:
        done.set()
        sampler.join()
        pool.close()
    assert most <= cap + parallel
    assert (judges(), handoffs()) == (0, 0)
    assert docker_runtime.leftovers(pool.gid) == []
