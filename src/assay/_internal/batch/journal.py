"""A batch's output directory: the verdict files a rerun resumes from, the append-only event
log that names every grading id (so the next run can sweep what a killed one left), and the
lock that keeps one writer per directory.

Layout (everything written atomically: a temp name, then a rename; only the summary is
fsynced, see `publish`):
  OUT/<id>.dsse.json   one signed verdict per grading
  OUT/<id>.diag.json   its failed cases explained for the task owner, when there are any
                       (unsigned; model/diagnostics.py)
  OUT/<id>.patch.json  for a diff submission (assay.Patch): the diff's digest and the digest of
                       the tree it made, which the verdict names (a resume re-reads the diff,
                       not the tree, which only an agent container can make again)
  OUT/summary.json     counts, pass rate, failures with reasons, errors
  OUT/log.jsonl        append-only events; `start` lines name grading ids
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import stat
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.errors import AssayError, UsageError

from ..firewall.check import Accepted, check
from ..model.strict_json import StrictJSONError, loads_strict
from ..model.task import Task
from ..model.verdict import Verdict
from ..runtime.scope import grading_tempdirs
from ..signing.dsse import MAX_ENVELOPE_BYTES
from ..signing.sign import VerificationError, verify_envelope
from ..tiers.core.intake import firewall_limits
from .jobs import Job

SUMMARY = "summary.json"
LOG = "log.jsonl"
LOCK = ".assay-batch.lock"
ENVELOPE_SUFFIX = ".dsse.json"
DIAGNOSTICS_SUFFIX = ".diag.json"
PATCH_SUFFIX = ".patch.json"
MAX_PATCH_RECORD = 4 << 10
MAX_LOG_LINE = 64 << 10
_GID = re.compile(r"^g-[0-9a-f]{16}$")


def publish(path: Path, data: bytes) -> None:
    """Write one grading's file (its verdict, diagnostics or patch record) atomically: a temp
    name in the same directory, then a rename, so a reader (and a later resume) sees no file,
    the old one or the whole new one, never a torn one.

    Not fsynced, unlike `atomic_write`: a resume keeps a verdict only if its envelope verifies
    with our key and names the job's task and submission (`finished_verdict`), so one that a
    power cut left empty or torn is graded again, never trusted, and a diagnostics or patch
    record that does not parse is ignored. A process killed outright (SIGKILL) loses no file
    it published: the kernel writes it all the same. What fsync bought is only that a verdict
    of the last seconds before a power cut is not graded a second time, for about a
    millisecond of wall time per grading on an ext4 disk (docs/performance.md, the
    controller's profile)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o644)  # the umask may have narrowed it; make it exact
            fh.write(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def envelope_path(out: Path, job_id: str) -> Path:
    return out / f"{job_id}{ENVELOPE_SUFFIX}"


def diagnostics_path(out: Path, job_id: str) -> Path:
    return out / f"{job_id}{DIAGNOSTICS_SUFFIX}"


def finished_verdict(
    out: Path, job: Job, task: Task, private_key: Ed25519PrivateKey
) -> tuple[Verdict, bytes]:
    """The verdict already on disk for `job` and its envelope; raises VerificationError if it
    is not one."""
    path = envelope_path(out, job.id)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_ENVELOPE_BYTES + 1)
    verdict = verify_envelope(data, private_key.public_key())
    if verdict.task_id != task.id or verdict.task_digest != task.digest:
        raise VerificationError("batch:other-task", "the verdict is for another task or version")
    if verdict.submission_digest is None:
        raise VerificationError("batch:no-submission-digest", "the verdict names no submission")
    expected = submission_digest(task, job.submission)
    if expected is None and (made := resume_digest(job.submission)) is not None:
        expected = recorded_tree(out, job.id, made)
    if expected != verdict.submission_digest:
        raise VerificationError(
            "batch:submission-changed", "the submission is not the one the verdict graded"
        )
    return verdict, data


def resume_digest(submission: object) -> str | None:
    """What a submission that is made in a container (an `assay.Patch`) says it is, for a
    resume; None for any other (their digest is the firewall's, `submission_digest`)."""
    fn = getattr(submission, "resume_digest", None)
    value = fn() if callable(fn) else None
    return value if isinstance(value, str) else None


def record_patch(out: Path, job_id: str, submission: object, verdict: Verdict) -> None:
    """Beside the verdict of a diff submission: which diff made the tree the verdict names."""
    made = resume_digest(submission)
    if made is None or verdict.submission_digest is None:
        return
    doc = {"submission": made, "tree": verdict.submission_digest}
    publish(out / f"{job_id}{PATCH_SUFFIX}", json.dumps(doc).encode())


def recorded_tree(out: Path, job_id: str, made: str) -> str | None:
    """The tree digest recorded for this very diff, or None (no record, another diff, or a
    record that is not one)."""
    try:
        fd = os.open(out / f"{job_id}{PATCH_SUFFIX}", os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            doc = loads_strict(fh.read(MAX_PATCH_RECORD + 1), max_bytes=MAX_PATCH_RECORD,
                               max_depth=1)  # fmt: skip
    except (OSError, StrictJSONError):
        return None
    if not isinstance(doc, dict) or doc.get("submission") != made:
        return None
    tree = doc.get("tree")
    return tree if isinstance(tree, str) else None


class _Discard:
    """A sink that keeps nothing: only the firewall's digest of what it would write counts."""

    def write(self, data: bytes) -> int:
        return len(data)


def submission_digest(task: Task, path: object) -> str | None:
    """The submission digest a grading of `path` would record: the firewall's digest of the
    normalised archive, under the task's artifact globs and caps. None when there is none to
    compare (missing, unreadable, a link, refused, not a path): such a job is graded again,
    never kept.

    A tar is read in place and nothing is written. A directory is packed as intake packs it
    (links as links) into an anonymous temp file that vanishes with the process."""

    def digest_of(source: BinaryIO) -> str | None:
        sink = cast(BinaryIO, _Discard())
        result = check(source, sink, firewall_limits(task), task.config.artifacts)
        return result.digest if isinstance(result, Accepted) else None

    if not isinstance(path, Path):
        return None  # a Python caller's mapping or file object: there is nothing to re-read
    try:
        st = path.lstat()
        if stat.S_ISREG(st.st_mode):
            with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as fh:
                return digest_of(fh)
        if stat.S_ISDIR(st.st_mode):
            with tempfile.TemporaryFile() as packed:
                with tarfile.open(fileobj=packed, mode="w") as tf:
                    for child in sorted(path.iterdir()):
                        tf.add(child, arcname=child.name, recursive=True)
                packed.seek(0)
                return digest_of(packed)
    except (OSError, tarfile.TarError, AssayError):
        pass
    return None


class EventLog:
    """Append-only JSONL, one flushed line per event, safe to call from any thread.

    A line that cannot be written (the disk is full) is counted, not raised: the log serves
    recovery, and a worker that died on it would lose its job's outcome. A lost `start` line
    only means the next run does not sweep that grading; `assay gc` still finds it by owner."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self.lost = 0
        # A run killed mid-line leaves a torn last line; start ours on a fresh one.
        torn = path.exists() and path.stat().st_size > 0 and _last_byte(path) != b"\n"
        self._fh: IO[str] = path.open("a", encoding="utf-8")
        if torn:
            self._fh.write("\n")

    def write(self, event: str, **fields: Any) -> None:
        line = json.dumps(
            {"ts": datetime.now(UTC).isoformat(timespec="milliseconds"), "event": event, **fields}
        )
        with self._lock:
            try:
                self._fh.write(line + "\n")
                self._fh.flush()
            except OSError:
                self.lost += 1

    def close(self) -> None:
        with self._lock, contextlib.suppress(OSError):
            self._fh.close()


def _last_byte(path: Path) -> bytes:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1)


def unfinished_gradings(log: Path) -> list[str]:
    """Grading ids the log shows started and never ended: a run died under them."""
    if not log.exists():
        return []
    open_ids: dict[str, None] = {}
    with log.open("rb") as fh:
        for raw in iter(lambda: fh.readline(MAX_LOG_LINE + 1), b""):
            try:
                ev = loads_strict(raw, max_bytes=MAX_LOG_LINE, max_depth=4)
            except StrictJSONError:
                continue  # a torn line from a killed run
            # Only ids of the shape we mint: they go into label filters and a temp-dir glob.
            if not isinstance(ev, dict) or not _GID.match(str(ev.get("grading_id"))):
                continue
            gid = ev["grading_id"]
            if ev.get("event") == "start":
                open_ids[gid] = None
            else:
                open_ids.pop(gid, None)
    return list(open_ids)


def remove_tempdirs(grading_id: str) -> None:
    """The host temp dirs a killed grading's scope never got to remove."""
    for path in grading_tempdirs(grading_id):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def exclusive(out: Path) -> Iterator[None]:
    """One writer per output directory: a second run would sweep the first one's gradings."""
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"another `assay grade-many` is writing to {out}") from None
        yield
    finally:
        os.close(fd)
