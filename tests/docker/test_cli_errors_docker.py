"""Exit codes and one-line reasons for the errors a user meets first."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e import EXAMPLES, TASKS, our_grading


def _run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):  # type: ignore[no-untyped-def]
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


@pytest.mark.docker
def test_ctrl_c_mid_grading_leaves_nothing(tmp_path: Path, docker_runtime) -> None:  # type: ignore[no-untyped-def]
    task = tmp_path / "limits"
    shutil.copytree(TASKS / "limits", task)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "solution.py").write_text("def solve(x):\n    while True:\n        pass\n")
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path))
    env.setdefault("ASSAY_BASE_IMAGE", "assay-base:latest")
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "grade", str(task), "--submission", str(sub)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    gid = None
    deadline = time.monotonic() + 60
    while gid is None and time.monotonic() < deadline:
        gid = our_grading(docker_runtime, task)
        time.sleep(0.05)
    assert gid is not None, "candidate never started"
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert docker_runtime.leftovers(gid) == []
    assert list(Path("/tmp").glob(f"assay-{gid}-*")) == []


@pytest.mark.docker
def test_verdict_that_cannot_be_written_exits_3_not_1(tmp_path: Path) -> None:
    # The grading itself succeeds; writing its verdict fails (the parent is a file). Exit 1
    # would read as FAILED, so an unexpected error must be "no verdict" (3), in one line.
    (tmp_path / "file").write_text("")
    p = _run(
        "grade",
        str(EXAMPLES / "add"),
        "--submission",
        str(EXAMPLES / "add/solutions/correct"),
        "--out",
        str(tmp_path / "file" / "v.dsse.json"),
        "--key",
        str(tmp_path / "k" / "signing.key"),
        cwd=tmp_path,
    )
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "infra:internal-error" in p.stderr and "Traceback" not in p.stderr, p.stderr
