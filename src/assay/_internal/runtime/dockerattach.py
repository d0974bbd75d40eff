"""A spawned Docker container's attach: its main process's stdio as the pipes a `Spawned`
holds on every backend. The engine multiplexes stdout and stderr on one stream (8-byte frame
headers); a thread puts each frame into a pipe of its own, and another forwards the
controller's stdin pipe into the stream."""

from __future__ import annotations

import os
import socket
import struct
import threading
from collections.abc import Callable, Generator
from typing import Any

from .base import Spawned


def start_attached(cid: str, conn: Any, stdin: bool, start: Callable[[], None]) -> Spawned:
    """Start the container (`start`) with its attach stream `conn`, opened before the start,
    split into pipes; on a failed start the stream is shut and this process's ends closed."""
    raw: socket.socket = getattr(conn, "_sock", conn)
    pipes = [os.pipe(), os.pipe()] + ([os.pipe()] if stdin else [])
    (out_r, out_w), (err_r, err_w) = pipes[0], pipes[1]
    threading.Thread(
        target=_demux, args=(conn, {1: out_w, 2: err_w}), daemon=True, name="attach-out"
    ).start()
    if stdin:
        in_r, in_w = pipes[2]
        threading.Thread(target=_forward, args=(in_r, raw), daemon=True).start()
    try:
        start()
    except BaseException:
        _shut(raw)
        for fd in (out_r, err_r) + ((in_w,) if stdin else ()):
            os.close(fd)
        raise
    return Spawned(
        cid,
        stdin=os.fdopen(in_w, "wb", buffering=0) if stdin else None,
        stdout=os.fdopen(out_r, "rb", buffering=0),
        stderr=os.fdopen(err_r, "rb", buffering=0),
    )


FRAME_HEADER = struct.Struct(">BxxxL")


def _read_exactly(conn: Any, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.read(n - len(buf))
        if not chunk:
            break
        buf.extend(chunk)
    return bytes(buf)


def _demux(conn: Any, fds: dict[int, int]) -> None:
    """Copy an attach stream's frames into the pipe of each frame's stream (1 stdout, 2
    stderr) until the stream ends, then close every pipe: the reader's end-of-file."""
    chunks = frames(conn)
    try:
        for out, err in chunks:
            for fd, data in ((fds.get(1), out), (fds.get(2), err)):
                if data and fd is not None:
                    _write_all(fd, data)
    except OSError:
        return  # the reader closed its end, or the stream broke: the container's state says
    finally:
        chunks.close()  # closes the stream
        for fd in fds.values():
            os.close(fd)


def frames(conn: Any) -> Generator[tuple[bytes | None, bytes | None], None, None]:
    """An attach stream's (stdout, stderr) chunks, as docker-py's `demux=True` gives them,
    until the stream ends or breaks; the stream is closed at the end."""
    try:
        while True:
            header = _read_exactly(conn, FRAME_HEADER.size)
            if len(header) < FRAME_HEADER.size:
                return
            kind, size = FRAME_HEADER.unpack(header)
            while size > 0:
                chunk = conn.read(min(size, 65536))
                if not chunk:
                    return
                size -= len(chunk)
                if kind == 1:
                    yield chunk, None
                elif kind == 2:
                    yield None, chunk
    except OSError:
        return
    finally:
        try:
            conn.close()
        except OSError:
            pass


def shut_stdin(conn: Any) -> None:
    """End the stdin of an attach stream opened with one: its reader sees end-of-file."""
    _shut(getattr(conn, "_sock", conn), socket.SHUT_WR)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _forward(src: int, sock: socket.socket) -> None:
    """The controller's stdin pipe into the attach stream; its end is the container's."""
    try:
        while chunk := os.read(src, 65536):
            sock.sendall(chunk)
    except OSError:
        pass
    finally:
        os.close(src)
        _shut(sock, socket.SHUT_WR)


def _shut(sock: socket.socket, how: int = socket.SHUT_RDWR) -> None:
    try:
        sock.shutdown(how)
    except OSError:
        pass
