"""Tar archives in and out of a container's host directories, for a backend without dockerd.

Every writable place of an OCI container (its root filesystem, /tmp, scratch dirs, binds) is a
host directory, so the controller reads and writes it directly: `write_tar` is Docker's
`get_archive`, `extract_tar` its `put_archive`. The directories belong to hostile code that may
run while they are read or written: it can swap a directory for a symlink between two syscalls,
plant FIFOs, hard links and files that grow. So every path component is opened relative to its
parent's fd with O_NOFOLLOW, a file's type is taken from `fstat` of the fd its bytes come from,
files are opened O_NONBLOCK (a FIFO swapped in after the `lstat` cannot hang the open) and
created O_CREAT | O_EXCL | O_NOFOLLOW (never written through a name that already exists).
No full path is ever built, so PATH_MAX never applies either.
"""

from __future__ import annotations

import contextlib
import errno
import io
import itertools
import os
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from assay.errors import ArchiveTooLargeError, EngineError

__all__ = ["MAX_DEPTH", "extract_tar", "write_tar"]

MAX_DEPTH = 256
"""How many directory levels below the archived path `write_tar` opens: each level holds one fd
open. A directory deeper than this is archived by its header alone, never opened: its name is
deeper than the firewall accepts (`depth`, 32 levels), so the archive is refused for what the
tree is, as Docker's archive of the same tree is, and never raises for it."""

_CHUNK = 1 << 20
_BLOCK = tarfile.BLOCKSIZE
_END = bytes(2 * _BLOCK)
# An entry that changes type this many times in a row, each time between our lstat and open, is
# being churned on purpose: it is left out rather than chased forever.
_RETRIES = 4
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# A Linux name is bytes, UTF-8 or not: surrogateescape carries it to the tar and back unchanged.
_ENCODING = "utf-8"
_ERRORS = "surrogateescape"


# -- write_tar (get_archive) -------------------------------------------------------------------


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
    out = _Counted(sink, cap)
    root = _open_base(base, rel)
    try:
        _write(out, root, base, rel, parts, top, must_be_dir)
    except OSError as exc:
        raise _io_error("archiving", rel, base, exc) from None
    finally:
        os.close(root)
    out.write(_END)
    return out.count


def _write(
    out: _Counted,
    root: int,
    base: Path,
    rel: str,
    parts: tuple[str, ...],
    top: str,
    must_be_dir: bool,
) -> None:
    """The entries of `rel`, every fd opened here closed again."""
    if not parts:
        _add_tree(out, os.dup(root), top)
    elif must_be_dir:
        _add_tree(out, _descend(root, parts, base, rel), top)
    else:
        parent = _descend(root, parts[:-1], base, rel)
        try:
            try:
                opened = _add_entry(out, parent, parts[-1], top)
            except _Skipped as why:
                raise EngineError(f"{rel!r} in {base}: {why}") from None
            except OSError as exc:
                raise _io_error("reading", rel, base, exc) from None
        finally:
            os.close(parent)
        if opened is not None:
            _add_tree(out, opened, top, header_done=True)


class _Counted:
    """The sink, counted: refuses the write that would take it past the cap."""

    def __init__(self, sink: BinaryIO, cap: int) -> None:
        self._sink = sink
        self.cap = cap
        self.count = 0
        self.inodes: dict[tuple[int, int], str] = {}
        """(device, inode) -> the archive name a file with more than one link was stored as."""

    def fits(self, n: int) -> bool:
        return self.count + n <= self.cap

    def write(self, data: bytes) -> None:
        if not self.fits(len(data)):
            raise ArchiveTooLargeError(self.cap)
        try:
            self._sink.write(data)
        except OSError as exc:
            # Not an OSError: the walk retries some errnos, and must never retry a sink's.
            raise EngineError(f"writing the archive: {exc.strerror or exc}") from None
        self.count += len(data)


class _Skipped(Exception):
    """The entry is left out of the archive; the message says why (for a top-level `rel`)."""


def _source(rel: str) -> tuple[tuple[str, ...], str, bool]:
    """`rel` as (its components, the archive name of its top entry, whether it must be a
    directory)."""
    _check_rel(rel)
    parts = tuple(p for p in rel.split("/") if p not in ("", "."))
    if not parts or rel == "." or rel.endswith("/."):
        return parts, ".", True  # Docker names the content of "dir/." "./..."
    return parts, parts[-1], rel.endswith("/")


def _check_rel(rel: str) -> None:
    if "\x00" in rel:
        raise EngineError(f"path {rel!r} contains a NUL byte")
    try:
        os.fsencode(rel)
    except UnicodeEncodeError:
        raise EngineError(f"path {rel!r} is not a file name (a lone surrogate)") from None
    if rel.startswith("/"):
        raise EngineError(f"path {rel!r} is absolute; it must be relative to the directory")
    if ".." in rel.split("/"):
        raise EngineError(f"path {rel!r} has a '..' component")


def _open_base(base: Path, rel: str) -> int:
    try:
        # The controller's own path: trusted, so followed like any host path.
        return os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _io_error("opening the directory for", rel, base, exc) from None


def _descend(root: int, parts: tuple[str, ...], base: Path, rel: str) -> int:
    """An fd of the directory `root/parts`, every component opened without following it."""
    fd = os.dup(root)
    try:
        for i, name in enumerate(parts):
            shown = "/".join(parts[: i + 1])
            try:
                nxt = os.open(name, _DIR, dir_fd=fd)
            except FileNotFoundError:
                raise EngineError(f"{rel!r} in {base}: no such path {shown!r}") from None
            except OSError as exc:
                what = _not_a_directory(fd, name) if exc.errno == errno.ENOTDIR else None
                if what is None:
                    raise _io_error("opening", shown, base, exc) from None
                raise EngineError(f"{rel!r} in {base}: {shown!r} {what}") from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_a_directory(parent: int, name: str) -> str:
    """Why `name` failed to open as a directory (for the message only: it may change again)."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return "is not a directory"
    return "is a symlink" if stat.S_ISLNK(st.st_mode) else "is not a directory"


def _io_error(doing: str, shown: str, base: Path, exc: OSError) -> EngineError:
    reason = exc.strerror or type(exc).__name__
    return EngineError(f"{doing} {shown!r} in {base}: {reason}")


def _add_tree(out: _Counted, top_fd: int, top: str, *, header_done: bool = False) -> None:
    """Archive the directory `top_fd` (owned, closed here) as `top` and everything below it."""
    # An explicit stack, not recursion: MAX_DEPTH levels must not approach Python's own limit.
    stack: list[tuple[int, str, list[str]]] = []
    try:
        if not header_done:
            _add_header(out, _info(top, os.fstat(top_fd), tarfile.DIRTYPE))
        stack.append((top_fd, top, _names(top_fd, top, out)))
        while stack:
            dir_fd, prefix, names = stack[-1]
            if not names:
                stack.pop()
                os.close(dir_fd)
                continue
            name = names.pop()
            arcname = f"{prefix}/{name}"
            try:
                child = _add_entry(out, dir_fd, name, arcname)
            except _Skipped:
                continue
            except OSError as exc:
                raise EngineError(f"reading {arcname!r}: {exc.strerror or exc}") from None
            if child is None:
                continue
            if len(stack) >= MAX_DEPTH:
                # Its header is written, and its name is deeper than the firewall accepts: what
                # the tree is is the firewall's to refuse (`depth`), never an engine error.
                os.close(child)
                continue
            try:
                listing = _names(child, arcname, out)
            except BaseException:
                os.close(child)
                raise
            stack.append((child, arcname, listing))
    except BaseException:
        if not stack:
            os.close(top_fd)
        for dir_fd, _, _ in stack:
            os.close(dir_fd)
        raise


def _names(dir_fd: int, arcname: str, out: _Counted) -> list[str]:
    """The directory's names, sorted, reversed (they are popped from the end). Each entry costs
    the archive a header block at least (only sockets, skipped, cost none), so a directory with
    more names than the rest of the cap has blocks is refused as too large after reading one
    name more than that, not held in memory whole however many inodes its file system has."""
    room = max(out.cap - out.count, 0) // _BLOCK
    try:
        with os.scandir(dir_fd) as entries:
            names = [e.name for e in itertools.islice(entries, room + 1)]
    except OSError as exc:
        raise EngineError(f"listing {arcname!r}: {exc.strerror or exc}") from None
    if len(names) > room:
        raise ArchiveTooLargeError(out.cap)
    return sorted(names, reverse=True)


def _add_entry(out: _Counted, dir_fd: int, name: str, arcname: str) -> int | None:
    """Archive the entry `name` of `dir_fd`. A directory's header is written and its fd
    returned (the caller walks it and closes it); anything else returns None. Raises `_Skipped`
    for an entry that is left out."""
    for _ in range(_RETRIES):
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(name, dir_fd=dir_fd)
                info = _info(arcname, st, tarfile.SYMTYPE)
                info.linkname = target
                _add_header(out, info)
                return None
            if stat.S_ISDIR(st.st_mode):
                return _add_directory(out, dir_fd, name, arcname)
            if stat.S_ISREG(st.st_mode):
                _add_file(out, dir_fd, name, arcname)
                return None
            special = _SPECIAL.get(stat.S_IFMT(st.st_mode))
            if special is not None:
                # A header only, never opened: Docker's archive carries FIFOs and device
                # nodes, and the firewall is what refuses them (firewall:fifo, ...).
                info = _info(arcname, st, special)
                if special != tarfile.FIFOTYPE:
                    info.devmajor, info.devminor = os.major(st.st_rdev), os.minor(st.st_rdev)
                _add_header(out, info)
                return None
        except FileNotFoundError:
            raise _Skipped("no such path") from None
        except _Changed:
            continue
        except OSError as exc:
            # EINVAL: readlink of what is no longer a symlink. ELOOP / ENOTDIR: an open with
            # O_NOFOLLOW (| O_DIRECTORY) of what is now a symlink or no longer a directory.
            # ENXIO: a regular file swapped for a socket. All swaps: look again.
            if exc.errno in (errno.EINVAL, errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
                continue
            raise
        raise _Skipped("is a socket")
    raise _Skipped("kept changing while it was read")


_SPECIAL = {
    stat.S_IFIFO: tarfile.FIFOTYPE,
    stat.S_IFCHR: tarfile.CHRTYPE,
    stat.S_IFBLK: tarfile.BLKTYPE,
}


class _Changed(Exception):
    """The entry opened is not of the type its lstat said a moment earlier."""


def _add_directory(out: _Counted, dir_fd: int, name: str, arcname: str) -> int:
    fd = os.open(name, _DIR, dir_fd=dir_fd)
    try:
        _add_header(out, _info(arcname, os.fstat(fd), tarfile.DIRTYPE))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _add_file(out: _Counted, dir_fd: int, name: str, arcname: str) -> None:
    fd = os.open(name, _READ, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Changed  # a FIFO or directory swapped in after the lstat
        if st.st_nlink > 1:
            # As Docker's archive does: the second name of a file already in this archive is
            # a hard-link entry naming the first (the firewall refuses hard links), not a copy.
            first = out.inodes.setdefault((st.st_dev, st.st_ino), arcname)
            if first != arcname:
                link = _info(arcname, st, tarfile.LNKTYPE)
                link.linkname = first
                _add_header(out, link)
                return
        info = _info(arcname, st, tarfile.REGTYPE)
        info.size = st.st_size
        header = info.tobuf(tarfile.PAX_FORMAT, _ENCODING, _ERRORS)
        padding = -st.st_size % _BLOCK
        # A file that cannot fit is refused before a byte of it is read: a sparse terabyte
        # costs one fstat, not a terabyte of zeros.
        if not out.fits(len(header) + st.st_size + padding + len(_END)):
            raise ArchiveTooLargeError(out.cap)
        out.write(header)
        left, shrunk = st.st_size, False
        while left:
            n = min(_CHUNK, left)
            # Never more than `left`: a file that grows while read is cut at its header's size.
            chunk = b"" if shrunk else os.read(fd, n)
            if not chunk:
                shrunk = True  # it shrank: the header promised `size` bytes, zeros follow
                chunk = bytes(n)
            out.write(chunk)
            left -= len(chunk)
        out.write(bytes(padding))
    finally:
        os.close(fd)


def _info(arcname: str, st: os.stat_result, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(arcname)
    info.type = kind
    info.mode = stat.S_IMODE(st.st_mode)
    info.uid, info.gid = st.st_uid, st.st_gid
    info.mtime = st.st_mtime_ns // 1_000_000_000
    return info


def _add_header(out: _Counted, info: tarfile.TarInfo) -> None:
    out.write(info.tobuf(tarfile.PAX_FORMAT, _ENCODING, _ERRORS))


# -- extract_tar (put_archive) -----------------------------------------------------------------


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
    - A FIFO member is made (`mkfifo`, never opened); device and other members are refused.
    - Owner: `uid` / `gid` where given (for missing parents too), else the member's. Mode: the
      member's without setuid / setgid (`& 0o1777`; symlinks have none). Mtime: the member's
      (a directory's set once everything is extracted, as its entries change it).

    Raises `EngineError`, naming the path, if `rel` is absolute, has ".." or NUL, is missing or
    goes through a symlink or non-directory; if a member's name is absolute, has ".." or NUL,
    or goes through a symlink or non-directory in the destination (nothing is written through
    it); for a refused member; for data that is no tar; on an I/O error. The destination may
    then hold part of the archive, as with Docker.
    """
    _check_rel(rel)
    parts = tuple(p for p in rel.split("/") if p not in ("", "."))
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
        with archive:
            _Extraction(dest, base, rel, uid, gid).run(archive)
    finally:
        os.close(dest)


class _Extraction:
    def __init__(self, dest: int, base: Path, rel: str, uid: int | None, gid: int | None) -> None:
        self.dest = dest
        self.where = f"{rel!r} in {base}"
        self.uid = uid
        self.gid = gid
        # Regular files extracted so far: the only targets a hard link member may name.
        self.files: set[tuple[str, ...]] = set()
        self.dir_times: list[tuple[tuple[str, ...], float]] = []

    def run(self, archive: tarfile.TarFile) -> None:
        try:
            for member in archive:
                self._member(archive, member)
        except tarfile.TarError as exc:
            raise EngineError(f"the archive for {self.where} is corrupt: {exc}") from None
        for parts, mtime in self.dir_times:
            self._set_dir_time(parts, mtime)

    def _member(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        parts = self._member_parts(member.name)
        if not parts:
            return  # "." is the destination itself: Docker leaves it as it is
        if not (
            member.isdir() or member.isreg() or member.issym() or member.islnk() or member.isfifo()
        ):
            raise EngineError(
                f"member {member.name!r} for {self.where}: not a file, directory, "
                "symlink, hard link or FIFO"
            )
        try:
            parent = self._parent(parts[:-1], member.name)
        except OSError as exc:
            raise self._error(member.name, exc) from None
        try:
            if member.isdir():
                self._directory(parent, parts, member)
            elif member.isreg():
                self._file(parent, parts, member, archive)
            elif member.issym():
                self._symlink(parent, parts, member)
            elif member.isfifo():
                self._fifo(parent, parts, member)
            else:
                self._hardlink(parent, parts, member)
        except OSError as exc:
            raise self._error(member.name, exc) from None
        finally:
            os.close(parent)

    def _member_parts(self, name: str) -> tuple[str, ...]:
        if "\x00" in name:
            raise EngineError(f"member {name!r} for {self.where}: a NUL byte in its name")
        if name.startswith("/"):
            raise EngineError(f"member {name!r} for {self.where}: an absolute name")
        parts = tuple(p for p in name.split("/") if p not in ("", "."))
        if ".." in parts:
            raise EngineError(f"member {name!r} for {self.where}: a '..' in its name")
        return parts

    def _error(self, name: str, exc: OSError) -> EngineError:
        return EngineError(f"member {name!r} for {self.where}: {exc.strerror or exc}")

    def _owner(self, member: tarfile.TarInfo) -> tuple[int, int]:
        return (
            member.uid if self.uid is None else self.uid,
            member.gid if self.gid is None else self.gid,
        )

    def _parent(self, parts: tuple[str, ...], shown: str, *, create: bool = True) -> int:
        """An fd of the directory `dest/parts`, every component opened without following it;
        what is missing is created (mode 0755, like Docker's MkdirAll), or with `create=False`
        an error."""
        fd = os.dup(self.dest)
        try:
            for i, name in enumerate(parts):
                nxt = self._open_dir(fd, name, parts[: i + 1], shown)
                if nxt is None and not create:
                    raise EngineError(
                        f"member {shown!r} for {self.where}: no such directory "
                        f"{'/'.join(parts[: i + 1])!r}"
                    )
                if nxt is None:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o700, dir_fd=fd)
                    nxt = self._open_dir(fd, name, parts[: i + 1], shown)
                    if nxt is None:
                        raise EngineError(
                            f"member {shown!r} for {self.where}: "
                            f"{'/'.join(parts[: i + 1])!r} vanished"
                        )
                    try:
                        os.fchown(nxt, _or(self.uid), _or(self.gid))
                        os.fchmod(nxt, 0o755)
                    except BaseException:
                        os.close(nxt)
                        raise
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_dir(self, parent: int, name: str, parts: tuple[str, ...], shown: str) -> int | None:
        """`name` of `parent` opened as a directory, None if it is missing; a symlink or other
        non-directory is an error naming it."""
        try:
            return os.open(name, _DIR, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno != errno.ENOTDIR:
                raise
            what = _not_a_directory(parent, name)
            raise EngineError(
                f"member {shown!r} for {self.where}: {'/'.join(parts)!r} {what}"
            ) from None

    def _clear(self, parent: int, parts: tuple[str, ...], shown: str, *, merge: bool) -> bool:
        """Make room for the member: unlink a non-directory of its name (never open it, so a
        planted symlink or hard link is not written through). True if a directory is there
        (`merge`: a directory member goes into it); a directory in the way of a non-directory
        is an error, as in Docker's put_archive."""
        name = parts[-1]
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(st.st_mode):
            if merge:
                return True
            raise EngineError(f"member {shown!r} for {self.where}: a directory is in its place")
        try:
            os.unlink(name, dir_fd=parent)
        except FileNotFoundError:
            pass
        self.files.discard(parts)
        return False

    def _directory(self, parent: int, parts: tuple[str, ...], member: tarfile.TarInfo) -> None:
        name = parts[-1]
        for _ in range(_RETRIES):
            if not self._clear(parent, parts, member.name, merge=True):
                try:
                    os.mkdir(name, 0o700, dir_fd=parent)
                except FileExistsError:
                    continue  # recreated in the meantime: look again
            fd = self._open_dir(parent, name, parts, member.name)
            if fd is None:
                continue
            try:
                os.fchown(fd, *self._owner(member))
                os.fchmod(fd, member.mode & 0o1777)
            finally:
                os.close(fd)
            self.dir_times.append((parts, member.mtime))
            return
        raise self._churned(member.name)

    def _file(
        self,
        parent: int,
        parts: tuple[str, ...],
        member: tarfile.TarInfo,
        archive: tarfile.TarFile,
    ) -> None:
        fd = self._create(parent, parts, member.name)
        try:
            source = archive.extractfile(member)
            if source is not None:
                while chunk := source.read(_CHUNK):
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
            # Owner before mode: chown clears setuid bits, and the mode is final.
            os.fchown(fd, *self._owner(member))
            os.fchmod(fd, member.mode & 0o1777)
            os.utime(fd, (member.mtime, member.mtime))
        finally:
            os.close(fd)
        self.files.add(parts)

    def _create(self, parent: int, parts: tuple[str, ...], shown: str) -> int:
        for _ in range(_RETRIES):
            self._clear(parent, parts, shown, merge=False)
            try:
                return os.open(parts[-1], _CREATE, 0o600, dir_fd=parent)
            except FileExistsError:
                continue  # recreated between the unlink and the open: unlink it again
        raise self._churned(shown)

    def _symlink(self, parent: int, parts: tuple[str, ...], member: tarfile.TarInfo) -> None:
        if "\x00" in member.linkname:
            raise EngineError(f"member {member.name!r} for {self.where}: a NUL in its target")
        self._unopened(
            parent, parts, member, lambda name: os.symlink(member.linkname, name, dir_fd=parent)
        )

    def _fifo(self, parent: int, parts: tuple[str, ...], member: tarfile.TarInfo) -> None:
        """Made, never opened (Docker's put_archive recreates FIFOs: the T1 baseline copies an
        agent's workspace with them)."""
        mode = member.mode & 0o1777
        self._unopened(parent, parts, member, lambda name: os.mkfifo(name, mode, dir_fd=parent))

    def _unopened(
        self,
        parent: int,
        parts: tuple[str, ...],
        member: tarfile.TarInfo,
        make: Callable[[str], None],
    ) -> None:
        """Make an entry that is never opened (a symlink, a FIFO) in place of whatever has its
        name, then set its owner and times by name: whatever is swapped in under that name in
        the meantime is changed instead, inside the directory and never followed out of it."""
        name = parts[-1]
        for _ in range(_RETRIES):
            self._clear(parent, parts, member.name, merge=False)
            try:
                make(name)
            except FileExistsError:
                continue
            break
        else:
            raise self._churned(member.name)
        os.chown(name, *self._owner(member), dir_fd=parent, follow_symlinks=False)
        times = (member.mtime, member.mtime)
        os.utime(name, times, dir_fd=parent, follow_symlinks=False)

    def _hardlink(self, parent: int, parts: tuple[str, ...], member: tarfile.TarInfo) -> None:
        target = self._member_parts(member.linkname)
        if target not in self.files:
            raise EngineError(
                f"member {member.name!r} for {self.where}: a hard link to "
                f"{member.linkname!r}, which is no file extracted before it"
            )
        source = self._parent(target[:-1], member.name, create=False)
        try:
            for _ in range(_RETRIES):
                self._clear(parent, parts, member.name, merge=False)
                try:
                    # follow_symlinks=False: a symlink swapped in at the source is linked
                    # itself, never resolved to a file outside.
                    os.link(
                        target[-1],
                        parts[-1],
                        src_dir_fd=source,
                        dst_dir_fd=parent,
                        follow_symlinks=False,
                    )
                except FileExistsError:
                    continue
                break
            else:
                raise self._churned(member.name)
        finally:
            os.close(source)
        self.files.add(parts)

    def _churned(self, shown: str) -> EngineError:
        return EngineError(f"member {shown!r} for {self.where}: its name kept being recreated")

    def _set_dir_time(self, parts: tuple[str, ...], mtime: float) -> None:
        # Best effort: a directory moved or replaced since it was extracted keeps its time.
        fd = os.dup(self.dest)
        try:
            for name in parts:
                nxt = os.open(name, _DIR, dir_fd=fd)
                os.close(fd)
                fd = nxt
            os.utime(fd, (mtime, mtime))
        except OSError:
            pass
        finally:
            os.close(fd)


def _or(value: int | None) -> int:
    """An owner for chown: -1 leaves it as it is."""
    return -1 if value is None else value
