"""The host side of the runc backend: mounts, where its containers' cgroups are (the cgroup
layer, `..cgroup`, does the rest), and the on-disk state that outlives a controller killed
with SIGKILL (what `assay gc` reads)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import EngineError

from ..cgroup import Cgroup
from ..owner import process_is_dead, this_process

STATE_ROOT = Path("/run/assay/oci")
"""On tmpfs: a reboot empties it, as it ends every container it describes."""
INIT_BINARIES = ("/usr/bin/tini-static", "/usr/bin/docker-init")
"""Where a host's static init may be, first found first: bound into a container with an init."""

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND = 32, 4096
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


# -- cgroups (runc's cgroupfs layout: /sys/fs/cgroup/<controller>/assay/<id>) ---------------

CGROUP_PARENT = "assay"


def cgroup_path(cid: str) -> str:
    """The container's `cgroupsPath` in its config.json."""
    return f"/{CGROUP_PARENT}/{cid}"


def cgroup(cid: str) -> Cgroup:
    return Cgroup(CGROUP_PARENT, cid)


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
    spawned: bool = False
    """Made to be started by `spawn` (`ContainerSpec.spawned`)."""
    stdin: bool = False
    """The main process reads its stdin from the controller (`ContainerSpec.stdin`)."""
    root: str = ""
    """The image's shared read-only root when the container runs on it directly; "" for an
    overlay of its own at `<state dir>/root`."""
    image_id: str = ""
    """The id ("sha256:...") of the image whose unpacked tree the root is made of: `gc` keeps
    that tree while the container exists. "" in a meta an older assay wrote."""

    def to_json(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Meta:
        raw: Any = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("meta.json is not an object")
        return cls(**raw)


STAGING = ".new."
"""A container's directory is made as `.new.<pid>.<start ticks>.<cid>` (see `make_state_dir`)."""


def state_dir(cid: str, root: Path = STATE_ROOT) -> Path:
    return root / "c" / cid


def make_state_dir(d: Path, meta: Meta) -> None:
    """Make container directory `d` holding its complete `meta.json` in one step: made under
    a staging name that says which process makes it, then renamed. A controller killed on
    the way leaves a staging directory `gc` judges by its name alone; a directory under a
    container's own name always has a meta that says whose it is (`remove_state_dir` keeps
    that true to the end). Raises FileNotFoundError if `d`'s parent is gone, OSError
    else."""
    staging = d.with_name(f"{STAGING}{this_process()}.{d.name}")
    staging.mkdir()
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(staging / "meta.json", flags, 0o644), "w") as f:
            f.write(meta.to_json())
        os.rename(staging, d)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def remove_state_dir(d: Path) -> None:
    """Remove `d` (its mounts already gone) with its `meta.json` last: a controller killed on
    the way leaves a directory `gc` can still attribute, or an empty one. Errors are left for
    the caller's check of what remains."""
    try:
        entries = list(os.scandir(d))
    except OSError:
        return
    for e in entries:
        if e.name == "meta.json":
            continue
        if e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(e.path)
    with contextlib.suppress(OSError):
        os.unlink(d / "meta.json")
    with contextlib.suppress(OSError):
        os.rmdir(d)


def staged(root: Path = STATE_ROOT) -> list[tuple[Path, bool | None]]:
    """Every staging directory under `root`, with whether the process making it is certainly
    dead (None: a name `make_state_dir` does not make)."""
    base = root / "c"
    if not base.is_dir():
        return []
    found = []
    for d in sorted(base.iterdir()):
        if d.name.startswith(STAGING):
            token = d.name[len(STAGING) :].rpartition(".")[0]
            found.append((d, process_is_dead(token)))
    return found


def all_metas(root: Path = STATE_ROOT) -> Iterator[Meta | str]:
    """Every container's meta under `root`; the bare id where its meta is unreadable (an
    empty directory a removal killed at its last step left, or an older version's): still
    removable by id. Staging directories are not containers yet (`staged`)."""
    base = root / "c"
    if not base.is_dir():
        return
    for d in sorted(base.iterdir()):
        if d.name.startswith(STAGING):
            continue
        try:
            yield Meta.from_json((d / "meta.json").read_text())
        except (OSError, ValueError, TypeError):
            yield d.name
