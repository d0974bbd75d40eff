"""Bytes between a stream and a file descriptor, a chunk at a time: memory stays at one chunk
whatever the file's size, and a file read out is exactly as long as its header said."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from .dirfd import Changed

__all__ = ["CHUNK", "copy_into", "read_out", "write_all"]

CHUNK = 1 << 20


def write_all(fd: int, data: bytes | memoryview) -> None:
    """All of `data` to `fd` (os.write may take less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def copy_into(
    fd: int,
    read: Callable[[int], bytes],
    size: int | None = None,
    spend: Callable[[int], None] | None = None,
) -> int:
    """Copy from `read` into `fd` until it ends, or `size` bytes if given; how many were copied
    (fewer than `size`: the source ended early, the caller's to judge). `spend` is charged each
    chunk before it is written, so a budget refuses it unwritten."""
    copied = 0
    while size is None or copied < size:
        chunk = read(CHUNK if size is None else min(CHUNK, size - copied))
        if not chunk:
            break
        if spend is not None:
            spend(len(chunk))
        write_all(fd, chunk)
        copied += len(chunk)
    return copied


def read_out(fd: int, size: int, path: str, *, live: bool) -> Iterator[bytes]:
    """Exactly `size` bytes of the open file `fd`, the size its header promised. One that grows
    meanwhile is cut there; one that shrinks is padded with zeros when `live` (hostile code
    may write it; the tar stays valid) and is `Changed` otherwise."""
    left, shrunk = size, False
    while left:
        n = min(CHUNK, left)
        chunk = b"" if shrunk else os.read(fd, n)
        if not chunk:
            if not live:
                raise Changed("shrank while it was read", path)
            shrunk = True
            chunk = bytes(n)
        left -= len(chunk)
        yield chunk
