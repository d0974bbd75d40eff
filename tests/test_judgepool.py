"""The judge pool's lending rules on the fake runtime: one grading at a time, reuse only after a
clean reset and a normal end, removal on every other path."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from assay._internal.model.task import Task, load_task
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.tiers.judgepool import RESET_ARGV, JudgePool

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class Reset:
    def __init__(self, answer: bytes = b"clean\n", code: int = 0) -> None:
        self.answer, self.code, self.calls = answer, code, 0

    def __call__(
        self, c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        assert argv == RESET_ARGV
        self.calls += 1
        return self.code, self.answer, b""


def test_a_released_judge_is_reset_then_lent_again() -> None:
    reset = Reset()
    rt = FakeRuntime({"python3": reset})
    pool = JudgePool(rt)
    task = load_task(EXAMPLES / "add")
    cid, reused = pool.acquire(task, "img", "g-1")
    assert not reused and reset.calls == 0  # a new judge needs no reset
    assert rt.containers[cid].spec.grading_id == pool.gid  # not swept by the grading's scope
    pool.release("g-1")
    pool.finish("g-1")
    again, reused = pool.acquire(task, "img", "g-2")
    assert (again, reused, reset.calls) == (cid, True, 1)
    pool.close()
    assert rt.leftovers() == []


def test_a_judge_not_released_is_removed_never_reused() -> None:
    rt = FakeRuntime({"python3": Reset()})
    pool = JudgePool(rt)
    task = load_task(EXAMPLES / "add")
    cid, _ = pool.acquire(task, "img", "g-1")
    pool.finish("g-1")  # the grading failed or raised
    assert cid not in rt.containers
    other, reused = pool.acquire(task, "img", "g-2")
    assert other != cid and not reused
    pool.close()
    assert rt.leftovers() == []


def test_a_judge_whose_reset_is_not_clean_is_replaced() -> None:
    for reset in (Reset(b"clean\nclean\n"), Reset(b"", 1), Reset(b"dirty\n")):
        rt = FakeRuntime({"python3": reset})
        pool = JudgePool(rt)
        task = load_task(EXAMPLES / "add")
        cid, _ = pool.acquire(task, "img", "g-1")
        pool.release("g-1")
        other, reused = pool.acquire(task, "img", "g-2")
        assert other != cid and not reused and cid not in rt.containers
        assert pool.discarded == 1
        pool.close()
        assert rt.leftovers() == []


def test_judges_are_per_task_and_lent_to_one_grading_at_a_time() -> None:
    rt = FakeRuntime({"python3": Reset()})
    pool = JudgePool(rt, max_idle=2)
    add, wc = load_task(EXAMPLES / "add"), load_task(EXAMPLES / "wordcount")
    a1, _ = pool.acquire(add, "img", "g-1")
    a2, _ = pool.acquire(add, "img", "g-2")  # a1 is lent: a second judge
    w1, _ = pool.acquire(wc, "img", "g-3")
    assert len({a1, a2, w1}) == 3
    for gid in ("g-1", "g-2", "g-3"):
        pool.release(gid)
    assert a1 not in rt.containers  # over max idle: the least recently released is removed
    assert pool.acquire(wc, "img", "g-4")[0] == w1
    assert pool.acquire(add, "img", "g-5")[0] == a2
    assert not JudgePool.reusable(load_task(EXAMPLES / "csv-sum"))
    pool.close()
    assert rt.leftovers() == []


def _judges(rt: FakeRuntime, pool: JudgePool) -> set[str]:
    return {cid for cid, c in rt.containers.items() if c.spec.grading_id == pool.gid}


def test_idle_judges_are_capped_over_all_tasks_and_evicted_ones_removed() -> None:
    """Issue 10 finding 7: 16 tasks at parallelism 2 kept 16 judges (one idle per task)."""
    rt = FakeRuntime({"python3": Reset()})
    cap, parallel = 4, 2
    pool = JudgePool(rt, cap)
    base = load_task(EXAMPLES / "add")
    tasks = [Task(base.root, base.config, f"sha256:{i:064x}") for i in range(16)]
    handoffs: dict[str, Path] = {}
    most = 0
    for first in range(0, len(tasks), parallel):  # two gradings at a time, each a new task
        lent = []
        for i in range(first, first + parallel):
            cid, _ = pool.acquire(tasks[i], "img", f"g-{i}")
            handoffs[cid] = pool.handoff_dir(cid)
            lent.append(f"g-{i}")
        most = max(most, len(_judges(rt, pool)))
        for n, gid in enumerate(lent, 1):
            pool.release(gid)
            pool.finish(gid)
            still_lent = len(lent) - n
            assert len(_judges(rt, pool)) - still_lent <= cap  # the idle ones
    assert most <= cap + parallel
    alive = _judges(rt, pool)
    assert len(alive) == cap and len(handoffs) == 16
    for cid, handoff in handoffs.items():  # an evicted judge leaves no handoff directory
        assert handoff.is_dir() == (cid in alive)
    # The least recently used went first: the last task's judge is still there, the first's not.
    assert pool.acquire(tasks[15], "img", "g-a")[1] is True
    assert pool.acquire(tasks[0], "img", "g-b")[1] is False
    pool.close()
    assert rt.leftovers() == [] and not any(h.exists() for h in handoffs.values())
