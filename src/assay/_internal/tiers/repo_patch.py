"""A strict unified-diff reader and applier for a repository task's hidden test patch.

The test patch is the task author's, but it is applied on the host to a tree that holds the
candidate's files, so it is read with limits and applied exactly: every context and removed
line must match, hunks apply in order without fuzz or offset, paths stay inside the tree and
never pass through a link. Anything else raises `PatchError`; nothing is half-applied to a
file (each file is written once, after all of its hunks matched).

Accepted shape (what `git diff` and `diff -u` write): optional `diff --git` / `index` /
mode lines, then `--- a/PATH` or `--- /dev/null`, `+++ b/PATH` or `+++ /dev/null`, then hunks
`@@ -l[,n] +l[,n] @@`. Renames, copies, binary patches and mode changes are refused.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_PATCH_BYTES = 4 << 20
MAX_FILES = 1000
MAX_HUNKS = 10_000
DEV_NULL = "/dev/null"
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@.*")
_SKIPPED_HEADERS = ("diff --git ", "index ", "new file mode ", "deleted file mode ")
_REFUSED_HEADERS = (
    "rename from", "rename to", "copy from", "copy to", "old mode", "new mode",
    "similarity index", "dissimilarity index", "GIT binary patch", "Binary files",
)  # fmt: skip
_NO_NEWLINE = "\\ No newline at end of file"


class PatchError(Exception):
    """The patch is malformed, exceeds a limit, or does not apply."""


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old: tuple[str, ...]
    new: tuple[str, ...]


@dataclass(frozen=True)
class FilePatch:
    old_path: str | None
    """None when the patch creates the file."""
    new_path: str | None
    """None when the patch deletes the file."""
    hunks: tuple[Hunk, ...]

    @property
    def path(self) -> str:
        path = self.new_path or self.old_path
        assert path is not None
        return path


def _clean_path(raw: str, prefix: str) -> str | None:
    raw = raw.split("\t", 1)[0]
    if raw == DEV_NULL:
        return None
    if not raw.startswith(prefix):
        raise PatchError(f"path {raw[:80]!r} does not start with {prefix!r}")
    path = raw[len(prefix) :]
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise PatchError(f"path {raw[:80]!r} is not a relative path inside the repository")
    return path


def parse_patch(data: bytes) -> tuple[FilePatch, ...]:
    """Every file the patch changes, in order. Raises PatchError."""
    if len(data) > MAX_PATCH_BYTES:
        raise PatchError(f"patch is {len(data)} bytes > {MAX_PATCH_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PatchError("patch is not UTF-8") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    files: list[FilePatch] = []
    hunk_count = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(_REFUSED_HEADERS):
            raise PatchError(f"unsupported patch feature: {line[:60]!r}")
        if line.startswith(_SKIPPED_HEADERS) or line == "":
            i += 1
            continue
        if not line.startswith("--- "):
            raise PatchError(f"line {i + 1}: expected a file header, got {line[:60]!r}")
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise PatchError(f"line {i + 2}: '---' without '+++'")
        old = _clean_path(line[4:], "a/")
        new = _clean_path(lines[i + 1][4:], "b/")
        if old is None and new is None:
            raise PatchError(f"line {i + 1}: both sides are /dev/null")
        if old is not None and new is not None and old != new:
            raise PatchError(f"line {i + 1}: renames are not supported")
        i += 2
        hunks: list[Hunk] = []
        while i < len(lines) and lines[i].startswith("@@"):
            hunk, i = _parse_hunk(lines, i)
            hunks.append(hunk)
            hunk_count += 1
            if hunk_count > MAX_HUNKS:
                raise PatchError(f"more than {MAX_HUNKS} hunks")
        if not hunks:
            raise PatchError(f"no hunks for {new or old!r}")
        files.append(FilePatch(old, new, tuple(hunks)))
        if len(files) > MAX_FILES:
            raise PatchError(f"more than {MAX_FILES} files")
    paths = [f.path for f in files]
    if len(set(paths)) != len(paths):
        raise PatchError("a file appears twice in the patch")
    if not files:
        raise PatchError("the patch changes no file")
    return tuple(files)


def _parse_hunk(lines: Sequence[str], i: int) -> tuple[Hunk, int]:
    m = _HUNK.fullmatch(lines[i])
    if m is None:
        raise PatchError(f"line {i + 1}: malformed hunk header {lines[i][:60]!r}")
    old_start = int(m.group(1))
    old_len = 1 if m.group(2) is None else int(m.group(2))
    new_len = 1 if m.group(4) is None else int(m.group(4))
    old: list[str] = []
    new: list[str] = []
    i += 1
    while len(old) < old_len or len(new) < new_len:
        if i >= len(lines):
            raise PatchError("the patch ends inside a hunk")
        line = lines[i]
        tag, body = line[:1], line[1:]
        if tag == " ":
            old.append(body)
            new.append(body)
        elif tag == "-":
            old.append(body)
        elif tag == "+":
            new.append(body)
        else:
            raise PatchError(f"line {i + 1}: unexpected {line[:60]!r} inside a hunk")
        i += 1
        if len(old) > old_len or len(new) > new_len:
            raise PatchError(f"line {i}: hunk longer than its header says")
    if i < len(lines) and lines[i] == _NO_NEWLINE:
        raise PatchError(f"line {i + 1}: files without a final newline are not supported")
    return Hunk(old_start, tuple(old), tuple(new)), i


def touched_paths(patches: Sequence[FilePatch]) -> tuple[str, ...]:
    return tuple(p.path for p in patches)


def _target(root: Path, rel: str) -> Path:
    """`rel` under `root`, refusing any link on the way (the tree holds candidate files)."""
    current = root
    for part in rel.split("/"):
        current = current / part
        if current.is_symlink():
            raise PatchError(f"{rel!r} passes through a link")
    return current


def _read_lines(path: Path) -> list[str]:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PatchError(f"{path.name!r} is not UTF-8") from None
    if text and not text.endswith("\n"):
        raise PatchError(f"{path.name!r} has no final newline")
    return text.split("\n")[:-1] if text else []


def apply_patch(root: Path, patches: Sequence[FilePatch]) -> None:
    """Apply exactly, file by file; raises PatchError on the first mismatch."""
    for fp in patches:
        target = _target(root, fp.path)
        if fp.old_path is None:
            if target.exists():
                raise PatchError(f"{fp.path!r} already exists")
            current: list[str] = []
        else:
            if not target.is_file():
                raise PatchError(f"{fp.path!r} does not exist")
            current = _read_lines(target)
        result = _apply_hunks(fp, current)
        if fp.new_path is None:
            if result:
                raise PatchError(f"deleting {fp.path!r} leaves lines behind")
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".assay-patch")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write("".join(line + "\n" for line in result))
        os.replace(tmp, target)


def _apply_hunks(fp: FilePatch, current: list[str]) -> list[str]:
    out: list[str] = []
    pos = 0  # index into current of the next line not yet copied
    for hunk in fp.hunks:
        # A hunk that only adds lines to an empty or new file says -0,0.
        start = hunk.old_start - 1 if hunk.old else hunk.old_start
        if start < pos:
            raise PatchError(f"{fp.path!r}: hunks overlap or are out of order")
        if current[start : start + len(hunk.old)] != list(hunk.old):
            raise PatchError(f"{fp.path!r}: hunk at line {hunk.old_start} does not match")
        out.extend(current[pos:start])
        out.extend(hunk.new)
        pos = start + len(hunk.old)
    out.extend(current[pos:])
    return out
