"""The tests that need a real Docker engine (tests/conftest.py marks and, on request, skips them)."""

from __future__ import annotations

import os

import pytest

# These tests inspect what a grading left on the Docker engine, so the gradings they start
# through the CLI or `assay.Grader()` without naming a backend go to the engine. The runc
# backend has its own files (test_oci_*.py), which name it; the proof matrix and the examples
# run on the default backend in scripts/test.sh.
os.environ["ASSAY_RUNTIME"] = "docker"


@pytest.fixture(scope="session")
def docker_runtime():  # type: ignore[no-untyped-def]
    # A missing engine is a failure here, not a skip: these tests are part of the suite.
    from assay._internal.runtime.docker import DockerRuntime

    return DockerRuntime()
