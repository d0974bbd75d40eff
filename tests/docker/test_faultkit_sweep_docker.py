"""A test run killed outright leaves its private dockerd running, with its mounts; the next
run's sweep (tests/faultkit.py) removes them: the processes by PID, the mounts, the directory."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import faultkit
import pytest

pytestmark = [pytest.mark.docker]

TESTS = Path(__file__).resolve().parents[1]

MAKER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import faultkit
eng = faultkit.PrivateEngine(top=Path(sys.argv[2]))
eng.start()
print(eng.root, eng.proc.pid, flush=True)
sys.stdin.read()  # until killed
"""


def _alive(pid: int) -> bool:
    """Running, or at least not a zombie waiting for whoever inherited it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_killed_makers_private_engine_is_swept() -> None:
    if os.geteuid() != 0:
        pytest.fail("starts its own dockerd: run as root")
    # A directory of its own (short: the engine's sockets live below it), so that no other
    # sweep of /tmp, such as the fault tests' on another worker, takes this one first.
    top = Path(tempfile.mkdtemp(prefix="afs.", dir="/tmp"))
    maker = subprocess.Popen(
        [sys.executable, "-c", MAKER, str(TESTS), str(top)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = maker.stdout.readline() if maker.stdout else ""
        root_s, pid_s = line.split()
        root, dockerd = Path(root_s), int(pid_s)
    finally:
        maker.send_signal(signal.SIGKILL)  # no finalizer runs: what a killed pytest leaves
        maker.wait()
    try:
        assert _alive(dockerd), "the private dockerd died with its maker"
        assert faultkit.mounts_below(root) or (root / "data").is_dir()
        assert faultkit.abandoned(root)
        assert faultkit.sweep_abandoned(top) == [root]
        deadline = time.monotonic() + 10
        while _alive(dockerd) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(dockerd)
        assert faultkit.mounts_below(root) == [] and not root.exists()
    finally:
        faultkit.kill_naming(top)
        faultkit.unmount_below(top)
        shutil.rmtree(top, ignore_errors=True)
