"""Directory descriptors: the one way this package reaches an entry below a trusted top.

Every component is opened relative to its parent's fd with O_NOFOLLOW, so no full path is
ever built (PATH_MAX never applies) and no link is ever followed, also while hostile code
swaps a directory for a symlink between two system calls: the fd already held is the
directory that was checked, whatever the name points to a moment later.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

MAX_DEPTH = 256
"""Directory levels below its top that this package holds open at once, one fd each. The
reader opens no directory this deep (it is archived by its header alone) and the writer
refuses a member whose parent is deeper: a tree read out here can always be written back."""

DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in after the lstat must not hang the open.
READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# O_EXCL with O_NOFOLLOW: never written through a name that already exists, link or not.
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class TreeError(Exception):
    """What a walk or a write stopped at: `path` names the entry (as the archive or the caller
    names it; empty when the message needs none), `why` says what. Not an `AssayError`: each
    caller says in its own terms (engine, firewall, usage) what the failure means for it."""

    def __init__(self, why: str, path: str = "") -> None:
        super().__init__(f"{path!r} {why}" if path else why)
        self.why = why
        self.path = path


class Refused(TreeError):
    """Nothing was written or read through it: a bad name, a symlink or file where a
    directory must be, a member the policy refuses, a name that kept being recreated."""


class Missing(Refused):
    """A directory that must exist does not."""


class Skipped(TreeError):
    """The entry is left out of the archive (it vanished, is a socket, or kept changing)."""


class Changed(TreeError):
    """A tree read as still (`TarOut(live=False)`) changed while it was read."""


class Unreadable(TreeError):
    """An I/O error that is no property of the tree's shape (EACCES, EIO, ...)."""


def split(name: str) -> tuple[str, ...]:
    """`name`'s components below its top ("", "." and "x/." name the top itself). Refused if it
    could name anything outside: absolute, a ".." component, a NUL, a lone surrogate."""
    if "\x00" in name:
        raise Refused("a NUL byte in its name")
    try:
        os.fsencode(name)
    except UnicodeEncodeError:
        raise Refused("not a file name (a lone surrogate)") from None
    if name.startswith("/"):
        raise Refused("an absolute name")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise Refused("a '..' in its name")
    return parts


def open_dir(parent: int, name: str, shown: str) -> int | None:
    """`name` of `parent` opened as a directory; None if it is missing. A symlink or other
    non-directory in its place is `Refused`, named `shown`."""
    try:
        return os.open(name, DIR, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        # O_DIRECTORY | O_NOFOLLOW on a symlink is ENOTDIR, ELOOP on some kernels.
        if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        raise Refused(_what(parent, name), shown) from None


def _what(parent: int, name: str) -> str:
    """Why `name` failed to open as a directory (for the message only: it may change again)."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return "is not a directory"
    return "is a symlink" if stat.S_ISLNK(st.st_mode) else "is not a directory"


def descend(root: int, parts: tuple[str, ...]) -> int:
    """A new fd of the directory `root/parts`, every component opened without following it.
    `Missing` or `Refused` names the first component that is absent or no directory."""
    if len(parts) > MAX_DEPTH:
        raise Refused(f"is deeper than {MAX_DEPTH} directories", "/".join(parts))
    fd = os.dup(root)
    try:
        for i, name in enumerate(parts):
            shown = "/".join(parts[: i + 1])
            nxt = open_dir(fd, name, shown)
            if nxt is None:
                raise Missing("no such path", shown)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


Make = Callable[[int, str, tuple[str, ...]], int]
"""Creates the missing directory `name` in the parent fd and returns an fd of it; its third
argument is the directory's components below the root."""


class Parents:
    """The fds of the directories along one path below `root` (not owned), kept while the next
    path shares them: archives list a directory's entries together, so most members cost no
    open at all. One fd per level, so never more than `MAX_DEPTH`."""

    def __init__(self, root: int, make: Make | None = None) -> None:
        self._root = root
        self._make = make
        self._names: list[str] = []
        self._fds: list[int] = []

    def enter(self, parts: tuple[str, ...], *, make: bool = True) -> int:
        """The fd of directory `parts` (owned here: valid until the next call). A missing one is
        made by `make` (unless told not to), or is `Missing`; a link on the way is `Refused`."""
        if len(parts) > MAX_DEPTH:
            raise Refused(f"is deeper than {MAX_DEPTH} directories", "/".join(parts))
        keep = 0
        while keep < min(len(parts), len(self._names)) and parts[keep] == self._names[keep]:
            keep += 1
        self._pop_to(keep)
        for i in range(keep, len(parts)):
            parent = self._fds[-1] if self._fds else self._root
            shown = "/".join(parts[: i + 1])
            fd = open_dir(parent, parts[i], shown)
            if fd is None:
                if self._make is None or not make:
                    raise Missing("no such path", shown)
                fd = self._make(parent, parts[i], parts[: i + 1])
            self._fds.append(fd)
            self._names.append(parts[i])
        return self._fds[-1] if self._fds else self._root

    def forget(self, parts: tuple[str, ...]) -> None:
        """Close what is held of `parts` and below it: it is about to be removed."""
        if tuple(self._names[: len(parts)]) == parts:
            self._pop_to(max(len(parts) - 1, 0))

    def close(self) -> None:
        self._pop_to(0)

    def _pop_to(self, depth: int) -> None:
        while len(self._fds) > depth:
            self._names.pop()
            os.close(self._fds.pop())
