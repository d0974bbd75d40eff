"""Archive firewall: the CLI, interoperability with real tar writers, and edge cases by hand."""

from __future__ import annotations

import io
import tarfile
import uuid

import pytest

from assay._internal.firewall.check import Accepted, Rejected, check


def _accept(data: bytes, **kw: object) -> tuple[Accepted, bytes]:
    sink = io.BytesIO()
    result = check(io.BytesIO(data), sink, **kw)  # type: ignore[arg-type]
    assert isinstance(result, Accepted), result
    return result, sink.getvalue()


def _files(result: Accepted) -> set[str]:
    return {e.path for e in result.manifest if e.kind == "file"}


# --- interoperability: archives real writers produce are accepted, with one manifest ----------


@pytest.mark.docker
def test_docker_get_archive_is_accepted(base_image) -> None:  # type: ignore[no-untyped-def]
    docker = pytest.importorskip("docker")
    client = docker.from_env(version="auto")
    script = (
        "mkdir -p /workspace/src /workspace/.venv/bin && printf 'x=1\\n' > /workspace/src/m.py"
        " && printf 'print(1)\\n' > /workspace/solution.py && chmod 4755 /workspace/solution.py"
        " && ln -s /usr/bin/python3 /workspace/.venv/bin/python"
        " && python3 -c \"open('/workspace/' + 'l'*150 + '.py','w').write('x')\""
    )
    container = client.containers.run(
        base_image, ["sh", "-c", script], detach=True, network_mode="none",
        labels={"assay.grading": f"test-firewall-{uuid.uuid4().hex[:8]}"},
    )  # fmt: skip
    try:
        assert container.wait(timeout=60)["StatusCode"] == 0
        stream, _ = container.get_archive("/workspace")
        raw = b"".join(stream)
    finally:
        container.remove(force=True)
    whole = check(io.BytesIO(raw), io.BytesIO(), strip_prefix="workspace")
    assert isinstance(whole, Rejected) and whole.rule == "link"  # the venv symlink
    result, normalised = _accept(raw, strip_prefix="workspace", artifacts=["**/*.py"])
    assert _files(result) == {"solution.py", "src/m.py", "l" * 150 + ".py"}
    assert result.dropped == (".venv/bin/python",)
    with tarfile.open(fileobj=io.BytesIO(normalised)) as tf:
        assert tf.getmember("solution.py").mode == 0o755  # setuid stripped


# --- check(): streams, globs, prefixes ---------------------------------------------------------


# --- materialise ---------------------------------------------------------------------------------


# --- the CLI ---------------------------------------------------------------------------------------


# --- names: bytes, and the normalisation work a dropped member may not cost (issue 10) ----------
