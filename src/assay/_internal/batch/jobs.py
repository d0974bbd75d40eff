"""The jobs of a batch: from a JSONL manifest or a directory of submissions; ids that are safe
file names, unique, and stable across runs (they name the verdict files a rerun resumes from)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import UsageError

from ..model.strict_json import StrictJSONError, loads_strict, shown
from ..model.task import Task, load_task

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.bz2")
MAX_MANIFEST_LINE = 64 << 10
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9._-]")
_MANIFEST_KEYS = frozenset({"task", "submission", "id"})


@dataclass(frozen=True)
class Job:
    """One job of a batch as a manifest or a directory makes it (public as
    `assay.batch.BatchJob`): its checked id, the task's directory, the submission."""

    id: str
    task_path: Path
    submission: Any
    """A path from the command line; anything `assay.Grader.grade` takes from Python."""
    where: str
    """Where the job came from, for messages: `manifest.jsonl:12` or the submission path."""


def check_id(raw: str, where: str) -> str:
    if not _ID.match(raw) or ".." in raw:
        raise UsageError(
            f"{where}: id {shown(raw)!r} is not usable as a file name "
            "(letters, digits, '.', '_', '-'; at most 128; no leading '.' or '-')"
        )
    return raw


def _derived_id(*parts: str, readable: str = "") -> str:
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    stem = _UNSAFE_ID_CHARS.sub("_", readable)[:80].lstrip("._-")
    return f"{stem}-{digest}" if stem else digest


def jobs_from_manifest(manifest: Path) -> list[Job]:
    """Parse a JSONL manifest. Relative paths are relative to the manifest's directory, so a
    manifest and its submissions can move together."""
    base = manifest.resolve().parent
    jobs: list[Job] = []
    try:
        fh = manifest.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read manifest {manifest}: {exc.strerror}") from None
    with fh:
        for n, raw in enumerate(iter(lambda: fh.readline(MAX_MANIFEST_LINE + 1), b""), 1):
            where = f"{manifest}:{n}"
            if len(raw) > MAX_MANIFEST_LINE:
                raise UsageError(f"{where}: line longer than {MAX_MANIFEST_LINE} bytes")
            if not raw.strip():
                continue
            try:
                obj = loads_strict(raw, max_bytes=MAX_MANIFEST_LINE, max_depth=2)
            except StrictJSONError as exc:
                raise UsageError(f"{where}: not a JSON object line ({exc.code})") from None
            if not isinstance(obj, dict):
                raise UsageError(f"{where}: each line must be a JSON object")
            if extra := sorted(obj.keys() - _MANIFEST_KEYS):
                raise UsageError(f"{where}: unknown key(s) {', '.join(map(shown, extra))}")
            task_s, sub_s, id_s = obj.get("task"), obj.get("submission"), obj.get("id")
            if not isinstance(task_s, str) or not isinstance(sub_s, str) or not task_s or not sub_s:
                raise UsageError(f"{where}: 'task' and 'submission' must be non-empty strings")
            task_p, sub_p = base / task_s, base / sub_s
            _not_a_link(sub_p, where)
            if id_s is None:
                job_id = _derived_id(
                    str(task_p.resolve()), str(sub_p.resolve()), readable=sub_p.name
                )
            elif isinstance(id_s, str):
                job_id = check_id(id_s, where)
            else:
                raise UsageError(f"{where}: 'id' must be a string")
            jobs.append(Job(job_id, task_p, sub_p, where))
    no_duplicate_ids(jobs)
    return jobs


def jobs_from_dir(task_path: Path, submissions: Path) -> list[Job]:
    """Every subdirectory or tar in `submissions` is one submission; its name is the id (made
    file-name safe and given a hash suffix if that changed it or made it collide)."""
    if not submissions.is_dir():
        raise UsageError(f"--submissions {submissions}: not a directory")
    entries: list[tuple[str, Path]] = []
    for child in sorted(submissions.iterdir()):
        if child.name.startswith("."):
            continue
        _not_a_link(child, f"--submissions {submissions}")
        if child.is_dir():
            entries.append((child.name, child))
        elif child.is_file() and child.name.endswith(TAR_SUFFIXES):
            stem = next(child.name[: -len(s)] for s in TAR_SUFFIXES if child.name.endswith(s))
            entries.append((stem, child))
    stems = [s for s, _ in entries]
    jobs = []
    for stem, path in entries:
        clean = _ID.match(stem) is not None and ".." not in stem and stems.count(stem) == 1
        job_id = stem if clean else _derived_id(path.name, readable=stem)
        jobs.append(Job(job_id, task_path, path, str(path)))
    if not jobs:
        raise UsageError(f"--submissions {submissions}: no subdirectory or tar file in it")
    no_duplicate_ids(jobs)
    return jobs


def _not_a_link(path: Path, where: str) -> None:
    # A link would grade whatever it points at today, and could point anywhere on the host.
    if path.is_symlink():
        raise UsageError(
            f"{where}: submission {shown(str(path), 4096)} is a symbolic link; "
            "give the directory or tar file itself"
        )


def no_duplicate_ids(jobs: list[Job]) -> None:
    seen: dict[str, str] = {}
    for j in jobs:
        if j.id in seen:
            raise UsageError(f"{j.where}: id {j.id!r} already used at {seen[j.id]}")
        seen[j.id] = j.where


def load_tasks(jobs: Iterable[Job]) -> dict[Path, Task]:
    """Each distinct task once, up front: a broken task is a usage error before any grading."""
    tasks: dict[Path, Task] = {}
    for j in jobs:
        key = j.task_path.resolve()
        if key not in tasks:
            tasks[key] = load_task(key)
    return tasks
