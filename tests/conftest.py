from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

# A suite started in the background by a non-interactive shell inherits SIGINT ignored, and so
# would every process it starts; the Ctrl-C tests need the handler a terminal's Ctrl-C finds.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def base_image() -> str:
    return os.environ.get("ASSAY_BASE_IMAGE", "assay-base:latest")


@pytest.fixture
def private_tempdir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Every temp dir the harness makes during the test goes into a directory of the test's
    own (so other tests and other suites on the machine cannot be mistaken for it), and the
    test fails if any `assay-*` one is still there at its end."""
    import tempfile

    private = tmp_path_factory.mktemp("private-tmp")
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    yield private
    left = sorted(p.name for p in private.glob("assay-*"))
    assert not left, f"temp dirs left behind: {left}"


@pytest.fixture(autouse=True)
def _fake_judge_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge's worker spawned on the fake runtime speaks its protocol (helpers/fakejudge.py)
    and runs each step as the program a test registered under `python3`."""
    from helpers.fakejudge import install

    install(monkeypatch)


DOCKER_DIR = Path(__file__).resolve().parent / "docker"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The one place that decides whether the engine's tests run: everything under tests/docker/
    needs a real engine and is marked `docker`; ASSAY_NO_DOCKER=1 asks for the fast subset and
    skips exactly those (scripts/test.sh unsets it: there a missing engine is a failure)."""
    skip = os.environ.get("ASSAY_NO_DOCKER") == "1"
    for item in items:
        if item.path.is_relative_to(DOCKER_DIR):
            item.add_marker(pytest.mark.docker)
            if skip:
                item.add_marker(pytest.mark.skip(reason="ASSAY_NO_DOCKER=1: fast subset requested"))
