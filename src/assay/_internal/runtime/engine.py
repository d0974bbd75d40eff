"""Opening a runtime backend the way every command does, by name.

- `runc`: containers run by runc directly, no daemon in between (oci/); the default.
- `runsc`: containers run by gVisor's runsc directly, the same way (oci/runsc.py).
- `docker`: the Docker engine, with runc under it.
- `docker-runsc`: the Docker engine with gVisor (runsc) under it.

Images come from the local Docker engine for every backend (the runc backend unpacks each
once, verified by digest). A backend that cannot run here is refused with what is missing
(`BackendUnavailableError`, exit 2); assay never falls back to another one on its own.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from assay.errors import BackendUnavailableError, UsageError

from .base import Runtime
from .docker import DockerRuntime
from .dockerengine import connect

Backend = Literal["runc", "runsc", "docker", "docker-runsc"]
BACKENDS: tuple[Backend, ...] = ("runc", "runsc", "docker", "docker-runsc")
DIRECT_BACKENDS = ("runc", "runsc")
"""The backends that drive an OCI runtime directly (oci/), with no Docker engine between."""
DEFAULT_BACKEND: Backend = "runc"
OCI_RUNTIMES = BACKENDS
"""The names `--runtime` and `Grader(oci_runtime=...)` take (kept under its old name)."""
RUNTIME_ENV = "ASSAY_RUNTIME"


def default_backend() -> str:
    """$ASSAY_RUNTIME if set, else `DEFAULT_BACKEND`: what runs when no backend is named."""
    return os.environ.get(RUNTIME_ENV) or DEFAULT_BACKEND


def engine_client(parallel: int = 1) -> Any:
    """A docker-py client whose socket pool serves `parallel` gradings at once, so that no
    worker waits for a socket (a full pool also makes urllib3 log warnings across a progress
    bar)."""
    return connect(max_pool_size=4 * parallel + 8)


def _check(name: str) -> None:
    if name not in BACKENDS:
        raise UsageError(f"unknown runtime backend {name!r} (one of {', '.join(BACKENDS)})")


def docker_runtime(
    backend: str = "docker", *, parallel: int = 1, client: Any | None = None
) -> DockerRuntime:
    """A Docker-engine backend ("docker", or "docker-runsc" for gVisor)."""
    _check(backend)
    if backend in DIRECT_BACKENDS:
        raise UsageError(
            f"the {backend} backend is not a Docker engine backend (open_runtime opens it)"
        )
    client = client if client is not None else engine_client(parallel)
    return DockerRuntime(client=client, oci_runtime="runsc" if backend == "docker-runsc" else None)


def oci_problems(binary: str = "runc") -> list[str]:
    """Why the backend of OCI runtime `binary` ("runc" or "runsc") cannot run on this host
    with every limit enforced ([] if it can)."""
    if binary == "runsc":
        from .oci.runsc import runsc_facts, runsc_problems

        return runsc_problems(runsc_facts(binary), binary)
    from .oci.preflight import host_facts, problems

    return problems(host_facts(binary), binary)


def open_runtime(
    backend: str | None = None, *, parallel: int = 1, client: Any | None = None
) -> Runtime:
    """The backend named `backend` (None: `default_backend()`). Raises `UsageError` for an
    unknown name, `BackendUnavailableError` when the runc or runsc backend cannot enforce its
    limits here, `EngineUnavailableError` when no Docker engine answers (images come from
    it)."""
    backend = backend or default_backend()
    _check(backend)
    if backend not in DIRECT_BACKENDS:
        return docker_runtime(backend, parallel=parallel, client=client)
    found = oci_problems(backend)
    if found:
        instead = "docker-runsc" if backend == "runsc" else "docker"
        raise BackendUnavailableError(
            f"the {backend} backend cannot run here: " + "; ".join(found),
            fix="`assay doctor` lists the backends that work on this host; "
            f"`--runtime {instead}` uses the Docker engine instead",
        )
    client = client if client is not None else engine_client(parallel)
    if backend == "runsc":
        from .oci.runsc import RunscRuntime

        return RunscRuntime(client)
    from .oci.runtime import OciRuntime

    return OciRuntime(client)
