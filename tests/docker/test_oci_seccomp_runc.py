"""Docker's default seccomp profile, converted by `runtime/oci/seccomp.py`, in real runc: runc
accepts it, and it refuses what Docker's refuses. Each run is a bare runc container (no dockerd
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
# with no arguments is EINVAL from the kernel, and ENOSYS only from the profile's errnoRet rule.
PROBE = r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
for name, args in (("unshare", (272, 0x10000000)), ("clone3", (435, None, 0))):
    rc = libc.syscall(*args)
    print(name + "=" + ("ok" if rc == 0 else errno.errorcode.get(ctypes.get_errno(), "?")))
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


def test_the_attack_works_without_seccomp(bundle: Path) -> None:
    assert run_probe(bundle, seccomp=False) == {"unshare": "ok", "clone3": "EINVAL"}


def test_runc_accepts_docker_default_and_refuses_what_docker_refuses(bundle: Path) -> None:
    """runc spec's process holds no CAP_SYS_ADMIN (only AUDIT_WRITE, KILL, NET_BIND_SERVICE)."""
    assert run_probe(bundle, seccomp=True) == {"unshare": "EPERM", "clone3": "ENOSYS"}


def test_with_cap_sys_admin_the_profile_allows_them_as_docker_does(bundle: Path) -> None:
    assert run_probe(bundle, seccomp=True, extra_caps=("CAP_SYS_ADMIN",)) == {
        "unshare": "ok",
        "clone3": "EINVAL",
    }
