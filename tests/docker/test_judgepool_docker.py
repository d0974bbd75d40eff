"""Resident judges on a real engine: a task's comparator that plants everything it can leaves
nothing the next grading's step finds (memory, environment, files, processes), cannot reach the
worker, and a judge the reset cannot clean, a process the worker cannot kill, a judge killed
between gradings or during its compare are each dealt with, ending no more than their own
grading."""

from __future__ import annotations

import base64
import io
import json
import shutil
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from assay._internal.model.task import load_task
from assay._internal.runtime import Runtime
from assay._internal.runtime.docker import DockerRuntime
from assay._internal.tiers.strict.fixedcases import fixed_cases
from assay._internal.tiers.strict.grade import compare_argv, prepare_argv
from assay._internal.tiers.strict.judgepool import JudgePool, Lent
from assay._internal.tiers.strict.judgewire import WorkerFault

# Every temp dir a pool makes is removed: each test fails on one left (conftest.py).
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("private_tempdir")]

ADD = Path(__file__).resolve().parents[2] / "examples" / "add"
WORDCOUNT = ADD.parent / "wordcount"
CANARY = ADD.parent / "canary"
PLANT = Path(__file__).resolve().parents[1] / "tasks" / "judge-plant"


def _runner(task_dir: Path, answer: Any = None) -> bytes:
    """The runner's report of a correct solution on the task's cases (`answer`: every case's
    output instead)."""
    cases = json.loads((task_dir / "judge" / "cases.json").read_text())
    return json.dumps(
        {
            "runner": "x",
            "cases": [
                {"id": c["id"], "status": "ok", "duration_s": 0.0,
                 "output_b64": base64.b64encode(json.dumps(
                     c["expected"] if answer is None else answer).encode()).decode()}
                for c in cases
            ],
        }
    ).encode()  # fmt: skip


RUNNER = _runner(ADD)


def _lend(pool: JudgePool, image: str, gid: str, task_dir: Path = ADD) -> Lent:
    """As the strict tier does: a generator task's judge prepares, a fixed file's does not."""
    task = load_task(task_dir)
    prepare = None if fixed_cases(task) else prepare_argv(task, "7")
    lent = pool.acquire(task, image, gid, prepare, 60.0, 1 << 20)
    assert lent.prepare is None or lent.prepare.exit_code == 0, lent.prepare.stderr
    return lent


def _compare(pool: JudgePool, gid: str, task_dir: Path = ADD) -> tuple[str, Any]:
    task = load_task(task_dir)
    argv = compare_argv(task, "/handoff/runner.json")
    used, res = pool.compare(gid, task, argv, _runner(task_dir), 60.0, 1 << 20)
    assert res.exit_code == 0, res.stderr
    report = json.loads(res.stdout)
    assert [c["status"] for c in report["cases"]] == ["pass"] * len(report["cases"]), report
    return used, res


def _planted(res: Any) -> dict[str, Any]:
    (line,) = [ln for ln in res.stderr.decode().splitlines() if ln.startswith("PLANT ")]
    return json.loads(line[len("PLANT ") :])  # type: ignore[no-any-return]


@pytest.fixture(params=["runc", "docker"])
def judge_rt(request: pytest.FixtureRequest, docker_runtime: DockerRuntime) -> Runtime:
    """The default backend (runc, driven directly) and the Docker engine."""
    if request.param == "docker":
        return docker_runtime
    from assay._internal.runtime.oci.runtime import OciRuntime

    return OciRuntime(docker_runtime.client)


def _base(seen: dict[str, Any]) -> set[str]:
    """The judge's own processes as a step sees them: init, the process init started (root,
    waiting for the worker), the worker; no other."""
    procs, worker = seen["processes"], str(seen["worker"])
    assert procs["1"]["uid"] == ["0", "0", "0"]
    (keeper,) = set(procs) - {"1", worker}
    assert procs[keeper]["uid"] == ["0", "0", "0"] and "judge_worker.py" in procs[keeper]["cmd"]
    return {"1", keeper, worker}


def _judge_file(rt: Runtime, cid: str) -> bytes:
    return rt.exec(cid, ("cat", "/judge/cases.json"), deadline_s=30, output_cap=1 << 20).stdout


def test_nothing_a_grading_leaves_in_its_judge_reaches_the_next(
    judge_rt: Runtime, base_image: str
) -> None:
    """The task's comparator (task code: trusted, but not to carry anything from one grading
    to the next) plants module state, an environment variable, files in every writable place
    and processes that detach; the next step, of the same grading and of the next, on the same
    judge, finds none of it. It never reaches the worker, which keeps ids of its own."""
    rt = judge_rt
    pool = JudgePool(rt)
    try:
        cid = _lend(pool, base_image, "g-a", PLANT).cid
        _, res = _compare(pool, "g-a", PLANT)
        first = _planted(res)
        worker = first["worker"]
        # The worker: ids of its own (real and saved 1001), no capability, unreachable by the
        # step, which has 1000 for all three ids and no SysV IPC.
        assert first["ids"] == [[1000] * 3, [1000] * 3]
        assert first["processes"][str(worker)]["uid"] == ["1001", "1000", "1001"]
        assert first["signal_worker"] == "EPERM" and first["ptrace_worker"] == "EPERM"
        assert first["worker_fds"] == "EACCES" and first["worker_mem"] == "EACCES"
        assert first["sysv"] == "ENOSYS"
        # Its descriptors: stdin, stdout, stderr and the one its listing opened.
        assert first["fds"] == ["0", "1", "2", "3"]
        # Init and the process it started, which waits for the worker (both root), and the
        # worker: nothing else when the first step of a judge starts.
        base = _base(first)
        assert first["module"] == [] and first["env"] is None

        _, res = _compare(pool, "g-a", PLANT)  # the same grading, a second step
        same = _planted(res)
        assert set(same["processes"]) == base  # the detached ones were killed
        assert same["module"] == [] and same["env"] is None
        assert same["files"]["/tmp"] == [] and same["files"]["/dev/shm"] == []
        # A grading's own places keep what its steps wrote until its end.
        assert same["files"]["/state"] == ["planted"]

        pool.release("g-a")
        pool.finish("g-a")
        again = _lend(pool, base_image, "g-b", PLANT)
        assert (again.cid, again.reused) == (cid, True)
        _, res = _compare(pool, "g-b", PLANT)
        nxt = _planted(res)
        assert nxt["worker"] == worker and set(nxt["processes"]) == base
        assert nxt["module"] == [] and nxt["env"] is None
        assert all(not v for v in nxt["files"].values()), nxt["files"]
        pool.release("g-b")
        assert (pool.created, pool.discarded, pool.leftovers) == (1, 0, 0)
    finally:
        pool.close()
    assert rt.leftovers(pool.gid) == []


def test_a_judge_serves_another_task_with_its_files_swapped(
    docker_runtime: DockerRuntime, base_image: str
) -> None:
    rt = docker_runtime
    pool = JudgePool(rt)
    try:
        cid = _lend(pool, base_image, "g-a").cid
        _compare(pool, "g-a")
        pool.release("g-a")
        again = _lend(pool, base_image, "g-b", CANARY)  # a generator: prepared by request
        assert (again.cid, again.reused, pool.switched) == (cid, True, 1)
        assert again.prepare is not None and json.loads(again.prepare.stdout)  # its inputs
        pool.release("g-b")
        third = _lend(pool, base_image, "g-c")
        assert (third.cid, third.reused, pool.switched) == (cid, True, 2)
        assert _judge_file(rt, cid) == (ADD / "judge" / "cases.json").read_bytes()
        _compare(pool, "g-c")
        pool.release("g-c")
    finally:
        pool.close()
    assert rt.leftovers(pool.gid) == []


def test_a_judge_its_worker_cannot_empty_is_not_lent_again(
    docker_runtime: DockerRuntime, base_image: str
) -> None:
    """A root-owned tree in /exchange (a transform's outputs arrive so; such tasks never reuse
    a judge): the worker's reset cannot empty it, says so, and the judge is removed."""
    pool = JudgePool(docker_runtime)
    try:
        cid = _lend(pool, base_image, "g-a").cid
        docker_runtime.put_archive(cid, "/exchange", _tar_dir_with_file("locked", "f"))
        _compare(pool, "g-a")
        pool.release("g-a")
        assert pool.discarded == 1 and cid not in {c.id for c in _pool_containers(pool)}
        other = _lend(pool, base_image, "g-b")
        assert other.cid != cid and not other.reused
        pool.finish("g-b")
    finally:
        pool.close()
    assert docker_runtime.leftovers(pool.gid) == []


def test_a_process_the_worker_cannot_kill_keeps_its_judge_from_being_lent_again(
    judge_rt: Runtime, base_image: str
) -> None:
    """The worker kills and sees what its steps' uid runs; a process of another uid (only an
    exec of the controller's could start one) is beyond it, and its reset says clean. The
    pool's census from outside is what finds it."""
    rt = judge_rt
    pool = JudgePool(rt)
    try:
        cid = _lend(pool, base_image, "g-a").cid
        _compare(pool, "g-a")  # its first request: the worker runs, its census is taken
        rt.exec(cid, ("sh", "-c", "setsid sleep 600 </dev/null >/dev/null 2>&1 &"),
                deadline_s=30, output_cap=0, capture=False)  # fmt: skip
        _compare(pool, "g-a")
        pool.release("g-a")
        assert pool.leftovers == 1 and pool.discarded == 1
        assert _lend(pool, base_image, "g-b").cid != cid
        pool.finish("g-b")
    finally:
        pool.close()
    assert rt.leftovers(pool.gid) == []


def test_a_judge_killed_between_gradings_is_replaced(judge_rt: Runtime, base_image: str) -> None:
    rt = judge_rt
    pool = JudgePool(rt)
    discarded = 0
    try:
        for task_dir in (ADD, CANARY):  # no request before compare; prepare first
            gid = f"g-{task_dir.name}"
            cid = _lend(pool, base_image, gid, task_dir).cid
            if task_dir is ADD:
                _compare(pool, gid, task_dir)
            else:
                _compare_canary(pool, gid)
            pool.release(gid)
            rt.kill(cid)
            # Found gone when it is lent, or at its grading's first request (a kill takes a
            # moment to show): either way a new judge does the grading.
            lent = _lend(pool, base_image, gid + "-2", task_dir)
            if task_dir is ADD:
                used, _ = _compare(pool, gid + "-2", task_dir)
            else:
                assert lent.cid != cid
                _compare_canary(pool, gid + "-2")
                used = lent.cid
            assert used != cid and pool.discarded == discarded + 1
            discarded = pool.discarded
            pool.release(gid + "-2")
    finally:
        pool.close()
    assert rt.leftovers(pool.gid) == []


def test_a_signal_init_forwards_from_outside_does_not_stop_the_judge(
    docker_runtime: DockerRuntime, base_image: str
) -> None:
    """runc forwards to the container's init the SIGURG its Go runtime sends its own threads
    for preemption, and init forwards it to its child. When that child was the worker (ids of
    its own), init could not (EPERM), stopped, and took the judge with it: a judge lost now and
    then under load. Init's child is now a process with init's ids, which SIGURG does not
    touch."""
    import os
    import signal

    from assay._internal.runtime.oci.runtime import OciRuntime

    rt = OciRuntime(docker_runtime.client)
    pool = JudgePool(rt)
    try:
        cid = _lend(pool, base_image, "g-a").cid
        _compare(pool, "g-a")
        os.kill(rt._shims[cid].pid, signal.SIGURG)  # the runtime's own process for it
        time.sleep(0.5)
        used, _ = _compare(pool, "g-a")
        pool.release("g-a")
        assert used == cid and (pool.faults, pool.discarded) == (0, 0)
    finally:
        pool.close()
    assert rt.leftovers(pool.gid) == []


def _compare_canary(pool: JudgePool, gid: str) -> None:
    task = load_task(CANARY)
    argv = compare_argv(task, "/handoff/runner.json")
    _, res = pool.compare(gid, task, argv, b'{"runner": "x", "cases": []}', 60.0, 1 << 20)
    assert res.exit_code == 0, res.stderr  # every case fails (missing), as a report


def test_a_judge_killed_during_its_compare_ends_that_grading_only(
    judge_rt: Runtime, base_image: str
) -> None:
    """Two gradings on two judges; one judge's container is killed while its comparator runs.
    That grading ends with no verdict (a `WorkerFault`, an engine error), the other goes on,
    and the pool replaces the lost judge."""
    rt = judge_rt
    pool = JudgePool(rt)
    try:
        a = _lend(pool, base_image, "g-a", PLANT)
        b = _lend(pool, base_image, "g-b", PLANT)
        killer = threading.Timer(2.0, rt.kill, args=(a.cid,))
        killer.start()
        task = load_task(PLANT)
        argv = compare_argv(task, "/handoff/runner.json")
        t0 = time.monotonic()
        with pytest.raises(WorkerFault):
            pool.compare("g-a", task, argv, _runner(PLANT, answer="sleep"), 60.0, 1 << 20)
        killer.join()
        assert time.monotonic() - t0 < 30 and (pool.faults, pool.discarded) == (1, 1)
        pool.finish("g-a")
        used, _ = _compare(pool, "g-b", PLANT)
        assert used == b.cid
        pool.release("g-b")
        assert lend_again(pool, base_image) == b.cid
    finally:
        pool.close()
    assert rt.leftovers(pool.gid) == []


def lend_again(pool: JudgePool, image: str) -> str:
    cid = _lend(pool, image, "g-c", PLANT).cid
    pool.finish("g-c")
    return cid


def _pool_containers(pool: JudgePool) -> list[Any]:
    import docker

    flt = {"label": f"assay.grading={pool.gid}"}
    return docker.from_env().containers.list(all=True, filters=flt)  # type: ignore[no-any-return]


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
