"""The tests that need a real Docker engine (tests/conftest.py marks and, on request, skips them)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def docker_runtime():  # type: ignore[no-untyped-def]
    # A missing engine is a failure here, not a skip: these tests are part of the suite.
    from assay._internal.runtime.docker import DockerRuntime

    return DockerRuntime()
