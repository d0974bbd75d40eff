from __future__ import annotations

import pytest

from assay.runtime.conformance import CHECKS


@pytest.mark.docker
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_docker_conforms(check, docker_runtime, base_image) -> None:  # type: ignore[no-untyped-def]
    check(docker_runtime, base_image)


@pytest.fixture(scope="module")
def gvisor_runtime(docker_runtime):  # type: ignore[no-untyped-def]
    from assay._internal.runtime.docker import DockerRuntime

    # scripts/setup.sh registers runsc; a missing runtime is a failed set-up, not a skip.
    assert "runsc" in docker_runtime._client.info().get("Runtimes", {}), "runsc not registered"
    return DockerRuntime(oci_runtime="runsc")


@pytest.mark.docker
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_gvisor_conforms(check, gvisor_runtime, base_image) -> None:  # type: ignore[no-untyped-def]
    check(gvisor_runtime, base_image)
