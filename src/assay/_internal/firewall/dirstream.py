"""A submission directory as a tar stream for the firewall, produced as the firewall reads it.

Only files that match the artifact globs are read; any other file is listed by name with size 0,
so it is dropped (and reported) by the firewall without a byte of it being read or written. The
firewall judges each header before it pulls the data behind it, so an artifact over a cap is
refused unread, and nothing is spooled but the kept files' data. Links, FIFOs and devices are
described as what they are, never followed or opened, so the firewall refuses them by its rules;
as in tar, a second name of a file (a hard link) is described as a link to the first.
Every open is relative to a directory fd with O_NOFOLLOW: no full path, no PATH_MAX.
"""

from __future__ import annotations

import io
import itertools
import os
import stat
import tarfile
from collections.abc import Generator, Iterator
from pathlib import Path

from assay.errors import UsageError

from .tarbase import FirewallLimits
from .tarnames import Globs

_CHUNK = 2**20
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TYPES = {
    stat.S_IFLNK: tarfile.SYMTYPE,
    stat.S_IFIFO: tarfile.FIFOTYPE,
    stat.S_IFCHR: tarfile.CHRTYPE,
    stat.S_IFBLK: tarfile.BLKTYPE,
}


class DirStream(io.RawIOBase):
    """A readable, non-seekable tar stream of `root`; each read returns at most one chunk, so a
    header reaches the firewall before the data behind it is read."""

    def __init__(self, root: Path, globs: Globs | None, limits: FirewallLimits) -> None:
        self._chunks = _stream(root, globs, limits)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = memoryview(chunk)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._chunks.close()  # closes any directory fds the walk holds
        super().close()


def _stream(
    root: Path, globs: Globs | None, limits: FirewallLimits
) -> Generator[bytes, None, None]:
    fd = os.open(root, _DIR)
    try:
        yield from _walk(fd, (), globs, limits, {})
    finally:
        os.close(fd)
    yield bytes(2 * tarfile.BLOCKSIZE)


def _walk(
    dir_fd: int,
    prefix: tuple[str, ...],
    globs: Globs | None,
    limits: FirewallLimits,
    inodes: dict[tuple[int, int], str],
) -> Iterator[bytes]:
    # A directory with more entries than an archive may hold is refused whichever come first.
    with os.scandir(dir_fd) as entries:
        names = sorted(e.name for e in itertools.islice(entries, limits.max_entries + 1))
    for name in names:
        parts = (*prefix, name)
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed while we walk: as if it had never been there
        if stat.S_ISDIR(st.st_mode):
            yield _header(parts, tarfile.DIRTYPE, st.st_mode)
            # Deeper than the cap, the firewall refuses this header: no need to open it.
            if len(parts) <= limits.max_depth:
                sub = os.open(name, _DIR, dir_fd=dir_fd)
                try:
                    yield from _walk(sub, parts, globs, limits, inodes)
                finally:
                    os.close(sub)
        elif stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) in inodes:
            first = inodes[(st.st_dev, st.st_ino)]
            yield _header(parts, tarfile.LNKTYPE, st.st_mode, linkname=first)
        elif stat.S_ISREG(st.st_mode):
            if st.st_nlink > 1:
                inodes[(st.st_dev, st.st_ino)] = "/".join(parts)
            if globs is None or globs.match(parts):
                yield from _file(dir_fd, parts, st.st_mode)
            else:
                yield _header(parts, tarfile.REGTYPE, st.st_mode)
        elif stat.S_IFMT(st.st_mode) in _TYPES:
            target = os.readlink(name, dir_fd=dir_fd) if stat.S_ISLNK(st.st_mode) else ""
            yield _header(parts, _TYPES[stat.S_IFMT(st.st_mode)], st.st_mode, linkname=target)
        # Sockets have no tar type (tarfile skips them too).


def _file(dir_fd: int, parts: tuple[str, ...], mode: int) -> Iterator[bytes]:
    # O_NONBLOCK: a FIFO swapped in after the stat must not hang the open.
    fd = os.open(parts[-1], _FILE, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"--submission: {'/'.join(parts)!r} changed while it was read")
        yield _header(parts, tarfile.REGTYPE, mode, size=st.st_size)
        left = st.st_size
        while left:
            chunk = os.read(fd, min(_CHUNK, left))
            if not chunk:
                raise UsageError(f"--submission: {'/'.join(parts)!r} shrank while it was read")
            left -= len(chunk)
            yield chunk
        yield bytes(-st.st_size % tarfile.BLOCKSIZE)
    finally:
        os.close(fd)


def _header(
    parts: tuple[str, ...], kind: bytes, mode: int, size: int = 0, linkname: str = ""
) -> bytes:
    info = tarfile.TarInfo("/".join(parts))
    info.type, info.mode, info.size, info.linkname = kind, stat.S_IMODE(mode), size, linkname
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
