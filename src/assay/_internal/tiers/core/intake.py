"""Agent -> host boundary: take the declared artifacts out, through the firewall, onto the host.

Nothing the agent left behind reaches any other component except as the firewall's
normalised archive (and a directory materialised from it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import BinaryIO, cast

from assay.errors import UsageError

from ...firewall.check import Accepted, FirewallLimits, ManifestEntry, Rejected, check
from ...firewall.dirstream import DirStream
from ...firewall.materialise import materialise
from ...firewall.tarnames import Globs
from ...model.task import STRICT_KINDS, Task
from ...runtime import (
    ArchiveTooLarge,
    Bind,
    ContainerSpec,
    GradingScope,
    Limits,
    RuntimeError_,
    Scratch,
)
from ...runtime.base import ceilings_hit, stopped_ceilings
from . import decoyfiles, decoys
from .seed import seed_workdir


class NormalisedArchive:
    """One crossing's normalised archive, the very bytes `materialise` read: held in memory up
    to `ARCHIVE_IN_MEMORY` (past it in an anonymous temp file) and written to a temp dir of the
    grading's scope only when a caller asks for it as a file (a verifier or compiler that is
    handed the archive as it is). Most crossings never are, and a temp dir and a file per
    crossing cost about as much CPU as the firewall's own work on a small submission, and on
    an ext4 disk about a millisecond of wall time (docs/performance.md, the controller's
    profile)."""

    def __init__(self, scope: GradingScope, purpose: str, held: BinaryIO) -> None:
        self._scope = scope
        self._purpose = purpose
        self._held: BinaryIO | None = held
        self._path: Path | None = None
        self._lock = threading.Lock()
        # Released with the submission that holds it (its grading's end), not left to the
        # spool's own finaliser, which would warn of an unclosed file.
        weakref.finalize(self, held.close)

    def path(self) -> Path:
        with self._lock:
            if self._path is None:
                assert self._held is not None
                path = self._scope.tempdir(f"{self._purpose}-archive") / "normalised.tar"
                with self._held, path.open("xb") as out:
                    self._held.seek(0)
                    shutil.copyfileobj(self._held, out)
                self._path, self._held = path, None
            return self._path


@dataclass(frozen=True)
class Submission:
    digest: str
    accepted: Accepted
    normalised: NormalisedArchive = field(repr=False, compare=False)
    files: Path
    """Materialised from the normalised archive; world-readable, safe to bind read-only."""
    decoy_seen: bool = False
    """Taken from an agent whose container held decoy answer keys, and holding their marker:
    the strict tier fails it with `decoy:output` (docs/tamper.md)."""

    @property
    def archive(self) -> Path:
        """The normalised archive as a file of the grading's scope (written on first use,
        while the scope is open)."""
        return self.normalised.path()


@dataclass(frozen=True)
class Refused:
    """The firewall (or a cap before it) refused the artifacts; the grading fails with `reason`."""

    reason: str
    member: str
    detail: str


@dataclass(frozen=True)
class AgentRun:
    exit_code: int | None
    timed_out: bool
    duration_s: float


@dataclass(frozen=True)
class Crossing:
    """How one archive crosses the firewall: its limits, the paths it may hold (None: any),
    the top directory stripped from its names, the name of its temp dirs, and the prefix of a
    refusal's reason (`judge-firewall` for what a judge left)."""

    limits: FirewallLimits
    artifacts: Sequence[str] | None
    strip_prefix: str | None
    purpose: str
    rules: str = "firewall"
    tree: bool = False
    """A trusted task tree: its links kept when they stay inside it (`check(..., tree=True)`)."""
    same_links: frozenset[tuple[str, str]] = frozenset()
    """A repository's own links, dropped from a candidate's archive when unchanged."""


PAGE_BYTES = 4096
ARCHIVE_IN_MEMORY = 4 << 20
"""An archive the host holds (an engine's tar, a normalised archive) stays in memory up to
this size, then goes to an anonymous temp file (no name, gone with the process)."""


def tmpfs_bytes(manifest: Sequence[ManifestEntry]) -> int:
    """What an accepted archive takes once unpacked into a tmpfs (a container's scratch): each
    file's bytes in whole pages, and a page for every entry at least. The firewall's byte cap
    counts a thousand 1-byte files as 1,000 bytes; a tmpfs holds them in 4 MB, and a scratch
    sized by the byte cap alone would refuse the upload, an engine error and no verdict."""
    return sum(PAGE_BYTES * max(1, -(-e.size // PAGE_BYTES)) for e in manifest)


def firewall_limits(task: Task) -> FirewallLimits:
    return FirewallLimits(
        max_entries=task.config.limits.artifact_entries,
        max_total_bytes=task.config.limits.artifact_bytes,
        max_file_bytes=min(task.config.limits.artifact_bytes, FirewallLimits().max_file_bytes),
    )


def through_firewall(scope: GradingScope, source: BinaryIO, how: Crossing) -> Submission | Refused:
    """`source` judged by the firewall and, if accepted, materialised into a fresh temp dir of
    the scope from the normalised archive, which `materialise` re-checks as it reads it."""
    held = cast(BinaryIO, tempfile.SpooledTemporaryFile(max_size=ARCHIVE_IN_MEMORY))
    try:
        result = check(
            source, held, how.limits, artifacts=how.artifacts, strip_prefix=how.strip_prefix,
            tree=how.tree, same_links=how.same_links,
        )  # fmt: skip
        if isinstance(result, Rejected):
            held.close()
            return Refused(f"{how.rules}:{result.rule}", result.member, result.detail)
        files = scope.tempdir(f"{how.purpose}-files")
        files.chmod(0o755)
        held.seek(0)
        materialise(held, files, links=how.tree)
    except BaseException:
        held.close()
        raise
    return Submission(result.digest, result, NormalisedArchive(scope, how.purpose, held), files)


def spool_from_container(scope: GradingScope, cid: str, path: str, cap: int) -> BinaryIO | Refused:
    """`path` of a container as the engine's tar, at most `cap` bytes, rewound: in memory up to
    `ARCHIVE_IN_MEMORY`, past it in an anonymous temp file. The caller closes it."""
    spool = cast(BinaryIO, tempfile.SpooledTemporaryFile(max_size=ARCHIVE_IN_MEMORY))
    try:
        scope.runtime.get_archive(cid, path, spool, cap)
    except ArchiveTooLarge as exc:
        spool.close()
        return Refused("limit:artifact-bytes", path, str(exc))
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def take_from_container(
    scope: GradingScope, cid: str, path: str, cap: int, how: Crossing
) -> Submission | Refused:
    """`path` of a (frozen) container, spooled with a raw byte cap, through the firewall."""
    spooled = spool_from_container(scope, cid, path, cap)
    if isinstance(spooled, Refused):
        return spooled
    with spooled:
        return through_firewall(scope, spooled, how)


def from_path(
    scope: GradingScope,
    task: Task,
    path: Path,
    same_links: frozenset[tuple[str, str]] = frozenset(),
) -> Submission | Refused:
    """Grade a directory or tar produced elsewhere: it crosses the same firewall.

    Nothing is packed first: a directory is streamed into the firewall with only its artifacts'
    data (dirstream), and from a tar only the kept files' data is spooled, so the host writes
    what is kept and no more (docs/firewall.md, "Host writes")."""
    how = submission_crossing(task, same_links)
    if path.is_dir():
        with DirStream(path, Globs(task.config.artifacts), how.limits) as stream:
            return through_firewall(scope, cast(BinaryIO, stream), how)
    if path.is_file():
        with path.open("rb") as fh:
            return through_firewall(scope, fh, how)
    raise UsageError(f"--submission {path}: no such file or directory")


def from_stream(
    scope: GradingScope,
    task: Task,
    stream: BinaryIO,
    same_links: frozenset[tuple[str, str]] = frozenset(),
) -> Submission | Refused:
    """Grade a seekable tar stream made on the host (a caller's mapping or file object): the
    same crossing as a tar path, read from its start each time, as a path would be."""
    stream.seek(0)
    how = submission_crossing(task, same_links)
    return through_firewall(scope, stream, how)


def submission_crossing(task: Task, same_links: frozenset[tuple[str, str]]) -> Crossing:
    return Crossing(
        firewall_limits(task), task.config.artifacts, None, "submission", same_links=same_links
    )


def agent_spec(
    task: Task,
    scope: GradingScope,
    image: str,
    agent_dir: Path | None,
    hardened: bool = True,
    bait: tuple[Path, Mapping[str, str]] | None = None,
) -> ContainerSpec:
    """The agent's container; `bait`: a directory of decoy answer keys (bound read-only at
    `decoyfiles.TESTS`) and the decoy variables of its environment."""
    lim = task.config.limits
    binds = [Bind(task.inputs_dir, "/task")]
    if agent_dir is not None:
        binds.append(Bind(agent_dir.resolve(), "/agent"))
    if bait is not None:
        binds.append(Bind(bait[0], decoyfiles.TESTS))
    return ContainerSpec(
        image=image,
        grading_id=scope.grading_id,
        role="agent",
        binds=tuple(binds),
        scratch=(Scratch(task.workdir, lim.artifact_bytes),),
        limits=Limits(
            memory_bytes=max(lim.memory_mb, 512) * 2**20, pids=max(lim.pids, 128), cpus=lim.cpus
        ),
        workdir=task.workdir,
        hardened=hardened,
        env=dict(bait[1]) if bait is not None else {},
    )


def _archive_top(task: Task) -> str:
    """The top name of the engine's archive of the workdir: its last path component."""
    return PurePosixPath(task.workdir).name


def run_agent(
    scope: GradingScope,
    task: Task,
    image: str,
    agent_cmd: str,
    agent_dir: Path | None,
    same_links: frozenset[tuple[str, str]] = frozenset(),
) -> tuple[Submission | Refused, AgentRun]:
    """Run the agent with the inputs at /task and a capped /workspace; freeze it; take the
    workspace out. Pausing first means a background process cannot change the files
    while they are read."""
    rt = scope.runtime
    cid = start_agent(scope, task, image, agent_dir)
    res = rt.exec(
        cid,
        ("sh", "-c", agent_cmd),
        deadline_s=task.config.limits.agent_timeout,
        output_cap=0,
        workdir=task.workdir,
        capture=False,
    )
    run = AgentRun(res.exit_code, res.timed_out, res.duration_s)
    if res.exited:
        # The whole sandbox stopped under the agent (runsc does at its memory limit): there is
        # nothing to freeze or read, and only a limit the agent hit can be blamed on it.
        _take_marker(cid)
        hit = stopped_ceilings(rt, cid)
        scope.discard(cid)
        if "memory" not in hit:
            raise RuntimeError_("the agent's container stopped during its run at no limit")
        return Refused("limit:agent-memory", task.workdir, "the agent hit its memory limit"), run
    return collect_agent(scope, task, cid, res.timed_out, same_links=same_links), run


_AGENT_MARKERS: dict[str, decoys.Marker] = {}
"""The decoy marker of each agent container started and not yet collected, by container."""
_MARKERS_LOCK = threading.Lock()


def _take_marker(cid: str) -> decoys.Marker | None:
    with _MARKERS_LOCK:
        return _AGENT_MARKERS.pop(cid, None)


def start_agent(scope: GradingScope, task: Task, image: str, agent_dir: Path | None) -> str:
    """The agent container, started (the CLI's agent phase and a host-driven session both).
    A strict task's agent gets decoy answer keys (docs/tamper.md), looked for in what
    `collect_agent` takes from it."""
    marker, bait = None, None
    if task.config.kind in STRICT_KINDS and task.config.decoys.enabled:
        marker = decoys.new_marker()
        root = scope.tempdir("agent-decoys")
        decoyfiles.plant(root, None, decoyfiles.agent_files(marker))
        bait = (root, decoys.environment(marker))
    cid = scope.container(agent_spec(task, scope, image, agent_dir, bait=bait))
    if marker is not None:
        with _MARKERS_LOCK:
            _AGENT_MARKERS[cid] = marker
        # Not collected (an engine error mid-run, a session closed early): gone all the same.
        scope.defer(lambda: _take_marker(cid))
    if task.environment is not None:
        seed_workdir(scope, task, image, cid)
    return cid


def collect_agent(
    scope: GradingScope,
    task: Task,
    cid: str,
    timed_out: bool,
    stopped_is_error: bool = False,
    same_links: frozenset[tuple[str, str]] = frozenset(),
) -> Submission | Refused:
    """Freeze the agent's container, take its workspace out through the firewall, remove it.

    `stopped_is_error`: a container that already stopped at no ceiling is an infrastructure
    error (a host-driven session whose container was killed), never a verdict."""
    rt = scope.runtime
    marker = _take_marker(cid)
    try:
        rt.pause(cid)
    except RuntimeError_:
        # Unfreezable after retries: its files cannot be read consistently, so it fails, naming
        # the ceiling it hit where there is one (a gVisor sandbox dying at its memory limit
        # cannot be frozen either).
        hit = ceilings_hit(rt, cid)
        stopped = stopped_is_error and not hit and rt.wait(cid, 1.0) is not None
        if stopped:
            hit = stopped_ceilings(rt, cid)
            stopped = not hit
        scope.discard(cid)
        if stopped:
            raise RuntimeError_("the agent's container stopped at no limit") from None
        limit = hit[0] if hit else "freeze"
        return Refused(f"limit:agent-{limit}", task.workdir, "the agent could not be frozen")
    cap = task.config.limits.artifact_bytes * 2 + (1 << 20)  # tar headers on top of content
    spooled = spool_from_container(scope, cid, task.workdir, cap)
    hit = ceilings_hit(rt, cid)
    scope.discard(cid)
    if isinstance(spooled, Refused):
        return spooled
    with spooled:
        # An agent that hit a ceiling fails, whatever it left behind: a result produced by
        # exhausting shared resources is not one to reward, and the reason must name the limit.
        if "pids" in hit:
            return Refused("limit:agent-pids", task.workdir, "the agent hit its process limit")
        if "memory" in hit:
            return Refused("limit:agent-memory", task.workdir, "the agent hit its memory limit")
        if spooled.seek(0, os.SEEK_END) >= task.config.limits.artifact_bytes * 0.95:
            return Refused("limit:agent-disk", task.workdir, "the agent filled its workspace")
        if timed_out:
            return Refused("limit:agent-time", task.workdir, "the agent ran past its deadline")
        spooled.seek(0)
        how = Crossing(
            firewall_limits(task), task.config.artifacts, _archive_top(task), "agent",
            same_links=same_links,
        )  # fmt: skip
        taken = through_firewall(scope, spooled, how)
    if isinstance(taken, Submission) and marker is not None:
        if decoyfiles.submission_holds(taken.files, marker):
            return replace(taken, decoy_seen=True)
    return taken
