"""Applying a repository task's hidden test patch (parsed by `model.testpatch`).

The test patch is the task author's, but it is applied on the host to a tree that holds the
candidate's files, so it is applied exactly: every context and removed line must match, hunks
apply in order without fuzz or offset, paths stay inside the tree and never pass through a link.
Anything else raises `PatchError`; nothing is half-applied to a file (each file is written once,
after all of its hunks matched).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ...model.testpatch import (
    MAX_PATCH_BYTES,
    FilePatch,
    Hunk,
    PatchError,
    parse_patch,
    touched_paths,
)

__all__ = [
    "MAX_PATCH_BYTES", "FilePatch", "Hunk", "PatchError", "apply_patch", "parse_patch",
    "touched_paths",
]  # fmt: skip


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
        if fp.new_path is None and result:
            raise PatchError(f"deleting {fp.path!r} leaves lines behind")
        try:
            _write(target, None if fp.new_path is None else result)
        except OSError as exc:
            # A file where the patch needs a directory (or the like): it does not apply.
            raise PatchError(f"{fp.path!r} cannot be written: {exc.strerror}") from None


def _write(target: Path, lines: list[str] | None) -> None:
    if lines is None:
        target.unlink()
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".assay-patch")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
        fh.write("".join(line + "\n" for line in lines))
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
