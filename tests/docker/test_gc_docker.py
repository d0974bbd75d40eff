"""A controller killed with SIGKILL cannot clean up; `assay gc` removes exactly what it left."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e import TASKS, our_grading

pytestmark = pytest.mark.docker


def _start(task: Path, tmp: Path) -> subprocess.Popen[str]:
    sub = tmp / "sub"
    sub.mkdir()
    (sub / "solution.py").write_text("def solve(x):\n    while True:\n        pass\n")
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp))
    env.setdefault("ASSAY_BASE_IMAGE", "assay-base:latest")
    return subprocess.Popen(
        [sys.executable, "-m", "assay", "grade", str(task), "--submission", str(sub)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp,
    )


def _wait_for_candidate(rt, task: Path) -> str:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        gid = our_grading(rt, task)
        if gid:
            return gid
        time.sleep(0.05)
    raise AssertionError("candidate never started")


def _copy_task(tmp: Path) -> Path:
    task = tmp / "limits"
    shutil.copytree(TASKS / "limits", task)
    # Long enough that the live grading is surely still running when gc looks at it.
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("case_timeout = 3.0", "case_timeout = 30.0"))
    return task


def test_gc_removes_a_killed_controllers_grading_and_spares_a_live_one(
    tmp_path: Path,
    docker_runtime,  # type: ignore[no-untyped-def]
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    dead_task, live_task = _copy_task(tmp_path / "a"), _copy_task(tmp_path / "b")
    doomed, alive = _start(dead_task, tmp_path / "a"), _start(live_task, tmp_path / "b")
    try:
        dead_gid = _wait_for_candidate(docker_runtime, dead_task)
        live_gid = _wait_for_candidate(docker_runtime, live_task)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=30)
        assert docker_runtime.leftovers(dead_gid), "SIGKILL should leave the grading behind"
        tmp_dirs = list(Path("/tmp").glob(f"assay-{dead_gid}-*"))
        assert tmp_dirs, "SIGKILL should leave temp dirs behind"

        gc = subprocess.run(
            [sys.executable, "-m", "assay", "gc"], capture_output=True, text=True, timeout=120
        )
        assert gc.returncode == 0, gc.stderr
        assert docker_runtime.leftovers(dead_gid) == []
        assert list(Path("/tmp").glob(f"assay-{dead_gid}-*")) == []
        assert docker_runtime.leftovers(live_gid), "gc removed a grading that was still running"
    finally:
        alive.send_signal(signal.SIGINT)
        alive.communicate(timeout=60)
        doomed.kill()
    assert docker_runtime.leftovers(live_gid) == []
