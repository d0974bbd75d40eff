"""A task's build context: the tar assay builds its `[environment]` image from, its digest, and
the local image reference that digest names.

The context is the Dockerfile's directory and nothing else (the model refuses a Dockerfile at
the task root or under judge/, solutions/ or attempts/), assembled here rather than handed to
the engine as a path, so what the build sees is exactly what is hashed: regular files and
directories with normalised owners, times and modes, and symbolic links as links (never
followed, so a link to ../judge/ copies a dangling link, never the judge's file).
"""

from __future__ import annotations

import hashlib
import os
import stat
import tarfile
from pathlib import Path
from typing import IO, cast

from assay.errors import TaskError

from .task import Task

ENV_REPOSITORY = "assay-env"
CONTEXT_CAP = 256 << 20
"""Bytes of file content a build context may hold; a task's environment is a recipe, not data."""
_FORMAT = b"assay-env-context/1\0"


class _Null:
    def write(self, b: bytes) -> int:
        return len(b)


class _Tee:
    """What tarfile writes goes to the sink and into the digest."""

    def __init__(self, h: hashlib._Hash, sink: IO[bytes] | _Null) -> None:
        self._h = h
        self._sink = sink

    def write(self, b: bytes) -> int:
        self._h.update(b)
        self._sink.write(b)
        return len(b)


def _entries(context: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(context):
        here = Path(dirpath)
        dirnames.sort()
        for name in dirnames:
            found.append(here / name)
        for name in sorted(filenames):
            found.append(here / name)
    found.sort(key=lambda p: p.relative_to(context).as_posix())
    return found


def _info(path: Path, rel: str) -> tarfile.TarInfo:
    st = path.lstat()
    info = tarfile.TarInfo(rel)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    if stat.S_ISLNK(st.st_mode):
        info.type = tarfile.SYMTYPE
        info.linkname = os.readlink(path)
        info.mode = 0o777
    elif stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
    elif stat.S_ISREG(st.st_mode):
        info.size = st.st_size
        info.mode = 0o755 if st.st_mode & 0o111 else 0o644
    else:
        raise TaskError(str(path), "a build context holds files, directories and links only")
    return info


def write_context(task: Task, sink: IO[bytes] | _Null) -> str:
    """Write the task's build context as a tar to `sink`; return its digest ("sha256:...").

    The digest covers the tar (names, kinds, modes, link targets, bytes) and the Dockerfile's
    name inside it, so an unchanged context always names the same image.
    """
    context = task.build_context
    env = task.environment
    if context is None or env is None or env.dockerfile is None:
        raise ValueError(f"task {task.id!r} has no [environment] dockerfile")
    h = hashlib.sha256(_FORMAT + Path(env.dockerfile).name.encode() + b"\0")
    total = 0

    tee = _Tee(h, sink)
    with tarfile.open(fileobj=cast(IO[bytes], tee), mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for path in _entries(context):
            info = _info(path, path.relative_to(context).as_posix())
            if info.isreg():
                total += info.size
                if total > CONTEXT_CAP:
                    raise TaskError(
                        str(context), f"build context is larger than {CONTEXT_CAP >> 20} MiB"
                    )
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
    return "sha256:" + h.hexdigest()


def context_digest(task: Task) -> str:
    """The digest of the task's build context (see `write_context`)."""

    return write_context(task, _Null())


def environment_ref(task: Task) -> str | None:
    """The local image reference the task's agent and candidate run, or None when the task has
    no `[environment]` (it runs on the grading's base image). For a Dockerfile it is
    `assay-env:<first 24 hex digits of the context digest>`; for `image =` the pinned
    reference itself. Pure: whether the image exists is the engine's question."""
    env = task.environment
    if env is None:
        return None
    if env.image is not None:
        return env.image
    return f"{ENV_REPOSITORY}:{context_digest(task).removeprefix('sha256:')[:24]}"
