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
