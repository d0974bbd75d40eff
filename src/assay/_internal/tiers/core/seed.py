"""The agent's workdir starts as the task's image has it.

The agent's workdir is a capped scratch volume (a tmpfs volume, which the engine does not fill
from the image), so whatever a task's environment image holds there (a repository to edit,
Harbor's /app) would be hidden. It is copied in before the agent starts: read from a stopped
container of the same image, owners set to the agent's uid (so it can edit), set-id bits and
special files dropped, and put into the agent's volume. Nothing of it touches the host's disk.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import PurePosixPath
from typing import IO, BinaryIO, cast

from assay.errors import TaskError

from ...model.task import Task
from ...runtime import ArchiveTooLarge, ContainerSpec, GradingScope, RuntimeError_
from ...runtime.base import AGENT_UID

_ABSENT: set[tuple[str, str]] = set()
"""(image, workdir) pairs whose image has nothing at the workdir: no seed container next time.
Safe to keep: a task's image reference names its content (a context digest, or a pinned id)."""


def seed_workdir(scope: GradingScope, task: Task, image: str, agent_cid: str) -> int:
    """Copy the image's content at the task's workdir into the agent's; return the number of
    entries copied (0 when the image has nothing there)."""
    rt = scope.runtime
    workdir = task.workdir
    if (image, workdir) in _ABSENT:
        return 0
    seed = scope.container(
        ContainerSpec(image=image, grading_id=scope.grading_id, role="seed"), start=False
    )
    cap = task.config.limits.artifact_bytes
    with tempfile.SpooledTemporaryFile(max_size=8 << 20) as raw:
        try:
            rt.get_archive(seed, workdir, cast(BinaryIO, raw), cap * 2 + (1 << 20))
        except ArchiveTooLarge:
            raise TaskError(
                str(task.root / "task.toml"),
                f"the environment image holds more under {workdir} than limits.artifact_bytes",
            ) from None
        except RuntimeError_:
            rt.oom_killed(seed)  # the container is there (else this raises): no such path
            scope.discard(seed)
            _ABSENT.add((image, workdir))
            return 0
        scope.discard(seed)
        raw.seek(0)
        data, count = _owned_by_agent(cast(IO[bytes], raw), PurePosixPath(workdir).name)
    if count:
        rt.put_archive(agent_cid, workdir, data)
    return count


def _owned_by_agent(raw: IO[bytes], top: str) -> tuple[bytes, int]:
    """The archive under `top/`, re-rooted at `.`, owned by the agent, without set-id bits,
    devices or fifos. A hard link becomes a copy of its file: the agent's workspace crosses the
    firewall, which refuses every link, so a second name of a file the image holds would fail
    every submission (symlinks stay: a repository task drops its own, unchanged, `same_links`)."""
    out = io.BytesIO()
    count = 0
    files: dict[str, tarfile.TarInfo] = {}
    with (
        tarfile.open(fileobj=raw, mode="r:") as src,
        tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as dst,
    ):
        for member in src:
            parts = PurePosixPath(member.name).parts
            if not parts or parts[0] != top or len(parts) == 1:
                continue
            if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
                continue
            first = files.get(member.linkname) if member.islnk() else None
            if member.islnk() and first is None:
                continue  # its file is outside `top`, or not a regular file
            if member.isreg():
                files[member.name] = member
            member.name = "/".join(parts[1:])
            source = member if first is None else first
            if first is not None:
                member.type, member.size, member.linkname = tarfile.REGTYPE, first.size, ""
            member.uid = member.gid = AGENT_UID
            member.uname = member.gname = ""
            member.mode &= 0o1777
            fileobj = src.extractfile(source) if member.isreg() else None
            dst.addfile(member, fileobj)
            count += 1
    return out.getvalue(), count
