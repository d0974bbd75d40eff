"""A submission directory as a tar stream for the firewall, produced as the firewall reads it.

Only files that match the artifact globs are read; any other file is listed by name with size 0,
so it is dropped (and reported) by the firewall without a byte of it being read or written. The
firewall judges each header before it pulls the data behind it, so an artifact over a cap is
refused unread, and nothing is spooled but the kept files' data. Links, FIFOs and devices are
described as what they are, never followed or opened, so the firewall refuses them by its rules;
as in tar, a second name of a file (a hard link) is described as a link to the first.

The walk is `assay._internal.fstree.TarOut` (no link followed, no full path built) with the
settings of a tree at rest: the directory is the caller's, so one that changes while it is read
is the caller's mistake (`UsageError`), not a tree to describe as it is found.
"""

from __future__ import annotations

import io
import os
from collections.abc import Generator
from pathlib import Path

from assay._internal.fstree.dirfd import DIR, TreeError
from assay._internal.fstree.tarout import TarOut
from assay.errors import UsageError

from .tarbase import FirewallLimits
from .tarnames import Globs


class DirStream(io.RawIOBase):
    """A readable, non-seekable tar stream of `root`; each read returns at most one chunk, so a
    header reaches the firewall before the data behind it is read."""

    def __init__(self, root: Path, globs: Globs | None, limits: FirewallLimits) -> None:
        self._chunks = _stream(root, globs, limits)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = memoryview(chunk)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._chunks.close()  # closes any directory fds the walk holds
        super().close()


def _stream(
    root: Path, globs: Globs | None, limits: FirewallLimits
) -> Generator[bytes, None, None]:
    reader = TarOut(
        # A directory deeper than the firewall's cap is refused by its header: never opened.
        max_depth=limits.max_depth + 1,
        # A directory with more entries than an archive may hold is refused whichever come first.
        max_entries=limits.max_entries,
        owners=False,
        live=False,
        contents=None if globs is None else globs.match,
    )
    fd = os.open(root, DIR)
    try:
        yield from reader.tree(fd, None)
    except TreeError as exc:
        raise UsageError(f"--submission: {exc}") from None
    finally:
        os.close(fd)
    yield reader.end()
