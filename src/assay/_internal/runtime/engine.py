"""Opening the Docker engine the way every command does: runc or runsc, one pool of sockets."""

from __future__ import annotations

from typing import Any, Literal

from assay.errors import UsageError

from .docker import DockerRuntime, connect

OciRuntime = Literal["runc", "runsc"]
OCI_RUNTIMES: tuple[OciRuntime, ...] = ("runc", "runsc")


def engine_client(parallel: int = 1) -> Any:
    """A docker-py client whose socket pool serves `parallel` gradings at once, so that no
    worker waits for a socket (a full pool also makes urllib3 log warnings across a progress
    bar)."""
    return connect(max_pool_size=4 * parallel + 8)


def docker_runtime(
    oci_runtime: str = "runc", *, parallel: int = 1, client: Any | None = None
) -> DockerRuntime:
    """A runtime on the local engine (`client`: one from `engine_client`, to share it)."""
    if oci_runtime not in OCI_RUNTIMES:
        raise UsageError(f"unknown OCI runtime {oci_runtime!r} (one of {', '.join(OCI_RUNTIMES)})")
    client = client if client is not None else engine_client(parallel)
    return DockerRuntime(client=client, oci_runtime=None if oci_runtime == "runc" else oci_runtime)
