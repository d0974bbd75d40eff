"""The tests that need no engine: the fake runtime, pure functions, files."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    # Keeps the split honest: a test here that reaches for an engine fails instead of quietly
    # using the one on this machine (its place is tests/docker/).
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/assay-unit-tests-have-no-engine.sock")
