"""Exit codes and one-line reasons for the errors a user meets first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e import EXAMPLES, TASKS


def _run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):  # type: ignore[no-untyped-def]
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def test_no_engine_exits_3_and_says_how_to_start_one(tmp_path: Path) -> None:
    env = dict(
        os.environ, DOCKER_HOST=f"unix://{tmp_path}/no-such.sock", XDG_CONFIG_HOME=str(tmp_path)
    )
    p = _run(
        "grade",
        str(EXAMPLES / "add"),
        "--submission",
        str(EXAMPLES / "add/solutions/correct"),
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 3, p.stderr
    assert "no Docker engine answers" in p.stderr and "scripts/setup.sh" in p.stderr


def test_bad_task_exits_2_naming_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "t" / "inputs").mkdir(parents=True)
    (tmp_path / "t" / "judge").mkdir()
    (tmp_path / "t" / "task.toml").write_text(
        'id = "t"\nkind = "function"\nartifacts = ["a.py"]\nbogus = 1\n'
    )
    p = _run("grade", str(tmp_path / "t"), "--submission", str(tmp_path), cwd=tmp_path)
    assert p.returncode == 2
    assert "task.toml" in p.stderr and "bogus" in p.stderr


def test_neither_submission_nor_agent_is_usage_error(tmp_path: Path) -> None:
    p = _run("grade", str(EXAMPLES / "add"), cwd=tmp_path)
    assert p.returncode == 2 and "exactly one of" in p.stderr


def test_baseline_tier_needs_explicit_flag(tmp_path: Path) -> None:
    p = _run(
        "grade", str(EXAMPLES / "add"), "--tier", "t0", "--submission", str(tmp_path), cwd=tmp_path
    )
    assert p.returncode == 2 and "unsafe" in p.stderr


def _grading_ids(rt, role: str | None = None) -> set[str]:  # type: ignore[no-untyped-def]
    label = f"assay.role={role}" if role else "assay.grading"
    return {
        c["Labels"]["assay.grading"] for c in rt._api.containers(all=True, filters={"label": label})
    }


@pytest.mark.docker
def test_ctrl_c_mid_grading_leaves_nothing(tmp_path: Path, docker_runtime) -> None:  # type: ignore[no-untyped-def]
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "solution.py").write_text("def solve(x):\n    while True:\n        pass\n")
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path))
    env.setdefault("ASSAY_BASE_IMAGE", "assay-base:latest")
    before = _grading_ids(docker_runtime)  # other gradings may run beside this test
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "grade", str(TASKS / "limits"), "--submission", str(sub)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    # Wait until our candidate container runs, so the interrupt lands mid-grading.
    ours: set[str] = set()
    deadline = time.monotonic() + 60
    while not ours and time.monotonic() < deadline:
        ours = _grading_ids(docker_runtime, "candidate") - before
        time.sleep(0.05)
    assert len(ours) == 1, "candidate never started"
    gid = ours.pop()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert docker_runtime.leftovers(gid) == []
    assert list(Path("/tmp").glob(f"assay-{gid}-*")) == []
