"""Exit codes and one-line reasons for the errors a user meets first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from e2e import EXAMPLES


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


def test_a_patch_is_one_of_the_three_kinds_of_submission(tmp_path: Path) -> None:
    patch = EXAMPLES / "swebench-calc" / "solutions" / "gold.patch"
    for other in (["--submission", str(tmp_path)], ["--agent-cmd", "true"]):
        p = _run("grade", str(EXAMPLES / "swebench-calc"), "--patch", str(patch), *other,
                 cwd=tmp_path)  # fmt: skip
        assert p.returncode == 2 and "exactly one of" in p.stderr and "--patch FILE" in p.stderr


def test_baseline_tier_needs_explicit_flag(tmp_path: Path) -> None:
    p = _run(
        "grade", str(EXAMPLES / "add"), "--tier", "t0", "--submission", str(tmp_path), cwd=tmp_path
    )
    assert p.returncode == 2 and "unsafe" in p.stderr
