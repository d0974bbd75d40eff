"""Connections under uvicorn: a deadline for each request's head and one for its body, and a
cap on open connections that sheds those still waiting for a head first.

uvicorn times out nothing while a request arrives (its keep-alive timer runs only between
requests, and every byte received cancels it; uvicorn issue #157), and its
`limit_concurrency` counts open connections to answer 503 without ever closing one, so a
client that sends half a head, or a byte every few seconds, holds a connection and its file
descriptor for as long as it likes, and 2,000 of them cost nothing to send. ASGI middleware
cannot help: the app is called only once a head is whole. So the protocol itself keeps the
deadlines: uvicorn's h11 protocol, told by its parser when a head and a body are complete.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import h11
from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

log = logging.getLogger("assay.serve")

# Written straight to the socket: h11 cannot send a response before it has parsed a request.
_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\ncontent-length: 16"
            b"\r\nconnection: close\r\n\r\nrequest timeout\n")  # fmt: skip
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 19"
         b"\r\nretry-after: 1\r\nconnection: close\r\n\r\ntoo many connections")  # fmt: skip


@dataclass
class Guard:
    """The limits and the shared state of one server's connections. `dropped(reason)` is
    called for each connection closed here: "head-timeout", "body-timeout", "shed" (an
    idle connection closed to make room) or "refused" (no room, and none idle)."""

    head_timeout: float = 10.0
    body_timeout: float = 120.0
    max_connections: int = 1024
    dropped: Callable[[str], None] = lambda _reason: None
    # Every open connection, and those waiting for a head, oldest first (a dict as an
    # ordered set): the cap counts the first and sheds from the second.
    live: set[GuardedProtocol] = field(default_factory=set)
    waiting: dict[GuardedProtocol, None] = field(default_factory=dict)


class _Watched(h11.Connection):
    """h11's parser, telling its protocol of each event it parses (uvicorn's loop over the
    events has no hook)."""

    def __init__(self, max_incomplete_event_size: int, on_event: Callable[[Any], None]) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size)
        self._on_event = on_event

    def next_event(self) -> Any:
        event = super().next_event()
        self._on_event(event)
        return event


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with `Guard`'s deadlines and cap. A request's head must be whole
    within `head_timeout` of the connection's start or of the previous response's end (or the
    connection closes, with a 408 when part of a head came); its body within `body_timeout` of
    its head. Past `max_connections` open connections, a new one closes the oldest connection
    waiting for a head, or, when every one is busy with a request, is itself refused (503)."""

    guard: ClassVar[Guard]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        size = config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
        self.conn = _Watched(size, self._parsed)
        self._deadline: asyncio.TimerHandle | None = None
        self._awaiting: str | None = None  # "head" or "body": what the deadline waits for
        self._head_bytes = 0

    # -- the protocol's events ------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        g = self.guard
        g.live.add(self)
        if len(g.live) > g.max_connections:
            oldest = next(iter(g.waiting), None)
            if oldest is None:
                self._drop("refused", _BUSY)
                return
            oldest._drop("shed", _BUSY if oldest._head_bytes else None)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        if self in self.guard.waiting:
            self._head_bytes += len(data)
        super().data_received(data)

    def on_response_complete(self) -> None:
        # Armed before uvicorn parses a pipelined request, which then disarms it at once.
        self._disarm()
        if not self.transport.is_closing():
            self._await_head()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.guard.live.discard(self)
        self.guard.waiting.pop(self, None)
        super().connection_lost(exc)

    def _parsed(self, event: Any) -> None:
        if isinstance(event, h11.Request):
            self.guard.waiting.pop(self, None)
            self._arm("body", self.guard.body_timeout)
        elif isinstance(event, h11.EndOfMessage) and self._awaiting == "body":
            # Only a body's deadline: the rest of a body answered early (a 401) ends under
            # the next head's deadline, which is already running.
            self._disarm()

    # -- deadlines ------------------------------------------------------------------------

    def _await_head(self) -> None:
        self._head_bytes = 0
        self.guard.waiting.pop(self, None)
        self.guard.waiting[self] = None
        self._arm("head", self.guard.head_timeout)

    def _arm(self, what: str, seconds: float) -> None:
        self._disarm()
        self._awaiting = what
        self._deadline = self.loop.call_later(seconds, self._expired, what)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self._awaiting = None

    def _expired(self, what: str) -> None:
        self._deadline = self._awaiting = None
        # A client that sent part of a head is told why; an idle keep-alive connection is
        # closed as uvicorn closes one, silently.
        said = _TIMEOUT if what == "head" and self._head_bytes else None
        self._drop(f"{what}-timeout", said)

    def _drop(self, reason: str, said: bytes | None) -> None:
        self._disarm()
        self.guard.live.discard(self)
        self.guard.waiting.pop(self, None)
        if self.transport.is_closing():
            return
        if said is not None:
            self.transport.write(said)
        self.transport.close()
        self.guard.dropped(reason)
        log.debug("connection closed: %s", reason)


def guarded_protocol(guard: Guard) -> type[GuardedProtocol]:
    """A protocol class for `uvicorn.Config(http=...)` whose connections share `guard`."""

    class Guarded(GuardedProtocol):
        pass

    Guarded.guard = guard
    return Guarded
