"""The one interface every container backend implements.

Everything the controller does to a container goes through `Runtime`, so the
hardening lives in one place per backend and the conformance suite
(`conformance.py`) can prove each backend behaves the same.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal, Protocol

from assay.errors import AssayError, InfrastructureError

LABEL = "assay.grading"
ROLE_LABEL = "assay.role"
UNPRIVILEGED_USER = "1000:1000"


@dataclass(frozen=True)
class Limits:
    """Per-container ceilings; the defaults suit one candidate case, not a build."""

    memory_bytes: int = 512 * 2**20
    pids: int = 128
    cpus: float = 1.0
    tmp_bytes: int = 64 * 2**20


@dataclass(frozen=True)
class Bind:
    """A host directory the controller prepared, visible inside the container."""

    source: Path
    target: str
    read_only: bool = True


@dataclass(frozen=True)
class Scratch:
    """A size-capped writable directory whose content can be read back while the container lives.

    Backed by a tmpfs-typed volume in Docker, so a disk-fill attack hits its cap
    instead of the host disk.
    """

    target: str
    size_bytes: int


@dataclass(frozen=True)
class ContainerSpec:
    image: str
    grading_id: str
    role: str
    command: tuple[str, ...] = ("sleep", "infinity")
    user: str = UNPRIVILEGED_USER
    env: Mapping[str, str] = field(default_factory=dict)
    binds: tuple[Bind, ...] = ()
    scratch: tuple[Scratch, ...] = ()
    limits: Limits = Limits()
    workdir: str | None = None
    # Only the naive baseline (T0) and fresh baseline (T1) turn these off, to model
    # what unsafe harnesses do; every real tier keeps them.
    hardened: bool = True
    network: Literal["none", "host"] = "none"
    init: bool = True
    """False: `command` is the container's PID 1, run as `user`. When it exits, the kernel
    ends every other process in the container's PID namespace before the container counts
    as stopped (the harbor tier's tests). True: the engine's init and the keep-alive run as
    root, and every exec as `user`."""
    mounts_of: str | None = None
    """Another container of the grading whose binds and scratch this one mounts too, at the
    same paths, on top of its own (Docker's `volumes_from`)."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None
    """None when the command was still running at its deadline."""
    stdout: bytes
    stderr: bytes
    timed_out: bool
    truncated: bool
    """The command wrote more than the cap; the container was killed to stop it."""
    duration_s: float
    exited: bool = False
    """The container itself stopped while the command ran, taking the command's record with
    it (gVisor stops its whole sandbox at the memory limit); the caller asks `oom_killed`."""


class RuntimeError_(InfrastructureError):
    """The backend failed in a way that leaves no trustworthy result."""


class ContainerStuckError(RuntimeError_):
    """The engine answers, but not about one container: a call on it ran past the client's
    timeout (a runtime shim that stopped answering; seen with Debian's gVisor). Only that
    grading fails, also when the container could be removed after all (`removed`): what the
    engine reported about it while it was stuck is not trusted."""

    def __init__(self, message: str, fix: str | None = None, removed: bool = False) -> None:
        super().__init__(message, fix)
        self.removed = removed


class CensusUnavailable(RuntimeError_):
    """The backend cannot list a container's processes from outside (runsc here): whatever
    relies on the list (reusing a judge) must not happen."""


class ArchiveTooLarge(AssayError):
    """An archive read out of a container exceeded its byte cap."""

    exit_code = 1

    def __init__(self, cap: int) -> None:
        super().__init__(f"archive larger than its cap of {cap} bytes")
        self.cap = cap


def ceilings_hit(rt: Runtime, cid: str) -> list[str]:
    """Which of the container's ceilings it hit: "pids", "memory" (an OOM kill counts)."""
    events = rt.limit_events(cid)
    hit = ["pids"] if events.get("pids", 0) > 0 else []
    if rt.oom_killed(cid) or events.get("memory", 0) > 0:
        hit.append("memory")
    return hit


STOPPED_GRACE_S = 3.0


def stopped_ceilings(rt: Runtime, cid: str, grace_s: float = STOPPED_GRACE_S) -> list[str]:
    """The ceilings hit by a container that stopped under its command. The engine learns of a
    stop and of an OOM kill as two events, and may record the stop first (a runsc sandbox
    killed at its memory limit, on a loaded machine, then reads as stopped at no limit, with
    its cgroup already gone). So a stopped container that shows no ceiling yet is asked again
    for a few seconds before its stop is put down to anything else. Only that path waits."""
    deadline = time.monotonic() + grace_s
    while True:
        hit = ceilings_hit(rt, cid)
        if hit or time.monotonic() >= deadline:
            return hit
        time.sleep(0.05)


class Runtime(Protocol):
    """What the controller needs from a container engine, and nothing more."""

    name: str

    def create(self, spec: ContainerSpec) -> str: ...

    def start(self, cid: str) -> None: ...

    def exec(
        self,
        cid: str,
        argv: tuple[str, ...],
        *,
        deadline_s: float,
        output_cap: int,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        capture: bool = True,
        keep_container: bool = False,
    ) -> ExecResult:
        """Run argv as the container's user. Past `deadline_s` or over `output_cap` the whole
        container is killed, unless `keep_container`: then the command is left running (the
        caller stops what it started) and the result says timed_out or truncated."""
        ...

    def wait(self, cid: str, deadline_s: float) -> int | None: ...

    def kill(self, cid: str) -> None: ...

    def pause(self, cid: str) -> None: ...

    def remove(self, cid: str) -> None: ...

    def put_archive(self, cid: str, path: str, data: bytes) -> None: ...

    def get_archive(self, cid: str, path: str, sink: BinaryIO, cap: int) -> int: ...

    def logs(self, cid: str, cap: int) -> bytes: ...

    def oom_killed(self, cid: str) -> bool: ...

    def limit_events(self, cid: str) -> dict[str, int]:
        """Counts of ceiling hits by name ("pids", "memory"); {} where the backend cannot see."""
        ...

    def processes(self, cid: str) -> list[tuple[int, str]]:
        """(host pid, command name) of every process in the container, as the engine sees it
        from outside (a paused container too); nothing running inside is asked."""
        ...

    def census(self, cid: str) -> frozenset[int]:
        """The host pids of every process in the container, listed from outside while it is
        frozen, so that no process escapes the list by forking; raises CensusUnavailable where
        the backend cannot."""
        ...

    def image_digest(self, image: str) -> str: ...

    def sweep(self, grading_id: str | None = None) -> int:
        """Remove every container and volume labelled for this grading (all gradings if None)."""
        ...

    def leftovers(self, grading_id: str | None = None) -> list[str]:
        """Names of labelled containers/volumes still present; empty after a clean grading."""
        ...

    def gradings(self) -> set[str]:
        """Every grading id with a labelled container or volume here, running or not."""
        ...

    def orphans(self) -> set[str]:
        """Grading ids whose every labelled container or volume belongs to a controller that
        is certainly dead (what `assay gc` may remove beside running gradings)."""
        ...
