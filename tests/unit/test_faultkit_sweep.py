"""tests/faultkit.py's sweep of what a killed run left: the private engine's and the small file
systems' directories whose maker is gone go, with every process naming them; a live run's stay.
(A killed CI run once left seven private dockerds, each with its containerd and bind mounts.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import faultkit
import pytest


@pytest.fixture
def naming() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def _holder(root: Path, procs: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """A process whose command line names `root`, as a private dockerd's does."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(root)])
    procs.append(p)
    return p


def _dead_owner(root: Path) -> None:
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                       capture_output=True, text=True, check=True)  # fmt: skip
    (root / faultkit.OWNER).write_text(f"{int(p.stdout)} 1\n")


def test_a_live_makers_directory_and_processes_stay(
    tmp_path: Path, naming: list[subprocess.Popen[bytes]]
) -> None:
    root = faultkit.claimed_dir(faultkit.ENGINE_PREFIX, top=tmp_path)
    holder = _holder(root, naming)
    assert not faultkit.abandoned(root)
    assert faultkit.sweep_abandoned(tmp_path) == []
    assert root.is_dir() and holder.poll() is None
    assert faultkit.leftovers(tmp_path) == [root]


def test_a_dead_makers_directory_goes_with_the_processes_naming_it(
    tmp_path: Path, naming: list[subprocess.Popen[bytes]]
) -> None:
    dead = faultkit.claimed_dir(faultkit.ENGINE_PREFIX, top=tmp_path)
    _dead_owner(dead)
    (dead / "data").mkdir()
    holder = _holder(dead, naming)
    live = faultkit.claimed_dir(faultkit.SMALLFS_PREFIX, top=tmp_path)
    bystander = _holder(tmp_path / "elsewhere", naming)
    assert faultkit.sweep_abandoned(tmp_path) == [dead]
    assert holder.wait(timeout=10) == -9
    assert not dead.exists() and live.is_dir() and bystander.poll() is None


def test_an_unclaimed_directory_goes_once_old_and_a_torn_claim_at_once(tmp_path: Path) -> None:
    fresh = tmp_path / (faultkit.ENGINE_PREFIX + "fresh")
    fresh.mkdir()
    old = tmp_path / (faultkit.ENGINE_PREFIX + "old")
    old.mkdir()
    then = time.time() - faultkit.UNCLAIMED_GRACE_S - 5
    os.utime(old, (then, then))
    torn = faultkit.claimed_dir(faultkit.SMALLFS_PREFIX, top=tmp_path)
    (torn / faultkit.OWNER).write_text("12")
    other = tmp_path / "assay-something-else.x"
    other.mkdir()
    assert sorted(faultkit.sweep_abandoned(tmp_path)) == sorted([old, torn])
    assert fresh.is_dir() and other.is_dir()
