"""Plain ASGI middleware around the app, outermost first: the access log (which never holds a
client's path, so never a token: it logs the name of the route a request reached, or "other"),
the token check, and the request body cap. Pure ASGI so that a refused request costs no
framework work and an oversized body is refused before it is read whole."""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/health"})
"""Answered without a token: a liveness probe says only whether the server serves."""

log = logging.getLogger("assay.serve")


async def send_json(
    send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    raw = json.dumps(body).encode()
    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    hdrs += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": raw})


def _header(scope: Scope, name: bytes) -> bytes | None:
    for k, v in scope.get("headers", ()):
        if k.lower() == name:
            return bytes(v)
    return None


class TokenAuth:
    """Admit a request that carries the token as `Authorization: Bearer <token>` or as the
    path's first segment (`/<token>/run_code`: clients such as verl send no header, only the
    URL they were given). The segment is stripped before routing. Compared in constant time.
    `token=None` admits everything (loopback only; `serve` enforces that)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if self.token is None:
            scope["assay.route"] = path
            await self.app(scope, receive, send)
            return
        if path in OPEN_PATHS:
            scope["assay.route"] = path
            await self.app(scope, receive, send)
            return
        first, sep, rest = path[1:].partition("/")
        if sep and hmac.compare_digest(first.encode(), self.token):
            scope["assay.route"] = "/" + rest
            inner = dict(scope, path="/" + rest, raw_path=("/" + rest).encode())
            await self.app(inner, receive, send)
            return
        auth = _header(scope, b"authorization") or b""
        scheme, _, given = auth.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token):
            scope["assay.route"] = path
            await self.app(scope, receive, send)
            return
        await send_json(
            send, 401, {"error": "a token is required: `Authorization: Bearer <token>` or "
                        "the token as the URL's first path segment"},
            {"www-authenticate": "Bearer"},
        )  # fmt: skip


class BodyTooLarge(Exception):
    pass


class BodyCap:
    """Refuse a body over `cap` bytes with 413: at once when Content-Length says so, else as
    soon as the bytes received pass the cap (a chunked body), before it is read whole."""

    def __init__(self, app: ASGIApp, cap: int) -> None:
        self.app, self.cap = app, cap

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        too_big = {"error": f"the request body is over this server's cap of {self.cap} bytes"}
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await send_json(send, 400, {"error": "Content-Length is not a number"})
                return
            if size > self.cap:
                await send_json(send, 413, too_big, {"connection": "close"})
                return
        seen = 0
        started = refused = False

        async def capped_receive() -> Message:
            nonlocal seen, refused
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.cap:
                    # Answered here, at once: the app only learns that its body is gone, and
                    # whatever it answers to that (a framework's 500) is dropped below.
                    if not started:
                        refused = True
                        await send_json(send, 413, too_big, {"connection": "close"})
                    raise BodyTooLarge
            return msg

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            if refused:
                return
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, capped_receive, tracking_send)
        except BodyTooLarge:
            pass
        except Exception:
            if not refused:  # the app's own error, not the cap's
                raise


METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})


class AccessLog:
    """One line per request: method, route, status and seconds. Outermost, so it sees refused
    requests too. What it logs is chosen from fixed sets, never copied from the request: the
    route is `label(route)` of what `TokenAuth` recorded after stripping the token (one of the
    app's routes, or "other"), "(refused)" for a request it refused, and the method one of
    `METHODS` or "OTHER". A path can hold the token in any form or place (doubled, percent-
    encoded, after another segment); no rule that looks for the token in it can be complete,
    so no part of a path is logged."""

    def __init__(
        self,
        app: ASGIApp,
        observe: Callable[[str, int, float], None],
        label: Callable[[str], str],
    ) -> None:
        self.app, self.observe, self.label = app, observe, label

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.monotonic()
        status = 500

        async def wrapped_send(msg: Message) -> None:
            nonlocal status
            if msg["type"] == "http.response.start":
                status = int(msg["status"])
            await send(msg)

        try:
            await self.app(scope, receive, wrapped_send)
        finally:
            route = scope.get("assay.route")
            shown = "(refused)" if route is None else self.label(str(route))
            method = scope["method"] if scope["method"] in METHODS else "OTHER"
            secs = time.monotonic() - t0
            self.observe(shown, status, secs)
            log.info("%s %s %d %.3fs", method, shown, status, secs)
