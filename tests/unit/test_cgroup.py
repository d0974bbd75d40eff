"""The cgroup layer both backends use (`assay._internal.runtime.cgroup`), on a cgroup tree of
plain files: the freeze retry, census, kill by PID, the counters, what gc finds, and the v2
stub's refusals. The real hierarchy is exercised by the backends' docker tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from assay._internal.runtime import cgroup
from assay._internal.runtime.cgroup import Cgroup, CgroupV2, freeze_state
from assay.errors import EngineError

CID = "c" * 64


class _Freezer:
    """A cgroup v1 freezer.state that stays FREEZING until it has been thawed `stuck` times:
    runc's init mid-execve, waiting on threads the freeze holds, until a thaw lets it finish."""

    def __init__(self, stuck: int) -> None:
        self.stuck, self.state = stuck, "THAWED"
        self.writes: list[str] = []

    def write_text(self, value: str) -> None:
        self.writes.append(value)
        if value == "THAWED":
            self.stuck -= 1
            self.state = "THAWED"
        else:
            self.state = "FREEZING" if self.stuck > 0 else "FROZEN"

    def read_text(self) -> str:
        return self.state + "\n"


def test_a_freeze_stuck_on_a_starting_process_is_thawed_and_tried_again() -> None:
    group = _Freezer(stuck=2)
    assert freeze_state(group)  # type: ignore[arg-type]
    assert group.writes.count("THAWED") == 2 and group.writes[-1] == "FROZEN"


def test_a_group_that_never_freezes_gives_no_census(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cgroup, "FREEZE_WAIT_S", 0.2)
    group = _Freezer(stuck=10**6)
    assert not freeze_state(group)  # type: ignore[arg-type]
    assert group.state != "FROZEN"


def _group(root: Path, pids: list[int], parent: str = "assay") -> Cgroup:
    group = Cgroup(parent, CID, root)
    for ctl in ("freezer", "pids"):
        group.dir(ctl).mkdir(parents=True)
        (group.dir(ctl) / "cgroup.procs").write_text("".join(f"{p}\n" for p in pids))
    (group.dir("freezer") / "freezer.state").write_text("THAWED\n")
    return group


def test_a_census_is_taken_frozen_and_leaves_the_group_thawed(tmp_path: Path) -> None:
    group = _group(tmp_path, [10, 11, 12])
    assert group.freezable()
    assert group.census() == frozenset({10, 11, 12})
    assert (group.dir("freezer") / "freezer.state").read_text() == "THAWED"
    assert group.procs() == [10, 11, 12]


def test_no_group_is_no_census_and_nothing_to_kill(tmp_path: Path) -> None:
    group = Cgroup("docker", CID, tmp_path)
    assert not group.freezable() and group.procs() == []
    with pytest.raises(EngineError, match=f"census of {CID[:12]}"):
        group.census()
    assert group.kill() == 0


def test_kill_signals_every_listed_pid_while_frozen(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])  # a process of this test's own
    try:
        group = _group(tmp_path, [sleeper.pid, 2**22 + 1])  # the second is no process
        assert group.kill() == 1
        assert sleeper.wait(timeout=10) == -9
        assert (group.dir("freezer") / "freezer.state").read_text() == "THAWED"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_counters_read_the_kernels_files_and_none_where_there_are_none(tmp_path: Path) -> None:
    group = Cgroup("assay", CID, tmp_path)
    files = {
        ("pids", "pids.events"): "max 3\n",
        ("pids", "pids.current"): "5\n",
        ("memory", "memory.oom_control"): "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
        ("memory", "memory.usage_in_bytes"): "1234\n",
        ("memory", "memory.max_usage_in_bytes"): "4096\n",
        ("cpuacct", "cpuacct.usage"): "123456789\n",
    }
    for (ctl, name), text in files.items():
        group.dir(ctl).mkdir(parents=True, exist_ok=True)
        (group.dir(ctl) / name).write_text(text)
    c = group.counters()
    assert (c.pids_max_hits, c.oom_kills, c.pids) == (3, 2, 5)
    assert (c.memory_bytes, c.memory_peak_bytes, c.cpu_ns) == (1234, 4096, 123456789)
    assert group.limit_events() == {"pids": 3, "memory": 2}
    empty = Cgroup("assay", "d" * 64, tmp_path)
    assert empty.limit_events() == {}
    assert set(vars(empty.counters()).values()) == {None}


def test_the_pids_count_falls_back_to_a_v2_group_and_nothing_else_does(tmp_path: Path) -> None:
    v2 = CgroupV2("docker", CID, tmp_path)
    v2.dir().mkdir(parents=True)
    (v2.dir() / "pids.events").write_text("max 7\n")
    (v2.dir() / "memory.events").write_text("oom_kill 1\n")
    assert cgroup.limit_events("docker", CID, tmp_path) == {"pids": 7}
    for refused in (v2.freeze, v2.census, v2.kill, v2.counters):
        with pytest.raises(NotImplementedError, match="cgroup v2 is not supported"):
            refused()


def test_gc_finds_every_group_under_its_parent_and_removes_one(tmp_path: Path) -> None:
    group, other = Cgroup("assay", CID, tmp_path), Cgroup("assay", "d" * 64, tmp_path)
    group.make("memory", {"memory.limit_in_bytes": 1})
    assert (group.dir("memory") / "memory.limit_in_bytes").read_text() == "1"
    (group.dir("memory") / "memory.limit_in_bytes").unlink()  # rmdir needs it empty here
    group.dir("pids").mkdir(parents=True)
    other.dir("pids").mkdir(parents=True)
    Cgroup("docker", CID, tmp_path).dir("pids").mkdir(parents=True)
    assert sorted(group.leftovers()) == sorted([group.dir("memory"), group.dir("pids")])
    assert len(cgroup.groups_under("assay", tmp_path)) == 3
    group.remove()
    assert group.leftovers() == []
    assert cgroup.groups_under("assay", tmp_path) == [other.dir("pids")]
