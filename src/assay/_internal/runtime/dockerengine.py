"""The Docker engine as the Docker backend reaches it: the connection, and what a failed call
means (the engine lost, or one container stuck in it)."""

from __future__ import annotations

from typing import Any

import docker
import docker.errors
import requests.exceptions

from assay.errors import EngineUnavailableError

from .base import ContainerStuckError, RuntimeError_

START_DOCKER_FIX = "run `bash scripts/setup.sh` (installs Docker if needed and starts dockerd)"
STUCK_FIX = (
    "a container's runtime shim stopped answering (see the engine's log); the engine frees it "
    "when dockerd restarts, and `assay gc` then removes what is left"
)


def connect(timeout: int = 60, max_pool_size: int = 10) -> Any:
    try:
        client = docker.from_env(version="auto", timeout=timeout, max_pool_size=max_pool_size)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise EngineUnavailableError(
            f"no Docker engine answers ({type(exc).__name__})", fix=START_DOCKER_FIX
        ) from exc
    return client


def lost_or_stuck(api: Any, what: str, exc: Exception) -> RuntimeError_ | EngineUnavailableError:
    """A call that ran out of time while the engine still answers a ping is one container
    stuck in the engine, not a lost engine: that grading fails and a batch goes on, where a
    lost engine stops it."""
    if isinstance(exc, requests.exceptions.ReadTimeout):
        try:
            answers = bool(api.ping())
        except (requests.exceptions.RequestException, docker.errors.DockerException):
            answers = False
        if answers:
            return ContainerStuckError(
                f"{what}: the engine answers, but not this call within its timeout "
                f"({type(exc).__name__}): a container is stuck in the engine",
                fix=STUCK_FIX,
            )
    return EngineUnavailableError(
        f"{what}: lost the Docker engine ({type(exc).__name__})", fix=START_DOCKER_FIX
    )
