"""No process of a case outlives it, and a case's CPU counts every process it started (issue 36,
item 1), on real containers: the default backend (runc driven directly), the Docker engine,
and gVisor through the engine.

The runner used to find the processes to kill by listing /proc and skipping state `Z`, and to
read a case's CPU from RUSAGE_CHILDREN of what it had reaped itself. Each test below is an
attack on one of those two: a process whose main thread exited while another thread runs
(/proc shows the whole process as `Z`), and work split across orphaned grandchildren (init,
not the runner, reaped them). The runner now kills with `kill(-1)` and, as a child subreaper,
reaps every process a case started (runner.py).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.runner import run_function

import assay
from assay._internal.model.task import load_task
from assay._internal.runtime.base import Runtime
from assay._internal.runtime.cgroup import Cgroup
from assay._internal.runtime.docker import DockerRuntime
from assay._internal.runtime.oci.runtime import OciRuntime
from assay._internal.runtime.scope import GradingScope
from assay._internal.tiers.strict.candidate import candidate_spec, runner_argv

pytestmark = pytest.mark.docker

BACKENDS = ("runc", "docker", "docker-runsc")


def _runtime(backend: str) -> Runtime:
    if backend == "runc":
        return OciRuntime()
    return DockerRuntime(oci_runtime="runsc" if backend == "docker-runsc" else None)


# A process that keeps a thread running after its main thread ended with the raw exit syscall
# (no libc exit, no atexit): its thread serves "carried" on an abstract socket, which lives in
# the container's network namespace, shared by every case. `plant` returns the state /proc
# gives the process; `probe` what the socket answers, or None when nothing is listening.
LINGER = r"""
import ctypes, os, platform, socket, threading, time
NAME = b"\0assay-linger-7d1e5c0a9b"
SYS_EXIT = {"x86_64": 60, "aarch64": 93}[platform.machine()]

def _serve(ready):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(NAME)
    srv.listen(8)
    os.write(ready, b"1")
    while True:
        conn, _ = srv.accept()
        conn.sendall(b"carried")
        conn.close()

def _linger(ready):
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, ready)
    os.closerange(ready + 1, 4096)
    threading.Thread(target=_serve, args=(ready,)).start()
    ctypes.CDLL(None).syscall(SYS_EXIT, 0)  # only the main thread ends

def solve(mode):
    if mode == "plant":
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            _linger(w)
        os.close(w)
        if os.read(r, 1) != b"1":
            return "no-listener"
        for _ in range(200):
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0].decode()
            if state != "R" and state != "S":
                return state
            time.sleep(0.01)
        return state
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(NAME)
    except OSError:
        return None
    return s.recv(64).decode()
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_process_whose_main_thread_exited_does_not_reach_the_next_case(
    backend: str, base_image: str, tmp_path: Path
) -> None:
    plant, probe = run_function(_runtime(backend), base_image, tmp_path, LINGER, ["plant", "probe"])
    assert plant["status"] == "ok", plant
    if backend != "docker-runsc":
        # The blind spot of a /proc listing that skips zombies, on this kernel: the process
        # still runs (its thread answered above) while its stat reads `Z`.
        assert plant["value"] == "Z", plant
    assert probe["status"] == "ok", probe
    assert probe["value"] is None, probe


@pytest.mark.parametrize("backend", BACKENDS)
def test_nothing_the_candidate_started_outlives_the_runner(
    backend: str, base_image: str, tmp_path: Path
) -> None:
    """The last case leaves the lingering process; once the runner has exited, its container
    has stopped (the runner is its own process, under init: the kernel ends every process of
    the PID namespace with init) and no process is left in its cgroup. A survivor could act
    after the runner, e.g. fill the pids limit before the controller reads the container's
    counters (a failed grading whose every case passed)."""
    seen: list[int | None] = []
    left: list[int] = []

    def processes(rt: Runtime, cid: str) -> None:
        seen.append(rt.wait(cid, 30))
        # Seen from the host, not asked of anything inside: the container's cgroup (gone
        # already where the engine removes it at the stop, as Docker's does).
        parent = "assay" if isinstance(rt, OciRuntime) else "docker"
        left.extend(Cgroup(parent, cid).procs())

    (plant,) = run_function(
        _runtime(backend), base_image, tmp_path, LINGER, ["plant"], after=processes
    )
    assert plant["status"] == "ok" and plant["value"] != "no-listener", plant
    assert seen == [0] and left == [], (seen, left)


# Work split across orphaned grandchildren: each burns 0.8 s of CPU, under its own 1 s
# RLIMIT_CPU, and the program waits for all three before it answers (correctly). Its CPU is
# 2.4 s against a 1 s limit.
def _burn_in_orphans(seconds: float) -> str:
    return f"""import os, sys, time

def burn(s):
    end = time.process_time() + s
    while time.process_time() < end:
        pass

r, w = os.pipe()
for _ in range(3):
    if os.fork() == 0:
        if os.fork() == 0:
            os.close(r)
            burn({seconds})
            os.write(w, b"x")
            os._exit(0)
        os._exit(0)
    os.wait()
os.close(w)
done = b""
while len(done) < 3:
    chunk = os.read(r, 3)
    if not chunk:
        break
    done += chunk
for line in sys.stdin.read().split("\\n")[:-1]:
    print(len(line.split()))
"""


@pytest.fixture(scope="module", params=BACKENDS)
def grader(request: pytest.FixtureRequest) -> Iterator[assay.Grader]:
    g = assay.Grader(oci_runtime=str(request.param))
    yield g
    g.close()


def _stdio_task(tmp: Path) -> Path:
    task = tmp / "stdio"
    (task / "inputs").mkdir(parents=True)
    (task / "judge").mkdir()
    (task / "inputs" / "README.md").write_text("count the words of each line\n")
    (task / "task.toml").write_text(
        'id = "orphans"\nkind = "stdio"\n\n[stdio]\nlanguages = ["python3"]\n'
        'checker = "lines"\n\n[judge]\ncases = "tests.json"\n\n'
        "[limits]\ncase_timeout = 20.0\ncpu_seconds = 1.0\ncpus = 1.0\n"
    )
    cases = [{"id": "one", "input": {"stdin": "a b c\n"}, "expected": {"stdout": "3\n"}}]
    (task / "judge" / "tests.json").write_text(json.dumps(cases))
    return task


@pytest.mark.parametrize(("burn", "passes"), [(0.8, False), (0.1, True)])
def test_cpu_spent_in_orphaned_grandchildren_counts_against_the_limit(
    grader: assay.Grader, tmp_path: Path, burn: float, passes: bool
) -> None:
    """0.1 s each (0.3 s in all) is the control: the same program within its limit passes."""
    v = grader.grade(_stdio_task(tmp_path), {"main.py": _burn_in_orphans(burn)}).verdict
    (case,) = v.cases
    if passes:
        assert v.passed, v.reason_codes
    else:
        assert not v.passed and case.reason == "limit:cpu", (case, v.reason_codes)


def test_a_program_that_cannot_be_started_is_reported_as_such(
    base_image: str, tmp_path: Path
) -> None:
    """A cli task's command names a file of the submission that is no executable: the runner
    reports each case "error" (the judge's candidate:crash) instead of crashing on it."""
    task = tmp_path / "task"
    (task / "inputs").mkdir(parents=True)
    (task / "judge").mkdir()
    (task / "inputs" / "README.md").write_text("print hi\n")
    (task / "task.toml").write_text(
        'id = "no-exec"\nkind = "cli"\nartifacts = ["prog"]\n\n'
        '[cli]\ncommand = ["/candidate/prog"]\n\n[judge]\ncases = "cases.json"\n'
    )
    cases = [{"id": "one", "input": {"stdin": ""}, "expected": {"stdout": "hi\n"}}]
    (task / "judge" / "cases.json").write_text(json.dumps(cases))
    loaded = load_task(task)
    files, ins = tmp_path / "files", tmp_path / "inputs"
    for d in (files, ins):
        d.mkdir()
        d.chmod(0o755)
    (files / "prog").write_text("not a program\n")
    (files / "prog").chmod(0o644)
    (ins / "cases.json").write_text(json.dumps([{"id": "one", "input": {"stdin": ""}}]))
    (ins / "cases.json").chmod(0o644)
    rt = OciRuntime()
    gid = "noexec-" + uuid.uuid4().hex[:12]
    with GradingScope(rt, gid) as scope:
        spec = candidate_spec(loaded, base_image, gid, files, ins, runner_argv(loaded))
        run = rt.run(scope.container(spec, start=False), deadline_s=60, output_cap=1 << 20)
    assert run.exit_code == 0, run.stderr[-2000:]
    (case,) = json.loads(run.stdout)["cases"]
    assert (case["status"], case["exit_code"], case["output_b64"]) == ("error", None, ""), case
