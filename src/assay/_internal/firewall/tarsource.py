"""The caller's stream as a tar byte source: gzip detection, bomb limits, bounded spooling.

The firewall reads the tar twice (headers first, then data in sorted order). A seekable plain tar
is read in place; from anything else (gzip, a pipe) only the data of kept files is spooled, into
a temporary file that starts in memory: a stream's dropped members cost reading, never writing.
"""

from __future__ import annotations

import contextlib
import tempfile
import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO, cast

from assay._internal.firewall.tarbase import FirewallLimits, Violation

CHUNK = 2**20
_SPOOL_IN_MEMORY = 4 * 2**20
_GZIP_MAGIC = b"\x1f\x8b"
_ARCHIVE = "<archive>"
_OTHER_COMPRESSION = {
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"PK\x03\x04": "zip",
}


class SeekableSource:
    """Reads headers from a seekable plain tar and seeks over data it does not need."""

    def __init__(self, f: BinaryIO, base: int, cap: int) -> None:
        self._f = f
        self._base = base
        self._cap = cap
        self.offset = 0

    def read(self, n: int) -> bytes:
        self._charge(n)
        data = _read_full(self._f, n)
        self.offset += len(data)
        return data

    def skip(self, n: int) -> None:
        self._charge(n)
        self.offset += n
        self._f.seek(self._base + self.offset)

    def keep(self, offset: int, size: int) -> None:
        """The data at `offset` is needed again in pass two: it is, in place."""

    def _charge(self, n: int) -> None:
        if self.offset + n > self._cap:
            raise Violation(
                "archive-size",
                f"the tar stream is longer than the cap of {self._cap} bytes.",
                _ARCHIVE,
            )


class StreamSource:
    """Reads a forward-only stream of chunks, copying the data of kept files to a spool for the
    second pass; `replay` reads the spool at stream offsets."""

    def __init__(self, chunks: Iterator[bytes], spool: BinaryIO, cap: int) -> None:
        self._chunks = chunks
        self._spool = spool
        self._cap = cap
        self._pulled = 0
        self._buf = bytearray()
        self._pos = 0
        self._kept: tuple[int, int] | None = None
        self.offset = 0
        self.replay = _Replay(spool)

    def keep(self, offset: int, size: int) -> None:
        """The data at `offset` (the next skip's start) is needed again in pass two."""
        self._kept = (offset, size)

    def read(self, n: int) -> bytes:
        while len(self._buf) - self._pos < n and self._pull():
            pass
        data = bytes(self._buf[self._pos : self._pos + n])
        self._pos += len(data)
        self.offset += len(data)
        return data

    def skip(self, n: int) -> None:
        keep = 0
        if self._kept is not None:
            start, keep = self._kept
            self._kept = None
            if start != self.offset or keep > n:
                raise AssertionError("the firewall kept data it did not skip next")
            self.replay.starts[start] = self._spool.tell()
        self.offset += n
        while n > 0:
            if self._pos == len(self._buf) and not self._pull():
                return  # past the end; the next read comes up short
            take = min(n, len(self._buf) - self._pos)
            if keep:
                self._spool.write(self._buf[self._pos : self._pos + min(take, keep)])
                keep -= min(take, keep)
            self._pos += take
            n -= take

    def _pull(self) -> bool:
        chunk = next(self._chunks, b"")
        if not chunk:
            return False
        self._pulled += len(chunk)
        if self._pulled > self._cap:
            raise Violation(
                "archive-size",
                f"the tar stream is longer than the cap of {self._cap} bytes.",
                _ARCHIVE,
            )
        del self._buf[: self._pos]
        self._pos = 0
        self._buf += chunk
        return True


class _Replay:
    """The spool, read at the stream offsets of the kept files it holds (pass two seeks only to
    the start of a kept file, then reads that file's bytes)."""

    def __init__(self, spool: BinaryIO) -> None:
        self._spool = spool
        self.starts: dict[int, int] = {}  # stream offset -> spool offset

    def seek(self, offset: int) -> None:
        self._spool.seek(self.starts[offset])

    def read(self, n: int) -> bytes:
        return self._spool.read(n)


def open_source(
    source: BinaryIO, limits: FirewallLimits, stack: contextlib.ExitStack
) -> tuple[SeekableSource | StreamSource, BinaryIO, int]:
    """The first-pass source, and the seekable plain tar (file, base offset) for the second pass."""
    seekable = _seekable(source)
    base = source.tell() if seekable else 0
    head = _read_full(source, 10)
    for magic, name in _OTHER_COMPRESSION.items():
        if head.startswith(magic) and (name != "bzip2" or head[4:10] == b"1AY&SY"):
            raise Violation(
                "format", f"the stream is {name}; only plain tar and gzip are accepted.", _ARCHIVE
            )
    if not head.startswith(_GZIP_MAGIC) and seekable:
        source.seek(base)
        return SeekableSource(source, base, limits.max_archive_bytes), source, base
    spool = cast(
        BinaryIO, stack.enter_context(tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY))
    )
    if head.startswith(_GZIP_MAGIC):
        chunks = _gunzip(source.read, head, limits)
    else:
        chunks = _chain(head, source)
    stream = StreamSource(chunks, spool, limits.max_archive_bytes)
    return stream, cast(BinaryIO, stream.replay), 0


def _chain(head: bytes, source: BinaryIO) -> Iterator[bytes]:
    yield head
    while chunk := source.read(CHUNK):
        yield chunk


def _gunzip(read: Callable[[int], bytes], first: bytes, limits: FirewallLimits) -> Iterator[bytes]:
    """Inflate one or more gzip members, never more than CHUNK bytes per step, judging the ratio."""
    inflater = zlib.decompressobj(wbits=31)
    consumed = produced = 0
    pending = first
    while True:
        if not pending:
            pending = read(64 * 2**10)
            if not pending:
                break
        try:
            out = inflater.decompress(pending, CHUNK)
        except zlib.error as exc:
            raise Violation(
                "compression", f"the gzip stream is corrupt ({exc}).", _ARCHIVE
            ) from None
        rest = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
        consumed += len(pending) - len(rest)
        pending = rest
        if out:
            produced += len(out)
            if (
                produced > limits.expansion_floor_bytes
                and produced > limits.max_expansion_ratio * consumed
            ):
                raise Violation(
                    "expansion-ratio",
                    f"the gzip stream expands over "
                    f"{limits.max_expansion_ratio}x ({produced} bytes from "
                    f"{consumed}); a compression bomb.",
                    _ARCHIVE,
                )
            yield out
        if inflater.eof:
            while len(pending) < len(_GZIP_MAGIC) and (more := read(64 * 2**10)):
                pending += more
            if not pending:
                return
            if not pending.startswith(_GZIP_MAGIC):
                raise Violation(
                    "compression",
                    "the gzip stream has trailing bytes that are not another gzip member.",
                    _ARCHIVE,
                )
            inflater = zlib.decompressobj(wbits=31)
    raise Violation("compression", "the gzip stream is truncated.", _ARCHIVE)


def _seekable(f: BinaryIO) -> bool:
    try:
        return bool(f.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def _read_full(f: BinaryIO, n: int) -> bytes:
    first = f.read(n)
    if len(first) == n or not first:
        return first
    parts = [first]
    need = n - len(first)
    while need:
        chunk = f.read(need)
        if not chunk:
            break
        parts.append(chunk)
        need -= len(chunk)
    return b"".join(parts)


def copy_range(
    f: BinaryIO,
    offset: int,
    size: int,
    buffer: memoryview,
    consumers: tuple[Callable[[memoryview], object], ...],
) -> None:
    """Feed `size` bytes at `offset` to each consumer, a buffer at a time; short means truncated."""
    f.seek(offset)
    readinto = getattr(f, "readinto", None)
    while size:
        want = buffer[: min(size, len(buffer))]
        if readinto is not None:
            got = readinto(want)
        else:
            data = f.read(len(want))
            want[: len(data)] = data
            got = len(data)
        if not got:
            raise Violation(
                "truncated", "the archive changed or shrank between the two passes.", _ARCHIVE
            )
        piece = want[:got]
        for consume in consumers:
            consume(piece)
        size -= got
