"""A hardened container has no network: only a loopback interface, no route, and the engine
says so. Fast on purpose: the mutation gate's `docker-network-none` runs it (docs/security.md);
the full-grading probe in test_strict_docker.py checks the same from a candidate's seat."""

from __future__ import annotations

import uuid

import pytest

from assay._internal.runtime.base import ContainerSpec, Limits
from assay._internal.runtime.scope import GradingScope

pytestmark = pytest.mark.docker


def test_hardened_container_has_only_loopback_and_no_route(docker_runtime, base_image) -> None:  # type: ignore[no-untyped-def]
    gid = "net-" + uuid.uuid4().hex[:12]
    spec = ContainerSpec(
        image=base_image, grading_id=gid, role="net-test", limits=Limits(memory_bytes=64 << 20)
    )
    with GradingScope(docker_runtime, gid) as scope:
        cid = scope.container(spec)
        mode = docker_runtime._client.containers.get(cid).attrs["HostConfig"]["NetworkMode"]
        seen = docker_runtime.exec(
            cid,
            ("sh", "-c", "ls /sys/class/net; echo --; tail -n +2 /proc/net/route"),
            deadline_s=60,
            output_cap=4096,
        )
    assert mode == "none"
    assert seen.exit_code == 0, seen
    assert seen.stdout == b"lo\n--\n", seen.stdout
