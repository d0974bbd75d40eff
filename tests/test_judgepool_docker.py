"""A pooled judge on a real engine: the reset between gradings kills what a compromised judge
left running and empties every writable place; a judge it cannot clean is replaced."""

from __future__ import annotations

import io
import json
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
