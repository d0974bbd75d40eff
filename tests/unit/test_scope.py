"""GradingScope removes what a grading made, on every exit path."""

from __future__ import annotations

import pytest

from assay._internal.runtime import ContainerSpec, ContainerStuckError, GradingScope
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
    forgotten: list[str] = []
    scope.defer(lambda: forgotten.append("marker"))
    with pytest.raises(ConnectionError):
        scope.close()
    assert not pack.exists()
    assert forgotten == ["marker"]  # what the grading kept elsewhere goes, engine or not


class OneStuck(FakeRuntime):
    """The engine cannot act on one container (a wedged shim) the first time it is asked."""

    def __init__(self) -> None:
        super().__init__()
        self.stuck: str | None = None

    def remove(self, cid: str) -> None:
        if cid == self.stuck:
            self.stuck = None
            raise ContainerStuckError(f"remove {cid[:12]}: stuck")
        super().remove(cid)


def test_a_container_that_will_not_go_keeps_neither_the_others_nor_its_error() -> None:
    rt = OneStuck()
    scope = GradingScope(rt, "g-" + "6" * 16)
    spec = ContainerSpec(image="img", grading_id=scope.grading_id, role="candidate")
    scope.container(spec)
    scope.container(spec)
    rt.stuck = scope.container(spec)  # the first one `close` removes
    with pytest.raises(ContainerStuckError):
        scope.close()  # the grading has no verdict...
    assert rt.containers == {}  # ...the other two went, and the sweep asked again for this one
