"""The archive firewall: a tar stream in, a normalised archive and its manifest out, or a rejection.

check() is a pure function over streams. Pass one reads every header and judges every member
(nothing is written); pass two writes the kept members, sorted, with canonical headers, hashing
while copying. Rules and the attacks they stop: docs/firewall.md.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, Literal

from assay._internal.firewall.tarbase import DEFAULT_LIMITS, FirewallLimits, Violation
from assay._internal.firewall.tarnames import (
    Catalogue,
    Globs,
    NameBudget,
    check_compat,
    parse_prefix,
    split_name,
)
from assay._internal.firewall.tarread import Member, read_members
from assay._internal.firewall.tarsource import (
    CHUNK,
    SeekableSource,
    StreamSource,
    copy_range,
    open_source,
)
from assay._internal.firewall.tarwrite import END_OF_ARCHIVE, header
from assay._internal.firewall.treelinks import check_contained, link_target
from assay.errors import FirewallError

__all__ = [
    "RULES",
    "Accepted",
    "FirewallError",
    "FirewallLimits",
    "ManifestEntry",
    "Rejected",
    "check",
]

# Every Rejected.rule check() can return; stable ids, documented in docs/firewall.md.
RULES = frozenset({
    # the stream
    "format", "truncated", "trailing-data", "compression", "expansion-ratio", "archive-size",
    # extended headers
    "pax-header", "gnu-header", "header-conflict",
    # names
    "encoding", "control-char", "backslash", "absolute-path", "dot-dot", "empty-name",
    "path-length", "component-length", "depth", "strip-prefix",
    # two members, one file
    "duplicate", "case-collision", "unicode-collision", "path-conflict", "entry-count",
    # member types
    "link", "device", "fifo", "contiguous", "sparse", "member-type",
    # a trusted task tree's links (tree=True)
    "link-escape", "link-loop",
    # sizes
    "file-size", "total-size",
})  # fmt: skip

# Member kinds that are never written; each names the rule that rejects a kept one.
_TYPE_RULES = {
    "hardlink": (
        "link",
        "a hard link can point at any file the extractor can reach, "
        "including /etc/passwd or a file another member replaces.",
    ),
    "symlink": (
        "link",
        "a symbolic link can point outside the target, and later members are written through it.",
    ),
    "char-device": ("device", "a character device node gives access to host hardware."),
    "block-device": ("device", "a block device node gives access to host disks."),
    "fifo": ("fifo", "a FIFO blocks whoever opens it, hanging the grader."),
    "contiguous": (
        "contiguous",
        "a contiguous-file member is an obsolete type that readers treat inconsistently.",
    ),
}


@dataclass(frozen=True)
class ManifestEntry:
    path: str  # normalised relative POSIX path, directories without a trailing slash
    kind: Literal["file", "dir", "symlink"]  # "symlink" only in a task tree (tree=True)
    size: int
    sha256: str  # hex; "" for directories; of the target's UTF-8 for a symlink


@dataclass(frozen=True)
class Accepted:
    manifest: tuple[ManifestEntry, ...]  # sorted by path
    digest: str  # "sha256:<hex>" of the normalised archive bytes written to the sink
    dropped: tuple[str, ...]  # non-directory members outside the artifact globs, not written
    size: int  # bytes written to the sink


@dataclass(frozen=True)
class Rejected:
    member: str  # the offending member's name as it appeared, escaped for display
    rule: str  # a stable rule id (docs/firewall.md)
    detail: str  # one plain sentence


@dataclass
class _Plan:
    files: list[tuple[str, int, int, bool]] = field(default_factory=list)  # path, offset, size, +x
    dirs: set[str] = field(default_factory=set)
    dropped: list[str] = field(default_factory=list)
    total: int = 0
    links: dict[str, str] = field(default_factory=dict)  # a task tree's symlinks: path -> target
    index: dict[str, tuple[int, int, bool]] = field(default_factory=dict)  # kept files by path


def check(
    source: BinaryIO,
    sink: BinaryIO,
    limits: FirewallLimits = DEFAULT_LIMITS,
    artifacts: Sequence[str] | None = None,
    strip_prefix: str | None = None,
    *,
    tree: bool = False,
    same_links: frozenset[tuple[str, str]] = frozenset(),
) -> Accepted | Rejected:
    """Judge a tar (or gzip'd tar) stream; on acceptance write its normalised form to `sink`.

    `tree`: the archive is a trusted task tree (a repository task's pristine repository), not
    anything a candidate produced: a symbolic link is kept when it and every link it passes
    resolve inside the tree (`treelinks`), and a hard link to an earlier file is written as a
    copy of it. `same_links`: (path, target) pairs of that tree; a candidate's symlink that is
    one of them exactly is the tree's own, unchanged, and dropped (never written) instead of
    refused. Every other link stays refused.

    A seekable plain tar is read in place (from its current position); from other input the
    data of kept files is spooled (at most limits.max_total_bytes). On Rejected nothing has been
    written to `sink` in practice, but callers must treat its content as garbage. Invalid
    `artifacts` or `strip_prefix` raise assay.errors.UsageError.
    """
    globs = None if artifacts is None else Globs(artifacts)
    prefix = parse_prefix(strip_prefix)
    with contextlib.ExitStack() as stack:
        try:
            first, replay, base = open_source(source, limits, stack)
            plan = _survey(first, limits, globs, prefix, tree, same_links)
            check_contained(plan.links)
            return _emit(plan, replay, base, sink)
        except Violation as violation:
            return Rejected(violation.member or "<archive>", violation.rule, violation.detail)


def _survey(
    src: SeekableSource | StreamSource,
    limits: FirewallLimits,
    globs: Globs | None,
    prefix: tuple[str, ...],
    tree: bool,
    same_links: frozenset[tuple[str, str]],
) -> _Plan:
    plan = _Plan()
    catalogue = Catalogue(limits)
    budget = NameBudget(limits)
    count = 0
    for member in read_members(src, limits):
        try:
            count += 1
            if count > limits.max_entries:
                raise Violation(
                    "entry-count", f"the archive has more than {limits.max_entries} members."
                )
            budget.charge(len(member.name.encode()))
            if _admit(member, plan, catalogue, budget, limits, globs, prefix, tree, same_links):
                src.keep(member.offset, member.size)
        except Violation as violation:
            violation.member = violation.member or member.display
            raise
    return plan


def _admit(
    member: Member,
    plan: _Plan,
    catalogue: Catalogue,
    budget: NameBudget,
    limits: FirewallLimits,
    globs: Globs | None,
    prefix: tuple[str, ...],
    tree: bool = False,
    same_links: frozenset[tuple[str, str]] = frozenset(),
) -> bool:
    """Judge one member and plan it; True when its data is needed again (a kept file)."""
    is_dir = member.kind == "dir"
    parts = split_name(member.name, limits, is_dir=is_dir)
    if prefix:
        if parts[: len(prefix)] != prefix:
            raise Violation("strip-prefix", f"the member is not under '{'/'.join(prefix)}/'.")
        parts = parts[len(prefix) :]
        if not parts and not is_dir:
            raise Violation("strip-prefix", f"'{'/'.join(prefix)}' is not a directory.")
    if member.linkname and member.kind in ("file", "dir", "contiguous"):
        raise Violation(
            "link",
            f"a {member.kind} header also names a link target; readers "
            "disagree on which to believe.",
        )
    if not parts:
        catalogue.add_root()  # "./" or the stripped prefix itself: nothing to write
        return False
    # With globs, directories are written only as parents of kept files. The glob is matched on
    # the names as they are, so a dropped member costs no Unicode normalisation.
    kept = globs is None or (not is_dir and globs.match(parts))
    if kept:
        check_compat(parts, budget)
    catalogue.add(parts, member.kind, kept=kept)
    path = "/".join(parts)
    if is_dir:
        if kept:
            plan.dirs.add(path)
        return False
    if not kept:
        plan.dropped.append(path)
        return False
    if member.kind == "symlink" and tree:
        plan.links[path] = link_target(member.linkname, limits)
        return False
    link = (path, member.linkname.decode("utf-8", "replace"))
    if member.kind == "symlink" and link in same_links:
        plan.dropped.append(path)  # the task tree's own link, unchanged: not a change
        return False
    if member.kind == "hardlink" and tree:
        return _copy_of(member, plan, limits, prefix, path)
    if member.kind != "file":
        rule, detail = _TYPE_RULES[member.kind]
        raise Violation(rule, detail)
    if member.size > limits.max_file_bytes:
        raise Violation(
            "file-size",
            f"the file has {member.size} bytes, over the cap of {limits.max_file_bytes}.",
        )
    _charge(plan, member.size, limits)
    plan.files.append((path, member.offset, member.size, bool(member.mode & 0o111)))
    plan.index[path] = plan.files[-1][1:]
    return True


def _charge(plan: _Plan, size: int, limits: FirewallLimits) -> None:
    plan.total += size
    if plan.total > limits.max_total_bytes:
        raise Violation(
            "total-size", f"the kept files add up to more than {limits.max_total_bytes} bytes."
        )


def _copy_of(
    member: Member, plan: _Plan, limits: FirewallLimits, prefix: tuple[str, ...], path: str
) -> bool:
    """A task tree's hard link, written as a copy of the earlier file it names (engines archive
    a file with several names in the tree that way); never a link on the host."""
    try:
        name = member.linkname.decode("utf-8")
    except UnicodeDecodeError:
        raise Violation("encoding", "the hard link's target is not valid UTF-8.") from None
    parts = split_name(name, limits, is_dir=False)
    inside = parts[: len(prefix)] == prefix
    first = plan.index.get("/".join(parts[len(prefix) :])) if inside else None
    if first is None:
        raise Violation("link", "a hard link in the task tree names no earlier file of it.")
    offset, size, executable = first
    _charge(plan, size, limits)  # written again: a copy costs what the file costs
    plan.files.append((path, offset, size, executable))
    plan.index[path] = first
    return False


def _emit(plan: _Plan, replay: BinaryIO, base: int, sink: BinaryIO) -> Accepted:
    # Every parent gets an explicit entry, so materialise never creates a directory implicitly.
    dirs = set(plan.dirs)
    for path in [*plan.dirs, *(path for path, _, _, _ in plan.files)]:
        parts = path.split("/")
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
    entries = sorted(
        [(path, "dir", 0, 0, True) for path in dirs]
        + [(path, "file", offset, size, x) for path, offset, size, x in plan.files]
        + [(path, "symlink", 0, 0, True) for path in plan.links]
    )
    digest = hashlib.sha256()
    written = 0
    # No larger than the largest kept file: zeroing a 1 MiB buffer cost about as much CPU as
    # the rest of the pass over a one-file submission.
    largest = max((size for _, _, size, _ in plan.files), default=0)
    buffer = memoryview(bytearray(max(1, min(CHUNK, largest))))
    manifest: list[ManifestEntry] = []

    def out(data: bytes) -> None:
        nonlocal written
        digest.update(data)
        sink.write(data)
        written += len(data)

    for path, kind, offset, size, executable in entries:
        if kind == "symlink":
            target = plan.links[path]
            out(header(path, kind, 0, 0o777, target))
            sha = hashlib.sha256(target.encode()).hexdigest()
            manifest.append(ManifestEntry(path, "symlink", 0, sha))
            continue
        out(header(path, kind, size, 0o755 if executable else 0o644))
        if kind == "dir":
            manifest.append(ManifestEntry(path, "dir", 0, ""))
            continue
        content = hashlib.sha256()
        copy_range(replay, base + offset, size, buffer, (content.update, digest.update, sink.write))
        written += size
        out(bytes(-size % 512))
        manifest.append(ManifestEntry(path, "file", size, content.hexdigest()))
    out(END_OF_ARCHIVE)
    return Accepted(
        tuple(manifest), f"sha256:{digest.hexdigest()}", tuple(sorted(plan.dropped)), written
    )
