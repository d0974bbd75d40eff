"""The judge pool's lending rules on the fake runtime, whose judge worker speaks the real
protocol (tests/helpers/fakejudge.py): one grading at a time; reuse (of one task's judge, or
across tasks with the judge files swapped) only after the worker's reset proved it clean, a
census found nothing but init and the worker, and a normal end; removal on every other path; a
worker that dies, hangs or answers out of frame ends only its own grading, with no verdict, and
a judge killed between gradings is replaced."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from helpers.fakejudge import FakeWorker, frame, install

from assay._internal.model.task import Task, load_task
from assay._internal.runtime import CensusUnavailable, ContainerStuckError, ExecResult
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.tiers.strict import judgepool
from assay._internal.tiers.strict.fixedcases import InputCache, fixed_cases
from assay._internal.tiers.strict.judgepool import JudgePool, Lent, fill
from assay._internal.tiers.strict.judgewire import WORKER_ARGV, WorkerFault

# Every temp dir a pool makes is removed: each test fails on one left (conftest.py).
pytestmark = pytest.mark.usefixtures("private_tempdir")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PREPARE = ("python3", "-I", "/assay/judge.py", "prepare", "--seed", "1")
COMPARE = ("python3", "-I", "/assay/judge.py", "compare", "--kind", "function")
INPUTS = b'[{"id": "c1", "input": []}]'
REPORT = b'{"cases": []}'
ADD = load_task(EXAMPLES / "add")  # a fixed cases file
CANARY = load_task(EXAMPLES / "canary")  # a generator


class Judge:
    """The judge's steps, `prepare` and `compare`, as the worker runs them."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def __call__(
        self, c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        assert argv in (PREPARE, COMPARE)  # the worker runs these, no other
        self.log.append(argv[3])
        return 0, INPUTS if argv == PREPARE else REPORT, b""


class Recording(FakeWorker):
    """The honest worker, logging every request (resets included) in `ops`."""

    ops: ClassVar[list[str]] = []

    def answer(self, req: dict[str, Any]) -> bytes | None:
        Recording.ops.append(req["op"])
        return super().answer(req)


@pytest.fixture
def ops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    Recording.ops = []
    install(monkeypatch, Recording)
    return Recording.ops


def lend(pool: JudgePool, task: Task, gid: str) -> Lent:
    """As the strict tier does: a fixed cases file needs no prepare (its inputs are made on
    the host), a generator does."""
    prepare = None if fixed_cases(task) else PREPARE
    return pool.acquire(task, "img", gid, prepare, 10.0, 1 << 20)


def compare(pool: JudgePool, task: Task, gid: str) -> tuple[str, ExecResult]:
    return pool.compare(gid, task, COMPARE, b'{"cases": []}', 10.0, 1 << 20)


def grading(pool: JudgePool, task: Task, gid: str) -> tuple[Lent, str]:
    lent = lend(pool, task, gid)
    cid, res = compare(pool, task, gid)
    assert (res.stdout, res.exit_code) == (REPORT, 0)
    assert lent.prepare is None if fixed_cases(task) else lent.prepare.stdout == INPUTS
    pool.release(gid)
    pool.finish(gid)
    return lent, cid


def test_a_generator_tasks_judge_is_reset_between_gradings_and_prepared_by_request(
    ops: list[str],
) -> None:
    judge = Judge()
    rt = FakeRuntime({"python3": judge})
    pool = JudgePool(rt)
    first, cid = grading(pool, CANARY, "g-1")
    assert not first.reused and cid == first.cid
    spec = rt.containers[cid].spec
    assert spec.grading_id == pool.gid  # not swept by the grading's scope
    # The worker is the container's own process: no exec, no keep-alive.
    assert (spec.command, spec.spawned, spec.switch_user, spec.stdin) == (
        WORKER_ARGV, True, True, True,
    )  # fmt: skip
    again, cid2 = grading(pool, CANARY, "g-2")
    assert (again.cid, cid2, again.reused) == (cid, cid, True)
    assert judge.log == ["prepare", "compare"] * 2
    # The reset ends each grading that returns its judge.
    assert ops == ["prepare", "compare", "reset"] * 2
    pool.close()
    assert rt.leftovers() == []


def test_a_fixed_cases_files_judge_runs_compare_alone(ops: list[str]) -> None:
    judge = Judge()
    rt = FakeRuntime({"python3": judge})
    pool = JudgePool(rt)
    _, cid = grading(pool, ADD, "g-1")
    for n in (2, 3):
        again, cid2 = grading(pool, ADD, f"g-{n}")
        assert (again.cid, cid2, again.reused) == (cid, cid, True)
    assert judge.log == ["compare"] * 3 and ops == ["compare", "reset"] * 3
    assert pool.created == 1
    pool.close()
    assert rt.leftovers() == []


class Unclean(FakeWorker):
    def answer(self, req: dict[str, Any]) -> bytes | None:
        if req["op"] == "reset":
            return frame({"op": "reset", "clean": False})
        return super().answer(req)


class LeavesResidue(FakeWorker):
    """Its steps say something they started could not be killed, or their scratch emptied."""

    clean = False


class Unconfined(FakeWorker):
    confined = False  # a worker that could not keep a uid of its own


@pytest.mark.parametrize("worker", [Unclean, LeavesResidue, Unconfined])
def test_a_judge_that_cannot_prove_itself_clean_serves_its_grading_only(
    monkeypatch: pytest.MonkeyPatch, worker: type[FakeWorker]
) -> None:
    install(monkeypatch, worker)
    rt = FakeRuntime({"python3": Judge()})
    pool = JudgePool(rt)
    for task in (ADD, CANARY):
        _, cid = grading(pool, task, f"g-{task.config.id}")
        assert cid not in rt.containers and pool.discarded >= 1  # its grading went on to the end
        again = lend(pool, task, f"g-{task.config.id}-2")
        assert again.cid != cid and not again.reused
        pool.finish(f"g-{task.config.id}-2")
    pool.close()
    assert rt.leftovers() == []


def test_a_judge_is_recycled_after_serving_its_share(
    ops: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judgepool, "RECYCLE_AFTER", 3)
    rt = FakeRuntime({"python3": Judge()})
    pool = JudgePool(rt)
    cids = [grading(pool, ADD, f"g-{n}")[1] for n in range(7)]
    assert cids[:3] == [cids[0]] * 3 and cids[3:6] == [cids[3]] * 3 and cids[6] != cids[3]
    assert (pool.created, pool.recycled) == (3, 2)
    assert ops.count("reset") == 7 - 2  # a judge leaving is not reset first
    pool.close()
    assert rt.leftovers() == []


class DiesAt(FakeWorker):
    """Dies (closes its pipes, its container stops) instead of answering request `n`."""

    n = 1

    def answer(self, req: dict[str, Any]) -> bytes | None:
        if req["op"] != "reset" and self.steps + 1 == self.n:
            return None
        return super().answer(req)


class Garbage(FakeWorker):
    def answer(self, req: dict[str, Any]) -> bytes | None:
        if req["op"] == "compare":
            return b"\x00\x00\x00\x05hello"
        return super().answer(req)


class TooMuch(FakeWorker):
    def answer(self, req: dict[str, Any]) -> bytes | None:
        if req["op"] == "compare":
            return b"\x7f\xff\xff\xff" + b"x" * 100
        return super().answer(req)


@pytest.mark.parametrize("worker", [DiesAt, Garbage, TooMuch])
def test_a_worker_fault_ends_its_own_grading_with_no_verdict_and_no_other(
    monkeypatch: pytest.MonkeyPatch, worker: type[FakeWorker]
) -> None:
    """Two gradings hold a judge each; one judge's worker dies or answers out of frame at its
    compare. That grading gets an infrastructure error (never a result), its judge is removed,
    and the other grading, and the next, go on."""
    rt = FakeRuntime({"python3": Judge()})
    pool = JudgePool(rt)
    install(monkeypatch, worker)
    a = lend(pool, ADD, "g-a")
    install(monkeypatch, FakeWorker)
    b = lend(pool, ADD, "g-b")
    with pytest.raises(WorkerFault):
        compare(pool, ADD, "g-a")
    assert a.cid not in rt.containers and pool.faults == 1
    pool.finish("g-a")
    used, res = compare(pool, ADD, "g-b")  # the other grading goes on, to its normal end
    assert (used, res.exit_code, res.stdout) == (b.cid, 0, REPORT)
    pool.release("g-b")
    pool.finish("g-b")
    again, cid = grading(pool, ADD, "g-c")  # and its judge serves the next
    assert cid == b.cid and again.reused and pool.discarded == 1
    pool.close()
    assert rt.leftovers() == []


def test_a_judge_killed_between_gradings_is_replaced_not_a_failure(ops: list[str]) -> None:
    """An idle judge whose container was killed: the next grading gets a new judge, for a
    generator task (its prepare) and for a fixed cases file (no request before compare)."""
    for task in (CANARY, ADD):
        rt = FakeRuntime({"python3": Judge()})
        pool = JudgePool(rt)
        _, cid = grading(pool, task, "g-1")
        pipes = pool._idle[cid].resident.channel
        rt.kill(cid)
        pipes._requests.close()  # the worker, killed with its container, reads EOF and ends
        for _ in range(500):
            if pipes.gone():
                break
            time.sleep(0.01)
        lent = lend(pool, task, "g-2")
        assert lent.cid != cid and not lent.reused
        assert cid not in rt.containers and pool.discarded == 1
        used, _ = compare(pool, task, "g-2")
        assert used == lent.cid
        pool.release("g-2")
        pool.close()
        assert rt.leftovers() == []


def test_a_judge_gone_at_its_first_request_after_being_lent_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Killed between its census at lend and the grading's first request: nothing of this
    grading reached it, so a new judge does the step; a judge that dies later is a fault."""

    class DiesOnReuse(FakeWorker):
        reset = False

        def answer(self, req: dict[str, Any]) -> bytes | None:
            if self.reset:
                return None
            self.reset = req["op"] == "reset"
            return super().answer(req)

    install(monkeypatch, DiesOnReuse)
    for task in (ADD, CANARY):
        rt = FakeRuntime({"python3": Judge()})
        pool = JudgePool(rt)
        _, cid = grading(pool, task, "g-1")
        install(monkeypatch, FakeWorker)
        _, used = grading(pool, task, "g-2")
        assert used != cid and cid not in rt.containers and pool.faults == 1
        install(monkeypatch, DiesOnReuse)
        pool.close()
        assert rt.leftovers() == []


def test_a_judge_not_released_is_removed_never_reused() -> None:
    rt = FakeRuntime({"python3": Judge()})
    pool = JudgePool(rt)
    first = lend(pool, ADD, "g-1")
    compare(pool, ADD, "g-1")
    pool.finish("g-1")  # the grading failed or raised
    assert first.cid not in rt.containers
    other = lend(pool, ADD, "g-2")
    assert other.cid != first.cid and not other.reused
    pool.close()
    assert rt.leftovers() == []


def _bound(rt: FakeRuntime, cid: str, target: str) -> Path:
    (path,) = (b.source for b in rt.containers[cid].spec.binds if b.target == target)
    return path


def test_a_judge_serves_another_task_with_that_tasks_files_in_its_place() -> None:
    rt = FakeRuntime({"python3": Judge()})
    pool = JudgePool(rt, max_idle=2)
    wc = load_task(EXAMPLES / "wordcount")

    def judge_file(cid: str) -> bytes:
        return (_bound(rt, cid, "/judge") / "cases.json").read_bytes()

    _, a = grading(pool, ADD, "g-1")
    assert judge_file(a) == (ADD.judge_dir / "cases.json").read_bytes()
    w = lend(pool, wc, "g-2")
    assert (w.cid, w.reused, pool.switched) == (a, True, 1)
    assert judge_file(a) == (wc.judge_dir / "cases.json").read_bytes()
    a2 = lend(pool, ADD, "g-3")  # the only judge is lent: a second one
    assert a2.cid != a and not a2.reused
    for gid, task in (("g-2", wc), ("g-3", ADD)):
        compare(pool, task, gid)
        pool.release(gid)
    # Two idle judges, one per task: each task gets its own back, without a swap.
    assert lend(pool, wc, "g-4").cid == a and lend(pool, ADD, "g-5").cid == a2.cid
    assert pool.switched == 1 and pool.created == 2
    assert not JudgePool.reusable(load_task(EXAMPLES / "csv-sum"))
    pool.close()
    assert rt.leftovers() == []


def _judges(rt: FakeRuntime, pool: JudgePool) -> set[str]:
    return {cid for cid, c in rt.containers.items() if c.spec.grading_id == pool.gid}


def test_idle_judges_are_capped_and_evicted_ones_removed_with_their_directories() -> None:
    """Issue 10 finding 7: 16 tasks at parallelism 2 kept 16 judges (one idle per task)."""
    rt = FakeRuntime({"python3": Judge()})
    cap, parallel = 1, 4
    pool = JudgePool(rt, cap)
    tasks = [Task(ADD.root, ADD.config, f"sha256:{i:064x}") for i in range(16)]
    dirs: dict[str, list[Path]] = {}
    most = 0
    for first in range(0, len(tasks), parallel):  # four gradings at a time, each a new task
        lent = []
        for i in range(first, first + parallel):
            cid = lend(pool, tasks[i], f"g-{i}").cid
            dirs[cid] = [_bound(rt, cid, "/handoff"), _bound(rt, cid, "/judge")]
            lent.append(f"g-{i}")
        most = max(most, len(_judges(rt, pool)))
        for n, gid in enumerate(lent, 1):
            pool.release(gid)
            pool.finish(gid)
            still_lent = len(lent) - n
            assert len(_judges(rt, pool)) - still_lent <= cap  # the idle ones
    assert most <= cap + parallel
    alive = _judges(rt, pool)
    assert len(alive) == cap and pool.evicted == len(dirs) - cap
    for cid, pair in dirs.items():  # an evicted judge leaves no directory behind
        assert all(d.is_dir() == (cid in alive) for d in pair)
    # The one kept is the one released last: it served the last task.
    assert lend(pool, tasks[15], "g-a").cid in alive
    pool.close()
    assert rt.leftovers() == [] and not any(d.exists() for p in dirs.values() for d in p)


def test_inputs_are_made_once_per_fixed_cases_task_within_a_byte_cap() -> None:
    one = len(InputCache().inputs(ADD) or b"")
    cache = InputCache(max_bytes=2 * one)
    assert cache.inputs(CANARY) is None  # a generator prepares in the judge, per grading
    tasks = [Task(ADD.root, ADD.config, f"sha256:{i:064x}") for i in range(3)]
    got = [cache.inputs(t) for t in tasks]
    assert all(g is not None and json.loads(g) == json.loads(got[0] or b"") for g in got)
    assert [c["id"] for c in json.loads(got[0] or b"")] == ["small", "zero", "negative", "large"]
    assert all("expected" not in c for c in json.loads(got[0] or b""))
    # Two fit; the third dropped the least recently used (the first).
    assert list(cache._by_task) == [tasks[1].digest, tasks[2].digest]


def test_fill_replaces_the_whole_content_and_keeps_links_as_links(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "data.json").write_text("[1]")
    (src / "link").symlink_to("/etc/passwd")
    dst.mkdir()
    (dst / "old").mkdir()
    (dst / "old" / "truth.json").write_text("[0]")
    (dst / "stale").write_text("x")
    fill(dst, src)
    assert sorted(p.name for p in dst.iterdir()) == ["link", "sub"]
    assert (dst / "sub" / "data.json").read_text() == "[1]"
    assert (dst / "link").is_symlink() and str((dst / "link").readlink()) == "/etc/passwd"


def test_a_judge_still_running_a_process_after_its_grading_is_never_lent_again() -> None:
    """The worker's reset alone is no proof: what it cannot see or kill (a process of
    another uid, a worker that lies) the pool's census from outside does (docs/security.md)."""
    rt = FakeRuntime({"python3": Judge()})
    pool = JudgePool(rt)
    first = lend(pool, ADD, "g-1")
    compare(pool, ADD, "g-1")
    # A process the fake worker's reset does not end, as a real one's could not.
    c = rt.containers[first.cid]
    c.procs.append((max(pid for pid, _ in c.procs) + 1, "sleep"))
    pool.release("g-1")
    assert first.cid not in rt.containers and pool.leftovers == 1 and pool.discarded == 1
    assert lend(pool, ADD, "g-2").cid != first.cid
    pool.close()
    assert rt.leftovers() == []


def test_a_judge_whose_processes_cannot_be_listed_serves_one_grading_only() -> None:
    class NoCensus(FakeRuntime):
        def census(self, cid: str) -> frozenset[int]:
            raise CensusUnavailable("no outside view")

    rt = NoCensus({"python3": Judge()})
    pool = JudgePool(rt)
    _, cid = grading(pool, ADD, "g-1")
    assert cid not in rt.containers
    assert not lend(pool, ADD, "g-2").reused
    pool.close()
    assert rt.leftovers() == []


class _StuckOnce(FakeRuntime):
    """Removes the first container it is asked to only after the engine lost it for a while
    (its processes killed by PID)."""

    stuck = True

    def remove(self, cid: str) -> None:
        super().remove(cid)
        if self.stuck:
            self.stuck = False
            raise ContainerStuckError(f"remove {cid[:12]}: removed after", removed=True)


def test_an_evicted_judge_removed_only_by_force_does_not_fail_the_grading_releasing() -> None:
    rt = _StuckOnce({"python3": Judge()})
    pool = JudgePool(rt, max_idle=1)
    tasks = [Task(ADD.root, ADD.config, f"sha256:{i:064x}") for i in range(2)]
    first = lend(pool, tasks[0], "g-0").cid
    lend(pool, tasks[1], "g-1")
    pool.release("g-0")
    pool.finish("g-0")
    pool.release("g-1")  # evicts g-0's idle judge: no grading depends on it any more
    pool.finish("g-1")
    assert first not in rt.containers and pool.evicted == 1 and not rt.stuck
    pool.close()
    assert rt.leftovers() == []
