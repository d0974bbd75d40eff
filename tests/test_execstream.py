"""An attached exec's frames are read through the buffered reader the response headers came
through: docker-py's raw-socket read loses what that reader took in with the headers (the
first output of a command that prints at once), and this reader does not."""

from __future__ import annotations

import http.client
import socket
import struct
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from docker.utils.socket import frames_iter

from assay._internal.runtime.execstream import frames

HEADERS = (
    b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
    b"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
)


def frame(kind: int, data: bytes, size: int | None = None) -> bytes:
    return struct.pack(">BxxxL", kind, len(data) if size is None else size) + data


@pytest.fixture
def engine() -> Iterator[Any]:
    """What the engine sends for an exec, headers and frames in one write (a command that
    printed at once), as the client sees it once http.client has read the headers."""
    made: list[socket.socket] = []

    def respond(body: bytes) -> Any:
        ours, theirs = socket.socketpair()
        made.extend((ours, theirs))
        theirs.sendall(HEADERS + body)
        theirs.shutdown(socket.SHUT_WR)
        res = http.client.HTTPResponse(ours)
        res.begin()
        assert res.status == 101
        return SimpleNamespace(raw=SimpleNamespace(_fp=res), close=res.close)

    yield respond
    for s in made:
        s.close()


def _joined(chunks: Iterator[tuple[bytes | None, bytes | None]]) -> tuple[bytes, bytes]:
    out, err = b"", b""
    for o, e in chunks:
        out += o or b""
        err += e or b""
    return out, err


BODY = frame(1, b"clean\n") + frame(2, b"a warning\n") + frame(1, b'{"cases": []}\n')


def test_docker_py_raw_socket_read_loses_what_came_with_the_headers(engine: Any) -> None:
    """The baseline: the library's own reader, on the same bytes, sees none of the output."""
    res = engine(BODY)
    assert list(frames_iter(res.raw._fp.fp.raw, tty=False)) == []


def test_every_frame_is_read_including_those_that_came_with_the_headers(engine: Any) -> None:
    assert _joined(frames(engine(BODY))) == (b'clean\n{"cases": []}\n', b"a warning\n")


def test_a_frame_is_handed_on_in_pieces_and_a_cut_stream_just_ends(engine: Any) -> None:
    """A frame announcing 4 GiB is never read whole before the caller's cap can act, and a
    stream that ends inside a frame or its header ends the output, without hanging."""
    big = b"x" * (200 << 10)
    pieces = list(frames(engine(frame(1, b"ok\n") + frame(1, big, size=(1 << 32) - 1))))
    assert pieces[0] == (b"ok\n", None)
    assert all(o is not None and len(o) <= 1 << 16 for o, _ in pieces)
    assert b"".join(o or b"" for o, _ in pieces[1:]) == big
    assert list(frames(engine(frame(2, b"e") + b"\x01\x00\x00"))) == [(None, b"e")]


def test_a_stream_of_unknown_kind_is_not_taken_for_output(engine: Any) -> None:
    assert _joined(frames(engine(frame(3, b"nope") + frame(1, b"yes")))) == (b"yes", b"")
