"""An attached exec's output, read off the engine's connection without losing its start.

docker-py's `exec_start(stream=True)` reads the hijacked connection's raw socket. http.client
read the response headers through a buffered reader, which can take in the first frames of
the command's output along with them; reading the raw socket skips those bytes
(docker-py issue 3332). A command that prints at once then loses the beginning of its output,
more often under load: seen here as a pooled judge's `clean` line missing before its report
(the judge was discarded) and as a survey exec whose whole output was missing while it exited
0. This module reads the same buffered reader the headers came through instead.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

FRAME_HEADER = struct.Struct(">BxxxL")  # stream (1 stdout, 2 stderr), 3 zero bytes, size
CHUNK = 1 << 16  # a frame's payload is handed on in pieces, so a caller's cap applies early


def start_attached(api: Any, exec_id: str) -> Any:
    """Start `exec_id` attached (not a TTY); the engine's response, its body the frames.
    Raises what docker-py raises for an engine error (`docker.errors.APIError`)."""
    res = api._post_json(
        api._url("/exec/{0}/start", exec_id),
        headers={"Connection": "Upgrade", "Upgrade": "tcp"},
        data={"Tty": False, "Detach": False},
        stream=True,
    )
    api._raise_for_status(res)
    # The command may stay silent for longer than the client's timeout; the caller enforces
    # its own deadline and stops the command by killing the container, which ends the stream.
    api._disable_socket_timeout(api._get_raw_response_socket(res))
    return res


def frames(res: Any) -> Iterator[tuple[bytes | None, bytes | None]]:
    """(stdout, stderr) chunks of an attached exec's response until the stream ends, read
    through the response's buffered reader; a stream cut inside a frame just ends."""
    reader = res.raw._fp.fp
    try:
        while True:
            header = reader.read(FRAME_HEADER.size)
            if len(header) < FRAME_HEADER.size:
                return
            kind, size = FRAME_HEADER.unpack(header)
            while size:
                chunk = reader.read(min(size, CHUNK))
                if not chunk:
                    return
                size -= len(chunk)
                if kind == 1:
                    yield chunk, None
                elif kind == 2:
                    yield None, chunk
    finally:
        res.close()
