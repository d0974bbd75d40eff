"""`assay.InlineTasks`, the cache of tasks made from rows' tests (issue 36, item 6): bounded by
bytes on disk and by count, least recently used first; a task a grading holds is never
removed; a row refused at any step, or a request refused after its task was made, leaves no
file; a row's build runs outside the cache's lock. Sizes are measured here independently, by
walking the directory as `du` does."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import assay
from assay._internal.api import inline
from assay.errors import TaskError, UsageError


def row(i: int, size: int = 60_000) -> dict[str, Any]:
    """A row of one test whose input is about `size` bytes: each row's task about as large."""
    return {"inputs": [f"{i} " + "x" * size + "\n"], "outputs": [f"{i}\n"]}


def on_disk(root: Path) -> tuple[int, list[str]]:
    """(bytes allocated under `root`, not counting `root` itself; the names directly in it)."""
    total = 0
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            total += os.lstat(os.path.join(here, name)).st_blocks * 512
    return total, sorted(os.listdir(root))


def one_task_bytes() -> int:
    probe = assay.InlineTasks()
    try:
        probe.task(row(0))
        return on_disk(probe._root)[0]
    finally:
        probe.close()


def test_bounded_by_bytes_on_disk_least_recently_used_first() -> None:
    size = one_task_bytes()
    cache = assay.InlineTasks(max_bytes=size * 3 + size // 2)  # room for three
    try:
        a, b, c = (cache.task(row(i)) for i in (1, 2, 3))
        assert cache.task(row(1)) is a  # a hit: 1 is now the most recently used
        d = cache.task(row(4))
        used, names = on_disk(cache._root)
        assert names == sorted(t.root.name for t in (a, c, d))  # 2 was the least recent
        assert not b.root.exists()
        assert used == cache.bytes <= cache.max_bytes
        for i in range(5, 40):
            cache.task(row(i))
            used, names = on_disk(cache._root)
            assert used <= cache.max_bytes and len(names) == 3, (i, used, names)
    finally:
        cache.close()
    assert not cache._root.exists()


def test_bounded_by_count() -> None:
    cache = assay.InlineTasks(max_tasks=2)
    try:
        first = cache.task(row(1, 10))
        cache.task(row(2, 10))
        cache.task(row(3, 10))
        assert len(on_disk(cache._root)[1]) == 2 and not first.root.exists()
    finally:
        cache.close()


def test_a_leased_task_is_never_removed_and_goes_when_released() -> None:
    size = one_task_bytes()
    cache = assay.InlineTasks(max_bytes=size * 2 + size // 2)
    try:
        with cache.lease(row(1)) as held:
            for i in range(2, 10):
                cache.task(row(i))
            # Over its bounds only by the task in use, which is still whole.
            assert (held.root / "judge" / "tests.json").is_file()
            assert on_disk(cache._root)[0] <= cache.max_bytes + size
        # Released and the least recently used: the next row pushes it out.
        cache.task(row(10))
        assert not held.root.exists() and on_disk(cache._root)[0] <= cache.max_bytes
    finally:
        cache.close()


def test_a_refused_request_leaves_no_file() -> None:
    cache = assay.InlineTasks()
    try:
        # Refused after its task was made (a language the task does not take: HTTP 422).
        with pytest.raises(UsageError), cache.lease(row(1)) as task:
            assay.code_submission(task, "print(1)", "cobol")
        assert on_disk(cache._root) == (0, []) and cache.bytes == 0
        # A row that is no test set: refused before anything is written.
        with pytest.raises(TaskError):
            cache.task({"inputs": ["1\n"], "outputs": []})
        assert on_disk(cache._root) == (0, [])
        # Another request used the task to the end: a later refusal does not take it away.
        kept = cache.task(row(2))
        with pytest.raises(UsageError), cache.lease(row(2)):
            raise UsageError("refused")
        assert kept.root.is_dir() and on_disk(cache._root)[1] == [kept.root.name]
    finally:
        cache.close()


def test_a_task_that_fails_to_load_after_it_was_written_leaves_no_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(path: Path) -> Any:
        assert path.is_dir()  # written, then refused
        raise TaskError(str(path), "refused after writing")

    monkeypatch.setattr(inline, "load_task", broken)
    cache = assay.InlineTasks()
    try:
        with pytest.raises(TaskError, match="refused after writing"):
            cache.task(row(1))
        assert on_disk(cache._root) == (0, [])
    finally:
        cache.close()


def test_a_task_larger_than_the_whole_cache_is_refused() -> None:
    cache = assay.InlineTasks(max_bytes=40_000)
    try:
        with pytest.raises(TaskError, match="over the cache's 40000"):
            cache.task(row(1))
        assert on_disk(cache._root) == (0, [])
        cache.task(row(2, 10))  # a small one fits
    finally:
        cache.close()


def test_one_build_per_row_and_none_under_the_shared_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[str] = []
    slow_started, slow_release = threading.Event(), threading.Event()
    real_build = inline.apps.build

    def build(r: dict[str, Any], io: Any, verl: bool, task_id: str, source: str) -> Any:
        builds.append(task_id)
        if '"1 ' in r["input_output"]:
            slow_started.set()
            assert slow_release.wait(30)
        return real_build(r, io, verl, task_id, source)

    monkeypatch.setattr(inline.apps, "build", build)
    cache = assay.InlineTasks()
    got: list[assay.Task] = []
    try:
        slow = [threading.Thread(target=lambda: got.append(cache.task(row(1, 10))))
                for _ in range(6)]  # fmt: skip
        for t in slow:
            t.start()
        assert slow_started.wait(30)
        # While row 1 is being built, another row is built and answered.
        t0 = time.monotonic()
        other = cache.task(row(2, 10))
        assert other.root.is_dir() and time.monotonic() - t0 < 10
        slow_release.set()
        for t in slow:
            t.join(30)
        assert len(got) == 6 and all(t is got[0] for t in got)
        assert len(builds) == 2  # one for row 1 (six requests), one for row 2
    finally:
        slow_release.set()
        cache.close()


def test_closed_is_closed() -> None:
    cache = assay.InlineTasks()
    cache.task(row(1, 10))
    cache.close()
    assert not cache._root.exists()
    with pytest.raises(UsageError, match="closed"):
        cache.task(row(1, 10))
    with pytest.raises(UsageError):
        assay.InlineTasks(max_bytes=0)
