"""Turn what a caller hands `Grader.grade` into a `Source` the tiers take.

Every form ends as a tar the tier reads through the archive firewall: a path as it is, a
mapping or a file object as a tar stream spooled in memory (or, for the unsafe baselines, to a
private temp file), never unpacked by us.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Union, cast

from assay.errors import UsageError

from ..firewall.mapping import write_mapping_tar
from ..model.task import Task
from ..runtime.scope import grading_tempdir
from ..tiers.core.controller import Source
from ..tiers.core.intake import Refused

TOO_LARGE = "limit:artifact-bytes"
SPOOL_IN_MEMORY = 4 << 20
"""The most of a mapping's or file object's tar kept in memory; the rest goes to an anonymous
temp file (the firewall's own spool is the same size)."""

_COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class Agent:
    """Run `command` (with `sh -c`) as the agent in the agent container, with the task's inputs
    at /task and `directory` (if any) read-only at /agent; grade what it leaves in /workspace."""

    command: str
    directory: str | os.PathLike[str] | None = None


@dataclass(frozen=True)
class Patch:
    """A unified diff (SWE-bench's `model_patch`) for a task with an `[environment]`. It is never
    parsed on the host: a fresh, offline, limited agent container of the task's image applies it
    at the workdir (`git apply`, then `patch --fuzz=5`, then `git apply --3way`, as SWE-bench's
    harness tries them, without its partial `--reject`), and the tree it leaves is the
    submission, taken through the firewall. An empty patch fails the grading with `patch:empty`,
    one over 16 MiB with `patch:too-large`, one that does not apply with `patch:does-not-apply`."""

    diff: str | bytes

    def resume_digest(self) -> str:
        """The diff's digest: a batch keeps a verdict on resume only for the very same diff."""
        data = self.diff
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        return "sha256:" + hashlib.sha256(data).hexdigest()


Submission = Union[  # noqa: UP007  (a runtime alias: `X | Y` of these types is not one)
    str, os.PathLike[str], BinaryIO, Mapping[str, Union[str, bytes]], Agent, Patch  # noqa: UP007
]
"""A directory, a tar file (path or binary file object), a mapping of relative path to
contents, an `Agent` to run, or a `Patch` to apply."""


def raw_cap(task: Task) -> int:
    """How many raw bytes a file-object submission may have: the task's artifact cap plus room
    for tar headers (the firewall then applies the exact limits)."""
    return task.config.limits.artifact_bytes * 2 + (1 << 20)


@contextmanager
def as_source(
    submission: Submission, task: Task, grading_id: str, *, as_path: bool = False
) -> Iterator[Source]:
    """A Source for `submission`, valid while the block runs. A mapping or a file object
    becomes a tar stream in memory (past `SPOOL_IN_MEMORY`, an anonymous temp file that
    vanishes with the process). `as_path`: a file in a temp dir of the grading instead (named
    by its id, so a batch that was killed sweeps it on its next run), for the unsafe
    baselines, which copy a path as it is."""
    if isinstance(submission, Agent):
        directory = None if submission.directory is None else Path(submission.directory)
        yield Source(agent_cmd=submission.command, agent_dir=directory)
        return
    if isinstance(submission, Patch):
        diff = submission.diff
        if isinstance(diff, str):
            diff = diff.encode("utf-8", "surrogateescape")
        if not isinstance(diff, bytes):
            raise UsageError(f"assay.Patch takes str or bytes, not {type(diff).__name__}")
        yield Source(patch=diff)
        return
    if isinstance(submission, str | os.PathLike):
        yield Source(path=Path(submission))
        return
    if not (isinstance(submission, Mapping) or hasattr(submission, "read")):
        raise UsageError(
            "a submission is a directory or tar path, a binary file object, a mapping "
            f"of relative path to str or bytes, an assay.Agent or an assay.Patch; not a "
            f"{type(submission).__name__}"
        )
    if not as_path:
        # In memory: a temp dir and a file per grading cost about as much CPU as the firewall
        # does for a small submission, and a millisecond of wall time on an ext4 disk
        # (docs/performance.md, the controller's profile).
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
            sink = cast(BinaryIO, spool)
            refused = _spool(submission, task, sink)
            sink.seek(0)
            yield Source(refused=refused) if refused else Source(stream=sink)
        return
    tmp = grading_tempdir(grading_id, "submission")
    try:
        spooled = tmp / "submission.tar"
        with spooled.open("xb") as sink:
            refused = _spool(submission, task, sink)
        yield Source(refused=refused) if refused else Source(path=spooled)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _spool(
    submission: Mapping[str, str | bytes] | BinaryIO, task: Task, sink: BinaryIO
) -> Refused | None:
    """Write `submission` into `sink` as a tar stream; a file object over its raw cap is
    refused (the candidate's bytes, too many: its failed verdict, not a usage error)."""
    if isinstance(submission, Mapping):
        write_mapping_tar(submission, sink)
        return None
    cap = raw_cap(task)
    if not _copy_capped(submission, sink, cap):
        why = f"the submission is larger than {cap} bytes, over the task's cap"
        return Refused(TOO_LARGE, "<file object>", why)
    return None


def _copy_capped(source: BinaryIO, sink: BinaryIO, cap: int) -> bool:
    """Copy `source` into `sink`; False (and no more read) once it passes `cap` bytes."""
    total = 0
    while chunk := source.read(_COPY_CHUNK):
        if not isinstance(chunk, bytes | bytearray):
            raise UsageError("a file-object submission must be opened in binary mode")
        total += len(chunk)
        if total > cap:
            return False
        sink.write(chunk)
    return True
