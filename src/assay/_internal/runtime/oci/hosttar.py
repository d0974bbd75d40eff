"""Tar archives in and out of a container's host directories, for a backend without dockerd.

Every writable place of an OCI container (its root filesystem, /tmp, scratch dirs, binds) is a
host directory, so the controller reads and writes it directly: `write_tar` is Docker's
`get_archive`, `extract_tar` its `put_archive`. The directories belong to hostile code that may
run while they are read or written, so both are `assay._internal.fstree` with its settings for
a live, hostile tree (`TarOut(live=True)`, the `CONTAINER` policy); this module adds Docker's
naming of paths and entries and says what a failure means here (`EngineError`).
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from assay._internal.fstree.dirfd import (
    MAX_DEPTH,
    Missing,
    Refused,
    Skipped,
    TreeError,
    descend,
    split,
)
from assay._internal.fstree.policy import CONTAINER
from assay._internal.fstree.tarin import Extractor
from assay._internal.fstree.tarout import TarOut
from assay.errors import EngineError

__all__ = ["MAX_DEPTH", "extract_tar", "write_tar"]

# A Linux name is bytes, UTF-8 or not: surrogateescape carries it from the tar unchanged.
_ENCODING = "utf-8"
_ERRORS = "surrogateescape"


def write_tar(base: Path, rel: str, sink: BinaryIO, cap: int, *, name: str | None = None) -> int:
    """Write an uncompressed PAX tar of `base/rel` to `sink`, streaming; return its size.

    Docker's `get_archive` semantics. `rel` is relative to `base` (a trusted host directory,
    the only path opened following symlinks). Entries are named after the last component of
    `rel`: "workspace" gives "workspace/", "workspace/a", ...; "a/b/out.json" gives the one entry
    "out.json"; "" and "." (base itself) and any "x/." give "./", "./a", ... A trailing "/" or
    "/." demands a directory. Intermediate components must be directories, never symlinks; a
    final component that is a symlink is archived as that symlink (as Docker does), not followed.

    In the tree: directories, regular files (their bytes read through the fd they were opened
    as; one that grows or shrinks meanwhile is cut or zero-padded to the size in its header) and
    symlinks (target kept verbatim, never followed). A file with several names in the tree is
    stored under the first and is a hard-link entry naming it under the others, as in Docker's
    archive. FIFOs and device nodes become header-only entries, never opened (as in Docker's
    archive: the firewall refuses them); sockets are skipped (Docker's tar cannot carry them
    either), and so is an entry that vanishes or keeps changing type while it is read. Owner,
    group, mode and mtime come from the host's stat: the owner is the host uid, not the
    container's if a user namespace maps it. Names are the directory's bytes (PAX
    `hdrcharset=BINARY` where they are not UTF-8); entries of a directory come in sorted
    order.

    Raises `ArchiveTooLargeError(cap)` as soon as the tar would pass `cap` bytes (`sink` then
    holds a prefix to throw away; a file whose header alone says it cannot fit is not read),
    `EngineError` if `rel` is absolute, has ".." or NUL, or does not exist, if a component of it
    is a symlink or no directory, if its target is neither file, directory nor symlink, or on an
    I/O error: never for what the tree holds, which the firewall judges. A directory more than
    `MAX_DEPTH` levels down is archived as its header alone, and a directory with more entries
    than the rest of `cap` has room for headers is `ArchiveTooLargeError` before it is listed
    whole. Every fd opened is closed on return.

    `name` replaces the top entry's name: `base` is often a mount whose own name inside the
    container ("/scratch" for a host tmpfs) is not the host directory's.
    """
    parts, top, must_be_dir = _source(rel)
    if name is not None:
        top = name
    reader = TarOut(cap=cap, live=True)
    root = _open_base(base, rel)
    try:
        whole = not parts or must_be_dir
        start = _descend(root, parts if whole else parts[:-1], base, rel)
    finally:
        os.close(root)
    try:
        chunks = reader.tree(start, top) if whole else reader.entry(start, parts[-1], top)
        with contextlib.closing(chunks):
            for chunk in chunks:
                _write(sink, chunk)
        _write(sink, reader.end())
    except (TreeError, OSError) as exc:
        raise _failure("archiving", rel, base, exc) from None
    finally:
        os.close(start)
    return reader.count


def _write(sink: BinaryIO, data: bytes) -> None:
    try:
        sink.write(data)
    except OSError as exc:
        raise EngineError(f"writing the archive: {exc.strerror or exc}") from None


def _source(rel: str) -> tuple[tuple[str, ...], str, bool]:
    """`rel` as (its components, the archive name of its top entry, whether it must be a
    directory)."""
    parts = _parts(rel)
    if not parts or rel == "." or rel.endswith("/."):
        return parts, ".", True  # Docker names the content of "dir/." "./..."
    return parts, parts[-1], rel.endswith("/")


def _parts(rel: str) -> tuple[str, ...]:
    try:
        return split(rel)
    except Refused as why:
        raise EngineError(f"path {rel!r}: {why}") from None


def _open_base(base: Path, rel: str) -> int:
    try:
        # The controller's own path: trusted, so followed like any host path.
        return os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _failure("opening the directory for", rel, base, exc) from None


def _descend(root: int, parts: tuple[str, ...], base: Path, rel: str) -> int:
    """An fd of the directory `root/parts`, every component opened without following it."""
    try:
        return descend(root, parts)
    except (TreeError, OSError) as exc:
        raise _failure("opening", rel, base, exc) from None


def _failure(doing: str, rel: str, base: Path, exc: TreeError | OSError) -> EngineError:
    """`exc` on `rel` as an engine error naming it: what the path is (missing, a link, no
    directory, an entry left out), or else what was being done when it failed."""
    where = f"{rel!r} in {base}"
    if isinstance(exc, Missing):
        return EngineError(f"{where}: no such path {exc.path!r}")
    if isinstance(exc, Skipped):
        return EngineError(f"{where}: {exc.why}")
    if isinstance(exc, Refused):
        return EngineError(f"{where}: {exc}")
    reason = str(exc) if isinstance(exc, TreeError) else exc.strerror or type(exc).__name__
    return EngineError(f"{doing} {where}: {reason}")


def extract_tar(
    base: Path, rel: str, data: bytes, *, uid: int | None = None, gid: int | None = None
) -> None:
    """Unpack the tar `data` into the existing directory `base/rel`.

    Docker's `put_archive` semantics. The tar is the controller's (trusted); the directory is
    not. `rel` is relative to `base` ("" and "." are base itself); each of its components must
    be a directory, never a symlink. Member names are relative to `base/rel`; a leading "./" is
    dropped and a "." member (the destination itself) is skipped, as Docker does.

    - Directories are created (`mkdir`), or merged into an existing directory (its owner and
      mode are set from the member). A missing parent of a member is created with mode 0755.
    - A regular file, symlink or hard link member replaces whatever non-directory has its name
      (unlinked, never opened: a planted symlink or hard link is not written through), then is
      created O_CREAT | O_EXCL | O_NOFOLLOW. A directory in the way of one is an error.
    - Symlinks are created with their target verbatim (never resolved).
    - A hard link member is linked (`linkat`, not following a symlink) to a regular file
      extracted earlier from the same archive; a link to anything else is refused.
    - A FIFO member is made (`mkfifo`, never opened for I/O); device and other members are
      refused.
    - Owner: `uid` / `gid` where given (for missing parents too), else the member's. Mode: the
      member's without setuid / setgid (`fstree.CONTAINER`: the why is there). Mtime: the
      member's (a directory's set once everything is extracted, as its entries change it).

    Raises `EngineError`, naming the path, if `rel` is absolute, has ".." or NUL, is missing or
    goes through a symlink or non-directory; if a member's name is absolute, has ".." or NUL,
    or goes through a symlink or non-directory in the destination (nothing is written through
    it); for a refused member; for data that is no tar; on an I/O error. The destination may
    then hold part of the archive, as with Docker.
    """
    parts = _parts(rel)
    root = _open_base(base, rel)
    try:
        dest = _descend(root, parts, base, rel)
    finally:
        os.close(root)
    try:
        if not data:
            return  # no archive at all: nothing to unpack, as Docker answers an empty body
        try:
            archive = tarfile.open(
                fileobj=io.BytesIO(data), mode="r:", encoding=_ENCODING, errors=_ERRORS
            )
        except tarfile.TarError as exc:
            raise EngineError(f"the archive for {rel!r} in {base} is no tar: {exc}") from None
        where = f"{rel!r} in {base}"
        writer = Extractor(dest, CONTAINER, uid=uid, gid=gid)
        try:
            with archive:
                for member in _members(archive, where):
                    try:
                        writer.member(member, archive)
                    except TreeError as exc:
                        raise EngineError(f"member {member.name!r} for {where}: {exc}") from None
                    except OSError as exc:
                        reason = exc.strerror or exc
                        raise EngineError(f"member {member.name!r} for {where}: {reason}") from None
            writer.finish()
        finally:
            writer.close()
    finally:
        os.close(dest)


def _members(archive: tarfile.TarFile, where: str) -> Iterator[tarfile.TarInfo]:
    try:
        yield from archive
    except tarfile.TarError as exc:
        raise EngineError(f"the archive for {where} is corrupt: {exc}") from None
