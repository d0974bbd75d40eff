"""Starting the service: check the address and the token, load the tasks, open the grader
and run uvicorn until SIGTERM/SIGINT, then drain."""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import resource
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn

import assay
from assay.errors import UsageError

from .app import Service, Settings, create_app
from .connections import Guard, guarded_protocol

log = logging.getLogger("assay.serve")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_address(host: str, token: str | None) -> None:
    """Raises `UsageError` for a non-loopback address without a token."""
    if token is None and not is_loopback(host):
        raise UsageError(
            f"refusing to serve on {host} without a token: anyone who can reach it could run "
            "code on this machine's engine (give --token-file, or bind 127.0.0.1)"
        )


def read_token(path: Path | None) -> str:
    """The token in `path` (its first line), or a fresh one written there (mode 0600) when the
    file does not exist; without a path, a fresh token. Raises `UsageError` for an unreadable
    file or a token that is short or cannot travel as a URL path segment."""
    if path is None:
        return secrets.token_urlsafe(24)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UsageError(f"cannot create the token file {path}: {exc.strerror}") from None
    else:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(24) + "\n")
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the token file {path}: {exc}") from None
    token = lines[0].strip() if lines else ""
    if len(token) < 16 or not TOKEN_CHARS.fullmatch(token):
        raise UsageError(f"{path}: the token must be 16 to 256 characters of A-Z a-z 0-9 - _ . ~ "
                         "(it may travel as a URL path segment)")  # fmt: skip
    return token


TOKEN_CHARS = re.compile(r"[A-Za-z0-9._~-]{16,256}")


def load_tasks(root: Path | None) -> dict[str, assay.Task]:
    """Every task directory directly under `root` (a directory with task.toml), by id. Raises
    `assay.errors.TaskError` for an invalid one, `UsageError` for two with one id."""
    if root is None:
        return {}
    if not root.is_dir():
        raise UsageError(f"--tasks {root}: not a directory")
    dirs = [root] if (root / "task.toml").is_file() else sorted(
        d for d in root.iterdir() if (d / "task.toml").is_file())  # fmt: skip
    tasks: dict[str, assay.Task] = {}
    for d in dirs:
        t = assay.load_task(d)
        if t.id in tasks:
            raise UsageError(f"two tasks have the id {t.id}: {tasks[t.id].root} and {d}")
        tasks[t.id] = t
    return tasks


FD_RESERVE = 256
"""File descriptors kept for the grader (engine sockets, archives, task files) beside the
connections: the connection cap never lets clients take these."""


def connection_cap(wanted: int) -> int:
    """`wanted`, or fewer when this process may not open that many descriptors plus
    `FD_RESERVE` (RLIMIT_NOFILE): clients running the server out of descriptors would stop
    every grading, not just their own requests."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft - FD_RESERVE >= wanted:
        return wanted
    cap = max(16, soft - FD_RESERVE)
    log.warning("at most %d connections (not %d): the descriptor limit is %d", cap, wanted, soft)
    return cap


def server_config(
    app: Any, service: Service, *, host: str, port: int, drain_timeout: float = 600.0
) -> uvicorn.Config:
    """uvicorn's configuration for the app: h11 under `connections.GuardedProtocol` (the
    head and body deadlines and the connection cap of `service.settings`), no websockets (no
    route takes one, and an upgrade would leave the guarded protocol), no access log of
    uvicorn's own (`asgi.AccessLog` writes one without paths)."""
    s = service.settings
    guard = Guard(
        head_timeout=s.head_timeout, body_timeout=s.body_timeout,
        max_connections=connection_cap(s.max_connections), dropped=service.metrics.dropped,
    )  # fmt: skip
    return uvicorn.Config(
        app, host=host, port=port, access_log=False, log_level="warning",
        timeout_graceful_shutdown=int(drain_timeout), lifespan="on",
        http=guarded_protocol(guard), ws="none",
    )  # fmt: skip


class _Server(uvicorn.Server):
    """uvicorn's server, telling the service to stop taking work as soon as a signal comes
    (new requests on open connections get 503 while the running ones finish). uvicorn raises
    the signal again after its shutdown; here a completed drain exits 0 instead, since every
    admitted item was answered and everything made was removed."""

    service: Service | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.service is not None:
            self.service.admission.draining = True
        super().handle_exit(sig, frame)
        self._captured_signals.clear()


def serve(
    grader: assay.Grader,
    *,
    host: str,
    port: int,
    tasks: Mapping[str, assay.Task],
    settings: Settings,
    drain_timeout: float = 600.0,
    announce: Any = None,
) -> None:
    """Serve until a signal; then finish (or end as errors) the admitted work and remove every
    container, judge and temporary task. Raises `UsageError` for a refused address."""
    check_address(host, settings.token)
    app, service = create_app(grader, tasks, settings)
    config = server_config(app, service, host=host, port=port, drain_timeout=drain_timeout)
    server = _Server(config)
    server.service = service
    if announce is not None:
        announce(service)
    server.run()
    if not server.started:
        sys.exit(1)
