"""A container's cgroup, the one way both container backends reach it: freeze, list, kill by
PID, thaw, and the kernel's own counters (ceilings hit, memory, pids, CPU time).

cgroup v1, the hierarchy this host has and the runc backend's preflight requires: each
controller is a hierarchy of its own under `CGROUP_ROOT`, and a container's group is the same
path in each, `<parent>/<id>` (`Cgroup`). The runc backend's groups are `assay/<id>` (runc's
cgroupfs layout for the `cgroupsPath` it is given), the Docker engine's `docker/<id>`.

Where cgroup v2 would go: `CgroupV2`, one directory per group under a single hierarchy. It is a
stub on purpose. v2's freezer (`cgroup.freeze`, settled when `cgroup.events` says
`frozen 1`), its kill (`cgroup.kill`, Linux 5.14) and its counters (`memory.events`,
`memory.current`/`memory.peak`, `cpu.stat`'s `usage_usec`) differ from v1's in every file
name, and no host this code is tested on has a v2 hierarchy; so it refuses each of those with
that reason (`NotImplementedError`) instead of guessing, and the runc backend's preflight
refuses a v2-only host. Its one working read, `pids.events`, has the same name and format on
both versions; the Docker backend has always fallen back to it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from assay.errors import EngineError

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu", "cpuacct", "cpuset", "devices", "freezer", "blkio")
"""The v1 controllers' hierarchies a container's group has a directory in (runc makes one in
each)."""
HIERARCHIES = (*CONTROLLERS, "systemd", "unified")
"""Every hierarchy runc makes the group in on this host's hybrid layout: the controllers',
systemd's named one and the (empty) unified one; what `remove` removes and `leftovers`
looks for."""
FREEZE_WAIT_S = 2.0


def freeze_state(state: Path, wait_s: float | None = None) -> bool:
    """Freeze the group whose `freezer.state` is `state`, as runc does; False if it would not
    hold FROZEN within `wait_s` (default `FREEZE_WAIT_S`). Raises OSError if the group's files
    cannot be written.

    One FROZEN write can leave the group FREEZING for good: just after a start, the
    container's first process may still be runc's init in the middle of its execve, waiting
    for its other threads to exit while they sit frozen (seen here in about one census in a
    hundred right after a start, under load). Only a thaw lets that exec finish, so a freeze
    that has not held within a few milliseconds is thawed for a moment and tried again."""
    deadline = time.monotonic() + (FREEZE_WAIT_S if wait_s is None else wait_s)
    tries = 0
    while True:
        state.write_text("FROZEN")
        if state.read_text().strip() == "FROZEN":
            return True
        if time.monotonic() > deadline:
            return False
        tries += 1
        if tries % 20 == 0:
            state.write_text("THAWED")
            time.sleep(0.01)
        else:
            time.sleep(0.0005)


@dataclass(frozen=True)
class Counters:
    """What the kernel counted for one group; None where its file could not be read (no
    group, or not this controller)."""

    pids_max_hits: int | None
    """`pids.events` `max`: forks refused at `pids.max`."""
    oom_kills: int | None
    """`memory.oom_control` `oom_kill`: processes the kernel killed at the memory limit."""
    pids: int | None
    """`pids.current`: tasks (processes and threads) in the group now."""
    memory_bytes: int | None
    """`memory.usage_in_bytes`: memory charged to the group now."""
    memory_peak_bytes: int | None
    """`memory.max_usage_in_bytes`: the most it was ever charged."""
    cpu_ns: int | None
    """`cpuacct.usage`: CPU time of every task that ever ran in the group, in nanoseconds
    (a process that exited and was reaped still counts)."""


@dataclass(frozen=True)
class Cgroup:
    """One container's cgroup on a cgroup v1 host: `<root>/<controller>/<parent>/<cid>`."""

    parent: str
    cid: str
    root: Path = CGROUP_ROOT

    @property
    def name(self) -> str:
        return self.cid[:12]

    def dir(self, controller: str) -> Path:
        return self.root / controller / self.parent / self.cid

    def freezable(self) -> bool:
        """Whether this host holds the group's freezer files (not: a remote engine, v2)."""
        return (self.dir("freezer") / "freezer.state").is_file()

    def freeze(self, wait_s: float | None = None) -> bool:
        """`freeze_state` of the group's freezer. Raises OSError if there is no group."""
        return freeze_state(self.dir("freezer") / "freezer.state", wait_s)

    def thaw(self) -> None:
        try:
            (self.dir("freezer") / "freezer.state").write_text("THAWED")
        except OSError:
            pass  # gone, or never frozen here

    def _pids(self, controller: str) -> list[int]:
        text = (self.dir(controller) / "cgroup.procs").read_text()
        return [int(p) for p in text.split() if p.isdigit()]

    def procs(self, controller: str = "pids") -> list[int]:
        """The group's processes as listed now, unfrozen ([] if there is no group)."""
        try:
            return self._pids(controller)
        except OSError:
            return []

    def census(self) -> frozenset[int]:
        """Every process of the group, listed while it is frozen (no process can fork past
        the list while it is read), then thawed: about a millisecond, against ~60 ms for the
        engine's pause, top and unpause. Raises EngineError if it would not freeze."""
        try:
            if not self.freeze():  # a process that will not freeze: no census
                raise EngineError(f"container {self.name} would not freeze for its census")
            pids = self._pids("freezer")
        except OSError as exc:
            raise EngineError(f"census of {self.name}: {exc.strerror}") from exc
        finally:
            self.thaw()
        return frozenset(pids)

    def kill(self) -> int:
        """SIGKILL, by PID, every process in the group; how many. The group is frozen while
        it is listed and signalled, so no listed process can exit and have its PID reused in
        between; a group that will not freeze is signalled all the same, a moment after it
        was listed. No group (never started, gone; a remote engine, cgroup v2): 0."""
        killed = 0
        try:
            self.freeze()
            for pid in self._pids("freezer"):
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
        except OSError:
            pass
        finally:
            self.thaw()  # a frozen task dies of its SIGKILL once thawed
        return killed

    def limit_events(self) -> dict[str, int]:
        """How often the group hit its pids and memory ceilings, by name ("pids", "memory"),
        for each whose file could be read."""
        found = {
            "pids": _keyed(self.dir("pids") / "pids.events", "max"),
            "memory": _keyed(self.dir("memory") / "memory.oom_control", "oom_kill"),
        }
        return {k: v for k, v in found.items() if v is not None}

    def counters(self) -> Counters:
        return Counters(
            pids_max_hits=_keyed(self.dir("pids") / "pids.events", "max"),
            oom_kills=_keyed(self.dir("memory") / "memory.oom_control", "oom_kill"),
            pids=_single(self.dir("pids") / "pids.current"),
            memory_bytes=_single(self.dir("memory") / "memory.usage_in_bytes"),
            memory_peak_bytes=_single(self.dir("memory") / "memory.max_usage_in_bytes"),
            cpu_ns=_single(self.dir("cpuacct") / "cpuacct.usage"),
        )

    def make(self, controller: str, values: Mapping[str, int]) -> None:
        """Create the group in `controller`'s hierarchy (if it is not there) and write each
        of `values` (file name -> number) into it."""
        group = self.dir(controller)
        group.mkdir(parents=True, exist_ok=True)
        for name, value in values.items():
            (group / name).write_text(str(value))

    def leftovers(self) -> list[Path]:
        """The group's directories still on the host."""
        return [self.dir(c) for c in HIERARCHIES if self.dir(c).is_dir()]

    def remove(self) -> None:
        for path in self.leftovers():
            try:
                path.rmdir()
            except OSError:
                pass  # still has a task: the next sweep tries again


def groups_under(parent: str, root: Path = CGROUP_ROOT) -> list[Path]:
    """Every group directory under `parent`, in every v1 hierarchy (what `gc` looks for)."""
    found: list[Path] = []
    for ctl in HIERARCHIES:
        base = root / ctl / parent
        if base.is_dir():
            found.extend(p for p in base.iterdir() if p.is_dir())
    return found


V2_REFUSAL = (
    "cgroup v2 is not supported: its freezer, kill and counters are other files than v1's, "
    "and no host this code is tested on has them (the module's docstring)"
)


@dataclass(frozen=True)
class CgroupV2:
    """Where cgroup v2 would plug in: one group is one directory, `<root>/<parent>/<cid>`
    (the layout of the cgroupfs driver on a unified hierarchy). Refuses all but the read that
    v1 and v2 share (module docstring)."""

    parent: str
    cid: str
    root: Path = CGROUP_ROOT

    def dir(self) -> Path:
        return self.root / self.parent / self.cid

    def pids_max_hits(self) -> int | None:
        """`pids.events` `max`: the same file, key and meaning as v1's."""
        return _keyed(self.dir() / "pids.events", "max")

    def freeze(self, wait_s: float | None = None) -> NoReturn:
        raise NotImplementedError(V2_REFUSAL)

    def census(self) -> NoReturn:
        raise NotImplementedError(V2_REFUSAL)

    def kill(self) -> NoReturn:
        raise NotImplementedError(V2_REFUSAL)

    def counters(self) -> NoReturn:
        raise NotImplementedError(V2_REFUSAL)


def limit_events(parent: str, cid: str, root: Path = CGROUP_ROOT) -> dict[str, int]:
    """`Cgroup.limit_events`, the pids count read from a v2 group where v1 has none (the
    Docker backend's, which may run on a host of either)."""
    events = Cgroup(parent, cid, root).limit_events()
    if "pids" not in events:
        hits = CgroupV2(parent, cid, root).pids_max_hits()
        if hits is not None:
            events["pids"] = hits
    return events


def _keyed(path: Path, key: str) -> int | None:
    """The number on `key`'s line of a flat keyed file ("key value" lines)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if k == key and v.strip().isdigit():
            return int(v)
    return None


def _single(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
