"""A repository task's hidden test patch, read: a strict unified-diff parser (`parse_patch`)
and the check that everything it touches lies under the task's `test_dirs` (`read_test_patch`,
run when the task is loaded and again when it is graded). Applying it is the tiers'
(`tiers/repo_patch.py`).

Accepted shape (what `git diff` and `diff -u` write): optional `diff --git` / `index` /
mode lines, then `--- a/PATH` or `--- /dev/null`, `+++ b/PATH` or `+++ /dev/null`, then hunks
`@@ -l[,n] +l[,n] @@`. Renames, copies, binary patches and mode changes are refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from assay.errors import TaskError

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


def under_test_dirs(path: str, test_dirs: Sequence[str]) -> bool:
    """`path`, a relative POSIX path without `.` or `..`, is at or below one of `test_dirs`."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return False
    for d in test_dirs:
        prefix = d.strip("/").split("/")
        if parts[: len(prefix)] == prefix:
            return True
    return False


def read_test_patch(path: Path, test_dirs: Sequence[str]) -> tuple[FilePatch, ...]:
    """The test patch at `path`, parsed; a TaskError naming the file when it is malformed or
    touches anything outside `test_dirs`: what it touches is reset before it applies, and
    outside them that would silently replace the candidate's code."""
    try:
        patches = parse_patch(path.read_bytes())
    except PatchError as exc:
        raise TaskError(str(path), f"test patch: {exc}") from None
    except OSError as exc:
        raise TaskError(str(path), f"cannot read: {exc.strerror}") from None
    for fp in patches:
        if not under_test_dirs(fp.path, test_dirs):
            where = f"not under test_dirs {list(test_dirs)}"
            raise TaskError(str(path), f"the test patch touches {fp.path!r}, {where}")
    return patches
