"""Tar members written into a directory without following a link (see the package docstring).

Docker's `put_archive` into a container's tree (`runtime.oci.hosttar`) and an image's layers
merged into its root filesystem (`runtime.oci.layers`) are this one writer under two policies
(`policy.CONTAINER`, `policy.IMAGE`). Every member's parent is reached by directory fds with
O_NOFOLLOW; whatever non-directory already has a member's name is unlinked, never opened (a
planted symlink or hard link is not written through), and the member is then created with
O_CREAT | O_EXCL | O_NOFOLLOW (mkdir, symlink, mkfifo, linkat without following): a name
recreated by hostile code in between fails the create and is looked at again, a few times,
then refused. Attributes are set through an fd of the entry made, or by name without following.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import stat
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .copy import copy_into
from .dirfd import CREATE, Missing, Parents, Refused, descend, open_dir, split
from .policy import Policy

__all__ = ["Extractor"]

LOG = logging.getLogger("assay")

# A name recreated this many times between our unlink and our create is being churned on
# purpose: the member is refused rather than raced forever.
_RETRIES = 4
_FIFO = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
_XATTR_PAX = "SCHILY.xattr."
_T = TypeVar("_T")


@dataclass
class _DirAttrs:
    mode: int | None
    uid: int
    gid: int
    mtime: float | None


class Extractor:
    """Writes the members of one or more tars into the directory `dest` (an fd, not owned).

    `uid`/`gid` replace every member's owner (and are the owner of a missing parent it makes);
    `chown` says whether this process may set owners at all. `budget` caps the bytes written
    into the tree across every member: a compressed or sparse member cannot expand without
    bound. Call `finish` after the last member (directories' deferred attributes) and `close`
    in any case."""

    def __init__(
        self,
        dest: int,
        policy: Policy,
        *,
        uid: int | None = None,
        gid: int | None = None,
        chown: bool = True,
        budget: int | None = None,
    ) -> None:
        self._dest = dest
        self._policy = policy
        self._uid = uid
        self._gid = gid
        self._chown = chown
        self._budget = budget
        self._parents = Parents(dest, self._make_parent)
        self._dirs: dict[tuple[str, ...], _DirAttrs] = {}
        self._files: set[tuple[str, ...]] = set()
        """A shared tree's regular files this archive made: the only targets a hard link may
        name (every other entry is the container's)."""
        self.devices = 0
        """Device nodes skipped (a policy with `skip_others`)."""

    def close(self) -> None:
        self._parents.close()

    def member(self, member: tarfile.TarInfo, archive: tarfile.TarFile) -> None:
        """Write one member of `archive`. `Refused` says why it was not; OSError on I/O."""
        parts = split(member.name)
        if not parts:
            return  # "." is the destination itself: left as it is, as Docker does
        if not (
            member.isdir() or member.isreg() or member.issym() or member.islnk() or member.isfifo()
        ):
            if not self._policy.skip_others:
                raise Refused("not a file, directory, symlink, hard link or FIFO")
            if member.ischr() or member.isblk():
                self.devices += 1
            else:
                LOG.debug("skipping %r of tar type %r", member.name, member.type)
            return
        target = split(member.linkname) if member.islnk() else ()
        if member.islnk() and target == parts:
            return  # a hard link to itself: nothing to do, and clearing the name would lose it
        parent = self._parents.enter(parts[:-1])
        if member.isdir():
            self._directory(parent, parts, member)
        elif member.isreg():
            self._file(parent, parts, member, archive)
        elif member.issym():
            self._symlink(parent, parts, member)
        elif member.isfifo():
            self._fifo(parent, parts, member)
        else:
            self._hardlink(parent, parts, target, member)

    def remove(self, parts: tuple[str, ...]) -> None:
        """Remove the entry `parts` and everything below it, if it is there (an image layer's
        whiteout). Private trees only: a shared tree's directories are not ours to remove."""
        if not self._policy.private:
            raise Refused("only a private tree's entries are removed")
        try:
            parent = self._parents.enter(parts[:-1], make=False)
        except Missing:
            return
        self._clear(parent, parts, keep_dir=False)

    def empty(self, parts: tuple[str, ...]) -> None:
        """Remove everything inside directory `parts`, if it is there (an opaque whiteout)."""
        if not self._policy.private:
            raise Refused("only a private tree's entries are removed")
        try:
            fd = self._parents.enter(parts, make=False)
        except Missing:
            return
        for name in os.listdir(fd):
            self._clear(fd, (*parts, name), keep_dir=False)

    def finish(self) -> None:
        """Directories' deferred attributes, deepest first: a directory made read-only must
        have nothing left to receive, and its children's changes would move its mtime."""
        self._parents.close()
        walk = Parents(self._dest)
        try:
            for parts in sorted(self._dirs, key=lambda p: (-len(p), p)):
                try:
                    # Entered by its parent: a directory MAX_DEPTH + 1 levels down is a member
                    # the writer takes (the reader's deepest header), so it must be reachable.
                    fd = open_dir(walk.enter(parts[:-1]), parts[-1], "/".join(parts))
                    if fd is None:
                        continue  # removed since: a later member or layer put something else there
                    try:
                        self._set_dir(fd, self._dirs[parts])
                    finally:
                        os.close(fd)
                except Missing:
                    continue
                except (Refused, OSError):
                    # A shared tree's directory moved or replaced since it was made keeps what
                    # it has; in a private tree nothing else moves it, so this is a real error.
                    if self._policy.private:
                        raise
        finally:
            walk.close()

    def _set_dir(self, fd: int, attrs: _DirAttrs) -> None:
        if self._chown and (attrs.uid, attrs.gid) != (-1, -1):
            os.fchown(fd, attrs.uid, attrs.gid)
        if attrs.mode is not None:
            os.fchmod(fd, attrs.mode)
        if attrs.mtime is not None:
            os.utime(fd, (attrs.mtime, attrs.mtime))

    def _set(self, fd: int, member: tarfile.TarInfo) -> None:
        """A file's or FIFO's attributes, through its fd. Owner before mode: chown clears setuid
        bits and file capabilities."""
        if self._chown:
            os.fchown(fd, *self._owner(member))
        os.fchmod(fd, self._policy.mode(member.mode))
        if self._policy.xattrs and member.isreg():
            self._xattrs(fd, member)
        os.utime(fd, (member.mtime, member.mtime))

    def _owner(self, member: tarfile.TarInfo) -> tuple[int, int]:
        return (
            member.uid if self._uid is None else self._uid,
            member.gid if self._gid is None else self._gid,
        )

    def _make_parent(self, parent: int, name: str, parts: tuple[str, ...]) -> int:
        """A parent the archive does not list: 0755, the override owner or this process's (never
        a group inherited from a setgid directory above it), as Docker's MkdirAll makes it.
        Made 0700 first: nobody else may enter before its mode is set."""
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent)
        fd = open_dir(parent, name, "/".join(parts))
        if fd is None:
            raise Refused("vanished while it was made", "/".join(parts))
        uid = os.geteuid() if self._uid is None else self._uid
        attrs = _DirAttrs(0o755, uid, os.getegid() if self._gid is None else self._gid, None)
        if self._policy.private:
            self._dirs[parts] = attrs
            return fd
        try:
            self._set_dir(fd, attrs)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _directory(self, parent: int, parts: tuple[str, ...], member: tarfile.TarInfo) -> None:
        fd = self._new_dir(parent, parts)
        try:
            uid, gid = self._owner(member)
            attrs = _DirAttrs(self._policy.mode(member.mode, directory=True), uid, gid, None)
            if not self._policy.private:
                self._set_dir(fd, attrs)
                attrs = _DirAttrs(None, -1, -1, None)
            attrs.mtime = member.mtime  # set last: its entries, made later, change it
            self._dirs[parts] = attrs
        finally:
            os.close(fd)

    def _file(
        self,
        parent: int,
        parts: tuple[str, ...],
        member: tarfile.TarInfo,
        archive: tarfile.TarFile,
    ) -> None:
        fd = self._place(parent, parts, lambda name: os.open(name, CREATE, 0o600, dir_fd=parent))
        try:
            data = archive.extractfile(member)
            if data is not None:
                copy_into(fd, data.read, spend=self._spend)
            self._set(fd, member)
        finally:
            os.close(fd)
        if not self._policy.private:
            self._files.add(parts)

    def _symlink(self, parent: int, parts: tuple[str, ...], member: tarfile.TarInfo) -> None:
        if "\x00" in member.linkname:
            raise Refused("a NUL byte in its target")
        link = member.linkname
        self._place(parent, parts, lambda name: os.symlink(link, name, dir_fd=parent))
        # By name, not followed: whatever is swapped in under it meanwhile is changed instead,
        # inside the directory and never outside it.
        name = parts[-1]
        if self._chown:
            os.chown(name, *self._owner(member), dir_fd=parent, follow_symlinks=False)
        os.utime(name, (member.mtime, member.mtime), dir_fd=parent, follow_symlinks=False)

    def _fifo(self, parent: int, parts: tuple[str, ...], member: tarfile.TarInfo) -> None:
        """Made, then opened without blocking (no writer is waited for) to set its attributes
        through an fd: by name, chmod would follow a symlink swapped in meanwhile."""
        self._place(parent, parts, lambda name: os.mkfifo(name, 0o600, dir_fd=parent))
        fd = os.open(parts[-1], _FIFO, dir_fd=parent)
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                raise Refused("was replaced while it was made")
            self._set(fd, member)
        finally:
            os.close(fd)

    def _hardlink(
        self,
        parent: int,
        parts: tuple[str, ...],
        target: tuple[str, ...],
        member: tarfile.TarInfo,
    ) -> None:
        if not self._policy.private and target not in self._files:
            raise Refused(
                f"a hard link to {member.linkname!r}, which is no file extracted before it"
            )
        try:
            source = descend(self._dest, target[:-1])
        except Missing:
            raise Refused(f"a hard link to {member.linkname!r}, which is absent") from None
        try:
            # follow_symlinks=False: a symlink at the source is linked itself, never resolved
            # to a file outside.
            self._place(
                parent,
                parts,
                lambda name: os.link(
                    target[-1], name, src_dir_fd=source, dst_dir_fd=parent, follow_symlinks=False
                ),
            )
        finally:
            os.close(source)
        if not self._policy.private:
            self._files.add(parts)

    def _place(self, parent: int, parts: tuple[str, ...], make: Callable[[str], _T]) -> _T:
        """Make room for a non-directory member and `make` it under its name."""
        for _ in range(_RETRIES):
            self._clear(parent, parts, keep_dir=False)
            try:
                return make(parts[-1])
            except FileExistsError:
                continue  # recreated between the unlink and the create: look again
        raise Refused("its name kept being recreated")

    def _new_dir(self, parent: int, parts: tuple[str, ...]) -> int:
        """An fd of the directory member `parts`: made, or one already there merged into."""
        for _ in range(_RETRIES):
            if not self._clear(parent, parts, keep_dir=True):
                try:
                    os.mkdir(parts[-1], 0o700, dir_fd=parent)
                except FileExistsError:
                    continue
            fd = open_dir(parent, parts[-1], "/".join(parts))
            if fd is not None:
                return fd
        raise Refused("its name kept being recreated")

    def _clear(self, parent: int, parts: tuple[str, ...], *, keep_dir: bool) -> bool:
        """Unlink a non-directory with the member's name, never opening it. True if a directory
        is there and `keep_dir` (a directory member merges into it). A directory in the way of
        anything else is removed in a private tree, refused in a shared one."""
        name = parts[-1]
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(st.st_mode):
            if keep_dir:
                return True
            if not self._policy.private:
                raise Refused("a directory is in its place")
            self._forget(parts)
            # The fd-based rmtree: it never follows a symlink it meets inside.
            shutil.rmtree(name, dir_fd=parent)
            return False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=parent)
        self._files.discard(parts)
        return False

    def _forget(self, parts: tuple[str, ...]) -> None:
        self._parents.forget(parts)
        n = len(parts)
        for key in [k for k in self._dirs if k[:n] == parts]:
            del self._dirs[key]

    def _spend(self, n: int) -> None:
        if self._budget is None:
            return
        self._budget -= n
        if self._budget < 0:
            raise Refused("grows the tree past its cap")

    def _xattrs(self, fd: int, member: tarfile.TarInfo) -> None:
        for key, value in member.pax_headers.items():
            if not key.startswith(_XATTR_PAX):
                continue
            attr = key[len(_XATTR_PAX) :]
            if attr != "security.capability" and not attr.startswith("user."):
                continue
            if attr.startswith("security.") and not self._chown:
                continue  # needs CAP_SETFCAP
            try:
                os.setxattr(fd, attr, value.encode("utf-8", "surrogateescape"))
            except OSError as exc:
                if exc.errno not in (errno.ENOTSUP, errno.EPERM):
                    raise
                LOG.warning("%s of %r not kept: %s", attr, member.name, exc)
