"""A container the engine will not act on (a runtime shim that stopped answering, seen with
Debian's gVisor under load) fails its own grading; it is not mistaken for a lost engine, which
would stop a whole batch."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import docker
import pytest
import requests.exceptions
from faultkit import HoldProxy

from assay._internal.runtime.base import ContainerSpec, ContainerStuckError, Limits, RuntimeError_
from assay._internal.runtime.cgroup import Cgroup
from assay._internal.runtime.docker import CGROUP_PARENT, DockerRuntime
from assay._internal.runtime.scope import new_grading_id

ENGINE_SOCKET = Path("/var/run/docker.sock")


@pytest.mark.docker
def test_a_container_the_engine_will_not_kill_fails_alone(
    docker_runtime: DockerRuntime, base_image: str
) -> None:
    gid = new_grading_id()
    spec = ContainerSpec(image=base_image, grading_id=gid, role="stuck",
                         limits=Limits(memory_bytes=64 << 20, pids=16))  # fmt: skip
    stuck, other = docker_runtime.create(spec), docker_runtime.create(spec)
    for cid in (stuck, other):
        docker_runtime.start(cid)
    proxy = HoldProxy(ENGINE_SOCKET, hold=f"/containers/{stuck}/kill".encode())
    try:
        rt = DockerRuntime(client=docker.DockerClient(base_url=proxy.url, timeout=3))
        t0 = time.monotonic()
        with pytest.raises(ContainerStuckError, match=f"remove {stuck[:12]}, after killing"):
            rt.remove(stuck)
        # One timeout, one more after its processes were killed by PID; not one per call.
        assert time.monotonic() - t0 < 12
        assert proxy.held == 2
        with pytest.raises(RuntimeError_, match="1 object"):
            rt.sweep(gid)  # it goes on past the stuck one, and removes the rest
        assert docker_runtime.leftovers(gid) == [f"container:{stuck[:12]}"]
    finally:
        proxy.close()
        docker_runtime.sweep(gid)
    assert docker_runtime.leftovers(gid) == []


@pytest.mark.docker
def test_a_wedged_gvisor_sandbox_is_killed_by_pid_and_its_container_removed(
    docker_runtime: DockerRuntime, base_image: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A gVisor sandbox that stops answering (here: stopped with SIGSTOP) makes `runsc kill`,
    and so the engine's kill, wait for good; the harness then kills the container's own
    processes, listed from its cgroup, and the removal completes."""
    rt = DockerRuntime(client=docker.DockerClient(timeout=4), oci_runtime="runsc")
    gid = new_grading_id()
    spec = ContainerSpec(image=base_image, grading_id=gid, role="stuck",
                         limits=Limits(memory_bytes=64 << 20, pids=16))  # fmt: skip
    cid = rt.create(spec)
    sandbox = 0
    try:
        rt.start(cid)
        sandbox = rt.client.api.inspect_container(cid)["State"]["Pid"]
        assert sandbox in Cgroup(CGROUP_PARENT, cid).procs("freezer")
        os.kill(sandbox, signal.SIGSTOP)  # a process of the container this test created
        with pytest.raises(requests.exceptions.ReadTimeout):
            rt.client.api.kill(cid)  # the engine cannot stop it by itself
        t0 = time.monotonic()
        with pytest.raises(ContainerStuckError, match="removed after") as exc:
            rt.remove(cid)  # gone, and the grading that met it still has no verdict
        assert exc.value.removed
        assert time.monotonic() - t0 < 30
        assert rt.leftovers(gid) == []
        assert f"container {cid[:12]}: the engine did not stop it" in caplog.text  # not silent
    finally:
        if sandbox:
            # Whatever `remove` did, the sweep must not meet a sandbox this test stopped.
            with contextlib.suppress(ProcessLookupError):
                os.kill(sandbox, signal.SIGCONT)
        docker_runtime.sweep(gid)
