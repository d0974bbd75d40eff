"""GradingScope removes what a grading made, on every exit path."""

from __future__ import annotations

import pytest

from assay._internal.runtime import ContainerSpec, GradingScope
from assay._internal.runtime.fake import FakeRuntime


class LostEngine(FakeRuntime):
    """An engine that went away after the grading started (a restarted dockerd)."""

    def sweep(self, grading_id: str | None = None) -> int:
        raise ConnectionError("('Connection aborted.', FileNotFoundError(2, 'No such file'))")


def test_temp_dirs_are_removed_even_when_the_engine_is_gone() -> None:
    # Seen in the fault suite: a dockerd restart left the packed submissions of every
    # grading it interrupted in /tmp, and neither the next run nor `assay gc` removes them.
    rt = LostEngine()
    scope = GradingScope(rt, "g-" + "5" * 16)
    scope.container(ContainerSpec(image="img", grading_id=scope.grading_id, role="candidate"))
    pack = scope.tempdir("submission-pack")
    (pack / "packed.tar").write_bytes(b"x" * 100)
    with pytest.raises(ConnectionError):
        scope.close()
    assert not pack.exists()
