"""Writing a file so that no reader ever sees it half-written."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def atomic_write(path: Path, data: bytes, mode: int = 0o644, *, replace: bool = True) -> None:
    """Write `data` to `path` with exactly `mode`: readers (and a later resume) see the old
    file or none, or the whole new one, never a torn one.

    `replace=False`: fail with FileExistsError if `path` exists. The file is hard-linked into
    place, so of two concurrent writers only one can win.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)  # the umask may have narrowed it; make it exact
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
