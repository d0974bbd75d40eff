"""Writing a normalised archive to disk: the only way firewalled bytes become files on the host.

Defence in depth: the input must be the firewall's normalised form exactly (every header is
regenerated and compared byte for byte, paths strictly ascending, every parent created by an
earlier member), names are re-checked, and every file is created relative to a directory fd with
O_NOFOLLOW | O_EXCL, so a symlink can never be followed nor an existing file replaced. The
directory fds, the copy and the modes (`NORMALISED`) are `assay._internal.fstree`'s; unlike its
tar writer, nothing here ever makes room for a member: the directory is fresh and empty, so an
entry already at a member's name means the input is not what `check` wrote.
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
from assay._internal.fstree.copy import copy_into
from assay._internal.fstree.dirfd import CREATE, DIR, Parents, TreeError, descend
from assay._internal.fstree.policy import NORMALISED
from assay.errors import FirewallError

__all__ = ["FirewallError", "materialise", "read_materialised"]

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
        root = os.open(dest, DIR)
    except OSError as exc:
        raise FirewallError(f"cannot open {dest} as a directory: {exc.strerror}") from None
    stack = Parents(root)
    try:
        if os.listdir(root):
            raise FirewallError(f"{dest} is not empty; materialise only into a fresh directory")
        _write_all(_Plain(normalised, limits.max_archive_bytes), stack, limits, links)
    except Violation as violation:
        raise FirewallError(
            f"not a safe normalised archive: {violation.rule} at "
            f"{violation.member or '<archive>'}: {violation.detail}"
        ) from None
    except (OSError, TreeError) as exc:
        raise FirewallError(f"materialising into {dest} failed: {exc}") from None
    finally:
        stack.close()
        os.close(root)


def _write_all(src: _Plain, stack: Parents, limits: FirewallLimits, links: bool) -> None:
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
            fd = os.open(parts[-1], DIR, dir_fd=parent)
            try:
                os.fchmod(fd, NORMALISED.mode(member.mode, directory=True))
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
    mode = NORMALISED.mode(member.mode, directory=member.kind == "dir")
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
    fd = os.open(name, CREATE, 0o600, dir_fd=parent)
    try:
        if copy_into(fd, src.read, member.size) != member.size:
            raise Violation("truncated", "the archive ends inside a file.", member.display)
        os.fchmod(fd, NORMALISED.mode(member.mode))
    finally:
        os.close(fd)
    padding = src.read(-member.size % 512)
    if padding.count(0) != len(padding):
        raise Violation("not-normalised", "the padding after a file is not zero.", member.display)


def read_materialised(root: Path, path: str) -> bytes:
    """One file of a tree materialise() wrote, opened component by component from directory fds:
    no full path is ever formed (PATH_MAX does not apply) and no link is followed."""
    *dirs, name = path.split("/")
    top = os.open(root, DIR)
    try:
        parent = descend(top, tuple(dirs))
    finally:
        os.close(top)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    finally:
        os.close(parent)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()
