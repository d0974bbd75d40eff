"""The Docker backend hands the engine assay's seccomp profile (moby's current default, the one
the runc backend converts itself: runtime/oci/seccomp.py), so a hardened container refuses
io_uring and AF_VSOCK sockets even on an engine whose own default is older (Debian 12's Docker
20.10 allows both). The same probe in an unconfined container on the same engine is the
baseline: the kernel allows what the profile refuses."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.runner import docker_rt

from assay._internal.runtime.base import ContainerSpec
from assay._internal.runtime.docker import DockerRuntime
from assay._internal.runtime.oci import seccomp
from assay._internal.runtime.scope import GradingScope

pytestmark = pytest.mark.docker

# Raw syscalls, so each result is the kernel's (or the filter's) errno: io_uring_setup (425)
# with one entry and zeroed params, socket (41) for AF_VSOCK (40) and, as the control, AF_UNIX.
PROBE = r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)  # struct io_uring_params
calls = (("io_uring_setup", (425, 1, params)), ("socket_vsock", (41, 40, 1, 0)),
         ("socket_unix", (41, 1, 1, 0)))
for name, args in calls:
    rc = libc.syscall(*args)
    print(name + "=" + ("ok" if rc >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")))
"""


def _results(text: bytes) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.decode().splitlines())


@pytest.fixture
def rt() -> DockerRuntime:
    return docker_rt("runc")


@pytest.fixture
def hardened(rt: DockerRuntime, base_image: str) -> Iterator[str]:
    gid = "seccomp-" + uuid.uuid4().hex[:12]
    with GradingScope(rt, gid) as scope:
        yield scope.container(ContainerSpec(image=base_image, grading_id=gid, role="candidate"))


def _plain_run(rt: DockerRuntime, image: str, security_opt: list[str]) -> dict[str, str]:
    """PROBE as uid 1000 in an ordinary container of the same engine (no assay hardening)."""
    out = rt.client.containers.run(
        image,
        ["python3", "-c", PROBE],
        user="1000:1000",
        security_opt=security_opt,
        network_mode="none",
        remove=True,
    )
    return _results(out)


def test_a_hardened_container_carries_the_packaged_profile(
    rt: DockerRuntime, hardened: str
) -> None:
    opts = rt._api.inspect_container(hardened)["HostConfig"]["SecurityOpt"]
    given = [o.split("=", 1)[1] for o in opts if o.startswith("seccomp=")]
    assert len(given) == 1, opts
    packaged = json.loads(
        Path(seccomp.__file__).with_name(seccomp.PROFILE_RESOURCE).read_text(encoding="utf-8")
    )
    assert json.loads(given[0]) == packaged
    assert "no-new-privileges" in opts


def test_a_hardened_container_refuses_io_uring_and_vsock(rt: DockerRuntime, hardened: str) -> None:
    r = rt.exec(hardened, ("python3", "-c", PROBE), deadline_s=60, output_cap=1 << 12)
    assert r.exit_code == 0, r
    assert _results(r.stdout) == {
        "io_uring_setup": "EPERM",
        "socket_vsock": "EPERM",
        "socket_unix": "ok",
    }


def test_unconfined_the_kernel_allows_them(rt: DockerRuntime, base_image: str) -> None:
    """The baseline: without seccomp the same engine and kernel set up a ring, so the refusal
    above is the profile's. kernel.io_uring_disabled must be 0 (1 and 2 refuse uid 1000 in the
    kernel itself, and this baseline would show nothing)."""
    assert Path("/proc/sys/kernel/io_uring_disabled").read_text().strip() == "0"
    got = _plain_run(rt, base_image, ["seccomp=unconfined"])
    assert got["io_uring_setup"] == "ok" and got["socket_unix"] == "ok", got
    assert got["socket_vsock"] != "EPERM", got


def test_the_engines_own_default_allows_io_uring_before_docker_25(
    rt: DockerRuntime, base_image: str
) -> None:
    """Why the backend passes its own profile: moby #46762 took io_uring out of the default in
    Docker 25, so an older engine's own default (this host's 20.10) still lets it through."""
    version = rt.client.version()["Version"]
    major = int(version.split(".", 1)[0])
    got = _plain_run(rt, base_image, [])
    assert got["io_uring_setup"] == ("ok" if major < 25 else "EPERM"), (version, got)
