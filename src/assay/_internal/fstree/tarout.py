"""A tree read out as an uncompressed PAX tar, a chunk at a time, never following a link.

Docker's `get_archive` of a container's tree (`runtime.oci.hosttar`) and a submission
directory streamed into the firewall (`firewall.dirstream`) are this one walk with different
settings. The tree may change while it is read: a directory swapped for a symlink between two
system calls, a FIFO planted, a file that grows. So an entry's type is taken from `fstat` of
the fd its bytes or entries are read through, files are opened O_NONBLOCK, and what is found is
described, never followed: a symlink as its target's text, a FIFO or device as a header (never
opened), a second name of a file as a hard link to the first, as tar and Docker write them.
Nothing is refused here: what the tree holds is the firewall's to judge.

Bounded work whatever the tree: one fd per level and no directory opened `max_depth` levels
down (it is archived by its header alone, a name deeper than the firewall accepts); a
directory is listed one name past what the consumer can take (the cap's header blocks, or
`max_entries`), never whole; a file that cannot fit under the cap is refused before a byte of
it is read (a sparse terabyte costs one fstat).
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
import tarfile
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass

from assay.errors import ArchiveTooLargeError

from .copy import read_out
from .dirfd import DIR, MAX_DEPTH, READ, Changed, Skipped, Unreadable

__all__ = ["END", "TarOut"]

_BLOCK = tarfile.BLOCKSIZE
END = bytes(2 * _BLOCK)
# An entry that changes type this many times in a row, each time between our lstat and open, is
# being churned on purpose: it is left out rather than chased forever.
_RETRIES = 4
# EINVAL: readlink of what is no longer a symlink. ELOOP / ENOTDIR: an open with O_NOFOLLOW
# (| O_DIRECTORY) of what is now a symlink or no longer a directory. ENXIO: a regular file
# swapped for a socket. All swaps: look again.
_SWAPPED = (errno.EINVAL, errno.ELOOP, errno.ENOTDIR, errno.ENXIO)
_SPECIAL = {
    stat.S_IFIFO: tarfile.FIFOTYPE,
    stat.S_IFCHR: tarfile.CHRTYPE,
    stat.S_IFBLK: tarfile.BLKTYPE,
}


@dataclass
class _Found:
    kind: bytes
    st: os.stat_result
    fd: int | None = None
    """A directory to walk or a file to read, opened; None: described by its header alone."""
    linkname: str = ""


class _Swapped(Exception):
    """The entry opened is not of the type its lstat said a moment earlier."""


class TarOut:
    """One archive's walk: it counts what it yields against `cap` and remembers which inodes it
    has stored, so hard links are found across the whole archive.

    `live`: hostile code may write the tree while it is read (a container's): an entry that
    vanishes or keeps changing type is left out, a file that shrinks is padded to its header's
    size, never an error (an error would be "no verdict" for what the candidate controls).
    Otherwise the tree should be at rest (a submission directory on the host): any change but a
    vanished entry is `Changed`, the caller's to report. `owners`: headers carry the owner and
    mtime (Docker's archive), or only the mode (the firewall drops the rest anyway).
    `contents(parts)`: whether a regular file's bytes are read; one it declines is listed with
    size 0, never opened."""

    def __init__(
        self,
        *,
        max_depth: int = MAX_DEPTH,
        cap: int | None = None,
        max_entries: int | None = None,
        owners: bool = True,
        live: bool = True,
        contents: Callable[[tuple[str, ...]], bool] | None = None,
    ) -> None:
        self.max_depth = min(max_depth, MAX_DEPTH)
        self.cap = cap
        self.max_entries = max_entries
        self.owners = owners
        self.live = live
        self.contents = contents
        self.count = 0
        self._inodes: dict[tuple[int, int], str] = {}
        """(device, inode) -> the name a file with more than one link was stored as."""

    def tree(self, dir_fd: int, top: str | None) -> Generator[bytes, None, None]:
        """The directory `dir_fd` (the caller's: it keeps a copy of its own, so the caller closes
        it whenever it likes) and everything below it. `top` names its header; None writes none
        and names its entries relative to it. Close the generator to stop early: every fd it
        holds is closed then."""
        fd = os.dup(dir_fd)
        try:
            if top is not None:
                yield self._emit(self._header(top, os.fstat(fd), tarfile.DIRTYPE))
        except BaseException:
            os.close(fd)
            raise
        yield from self._walk(fd, top)

    def entry(self, parent: int, name: str, arcname: str) -> Generator[bytes, None, None]:
        """The entry `name` of the directory `parent` (the caller's) as `arcname`, and what is
        below it if it is a directory. `Skipped` if it is left out (gone, a socket, or it kept
        changing)."""
        found = self._look(parent, name, arcname, ())
        if found is None:
            raise Skipped("is a socket", arcname)
        if found.kind != tarfile.DIRTYPE or found.fd is None:
            yield from self._other(found, arcname)
            return
        try:
            yield self._emit(self._header(arcname, found.st, tarfile.DIRTYPE))
        except BaseException:
            os.close(found.fd)
            raise
        yield from self._walk(found.fd, arcname)

    def end(self) -> bytes:
        return self._emit(END)

    def _walk(self, top_fd: int, top: str | None) -> Iterator[bytes]:
        # An explicit stack, not recursion: MAX_DEPTH levels must not approach Python's own limit.
        stack: list[tuple[int, str | None, tuple[str, ...], list[str]]] = []
        try:
            try:
                listing = self._names(top_fd, top or ".")
            except BaseException:
                os.close(top_fd)
                raise
            stack.append((top_fd, top, (), listing))
            while stack:
                dir_fd, prefix, parts, names = stack[-1]
                if not names:
                    stack.pop()
                    os.close(dir_fd)
                    continue
                name = names.pop()
                arcname = name if prefix is None else f"{prefix}/{name}"
                child = (*parts, name)
                try:
                    found = self._look(dir_fd, name, arcname, child)
                except Skipped:
                    continue
                if found is None:
                    continue  # a socket: tar cannot carry it (Docker's archive skips it too)
                if found.kind != tarfile.DIRTYPE:
                    yield from self._other(found, arcname)
                    continue
                try:
                    yield self._emit(self._header(arcname, found.st, tarfile.DIRTYPE))
                    listing = [] if found.fd is None else self._names(found.fd, arcname)
                except BaseException:
                    if found.fd is not None:
                        os.close(found.fd)
                    raise
                if found.fd is not None:
                    stack.append((found.fd, arcname, child, listing))
        finally:
            for dir_fd, _, _, _ in stack:
                os.close(dir_fd)

    def _names(self, dir_fd: int, shown: str) -> list[str]:
        """The directory's names, sorted, reversed (they are popped from the end). Every entry
        costs a header block at least (only sockets cost none), so a directory with more names
        than the rest of the cap has blocks for is refused as too large after reading one name
        more than that; a consumer that counts entries is handed one name more than it takes.
        Either way no directory is held in memory whole, however many inodes its file system
        has (a tmpfs holds millions of empty files)."""
        room = None if self.cap is None else max(self.cap - self.count, 0) // _BLOCK
        bounds = [b for b in (room, self.max_entries) if b is not None]
        stop = min(bounds) + 1 if bounds else None
        try:
            with os.scandir(dir_fd) as entries:
                names = [e.name for e in itertools.islice(entries, stop)]
        except OSError as exc:
            raise Unreadable(f"cannot be listed: {exc.strerror or exc}", shown) from None
        if room is not None and len(names) > room:
            raise self._too_large()
        return sorted(names, reverse=True)

    def _look(self, parent: int, name: str, arcname: str, parts: tuple[str, ...]) -> _Found | None:
        """What `name` is now (None: a socket), opened where its bytes or entries will be read."""
        for _ in range(_RETRIES if self.live else 1):
            try:
                return self._open(parent, name, parts)
            except FileNotFoundError:
                # Gone between the listing and here: as if it had never been there.
                raise Skipped("no such path", arcname) from None
            except _Swapped:
                pass
            except OSError as exc:
                if exc.errno not in _SWAPPED:
                    raise Unreadable(f"cannot be read: {exc.strerror or exc}", arcname) from None
        if not self.live:
            raise Changed("changed while it was read", arcname)
        raise Skipped("kept changing while it was read", arcname)

    def _open(self, parent: int, name: str, parts: tuple[str, ...]) -> _Found | None:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        kind = stat.S_IFMT(st.st_mode)
        if kind == stat.S_IFLNK:
            return _Found(tarfile.SYMTYPE, st, linkname=os.readlink(name, dir_fd=parent))
        if kind == stat.S_IFDIR:
            if len(parts) >= self.max_depth:
                # Its header is written and its name is deeper than the firewall accepts: what
                # the tree is is the firewall's to refuse (`depth`), never an error here.
                return _Found(tarfile.DIRTYPE, st)
            return _opened(tarfile.DIRTYPE, os.open(name, DIR, dir_fd=parent), stat.S_ISDIR)
        if kind == stat.S_IFREG:
            if self.contents is not None and not self.contents(parts):
                return _Found(tarfile.REGTYPE, st)
            return _opened(tarfile.REGTYPE, os.open(name, READ, dir_fd=parent), stat.S_ISREG)
        special = _SPECIAL.get(kind)
        # Never opened: the firewall refuses FIFOs and devices by their headers.
        return None if special is None else _Found(special, st)

    def _other(self, found: _Found, arcname: str) -> Iterator[bytes]:
        """Anything but a directory to walk: its header, and a file's bytes. Closes its fd."""
        try:
            if found.kind == tarfile.REGTYPE:
                yield from self._file(found, arcname)
            else:
                yield self._emit(
                    self._header(arcname, found.st, found.kind, linkname=found.linkname)
                )
        finally:
            if found.fd is not None:
                os.close(found.fd)

    def _file(self, found: _Found, arcname: str) -> Iterator[bytes]:
        st = found.st
        if st.st_nlink > 1:
            # As tar and Docker's archive do: the second name of a file already stored is a
            # hard-link entry naming the first (the firewall refuses hard links), not a copy.
            first = self._inodes.setdefault((st.st_dev, st.st_ino), arcname)
            if first != arcname:
                yield self._emit(self._header(arcname, st, tarfile.LNKTYPE, linkname=first))
                return
        if found.fd is None:
            yield self._emit(self._header(arcname, st, tarfile.REGTYPE))
            return
        header = self._header(arcname, st, tarfile.REGTYPE, size=st.st_size)
        padding = -st.st_size % _BLOCK
        if not self._fits(len(header) + st.st_size + padding + len(END)):
            raise self._too_large()
        yield self._emit(header)
        try:
            for chunk in read_out(found.fd, st.st_size, arcname, live=self.live):
                yield self._emit(chunk)
        except OSError as exc:
            raise Unreadable(f"cannot be read: {exc.strerror or exc}", arcname) from None
        yield self._emit(bytes(padding))

    def _header(
        self, arcname: str, st: os.stat_result, kind: bytes, *, size: int = 0, linkname: str = ""
    ) -> bytes:
        info = tarfile.TarInfo(arcname)
        info.type, info.size, info.linkname = kind, size, linkname
        info.mode = stat.S_IMODE(st.st_mode)
        if self.owners:
            info.uid, info.gid = st.st_uid, st.st_gid
            info.mtime = st.st_mtime_ns // 1_000_000_000
        if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
            info.devmajor, info.devminor = os.major(st.st_rdev), os.minor(st.st_rdev)
        # A Linux name is bytes, UTF-8 or not: surrogateescape carries them into the tar as they
        # are (PAX hdrcharset=BINARY where they are not UTF-8).
        return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")

    def _fits(self, n: int) -> bool:
        return self.cap is None or self.count + n <= self.cap

    def _emit(self, chunk: bytes) -> bytes:
        if not self._fits(len(chunk)):
            raise self._too_large()
        self.count += len(chunk)
        return chunk

    def _too_large(self) -> ArchiveTooLargeError:
        assert self.cap is not None  # only a cap makes anything too large
        return ArchiveTooLargeError(self.cap)


def _opened(kind: bytes, fd: int, is_kind: Callable[[int], bool]) -> _Found:
    """`fd` as what `fstat` says it is: the type its lstat said, or `_Swapped` (closed)."""
    try:
        st = os.fstat(fd)
        if not is_kind(st.st_mode):
            raise _Swapped  # a FIFO, directory or symlink swapped in after the lstat
    except BaseException:
        os.close(fd)
        raise
    return _Found(kind, st, fd)
