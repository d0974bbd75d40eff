"""The host side of the runc backend: mounts, cgroup v1 files, and the on-disk state that
outlives a controller killed with SIGKILL (what `assay gc` reads)."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import EngineError

from .. import freezer

STATE_ROOT = Path("/run/assay/oci")
"""On tmpfs: a reboot empties it, as it ends every container it describes."""
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "assay"
CONTROLLERS = ("memory", "pids", "cpu", "cpuacct", "cpuset", "devices", "freezer", "blkio")

MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MNT_DETACH = 2

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def mount(source: str, target: Path, fstype: str, flags: int, data: str) -> None:
    """mount(2) directly: a `mount` process per scratch directory would cost more than the
    container it serves."""
    rc = _libc.mount(source.encode(), str(target).encode(), fstype.encode(), flags, data.encode())
    if rc != 0:
        err = ctypes.get_errno()
        raise EngineError(f"mount {fstype} on {target}: {os.strerror(err)}")


def umount(target: Path) -> None:
    """Lazily unmount; a target that is not mounted (or gone) is fine."""
    _libc.umount2(str(target).encode(), MNT_DETACH)


def mounted_under(prefix: Path) -> list[str]:
    """Mount points at or below `prefix` on this host, deepest first."""
    found = []
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            for line in f:
                point = line.split(b" ")[4].decode(errors="replace")
                point = point.replace("\\040", " ")
                if point == str(prefix) or point.startswith(f"{prefix}/"):
                    found.append(point)
    except OSError:
        return []
    return sorted(found, key=len, reverse=True)


# -- cgroups (v1, runc's cgroupfs layout: /sys/fs/cgroup/<controller>/assay/<id>) --------------


def cgroup_path(cid: str) -> str:
    return f"/{CGROUP_PARENT}/{cid}"


def cgroup_dir(controller: str, cid: str) -> Path:
    return CGROUP_ROOT / controller / CGROUP_PARENT / cid


def cgroup_leftovers(cid: str | None = None) -> list[Path]:
    """The backend's cgroup directories still on the host (of one container, or all)."""
    found = []
    for ctl in CONTROLLERS:
        parent = CGROUP_ROOT / ctl / CGROUP_PARENT
        if cid is not None:
            if (parent / cid).is_dir():
                found.append(parent / cid)
        elif parent.is_dir():
            found.extend(p for p in parent.iterdir() if p.is_dir())
    return found


def remove_cgroups(cid: str) -> None:
    for path in cgroup_leftovers(cid):
        try:
            path.rmdir()
        except OSError:
            pass  # still has a task: the next sweep tries again


def read_counter(path: Path, key: str) -> int:
    try:
        text = path.read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if k == key and v.strip().isdigit():
            return int(v)
    return 0


def limit_events(cid: str) -> dict[str, int]:
    return {
        "pids": read_counter(cgroup_dir("pids", cid) / "pids.events", "max"),
        "memory": read_counter(cgroup_dir("memory", cid) / "memory.oom_control", "oom_kill"),
    }


def procs(cid: str) -> list[int]:
    try:
        text = (cgroup_dir("pids", cid) / "cgroup.procs").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split() if p.isdigit()]


def freeze(cid: str) -> bool:
    """Freeze the container's freezer group; False if it would not hold FROZEN in time."""
    try:
        return freezer.freeze(cgroup_dir("freezer", cid) / "freezer.state")
    except OSError as exc:
        raise EngineError(f"freeze {cid[:12]}: {exc.strerror}") from exc


def thaw(cid: str) -> None:
    try:
        (cgroup_dir("freezer", cid) / "freezer.state").write_text("THAWED")
    except OSError:
        pass


def frozen_procs(cid: str) -> list[int]:
    """Every pid of the container, listed while its group is frozen (no fork past the list)."""
    if not freeze(cid):
        thaw(cid)
        raise EngineError(f"container {cid[:12]} would not freeze for its census")
    try:
        text = (cgroup_dir("freezer", cid) / "cgroup.procs").read_text()
    except OSError as exc:
        raise EngineError(f"census of {cid[:12]}: {exc.strerror}") from exc
    finally:
        thaw(cid)
    return [int(p) for p in text.split() if p.isdigit()]


def kill_cgroup(cid: str) -> int:
    """SIGKILL every process of the container by PID while its group is frozen (no pid can be
    reused between list and signal); how many."""
    killed = 0
    try:
        freeze(cid)
        text = (cgroup_dir("freezer", cid) / "cgroup.procs").read_text()
        for pid in (int(p) for p in text.split() if p.isdigit()):
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    except (OSError, EngineError):
        pass  # no group (never started, or gone)
    finally:
        thaw(cid)
    return killed


# -- state that outlives the controller ----------------------------------------------------


@dataclass(frozen=True)
class Meta:
    """What `meta.json` of one container says: enough for `gc` to find and remove it."""

    cid: str
    grading_id: str
    role: str
    owner: str
    exec_user: str
    hardened: bool
    switch_user: bool
    workdir: str
    env: dict[str, str]
    mounts: dict[str, str]
    """Container target -> host path of /tmp, every scratch directory and bind (archives go
    through these host paths)."""
    read_only: list[str]
    """The targets in `mounts` bound read-only."""
    read_only_root: bool

    def to_json(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Meta:
        raw: Any = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("meta.json is not an object")
        return cls(**raw)


def state_dir(cid: str, root: Path = STATE_ROOT) -> Path:
    return root / "c" / cid


def all_metas(root: Path = STATE_ROOT) -> Iterator[Meta | str]:
    """Every container's meta under `root`; the bare id where its meta is unreadable (a
    controller killed between mkdir and write): still removable by id."""
    base = root / "c"
    if not base.is_dir():
        return
    for d in sorted(base.iterdir()):
        try:
            yield Meta.from_json((d / "meta.json").read_text())
        except (OSError, ValueError, TypeError):
            yield d.name
