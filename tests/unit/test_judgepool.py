"""The judge pool's lending rules on the fake runtime: one grading at a time; reuse (of one
task's judge, or across tasks with the judge files swapped) only after a reset in a fresh exec
and a normal end; removal on every other path; a fixed cases file prepared once per task."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from assay._internal.model.task import Task, load_task
from assay._internal.runtime import CensusUnavailable, ContainerStuckError, ExecResult
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.tiers.strict.fixedcases import InputCache, fixed_cases
from assay._internal.tiers.strict.judgepool import RESET_ARGV, JudgePool, Lent, fill

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
    """The judge's programs: `prepare` and `compare`, alone or after the reset (`--then`);
    `answer`/`code` is what a reset that is not clean prints and exits with."""

    def __init__(self, answer: bytes = b"clean\n", code: int = 0) -> None:
        self.answer, self.code = answer, code
        self.log: list[str] = []

    def __call__(
        self, c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        proof = b""
        if argv[:3] == RESET_ARGV:
            assert argv[3] == "--then"
            argv = argv[4:]
            if self.code != 0 or self.answer != b"clean\n":
                self.log.append("reset-failed")
                return self.code, self.answer, b""
            proof = b"clean\n"
            self.log.append("reset")
        assert argv in (PREPARE, COMPARE)  # the reset becomes one of these, no other
        self.log.append(argv[3])
        return 0, proof + (INPUTS if argv == PREPARE else REPORT), b""


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
    # The proof of a reset is never handed on as inputs or report.
    assert lent.prepare is None if fixed_cases(task) else lent.prepare.stdout == INPUTS
    pool.release(gid)
    pool.finish(gid)
    return lent, cid


def test_a_generator_tasks_judge_is_reset_then_prepared_in_one_exec() -> None:
    judge = Judge()
    rt = FakeRuntime({"python3": judge})
    pool = JudgePool(rt)
    first, cid = grading(pool, CANARY, "g-1")
    assert not first.reused and cid == first.cid
    assert judge.log == ["prepare", "compare"]  # a new judge needs no reset
    assert rt.containers[cid].spec.grading_id == pool.gid  # not swept by the grading's scope
    again, cid2 = grading(pool, CANARY, "g-2")
    assert (again.cid, cid2, again.reused) == (cid, cid, True)
    assert judge.log[2:] == ["reset", "prepare", "compare"]
    pool.close()
    assert rt.leftovers() == []


def test_a_fixed_cases_files_judge_runs_compare_alone_after_a_reset_in_the_same_exec() -> None:
    judge = Judge()
    rt = FakeRuntime({"python3": judge})
    pool = JudgePool(rt)
    _, cid = grading(pool, ADD, "g-1")
    assert judge.log == ["compare"]  # a new judge: no prepare, no reset
    for n in (2, 3):
        again, cid2 = grading(pool, ADD, f"g-{n}")
        assert (again.cid, cid2, again.reused) == (cid, cid, True)
    # One exec per grading: the reset, then compare, in one process.
    assert judge.log[1:] == ["reset", "compare"] * 2
    pool.close()
    assert rt.leftovers() == []


def test_a_judge_whose_reset_fails_before_compare_is_replaced_by_a_new_one() -> None:
    for judge in (Judge(b"", 1), Judge(b"dirty\n"), Judge(b"clean"), Judge(b"unclean\n")):
        rt = FakeRuntime({"python3": judge})
        pool = JudgePool(rt)
        _, cid = grading(pool, ADD, "g-1")
        lent = lend(pool, ADD, "g-2")
        assert lent.cid == cid and lent.prepare is None  # no exec yet
        other, res = compare(pool, ADD, "g-2")
        assert other != cid and cid not in rt.containers and pool.discarded == 1
        assert res.stdout == REPORT and judge.log[1:] == ["reset-failed", "compare"]
        pool.release("g-2")
        assert lend(pool, ADD, "g-3").cid == other
        pool.close()
        assert rt.leftovers() == []


def test_a_judge_whose_reset_fails_before_prepare_is_replaced() -> None:
    judge = Judge(b"dirty\n")
    rt = FakeRuntime({"python3": judge})
    pool = JudgePool(rt)
    _, cid = grading(pool, CANARY, "g-1")
    other = lend(pool, CANARY, "g-2")
    assert other.cid != cid and not other.reused and cid not in rt.containers
    assert other.prepare.stdout == INPUTS and pool.discarded == 1
    assert judge.log[2:] == ["reset-failed", "prepare"]
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
    """The reset alone is no proof: a process left behind could ptrace it as it starts
    (docs/security.md). So the pool lists the judge's processes from outside at release."""
    rt = FakeRuntime({"python3": Judge()})
    pool = JudgePool(rt)
    first = lend(pool, ADD, "g-1")
    compare(pool, ADD, "g-1")
    # What a compromised compare could leave: a process that outlives its exec.
    rt.exec(first.cid, ("sh", "-c", "sleep 600 &"), deadline_s=5, output_cap=64)
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
