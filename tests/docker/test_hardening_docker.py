"""Container hardening, checked on real containers under runc and gVisor (runsc) through the
Docker engine, and for the strict candidate (the runner as its container's own process,
started once) under the default backend too (runc driven directly, `oci-runc`).

Each test guards a protection that a mutation audit removed without any test noticing;
the docstring of each names the code whose removal makes it fail:

- `log_config=LogConfig(type="none")` and `user="0:0"` for init in runtime/docker.py `create`
  -> test_candidate_output_never_reaches_the_engine_log
- `cap_drop=["ALL"]` in runtime/docker.py -> test_host_config_drops_caps_and_new_privileges,
  test_candidate_process_has_no_capabilities
- `security_opt=["no-new-privileges"]` in runtime/docker.py -> the same two tests
- the runner's own uid (`take_own_uid` in _incontainer/confine.py) and each case's drop to
  the candidate's (`become_candidate`) -> test_candidate_cannot_reach_the_runner,
  test_candidate_process_has_no_capabilities
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from helpers.runner import ROOT, docker_rt, run_function

from assay._internal.model.task import load_task
from assay._internal.runtime.base import ContainerSpec, Runtime
from assay._internal.runtime.docker import DockerRuntime
from assay._internal.runtime.oci.runtime import OciRuntime
from assay._internal.runtime.scope import GradingScope
from assay._internal.tiers.strict.candidate import candidate_spec

pytestmark = pytest.mark.docker
RUNTIMES = ("runc", "runsc")
CANDIDATE_RUNTIMES = (*RUNTIMES, "oci-runc")
"""Where the strict candidate's own protections are inspected: the engine's two, and the
default backend."""

# Every process the candidate can see besides itself: try to open each one's stdout/stderr
# for writing, then write 4 MiB into whatever opened (what the engine's log driver would eat).
FLOOD = r"""
import os
me = os.getpid()
opened = []
for p in sorted(int(e) for e in os.listdir("/proc") if e.isdigit()):
    if p == me:
        continue
    for fd in (1, 2):
        try:
            with open(f"/proc/{p}/fd/{fd}", "wb", buffering=0) as fh:
                for _ in range(64):
                    fh.write(b"x" * 65536)
            opened.append(f"{p}/{fd}")
        except OSError:
            pass
print("opened:" + ",".join(opened))
"""


@pytest.fixture
def rt(request: pytest.FixtureRequest, docker_runtime: DockerRuntime) -> Runtime:
    oci = str(request.param)
    if oci == "oci-runc":
        return OciRuntime(docker_runtime.client)
    if oci == "runsc":
        # scripts/setup.sh registers runsc; a missing runtime is a failed set-up, not a skip.
        assert "runsc" in docker_runtime._client.info().get("Runtimes", {}), "runsc missing"
    return docker_rt(oci)


def _status(text: str) -> dict[str, str]:
    return {k: v.strip() for k, _, v in (ln.partition(":") for ln in text.splitlines())}


@pytest.mark.parametrize("rt", RUNTIMES, indirect=True)
def test_candidate_output_never_reaches_the_engine_log(rt: DockerRuntime, base_image: str) -> None:
    """Finding 3: init's stdout is the engine's log pipe. Killed by switching `log_config` back
    to json-file (LogConfig, LogPath, `docker logs`) or by running init as the candidate's uid
    (the candidate then opens /proc/1/fd/1)."""
    gid = "hardening-" + uuid.uuid4().hex[:12]
    with GradingScope(rt, gid) as scope:
        cid = scope.container(ContainerSpec(image=base_image, grading_id=gid, role="candidate"))
        r = rt.exec(cid, ("python3", "-c", FLOOD), deadline_s=60, output_cap=1 << 16)
        assert r.exit_code == 0, r
        info = rt._api.inspect_container(cid)
        log_path = info.get("LogPath") or ""
        logged = os.path.getsize(log_path) if log_path and os.path.exists(log_path) else 0
        assert r.stdout.strip() == b"opened:", r.stdout
        assert info["HostConfig"]["LogConfig"]["Type"] == "none"
        assert logged == 0, logged
        assert rt.logs(cid, 1 << 20) == b""


@pytest.mark.parametrize("rt", RUNTIMES, indirect=True)
def test_host_config_drops_caps_and_new_privileges(rt: DockerRuntime, base_image: str) -> None:
    """Finding 9: killed by removing `cap_drop=["ALL"]` or `no-new-privileges`."""
    gid = "hardening-" + uuid.uuid4().hex[:12]
    with GradingScope(rt, gid) as scope:
        cid = scope.container(ContainerSpec(image=base_image, grading_id=gid, role="candidate"))
        host = rt._api.inspect_container(cid)["HostConfig"]
    assert host["CapDrop"] == ["ALL"], host["CapDrop"]
    assert not host.get("CapAdd"), host.get("CapAdd")
    assert any(o.split(":")[0] == "no-new-privileges" for o in host["SecurityOpt"] or ())


# FLOOD as a case of the strict candidate: what it opened among the other processes' stdout
# and stderr (init's, the runner's), 4 MiB written into each.
FLOOD_CASE = (
    "def solve(_):\n"
    + "".join(
        f"    {line}\n" for line in FLOOD.strip().splitlines() if not line.startswith("print")
    )
    + "    return opened\n"
)


@pytest.mark.parametrize("rt", CANDIDATE_RUNTIMES, indirect=True)
def test_candidate_runner_output_never_reaches_the_engine_log(
    rt: Runtime, base_image: str, tmp_path: Path
) -> None:
    """Finding 3 on the strict candidate's path: its runner is the container's own process,
    so the runner's stdout (every case's result) is the container's, attached by the
    controller. A case opens none of the stdout and stderr descriptors of init (root), the
    runner's stand-in (root) or the runner (its own uid), and the engine keeps no log.
    Killed by switching `log_config` back to json-file or by the runner keeping the
    candidate's uid."""
    seen: dict[str, object] = {}

    def inspect(rt_: Runtime, cid: str) -> None:
        if isinstance(rt_, DockerRuntime):
            seen.update(rt_._api.inspect_container(cid))

    [case] = run_function(rt, base_image, tmp_path, FLOOD_CASE, [0], after=inspect)
    assert case["status"] == "ok" and case["value"] == [], case
    if not isinstance(rt, DockerRuntime):
        return  # no engine, no log: the runc backend's main process writes into our pipes
    host = seen["HostConfig"]
    assert isinstance(host, dict) and host["LogConfig"]["Type"] == "none", host
    log_path = str(seen.get("LogPath") or "")
    assert not (log_path and os.path.exists(log_path) and os.path.getsize(log_path)), log_path


@pytest.mark.parametrize("rt", RUNTIMES, indirect=True)
def test_strict_candidate_adds_only_the_uid_switch(
    rt: DockerRuntime, base_image: str, tmp_path: Path
) -> None:
    """Issue 23, item 7a: the strict candidate's container adds back exactly the three
    capabilities its runner spends on taking its own uid, keeps the rest of the hardening, and
    its main process (the runner, started with the container) starts as root, which the
    runner requires."""
    task = load_task(ROOT / "tests" / "tasks" / "carry")
    gid = "hardening-" + uuid.uuid4().hex[:12]
    with GradingScope(rt, gid) as scope:
        spec = candidate_spec(task, base_image, gid, tmp_path, tmp_path, ("id", "-u"))
        cid = scope.container(spec, start=False)
        info = rt._api.inspect_container(cid)
        who = rt.run(cid, deadline_s=30, output_cap=64)
    host = info["HostConfig"]
    assert host["CapDrop"] == ["ALL"] and sorted(host["CapAdd"]) == ["SETGID", "SETPCAP", "SETUID"]
    assert any(o.split(":")[0] == "no-new-privileges" for o in host["SecurityOpt"] or ())
    assert host["ReadonlyRootfs"] and host["NetworkMode"] == "none", host
    assert who.stdout.strip() == b"0", who


CAPS = r"""
import ctypes, os
def solve(_):
    # gVisor's /proc/<pid>/status has no NoNewPrivs line; prctl answers on both runtimes.
    out = {"nnp": ctypes.CDLL(None).prctl(39, 0, 0, 0, 0)}  # PR_GET_NO_NEW_PRIVS
    # The runner's ids, root, a group: none can be taken back without a capability.
    for name, regain in (("uid", lambda: os.setresuid(-1, 1001, -1)), ("root", lambda: os.setuid(0)),
                         ("gid", lambda: os.setresgid(-1, 1001, -1)), ("groups", lambda: os.setgroups([0]))):
        try:
            regain()
            out["regained." + name] = True
        except PermissionError:
            out["regained." + name] = False
    for who in ("self", "1"):
        with open(f"/proc/{who}/status") as fh:
            for line in fh:
                k, _, v = line.partition(":")
                if k in ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd"):
                    out[f"{who}.{k}"] = v.strip()
    return out
"""


@pytest.mark.parametrize("rt", CANDIDATE_RUNTIMES, indirect=True)
def test_candidate_process_has_no_capabilities(
    rt: Runtime, base_image: str, tmp_path: Path
) -> None:
    """Finding 9, seen from inside: the candidate's process (run by the real runner) holds no
    capability, not even in the bounding set (so no setuid binary of the image can grant
    one), has uid and gid 1000 for all of real, effective, saved and file system ids (so it
    cannot switch back to the runner's), and can gain no privilege. The container's only
    capabilities, the three the runner needs to give the candidate its own uid, stay with its
    root init (issue 23, item 7a). Killed by removing `cap_drop=["ALL"]` (CapBnd),
    `no-new-privileges` (NoNewPrivs) or the case's drop to the candidate's uid."""
    [case] = run_function(rt, base_image, tmp_path, CAPS, [0])
    got = case["value"]
    assert case["status"] == "ok" and isinstance(got, dict), case
    for ids in ("self.Uid", "self.Gid"):
        assert got[ids].split() == ["1000"] * 4, got
    assert got["self.Groups"] == "", got
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd"):
        assert int(got[f"self.{cap}"], 16) == 0, (cap, got)
    switch = sum(1 << n for n in (6, 7, 8))  # CAP_SETGID, CAP_SETUID, CAP_SETPCAP
    assert got["1.Uid"].split()[0] == "0" and int(got["1.CapInh"], 16) == 0, got
    for cap in ("CapPrm", "CapEff", "CapBnd"):
        assert int(got[f"1.{cap}"], 16) == switch, (cap, got)
    assert got["nnp"] == 1, got
    assert not any(v for k, v in got.items() if k.startswith("regained.")), got


PROC_PEEK = r"""
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
class IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
def check(rc):
    if rc < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return rc
def solve(_):
    runner = None
    # The case's parent: a forked case (runner.py --spawn fork) shares the runner's cmdline,
    # and so does the runner's root stand-in, init's child.
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as fh:
            if b"/assay/runner.py" in fh.read():
                runner = os.getppid()
    except OSError:
        pass
    if runner is None:
        return {"runner": None}
    got = {"runner": runner, "is_parent": runner == os.getppid()}
    def attempt(name, fn):
        try:
            got[name] = fn()
        except OSError as exc:
            got[name] = "denied:" + type(exc).__name__
    # A forked case's address space is a copy of the runner's: its own first mapping is a
    # valid address in the runner too, whether or not the runner's maps can be read.
    with open("/proc/self/maps") as fh:
        start = int(fh.readline().split("-")[0], 16)
    def mem():
        with open(f"/proc/{runner}/mem", "rb") as fh:
            fh.seek(start)
            return "read %d bytes" % len(fh.read(64))
    def task_mem():  # the same file through the thread's own directory
        with open(f"/proc/{runner}/task/{runner}/mem", "rb") as fh:
            fh.seek(start)
            return "read %d bytes" % len(fh.read(64))
    def mem_write():
        with open(f"/proc/{runner}/mem", "r+b", buffering=0) as fh:
            fh.seek(start)
            return "wrote %d bytes" % fh.write(fh.read(8))
    def vm_read():
        buf = ctypes.create_string_buffer(64)
        local = IOVec(ctypes.cast(buf, ctypes.c_void_p), 64)
        remote = IOVec(start, 64)
        n = libc.process_vm_readv(runner, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        return "read %d bytes" % check(n)
    def ptrace():
        check(libc.ptrace(16, runner, None, None))  # PTRACE_ATTACH
        libc.ptrace(17, runner, None, None)  # PTRACE_DETACH
        return "attached"
    def environ():
        with open(f"/proc/{runner}/environ", "rb") as fh:
            return "read %d bytes" % len(fh.read())
    def fds():
        return "listed %d fds" % len(os.listdir(f"/proc/{runner}/fd"))
    def stdout():
        with open(f"/proc/{runner}/fd/1", "wb", buffering=0) as fh:
            fh.write(b'{"forged": true}')
        return "wrote to the runner's stdout"
    def task_stdout():
        with open(f"/proc/{runner}/task/{runner}/fd/1", "wb", buffering=0) as fh:
            fh.write(b'{"forged": true}')
        return "wrote to the runner's stdout"
    def any_fd():
        try:
            listed = {int(f) for f in os.listdir(f"/proc/{runner}/fd")}
        except OSError:
            listed = set()
        own = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                own.add(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
        opened = []
        for fd in sorted(listed | {0, 1, 2}):
            for mode in ("rb", "wb"):
                try:
                    with open(f"/proc/{runner}/fd/{fd}", mode, buffering=0):
                        target = os.readlink(f"/proc/{runner}/fd/{fd}")
                        # Its own case's pipes and /dev/null give it nothing it lacks.
                        if target not in own and target != "/dev/null":
                            opened.append(f"{fd}:{mode}:{target}")
                except OSError:
                    pass
        if opened:
            return "opened " + ",".join(opened)
        raise PermissionError("none beyond its own pipes and /dev/null")
    def kill():
        os.kill(runner, 0)
        return "may signal the runner"
    for name, fn in (("mem", mem), ("task_mem", task_mem), ("mem_write", mem_write),
                     ("vm_read", vm_read), ("ptrace", ptrace), ("environ", environ),
                     ("fd", fds), ("stdout", stdout), ("task_stdout", task_stdout),
                     ("any_fd", any_fd), ("kill", kill)):
        attempt(name, fn)
    return got
"""


@pytest.mark.parametrize("rt", CANDIDATE_RUNTIMES, indirect=True)
def test_candidate_cannot_reach_the_runner(rt: Runtime, base_image: str, tmp_path: Path) -> None:
    """Issue 23, item 7a: the runner keeps a uid the candidate does not have (real and saved
    uid 1001), so its memory (/proc/<pid>/mem, ptrace, process_vm_readv), its descriptors (its
    stdout, the channel of every case's result) and signals are closed to the candidate on
    both runtimes. Before, the two shared uid 1000 and only `PR_SET_DUMPABLE` stood between
    them, which Debian's runsc ignores: the candidate read and wrote the runner's memory and
    wrote into its stdout. Killed by the runner keeping the candidate's uid (`runner-own-uid`).
    gVisor (this runsc) serves every process's /proc/<pid>/environ and fd directory to every
    uid (modes 0444 and 0555), so those two are only closed under runc, and lets a descriptor
    be reopened through /proc by whoever the file's own modes allow: there, the runner's
    descriptors the candidate can open are its own case's pipes and /dev/null."""
    cases = run_function(rt, base_image, tmp_path, PROC_PEEK, [0])
    [case] = cases
    got = case["value"]
    assert case["status"] == "ok" and isinstance(got, dict), case
    assert isinstance(got["runner"], int) and got["is_parent"], got  # it found its target
    closed = ["mem", "task_mem", "mem_write", "vm_read", "ptrace", "stdout", "task_stdout"]
    closed += ["any_fd", "kill"]
    if rt.name in ("docker/runc", "oci/runc"):
        closed += ["environ", "fd"]
    for what in closed:
        assert str(got[what]).startswith("denied:"), (what, got)
