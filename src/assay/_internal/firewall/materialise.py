"""Writing a normalised archive to disk: the only way firewalled bytes become files on the host.

Defence in depth: the input must be the firewall's normalised form exactly (every header is
regenerated and compared byte for byte, paths strictly ascending, every parent created by an
earlier member), names are re-checked, and every file is created relative to a directory fd with
O_NOFOLLOW | O_EXCL, so a symlink can never be followed nor an existing file replaced.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from assay._internal.firewall.tarbase import DEFAULT_LIMITS, FirewallLimits, Violation
from assay._internal.firewall.tarnames import Catalogue, NameBudget, check_compat, split_name
from assay._internal.firewall.tarread import Member, read_members
from assay._internal.firewall.tarwrite import header
from assay._internal.firewall.treelinks import check_contained, link_target
from assay.errors import FirewallError

__all__ = ["FirewallError", "materialise", "read_materialised"]

_CHUNK = 2**20
_UNBOUNDED = 2**63
_NAME_RULES_ONLY = replace(
    DEFAULT_LIMITS,
    max_entries=_UNBOUNDED,
    max_file_bytes=_UNBOUNDED,
    max_total_bytes=_UNBOUNDED,
    max_archive_bytes=_UNBOUNDED,
    # The input is check()'s output, whose names already passed the budget; its implied parent
    # directories, now members, would count twice.
    max_name_bytes=_UNBOUNDED,
)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class _Plain:
    """The normalised archive as a forward-only byte source (no decompression, no seeking)."""

    def __init__(self, f: BinaryIO, cap: int) -> None:
        self._f = f
        self._cap = cap
        self.offset = 0

    def read(self, n: int) -> bytes:
        if self.offset + n > self._cap:
            raise Violation("archive-size", "the normalised archive exceeds max_archive_bytes.")
        data = self._f.read(n)
        while len(data) < n and (more := self._f.read(n - len(data))):
            data += more
        self.offset += len(data)
        return data

    def skip(self, n: int) -> None:
        if n:
            self.read(n)


def materialise(
    normalised: BinaryIO, dest: Path, limits: FirewallLimits | None = None, *, links: bool = False
) -> None:
    """Write a normalised archive into `dest`, an existing empty directory.

    `links`: the archive is a task tree's (`check(..., tree=True)`), whose symlinks are created
    as symlinks (relative to their directory's fd, never followed); they are checked again to
    resolve inside the tree, and without `links` a symlink member is refused.

    Raises FirewallError on anything unexpected; `dest` may then hold a partial tree and must be
    discarded by the caller. Names are re-checked against `limits` (pass the ones check() used if
    they raised a name cap); size and count caps apply only when `limits` is given, because the
    archive's own length already bounds what can be written.
    """
    limits = limits or _NAME_RULES_ONLY
    try:
        root = os.open(dest, _DIR_FLAGS)
    except OSError as exc:
        raise FirewallError(f"cannot open {dest} as a directory: {exc.strerror}") from None
    stack = _DirStack(root)
    try:
        if os.listdir(root):
            raise FirewallError(f"{dest} is not empty; materialise only into a fresh directory")
        _write_all(_Plain(normalised, limits.max_archive_bytes), stack, limits, links)
    except Violation as violation:
        raise FirewallError(
            f"not a safe normalised archive: {violation.rule} at "
            f"{violation.member or '<archive>'}: {violation.detail}"
        ) from None
    except OSError as exc:
        raise FirewallError(f"materialising into {dest} failed: {exc}") from None
    finally:
        stack.close()


def _write_all(src: _Plain, stack: _DirStack, limits: FirewallLimits, links: bool) -> None:
    previous = ""
    written: dict[str, str] = {}
    count = total = 0
    catalogue = Catalogue(limits)  # the same duplicate and collision rules as check()
    budget = NameBudget(limits)
    for member in read_members(src, limits, exact_end=True):
        parts = _canonical_parts(member, limits, links)
        check_compat(parts, budget)
        catalogue.add(parts, member.kind)
        path = "/".join(parts)
        if path <= previous:  # the firewall sorts by path string; this also rules out duplicates
            raise Violation(
                "order", "members are not in strictly ascending path order.", member.display
            )
        previous = path
        count += 1
        total += member.size
        if (
            count > limits.max_entries
            or member.size > limits.max_file_bytes
            or total > limits.max_total_bytes
        ):
            raise Violation("limits", "the normalised archive exceeds the limits.", member.display)
        parent = stack.enter(parts[:-1])
        if member.kind == "dir":
            os.mkdir(parts[-1], 0o700, dir_fd=parent)
            fd = os.open(parts[-1], _DIR_FLAGS, dir_fd=parent)
            try:
                os.fchmod(fd, 0o755)
            finally:
                os.close(fd)
        elif member.kind == "symlink":
            target = link_target(member.linkname, limits)
            written[path] = target
            os.symlink(target, parts[-1], dir_fd=parent)
        else:
            _write_file(src, member, parts[-1], parent)
    # Judged whole, as check() judged them: a link may lead through one written after it. Until
    # this returns nothing follows them (a member under a link is a path-conflict above, and
    # every open here is by directory fd with O_NOFOLLOW); on a Violation the caller discards.
    check_contained(written)


def _canonical_parts(member: Member, limits: FirewallLimits, links: bool) -> tuple[str, ...]:
    if member.kind not in (("file", "dir", "symlink") if links else ("file", "dir")):
        raise Violation("member-type", f"a {member.kind} in a normalised archive.", member.display)
    parts = split_name(member.name, limits, is_dir=member.kind == "dir")
    if not parts:
        raise Violation("empty-name", "the archive root appears as a member.", member.display)
    mode = 0o755 if member.kind == "dir" or member.mode & 0o111 else 0o644
    target = ""
    if member.kind == "symlink":
        mode, target = 0o777, member.linkname.decode("utf-8", "surrogateescape")
    expected = header("/".join(parts), member.kind, member.size, mode, target)
    if member.raw != expected:
        raise Violation(
            "not-normalised", "the header is not the canonical one for this member.", member.display
        )
    return parts


def _write_file(src: _Plain, member: Member, name: str, parent: int) -> None:
    mode = 0o755 if member.mode & 0o111 else 0o644
    fd = os.open(name, _FILE_FLAGS, 0o600, dir_fd=parent)
    try:
        remaining = member.size
        while remaining:
            chunk = src.read(min(_CHUNK, remaining))
            if not chunk:
                raise Violation("truncated", "the archive ends inside a file.", member.display)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
            remaining -= len(chunk)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    padding = src.read(-member.size % 512)
    if padding.count(0) != len(padding):
        raise Violation("not-normalised", "the padding after a file is not zero.", member.display)


def read_materialised(root: Path, path: str) -> bytes:
    """One file of a tree materialise() wrote, opened component by component from directory fds:
    no full path is ever formed (PATH_MAX does not apply) and no link is followed."""
    *dirs, name = path.split("/")
    stack = _DirStack(os.open(root, _DIR_FLAGS))
    try:
        parent = stack.enter(tuple(dirs))
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        with os.fdopen(fd, "rb") as fh:
            return fh.read()
    finally:
        stack.close()


class _DirStack:
    """Open directory fds for the current path, so every open is relative and follows no link."""

    def __init__(self, root: int) -> None:
        self._names: list[str] = []
        self._fds = [root]

    def enter(self, parts: tuple[str, ...]) -> int:
        keep = 0
        while keep < min(len(parts), len(self._names)) and parts[keep] == self._names[keep]:
            keep += 1
        while len(self._names) > keep:
            self._names.pop()
            os.close(self._fds.pop())
        for name in parts[keep:]:
            self._fds.append(os.open(name, _DIR_FLAGS, dir_fd=self._fds[-1]))
            self._names.append(name)
        return self._fds[-1]

    def close(self) -> None:
        for fd in reversed(self._fds):
            os.close(fd)
        self._fds.clear()
