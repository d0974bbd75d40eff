"""Naming the ceiling a stopped container hit, when the engine records the stop before the
OOM kill (two events, either order): the stop must not read as a stop at no limit."""

from __future__ import annotations

from assay._internal.runtime import ContainerSpec
from assay._internal.runtime.base import ceilings_hit, stopped_ceilings
from assay._internal.runtime.fake import FakeRuntime


class LateOom(FakeRuntime):
    """Reports a container's OOM kill only from its `after`-th question on."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after, self.asked = after, 0

    def oom_killed(self, cid: str) -> bool:
        self.asked += 1
        return self.asked >= self.after

    def limit_events(self, cid: str) -> dict[str, int]:
        return {}  # a stopped container's cgroup is gone


def _stopped(rt: FakeRuntime) -> str:
    cid = rt.create(ContainerSpec(image="img", grading_id="g", role="candidate"))
    rt.start(cid)
    rt.kill(cid)
    return cid


def test_an_oom_kill_recorded_after_the_stop_is_still_named() -> None:
    rt = LateOom(after=4)
    cid = _stopped(rt)
    assert ceilings_hit(rt, cid) == []  # the race: asked once, too early
    assert stopped_ceilings(rt, cid, grace_s=5.0) == ["memory"]
    assert rt.asked == 4


def test_a_stop_that_no_ceiling_explains_is_reported_after_the_grace() -> None:
    rt = LateOom(after=10**9)
    cid = _stopped(rt)
    assert stopped_ceilings(rt, cid, grace_s=0.2) == []
    assert rt.asked > 1
