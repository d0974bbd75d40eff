"""Writing a file so that no reader ever sees it half-written."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path


def atomic_write(path: Path, data: bytes, mode: int = 0o644, *, replace: bool = True) -> None:
    """Write `data` to `path` with exactly `mode`: readers (and a later resume) see the old
    file or none, or the whole new one, never a torn one.

    `replace=False`: fail with FileExistsError if `path` exists. The file is hard-linked into
    place, so of two concurrent writers only one can win.

    A `path` that exists and is neither a regular file nor a link (a device such as /dev/null,
    a FIFO, a socket) raises OSError(EINVAL), a directory IsADirectoryError, before anything is
    written: renaming over it would replace the device node itself (as root, /dev/null became
    a regular file).
    """
    try:
        kind = os.lstat(path).st_mode
    except FileNotFoundError:
        kind = None
    if kind is not None and stat.S_ISDIR(kind):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if kind is not None and not (stat.S_ISREG(kind) or stat.S_ISLNK(kind)):
        raise OSError(
            errno.EINVAL,
            "exists and is not a regular file (assay writes a new file and renames it over the "
            "old one, which would replace this node)",
            str(path),
        )
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
