"""Docker's default seccomp profile, converted by `runtime/oci/seccomp.py`, in real runc: runc
accepts it, and it refuses what current Docker's refuses (io_uring and AF_ALG/AF_VSOCK sockets
too, which Docker 20.10's allowed). Each run is a bare runc container (no dockerd
in between) on a rootfs exported from the base image; the same probe runs once without seccomp
(the baseline: the syscalls work there, so a refusal under the profile is the profile's doing)
and once under it. `tests/unit/test_oci_seccomp.py` checks the conversion itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from assay._internal.runtime.oci.seccomp import docker_default

pytestmark = pytest.mark.docker

# Raw syscalls through libc, so the result is the kernel's errno and not a wrapper's guess:
# unshare(CLONE_NEWUSER) (272) needs no capability, so only seccomp can refuse it; clone3 (435)
# with no arguments is EINVAL from the kernel, and ENOSYS only from the profile's errnoRet rule;
# io_uring_setup (425) with one entry and zeroed params returns a ring's fd unless the kernel
# disables io_uring; socket (41) for AF_ALG (38) and AF_VSOCK (40) gets whatever the kernel
# says (a fd, or EAFNOSUPPORT where it lacks the family) and EPERM only from seccomp, since
# the filter runs before the kernel looks the family up; AF_UNIX (1) is the control.
PROBE = r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)  # struct io_uring_params
calls = (("unshare", (272, 0x10000000)), ("clone3", (435, None, 0)),
         ("io_uring_setup", (425, 1, params)), ("socket_alg", (41, 38, 5, 0)),
         ("socket_vsock", (41, 40, 1, 0)), ("socket_unix", (41, 1, 1, 0)))
for name, args in calls:
    rc = libc.syscall(*args)
    print(name + "=" + ("ok" if rc >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")))
"""


@pytest.fixture(scope="module")
def bundle(base_image: str) -> Iterator[Path]:
    """An OCI bundle: the base image's filesystem and `runc spec`'s config, in a temp dir
    removed afterwards (a rootfs is too big to leave to pytest's retention)."""
    assert shutil.which("runc"), "runc is not installed: the OCI backend needs it"
    assert os.geteuid() == 0, "runc (rootful) needs root"
    top = Path(tempfile.mkdtemp(prefix="assay-seccomp-runc-"))
    client = docker.from_env()
    container = None
    try:
        rootfs = top / "bundle" / "rootfs"
        rootfs.mkdir(parents=True)
        container = client.containers.create(base_image, command=["true"])
        with subprocess.Popen(["tar", "-C", str(rootfs), "-xf", "-"], stdin=subprocess.PIPE) as tar:
            assert tar.stdin is not None
            for chunk in container.export():
                tar.stdin.write(chunk)
            tar.stdin.close()
        assert tar.returncode == 0, "untarring the exported rootfs failed"
        subprocess.run(["runc", "spec", "--bundle", str(top / "bundle")], check=True, timeout=30)
        yield top
    finally:
        if container is not None:
            container.remove(force=True)
        client.close()
        shutil.rmtree(top, ignore_errors=True)


def run_probe(top: Path, seccomp: bool, extra_caps: tuple[str, ...] = ()) -> dict[str, str]:
    """PROBE's results ({"unshare": "ok", ...}) in a fresh runc container of `top`'s bundle,
    under Docker's default profile for the process's bounding set when `seccomp`."""
    config_path = top / "bundle" / "config.json"
    config = json.loads(config_path.read_text())
    process = config["process"]
    process["terminal"] = False  # no tty here; stdout must come back through the pipe
    process["args"] = ["python3", "-c", PROBE]
    for kind in ("bounding", "effective", "permitted"):
        base = [c for c in process["capabilities"][kind] if c not in extra_caps]
        process["capabilities"][kind] = base + list(extra_caps)
    config["linux"].pop("seccomp", None)
    if seccomp:
        config["linux"]["seccomp"] = docker_default(frozenset(process["capabilities"]["bounding"]))
    config_path.write_text(json.dumps(config))
    state = top / "state"
    cid = f"assay-seccomp-{uuid.uuid4().hex[:12]}"
    try:
        proc = subprocess.run(
            ["runc", "--root", str(state), "run", "--bundle", str(top / "bundle"), cid],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        subprocess.run(
            ["runc", "--root", str(state), "delete", "--force", cid],
            capture_output=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc
    return dict(line.split("=", 1) for line in proc.stdout.splitlines())


def _io_uring_disabled() -> str:
    return Path("/proc/sys/kernel/io_uring_disabled").read_text().strip()


def test_the_attack_works_without_seccomp(bundle: Path) -> None:
    # kernel.io_uring_disabled 0: any process may set up a ring (1 and 2 make the kernel
    # refuse it with EPERM itself, and this baseline would show nothing).
    assert _io_uring_disabled() == "0", "this host's kernel refuses io_uring without seccomp"
    got = run_probe(bundle, seccomp=False)
    kernel_says = {k: got.pop(k) for k in ("socket_alg", "socket_vsock")}
    assert got == {"unshare": "ok", "clone3": "EINVAL", "io_uring_setup": "ok", "socket_unix": "ok"}
    assert "EPERM" not in kernel_says.values(), kernel_says


def test_runc_accepts_docker_default_and_refuses_what_docker_refuses(bundle: Path) -> None:
    """runc spec's process holds no CAP_SYS_ADMIN (only AUDIT_WRITE, KILL, NET_BIND_SERVICE)."""
    assert run_probe(bundle, seccomp=True) == {
        "unshare": "EPERM",
        "clone3": "ENOSYS",
        "io_uring_setup": "EPERM",
        "socket_alg": "EPERM",
        "socket_vsock": "EPERM",
        "socket_unix": "ok",
    }


def test_with_cap_sys_admin_the_profile_allows_them_as_docker_does(bundle: Path) -> None:
    """CAP_SYS_ADMIN brings back unshare and clone3; no capability brings back io_uring or
    the two socket families."""
    assert run_probe(bundle, seccomp=True, extra_caps=("CAP_SYS_ADMIN",)) == {
        "unshare": "ok",
        "clone3": "EINVAL",
        "io_uring_setup": "EPERM",
        "socket_alg": "EPERM",
        "socket_vsock": "EPERM",
        "socket_unix": "ok",
    }
