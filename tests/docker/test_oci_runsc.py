"""The runsc backend (gVisor driven directly, oci/runsc.py) on real containers: the conformance
suite, the key protections inspected inside a real sandbox, the memory and pids ceilings, the
sweep of a killed controller's sandbox, and the preflight's one runsc-specific refusal checked
against what the installed runsc really does.

The runtime is built directly, not through `open_runtime`: on a host whose runsc is older than
release-20260330 the backend is refused (the pids limit could be escaped), and these tests
show that everything else holds and that the refusal is the right one. A runsc that is on the
host but does not work fails them; a host without runsc skips them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
from helpers.devnull import dev_null, give_back

from assay._internal.runtime.base import ContainerSpec, Limits, Scratch, ceilings_hit
from assay._internal.runtime.oci import host
from assay._internal.runtime.oci.gc import runtime_state
from assay._internal.runtime.oci.runsc import (
    RunscRuntime,
    host_pids,
    runsc_facts,
    runsc_problems,
)
from assay._internal.runtime.oci.runtime import OciRuntime
from assay._internal.runtime.scope import GradingScope
from assay.runtime.conformance import CHECKS

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(shutil.which("runsc") is None, reason="no runsc on this host"),
]

UNSHARE_USERNS = (
    "import ctypes; c = ctypes.CDLL(None, use_errno=True); "
    "print(c.unshare(0x10000000), ctypes.get_errno())"
)


@pytest.fixture(scope="module")
def rs(docker_runtime) -> RunscRuntime:  # type: ignore[no-untyped-def]
    return RunscRuntime(docker_runtime.client)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_runsc_conforms(check, rs, base_image) -> None:  # type: ignore[no-untyped-def]
    check(rs, base_image)


def _spec(image: str, gid: str, **kw: object) -> ContainerSpec:
    return ContainerSpec(
        image=image,
        grading_id=gid,
        role="test",
        scratch=(Scratch("/scratch", 4 * 2**20),),
        limits=Limits(memory_bytes=160 * 2**20, pids=32, cpus=0.5, tmp_bytes=2 * 2**20),
        **kw,  # type: ignore[arg-type]
    )


def _gone(rt: OciRuntime, gid: str, cid: str) -> None:
    assert rt.leftovers(gid) == []
    assert host.cgroup(cid).leftovers() == [] and runtime_state(host.STATE_ROOT, cid) == []
    assert host.mounted_under(host.state_dir(cid)) == []


@pytest.fixture(scope="module")
def box(rs: RunscRuntime, base_image: str) -> Iterator[tuple[RunscRuntime, str]]:
    """One sandbox for the read-only inspections (a sandbox costs about a second here)."""
    gid = "test-" + uuid.uuid4().hex[:12]
    with GradingScope(rs, gid) as scope:
        cid = scope.container(_spec(base_image, gid))
        yield rs, cid
    _gone(rs, gid, cid)


def sh(rt: OciRuntime, cid: str, script: str, cap: int = 65536) -> tuple[int | None, str]:
    r = rt.exec(cid, ("sh", "-c", script), deadline_s=60, output_cap=cap)
    return r.exit_code, (r.stdout + r.stderr).decode(errors="replace")


def test_commands_run_as_uid_1000_with_no_capability_and_no_new_privileges(box) -> None:  # type: ignore[no-untyped-def]
    rt, cid = box
    _, text = sh(rt, cid, "cat /proc/self/status")
    st = {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}
    assert st["Uid"].split() == ["1000"] * 4
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd"):  # gVisor shows no CapAmb line
        assert int(st[key], 16) == 0, (key, st[key])
    # gVisor has no "NoNewPrivs" status line: it always behaves as with no_new_privs set,
    # and says so to prctl(PR_GET_NO_NEW_PRIVS).
    code, out = sh(
        rt, cid, "python3 -c 'import ctypes; print(ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))'"
    )
    assert (code, out.strip()) == (0, "1"), out


def test_the_init_holds_the_seccomp_profile(box) -> None:  # type: ignore[no-untyped-def]
    rt, cid = box
    _, out = sh(rt, cid, "grep Seccomp /proc/1/status")
    assert out.split() == ["Seccomp:", "2"], out


def test_root_is_read_only(box) -> None:  # type: ignore[no-untyped-def]
    rt, cid = box
    code, out = sh(rt, cid, "touch /usr/owned")
    assert code != 0, out  # gVisor checks permissions first: "Permission denied" for uid 1000
    _, mounts = sh(rt, cid, "cat /proc/self/mountinfo")
    by_point = {line.split()[4]: line.split()[5] for line in mounts.splitlines()}
    assert by_point["/"].startswith("ro"), by_point


def test_tmp_and_scratch_are_capped_and_scratch_is_the_agents(box) -> None:  # type: ignore[no-untyped-def]
    rt, cid = box
    code, out = sh(rt, cid, "head -c 3000000 /dev/zero > /tmp/f")
    assert code != 0 and "No space left" in out, out
    code, out = sh(rt, cid, "head -c 5000000 /dev/zero > /scratch/f")
    assert code != 0 and "No space left" in out, out
    sh(rt, cid, "rm -f /tmp/f /scratch/f")
    # (this runsc's statx fails with EINVAL on a bind mount, so not `stat -c %u`)
    _, out = sh(rt, cid, "python3 -c 'import os; print(os.stat(\"/scratch\").st_uid)'")
    assert out.strip() == "1000", out


def test_network_is_loopback_only(box) -> None:  # type: ignore[no-untyped-def]
    rt, cid = box
    _, out = sh(rt, cid, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
    assert out.split() == ["lo"], out
    connect = 'import socket; s=socket.socket(); s.settimeout(2); s.connect(("10.0.0.1", 80))'
    code, out = sh(rt, cid, f"python3 -c '{connect}'")
    assert code != 0 and ("unreachable" in out.lower() or "no route" in out.lower()), out


def test_limits_are_set_on_the_sandboxs_cgroup(box) -> None:  # type: ignore[no-untyped-def]
    _, cid = box
    mem = host.cgroup(cid).dir("memory")
    assert int((mem / "memory.limit_in_bytes").read_text()) == 160 * 2**20
    assert int((mem / "memory.memsw.limit_in_bytes").read_text()) == 160 * 2**20  # no swap
    cpu = host.cgroup(cid).dir("cpu")
    assert int((cpu / "cpu.cfs_quota_us").read_text()) == 50_000
    assert int((cpu / "cpu.cfs_period_us").read_text()) == 100_000
    assert (host.cgroup(cid).dir("pids") / "pids.max").read_text().strip() == str(host_pids(32))


def test_the_pids_limit_holds_for_the_agents_uid_and_no_core_dumps(box) -> None:  # type: ignore[no-untyped-def]
    rt, cid = box
    rlim = "import resource as r; print(*r.getrlimit(r.RLIMIT_CORE), *r.getrlimit(r.RLIMIT_NPROC))"
    _, out = sh(rt, cid, f"python3 -c '{rlim}'")
    assert out.split() == ["0", "0", "32", "32"], out
    fork = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while n < 64:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(3); os._exit(0)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print('refused', e.errno)\n"
        "print(n)\n"
    )
    code, out = sh(rt, cid, f'python3 -c "{fork}"')
    assert code == 0 and out.split()[:2] == ["refused", "11"], out  # EAGAIN
    assert int(out.split()[-1]) < 32, out


def test_preflight_refuses_exactly_when_a_command_can_escape_the_pids_limit(box) -> None:  # type: ignore[no-untyped-def]
    """The one refusal particular to runsc, against what the installed runsc does: a command
    that can create a user namespace holds CAP_SYS_ADMIN in it, which gVisor's RLIMIT_NPROC
    exempts, so the backend must be refused exactly when an exec can."""
    rt, cid = box
    code, out = sh(rt, cid, f"python3 -c '{UNSHARE_USERNS}'")
    assert code == 0, out
    escapes = out.split() == ["0", "0"]
    assert escapes or out.split() == ["-1", "1"], out  # EPERM from Docker's profile
    refused = [p for p in runsc_problems(runsc_facts()) if "pids limit" in p]
    assert bool(refused) == escapes, (out, refused)


def test_a_memory_hog_ends_the_sandbox_and_is_reported_as_the_memory_ceiling(
    rs: RunscRuntime, base_image: str
) -> None:
    gid = "test-" + uuid.uuid4().hex[:12]
    with GradingScope(rs, gid) as scope:
        cid = scope.container(_spec(base_image, gid))
        r = rs.exec(
            cid, ("python3", "-c", "b = bytearray(400 * 2**20)"), deadline_s=60, output_cap=4096
        )
        assert r.exit_code != 0, r
        assert "memory" in ceilings_hit(rs, cid) and rs.oom_killed(cid)
    _gone(rs, gid, cid)


def test_a_killed_controllers_sandbox_is_an_orphan_and_gc_removes_it(
    rs: RunscRuntime, base_image: str
) -> None:
    """A child process creates and starts a sandbox and is SIGKILLed; the runc backend (what
    `assay gc` opens) lists the grading as an orphan and removes every trace of it, runsc's
    state included."""
    gid = "test-" + uuid.uuid4().hex[:12]
    script = (
        "import os, signal, docker\n"
        "from assay._internal.runtime.base import ContainerSpec\n"
        "from assay._internal.runtime.oci.runsc import RunscRuntime\n"
        "rt = RunscRuntime(docker.from_env(version='auto'))\n"
        f"cid = rt.create(ContainerSpec(image={base_image!r}, grading_id={gid!r}, role='t'))\n"
        "rt.start(cid)\n"
        "print(cid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    cid = out.stdout.decode().strip()
    assert len(cid) == 32, out
    assert host.cgroup(cid).procs(), "the sandbox should outlive its controller"
    assert runtime_state(host.STATE_ROOT, cid), "runsc keeps a record of it"
    gc = OciRuntime()
    assert gid in gc.orphans() and f"container:{cid[:12]}" in gc.leftovers(gid)
    assert gc.sweep(gid) == 1
    _gone(rs, gid, cid)
    assert not host.state_dir(cid).exists()
    assert os.path.exists(host.STATE_ROOT)


def _a_container_and_its_commands(rt: RunscRuntime, image: str) -> None:
    gid = "test-" + uuid.uuid4().hex[:12]
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        rt.exec(cid, ("sh", "-c", "cat; echo out; echo err >&2"), deadline_s=60, output_cap=0,
                capture=False)  # fmt: skip
        assert sh(rt, cid, "cat; echo out")[1] == "out\n"
    _gone(rt, gid, cid)


def test_runsc_is_never_given_the_hosts_dev_null(docker_runtime, base_image) -> None:  # type: ignore[no-untyped-def]
    """runsc chowns the stdio it is given to its sandbox's user, a device too: handed the
    host's /dev/null (a keep-alive's stdio, an uncaptured command's), it gives it away. The
    baseline (the client told to pass /dev/null) shows that; the backend as built does not,
    and a command still reads end-of-file on stdin."""
    give_back()  # an earlier run (older assay) may have given it away; start clean
    before = dev_null()
    baseline = RunscRuntime(docker_runtime.client)
    baseline._cli.private_stdio = False
    try:
        _a_container_and_its_commands(baseline, base_image)
        given_away = dev_null()
    finally:
        give_back()
    assert given_away[:2] != (0, 0), "the baseline no longer gives /dev/null away"
    _a_container_and_its_commands(RunscRuntime(docker_runtime.client), base_image)
    assert dev_null() == before
