"""The one interface every container backend implements (public as `assay.runtime`).

Everything the controller does to a container goes through `Runtime`, so the
hardening lives in one place per backend and the conformance suite
(`assay.runtime.conformance`) can prove each backend behaves the same.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal, Protocol

from assay.errors import ArchiveTooLargeError, CensusUnavailableError, EngineError
from assay.errors import ContainerStuckError as ContainerStuckError

LABEL = "assay.grading"
"""The label every container and volume of a grading carries, valued with its grading id:
what `sweep`, `leftovers` and `gradings` find them by."""
ROLE_LABEL = "assay.role"
AGENT_UID = 1000
"""The uid (and gid) every container of a grading runs its processes as: agent, candidate,
judge; files handed to the agent are owned by it."""
UNPRIVILEGED_USER = f"{AGENT_UID}:{AGENT_UID}"


@dataclass(frozen=True)
class Limits:
    """Per-container ceilings; the defaults suit one candidate case, not a build. A backend
    enforces each one on the whole container (every process in it together)."""

    memory_bytes: int = 512 * 2**20
    """Memory, swap included; past it the kernel kills (`Runtime.oom_killed` then says so)."""
    pids: int = 128
    """Processes and threads at once (a fork bomb stops here)."""
    cpus: float = 1.0
    """CPU time as a number of cores."""
    tmp_bytes: int = 64 * 2**20
    """Size of the writable /tmp of a hardened container (its root is read-only)."""


@dataclass(frozen=True)
class Bind:
    """A host directory the controller prepared, visible inside the container at `target`;
    read-only unless `read_only` is False."""

    source: Path
    target: str
    read_only: bool = True


@dataclass(frozen=True)
class Scratch:
    """A size-capped writable directory whose content can be read back while the container lives.

    Backed by a tmpfs-typed volume in Docker, so a disk-fill attack hits its cap
    instead of the host disk. It is owned by `UNPRIVILEGED_USER` and carries `LABEL` like its
    container, so `sweep` removes it too.
    """

    target: str
    size_bytes: int


@dataclass(frozen=True)
class ContainerSpec:
    """Everything `Runtime.create` needs to make one container of one grading.

    A hardened container (the default, and every real tier's) has: its commands run as
    `user`, never root; no capabilities and no privilege escalation; a read-only root with a
    writable /tmp of `limits.tmp_bytes`; no network at all; no core dumps; every ceiling in
    `limits`. Its only writable places are /tmp, its `scratch` directories and any bind
    mounted with `read_only=False`.
    """

    image: str
    """An image already on the engine (a backend never pulls)."""
    grading_id: str
    """The grading it belongs to: the value of its `LABEL`, what `sweep` removes it by."""
    role: str
    """What it is for ("candidate", "judge", "agent"...), for messages and labels only."""
    command: tuple[str, ...] = ("sleep", "infinity")
    """The container's main process: a keep-alive while the work runs through `Runtime.exec`,
    or, with `spawned`, the work itself."""
    user: str = UNPRIVILEGED_USER
    """uid:gid every `exec` in it runs as, and a `spawned` container's main process."""
    env: Mapping[str, str] = field(default_factory=dict)
    binds: tuple[Bind, ...] = ()
    scratch: tuple[Scratch, ...] = ()
    limits: Limits = Limits()
    workdir: str | None = None
    """The working directory of its commands (default: the image's)."""
    # Only the naive baseline (T0) and fresh baseline (T1) turn these off, to model
    # what unsafe harnesses do; every real tier keeps them.
    hardened: bool = True
    switch_user: bool = False
    """The strict tier's candidate: its runner (the main process `spawn` starts, or an exec)
    starts as root holding only CAP_SETUID, CAP_SETGID and CAP_SETPCAP, and itself drops them,
    keeping a uid of its own and running each case as `user` (_incontainer/confine.py). The
    three are the container's whole set: its root init holds them too, and no other uid can
    signal, trace or open the init. Hardened containers only."""
    network: Literal["none", "host"] = "none"
    """Only for an unhardened container; a hardened one has no network whatever this says."""
    init: bool = True
    """False: `command` is the container's PID 1, run as `user`. When it exits, the kernel
    ends every other process in the container's PID namespace before the container counts
    as stopped (the harbor tier's tests). True: the engine's init is PID 1 and `command` its
    child; the init and the keep-alive run as root, and every exec as `user` (a `spawned`
    container's init runs with its command's ids)."""
    mounts_of: str | None = None
    """Another container of the grading whose binds and scratch this one mounts too, at the
    same paths, on top of its own (Docker's `volumes_from`)."""
    spawned: bool = False
    """`command` is the work, started by `Runtime.spawn` or `Runtime.run` with no exec: it
    and its init run as `user` (with `switch_user`, as root holding the three capabilities),
    and the container stops when it ends. False: started by `Runtime.start`, for `exec`."""
    stdin: bool = False
    """A `spawned` container's main process reads its stdin from the controller
    (`Spawned.stdin`, or the bytes `Runtime.run` is given); otherwise its stdin is empty."""


@dataclass(frozen=True)
class ExecResult:
    """What one `Runtime.exec` observed. Everything in it came out of a container: hostile
    bytes, to be parsed with limits."""

    exit_code: int | None
    """None when the command did not finish (past its deadline or over its output cap)."""
    stdout: bytes
    """At most `output_cap` bytes of stdout and stderr together (empty if not captured)."""
    stderr: bytes
    timed_out: bool
    """The command was still running at `deadline_s`."""
    truncated: bool
    """The command wrote more than the cap; the container was killed to stop it (unless
    `keep_container`)."""
    duration_s: float
    """Wall-clock seconds from the call to its result."""
    exited: bool = False
    """The container itself stopped while the command ran, taking the command's record with
    it (gVisor stops its whole sandbox at the memory limit); the caller asks `oom_killed`."""


@dataclass
class Spawned:
    """A container's main process as `Runtime.spawn` started it: its stdio are pipes this
    process holds. What comes out of them is hostile bytes, to be read with limits."""

    cid: str
    stdin: BinaryIO | None
    """Writable, unbuffered: the main process's stdin (None unless the spec asked for
    `stdin`). Closing it is the process's end of input."""
    stdout: BinaryIO
    """Readable, unbuffered, with a file descriptor (`fileno()`) a selector can wait on."""
    stderr: BinaryIO
    """As `stdout`. Read both: a process blocked on a full pipe never ends."""

    def close(self) -> None:
        """Close this process's ends of the pipes (idempotent)."""
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


# The errors live in assay.errors; these are the names the implementation has always used.
RuntimeError_ = EngineError
CensusUnavailable = CensusUnavailableError
ArchiveTooLarge = ArchiveTooLargeError


def ceilings_hit(rt: Runtime, cid: str) -> list[str]:
    """Which of the container's ceilings it hit: "pids", "memory" (an OOM kill counts)."""
    events = rt.limit_events(cid)
    hit = ["pids"] if events.get("pids", 0) > 0 else []
    if rt.oom_killed(cid) or events.get("memory", 0) > 0:
        hit.append("memory")
    return hit


STOPPED_GRACE_S = 30.0


def stopped_ceilings(rt: Runtime, cid: str, grace_s: float | None = None) -> list[str]:
    """The ceilings hit by a container that stopped under its command. The engine learns of a
    stop and of an OOM kill as two events, and may record the stop first (a runsc sandbox
    killed at its memory limit, on a loaded machine, then reads as stopped at no limit, with
    its cgroup already gone). So a stopped container that shows no ceiling yet is asked again
    before its stop is put down to anything else. Only that path waits, so the wait can be
    long: 3 s was not enough under a 1-minute load of 18 (Docker + gVisor recorded the agent's
    OOM kill later, and a memory bomb became "stopped at no limit", no verdict); no honest
    grading comes here, and a container stopped from outside is told after 30 s. `grace_s`:
    `STOPPED_GRACE_S`, read at the call, unless given."""
    deadline = time.monotonic() + (STOPPED_GRACE_S if grace_s is None else grace_s)
    while True:
        hit = ceilings_hit(rt, cid)
        if hit or time.monotonic() >= deadline:
            return hit
        time.sleep(0.05)


class Runtime(Protocol):
    """What the controller needs from a container engine, and nothing more: the contract a
    backend is written against (`assay.runtime`). `DockerRuntime` is the reference; every
    backend must pass `assay.runtime.conformance`.

    `cid` is whatever `create` returned. Every method may raise `assay.errors.EngineError`
    (or a subclass) when the engine fails in a way that leaves no trustworthy result, and
    `assay.errors.EngineUnavailableError` when no engine answers at all: the grading then
    ends with no verdict, never with a pass. A call on a container that no longer exists
    raises `EngineError`, except `kill` and `remove`, which are idempotent.
    """

    name: str
    """A short name for messages and verdicts ("docker", "fake")."""

    def create(self, spec: ContainerSpec) -> str:
        """Create (but do not start) a container as `spec` says, with its scratch volumes,
        all labelled `LABEL=spec.grading_id` so that `sweep` finds them.

        Returns the container's id. Raises `EngineError` if the image is not on the engine
        or the engine refuses the container."""
        ...

    def start(self, cid: str) -> None:
        """Start the container's main process (`spec.command`). Raises `EngineError`."""
        ...

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
        """Run argv (no shell) in the running container as its spec's `user`, with `env`
        added and in `workdir` (default: the spec's), and wait for it at most `deadline_s`
        seconds; the backend enforces the deadline itself (an engine's exec API has none).

        stdout and stderr are collected unless `capture` is False; past `deadline_s` or over
        `output_cap` bytes (stdout and stderr together) the whole container is killed, unless
        `keep_container`: then the command is left running (the caller stops what it
        started) and the result says timed_out or truncated. Returns the `ExecResult`; a
        command's own failure is a non-zero `exit_code`, never an exception. Raises
        `EngineError` if the container is not running or the engine loses the command."""
        ...

    def spawn(self, cid: str) -> Spawned:
        """Start the container `cid`, created from a `spawned` spec and never started, with
        its main process's stdio as pipes this process holds (`Spawned`): the main process is
        `spec.command`, under the engine's init when `spec.init`, run as `spec.user`, or with
        `switch_user` as root holding exactly CAP_SETUID, CAP_SETGID and CAP_SETPCAP (the
        container's whole set); it reads `Spawned.stdin` if `spec.stdin`, else an empty
        stdin. Every other promise of a hardened spec holds for it. No exec is needed: the
        container does its work and stops when its main process ends, and stays, stopped,
        until `remove`, so that `wait` gives the exit status (as `run` tells it) and
        `limit_events` and `oom_killed` what it hit. The caller reads stdout and stderr (a
        process blocked on a full pipe never ends), enforces its own deadline and cap (`kill`)
        and closes the `Spawned`. Raises `EngineError` if the container cannot start, or was
        not created `spawned`."""
        ...

    def run(
        self, cid: str, *, deadline_s: float, output_cap: int, stdin: bytes = b""
    ) -> ExecResult:
        """The one-shot use of `spawn`: start the container `cid` (created `spawned`, never
        started), write `stdin` to its main process and close it (`spec.stdin` must be set unless
        `stdin` is empty: else `ValueError`), collect stdout and stderr, and wait for the
        process to end, at most `deadline_s` seconds from the container's start (the engine's
        own time to attach and start it is not the program's: a slow engine must not fail a
        correct program); the backend enforces the deadline itself. Past the deadline or over
        `output_cap` bytes (stdout and stderr together) the container is killed and the result
        says timed_out or truncated, with no exit code. Otherwise `exit_code` is the main
        process's status, 128 + N when signal N ended it (as a shell tells it, with an init or
        not). The container stays, stopped, until `remove`: its ceilings are read after `run`
        (`ceilings_hit`). A command's own failure is its exit status, never an exception;
        raises `EngineError` if the container cannot start or the engine loses it.
        `run_spawned` builds it on `spawn`."""
        ...

    def wait(self, cid: str, deadline_s: float) -> int | None:
        """Wait at most `deadline_s` seconds for the container to stop; returns its main
        process's exit status, or None if it still runs."""
        ...

    def kill(self, cid: str) -> None:
        """Stop the container now (SIGKILL). Idempotent: a stopped or removed one is fine."""
        ...

    def pause(self, cid: str) -> None:
        """Freeze every process in the container (before its files are read out, so that
        nothing changes them meanwhile). Raises `EngineError` if it is not running."""
        ...

    def remove(self, cid: str) -> None:
        """Remove the container, running or not (its scratch volumes go with it, or at the
        latest with `sweep`). Idempotent. Raises `assay.errors.ContainerStuckError` when the
        engine answers but not about this container (its `removed` says whether it went in
        the end; if not, `leftovers` shows it and `sweep` retries)."""
        ...

    def put_archive(self, cid: str, path: str, data: bytes) -> None:
        """Unpack the tar `data` into the directory `path` of the container. Raises
        `EngineError` if the engine refuses it (a read-only root must refuse it)."""
        ...

    def get_archive(self, cid: str, path: str, sink: BinaryIO, cap: int) -> int:
        """Write a tar of `path` in the container to `sink`, streaming, and return its size.
        Raises `assay.errors.ArchiveTooLargeError` as soon as the tar passes `cap` bytes
        (`sink` then holds a prefix to throw away), `EngineError` if there is no such path.
        The tar is hostile bytes: read it only through the archive firewall."""
        ...

    def logs(self, cid: str, cap: int) -> bytes:
        """At most `cap` bytes of what the main process printed (b"" where the backend keeps
        none, as Docker's does not)."""
        ...

    def oom_killed(self, cid: str) -> bool:
        """Whether the kernel killed a process of the container at its memory limit."""
        ...

    def limit_events(self, cid: str) -> dict[str, int]:
        """Counts of ceiling hits by name ("pids", "memory"); {} where the backend cannot see."""
        ...

    def processes(self, cid: str) -> list[tuple[int, str]]:
        """(host pid, command name) of every process in the container, as the engine sees it
        from outside (a paused container too); nothing running inside is asked. Raises
        `EngineError` if the engine's list is missing or malformed."""
        ...

    def census(self, cid: str) -> frozenset[int]:
        """The host pids of every process in the container, listed from outside while it is
        frozen, so that no process escapes the list by forking; raises
        `assay.errors.CensusUnavailableError` where the backend cannot (a judge is then never
        reused), `EngineError` if it would not freeze."""
        ...

    def image_digest(self, image: str) -> str:
        """The image's content digest ("sha256:..."), recorded in every verdict. Raises
        `assay.errors.ImageMissingError` if the image is not on the engine (never pulls)."""
        ...

    def sweep(self, grading_id: str | None = None) -> int:
        """Remove every container and volume labelled for this grading (all gradings if
        None), running or not; returns how many it removed. Raises `EngineError` if some
        could not be removed."""
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
