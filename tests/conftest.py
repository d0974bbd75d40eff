from __future__ import annotations

import os
import signal

import pytest

# A suite started in the background by a non-interactive shell inherits SIGINT ignored, and so
# would every process it starts; the Ctrl-C tests need the handler a terminal's Ctrl-C finds.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _docker_available() -> bool:
    try:
        from assay._internal.runtime.docker import connect

        connect(timeout=5)
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def base_image() -> str:
    return os.environ.get("ASSAY_BASE_IMAGE", "assay-base:latest")


@pytest.fixture(scope="session")
def docker_runtime():  # type: ignore[no-untyped-def]
    # Docker tests are part of the suite; a missing engine is a failure, not a skip,
    # unless the caller explicitly asked for the fast subset.
    if os.environ.get("ASSAY_NO_DOCKER") == "1":
        pytest.skip("ASSAY_NO_DOCKER=1: fast subset requested")
    from assay._internal.runtime.docker import DockerRuntime

    return DockerRuntime()
