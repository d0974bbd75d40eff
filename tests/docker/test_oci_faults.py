"""Faults under the runc backend, checked against the invariants of test_faults_docker.py (no
false pass; every job a verdict, an error or not run; a rerun completes; `assay gc` leaves no
container, mount, cgroup or temp dir): containers killed from outside by PID, the controller
SIGKILLed at random moments, a container frozen from outside (stuck), scratch filled up.

The images come from the private engine of test_faults_docker.py (the backend unpacks them
once); nothing here goes through dockerd once a grading runs.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import PrivateEngine
from test_faults_docker import SEED, Batch, engine  # noqa: F401  (the session fixture)

from assay._internal.runtime.oci import host

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture
def batch(tmp_path: Path, engine: PrivateEngine, base_image: str) -> Iterator[Batch]:  # noqa: F811
    yield Batch(tmp_path, engine, base_image, runtime="runc")


def _containers(role: str) -> list[str]:
    """Running runc-backend containers of `role`, by id (read from their state on disk)."""
    found = []
    for meta in (host.STATE_ROOT / "c").glob("*/meta.json"):
        try:
            data = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        if data.get("role") == role and host.cgroup(data["cid"]).procs():
            found.append(data["cid"])
    return found


def test_containers_killed_from_outside_by_pid(batch: Batch) -> None:
    """Every process of a running candidate or judge SIGKILLed from the host, by its cgroup (a
    candidate's life held to at least 3 s, as in test_containers_killed_from_outside)."""
    batch.submissions(7, case_sleep_s=0.75)
    rng = random.Random(SEED)
    killed: Counter[str] = Counter()
    want = {"candidate": 2, "judge": 2}
    stop = threading.Event()

    def killer() -> None:
        seen: set[str] = set()
        while not stop.is_set() and killed != want:
            for role, n in want.items():
                if killed[role] >= n:
                    continue
                for cid in _containers(role):
                    if cid in seen:
                        continue
                    seen.add(cid)
                    time.sleep(rng.uniform(0, 0.4))
                    if host.cgroup(cid).kill():
                        killed[role] += 1
                    break
            time.sleep(0.02)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    proc = batch.start(jobs=2)
    try:
        code, err = batch.finish(proc)
    finally:
        stop.set()
        t.join(timeout=30)
    assert killed["candidate"] >= 1 and killed["judge"] >= 1, killed
    assert code in (0, 3), err
    batch.check_accounted()
    batch.check_verdicts(complete=False)
    batch.rerun_completes()


def test_controller_sigkilled_at_random_points(batch: Batch) -> None:
    """The runc backend keeps its state on disk: after each SIGKILL, `gc` (inside the rerun's
    check) removes every container, mount and cgroup the dead controller left."""
    batch.submissions(20)
    rng = random.Random(SEED)
    kills, rounds = 0, 0
    while kills < 4:
        rounds += 1
        proc = batch.start(jobs=2)
        batch.wait_for_event(proc, "run", rounds)
        try:
            proc.wait(timeout=rng.uniform(0.1, 2.0))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)
            kills += 1
        else:
            batch.finish(proc)
            break
    final, started = batch.rerun_completes()
    assert final["pass"] + final["false-fail"] + final["fail"] == 20
    assert started >= 20


def test_frozen_container_is_removed_and_never_passes(batch: Batch) -> None:
    """A container whose processes are frozen from outside (a stuck runtime, as far as the
    controller can tell): its grading ends at its deadline, and removal still removes it. A
    candidate's life is held to at least 3 s, so the freezer finds one however loaded the host."""
    batch.submissions(4, case_sleep_s=0.75)
    frozen: list[str] = []
    stop = threading.Event()

    def freezer() -> None:
        while not stop.is_set() and len(frozen) < 2:
            for cid in _containers("candidate"):
                if cid not in frozen:
                    (host.cgroup(cid).dir("freezer") / "freezer.state").write_text("FROZEN")
                    frozen.append(cid)
                    break
            time.sleep(0.05)

    t = threading.Thread(target=freezer, daemon=True)
    t.start()
    proc = batch.start(jobs=2)
    try:
        code, err = batch.finish(proc)
    finally:
        stop.set()
        t.join(timeout=30)
    assert frozen, "no candidate container was frozen: the fault did not happen"
    assert code in (0, 3), err
    batch.check_accounted()
    batch.check_verdicts(complete=False)
    for cid in frozen:
        assert not host.state_dir(cid).exists() and host.cgroup(cid).leftovers() == []
    batch.rerun_completes()


def test_state_survives_in_files_only_the_backend_writes() -> None:
    """The state root is root's alone: a grading's uid cannot plant a meta.json that `gc`
    would act on."""
    host.STATE_ROOT.mkdir(parents=True, exist_ok=True)
    st = os.stat(host.STATE_ROOT)
    assert st.st_uid == 0 and not st.st_mode & 0o022
