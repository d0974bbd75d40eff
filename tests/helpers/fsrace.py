"""What the tests of no-follow tree code share: an atomic swap of two names for a racing thread,
a tree deeper than PATH_MAX, a tar read back as a dict, and autouse fixtures that fail a test which leaks an fd or opens a FIFO for I/O (which would
block forever). A test module takes the fixtures by importing them."""

from __future__ import annotations

import ctypes
import io
import os
import signal
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import pytest

_libc = ctypes.CDLL(None, use_errno=True)
_RENAME_EXCHANGE = 2


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (renameat2 RENAME_EXCHANGE): each always exists."""
    if _libc.renameat2(-100, bytes(a), -100, bytes(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a))


def deep_tree(base: Path, levels: int, name: str = "d") -> None:
    """`levels` nested directories `name` under `base`, made relative to fds (deeper than
    PATH_MAX allows by path), with a file at the bottom."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        os.close(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def tar_entries(data: bytes) -> dict[str, tuple[str, bytes | str, tarfile.TarInfo]]:
    """name -> (kind, content or link target, member)."""
    out: dict[str, tuple[str, bytes | str, tarfile.TarInfo]] = {}
    with tarfile.open(
        fileobj=io.BytesIO(data), mode="r:", encoding="utf-8", errors="surrogateescape"
    ) as tf:
        for m in tf:
            assert m.name not in out, m.name
            if m.isdir():
                out[m.name] = ("dir", b"", m)
            elif m.issym():
                out[m.name] = ("symlink", m.linkname, m)
            elif m.isfifo():
                assert m.size == 0, m
                out[m.name] = ("fifo", b"", m)
            elif m.islnk():
                out[m.name] = ("hardlink", m.linkname, m)
            else:
                assert m.isreg(), m
                f = tf.extractfile(m)
                assert f is not None
                out[m.name] = ("file", f.read(), m)
    return out


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def file_fds() -> dict[int, str]:
    """This process's descriptors of files and directories, by number. Pipes, sockets and
    anonymous inodes are left out: pytest-xdist's channel threads open and close those at any
    time (the mutation gate's run once saw one more at a test's teardown), and the code under
    test here opens only files and directories."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # closed since the listing (the listing's own descriptor among them)
            continue
        if target.startswith("/"):
            found[int(name)] = target
    return found


@pytest.fixture(autouse=True)
def no_fd_leak() -> Iterator[None]:
    before = file_fds()
    yield
    left = {fd: path for fd, path in file_fds().items() if before.get(fd) != path}
    assert left == {}, left


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A FIFO that is opened blocks forever: fail the test instead of hanging the suite."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError("hung (a FIFO opened?)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def rounds(least: int, enough: Callable[[], bool], limit_s: float = 20.0) -> Iterator[int]:
    """At least `least` rounds of a race, then more until `enough()` says the racing thread has
    shown every state the test needs (a loaded machine may run it rarely: 500 rounds once saw no
    refusal) or `limit_s` has passed (under no_hang's 30 s); the caller asserts it after."""
    deadline = time.monotonic() + limit_s
    i = 0
    while i < least or (not enough() and time.monotonic() < deadline):
        yield i
        i += 1
