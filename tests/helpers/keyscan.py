"""Look for secrets (the signing key's bytes, its path) anywhere a container could see them.

Channels: the container's configuration (env, command line, entrypoint, labels, mounts),
processes running now and every exec ever started in it, files changed in its writable layer,
and the contents of everything mounted into it (binds, volumes, tmpfs while running).
Findings name the channel, the place and the needle's index; never the needle itself.
Anything too large to scan is itself a finding, so an incomplete scan can never pass.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker.errors
from cryptography.hazmat.primitives import serialization

MAX_ARCHIVE_BYTES = 512 << 20


def key_needles(key_path: Path) -> list[bytes]:
    """Every form in which the private key at `key_path` could plausibly leak."""
    pem = key_path.read_bytes()
    key = serialization.load_pem_private_key(pem, password=None)
    raw = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    body = b"".join(pem.splitlines()[1:-1])
    return [
        pem,
        body,
        raw,
        raw.hex().encode(),
        base64.b64encode(raw),
        base64.urlsafe_b64encode(raw).rstrip(b"="),
        str(key_path).encode(),
        str(key_path.resolve()).encode(),
    ]


class _Scanner:
    def __init__(self, needles: list[bytes]) -> None:
        if not needles or any(len(n) < 8 for n in needles):
            raise ValueError("needles must be non-empty and at least 8 bytes each")
        self.needles = needles
        self.findings: list[str] = []

    def text(self, channel: str, where: str, value: Any) -> None:
        blob = value if isinstance(value, bytes) else json.dumps(value, default=str).encode()
        for index, needle in enumerate(self.needles):
            if needle in blob:
                self.findings.append(f"{channel}: needle {index} in {where}")

    def stream(self, channel: str, where: str, chunks: Iterable[bytes]) -> None:
        # Carry the tail of each chunk into the next so a needle split across chunks is found.
        overlap = max(len(n) for n in self.needles) - 1
        found: set[int] = set()
        tail, total = b"", 0
        for chunk in chunks:
            total += len(chunk)
            if total > MAX_ARCHIVE_BYTES:
                self.findings.append(f"scan-incomplete: {where} exceeds {MAX_ARCHIVE_BYTES} bytes")
                return
            window = tail + chunk
            found.update(i for i, needle in enumerate(self.needles) if needle in window)
            tail = window[-overlap:] if overlap else b""
        self.findings.extend(f"{channel}: needle {i} in {where}" for i in sorted(found))

    def archive(self, container: Any, channel: str, path: str) -> None:
        try:
            chunks, stat = container.get_archive(path)
        except docker.errors.NotFound:
            return  # deleted since the diff was taken: nothing left to leak
        if stat:
            self.text(channel, f"{path} (link target)", stat.get("linkTarget", "").encode())
        self.stream(channel, path, chunks)


def _top_level(paths: list[str]) -> list[str]:
    """Drop paths whose ancestor is also listed: archiving a directory includes its subtree."""
    kept: list[str] = []
    for path in sorted(paths):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def _events(container: Any, created: str) -> list[Any]:
    since = datetime.strptime(created[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return list(
        container.client.api.events(
            since=int(since.timestamp()),
            until=int(time.time()) + 1,
            filters={"container": container.id},
            decode=True,
        )
    )


def scan_container_for_secret(container: Any, needles: list[bytes]) -> list[str]:
    """Return one finding per (channel, place, needle); an empty list means nothing leaked."""
    scan = _Scanner(needles)
    container.reload()
    attrs = container.attrs
    config, host = attrs.get("Config") or {}, attrs.get("HostConfig") or {}

    scan.text("env", "Config.Env", config.get("Env"))
    scan.text("command", "Path/Args", [attrs.get("Path"), attrs.get("Args")])
    scan.text("command", "Config.Cmd/Entrypoint", [config.get("Cmd"), config.get("Entrypoint")])
    scan.text(
        "mounts",
        "Mounts/Binds/Tmpfs",
        [attrs.get("Mounts"), host.get("Binds"), host.get("Mounts"), host.get("Tmpfs")],
    )
    scan.text("config", "inspect", attrs)  # labels, working dir, anything else in inspect

    running = attrs.get("State", {}).get("Running", False)
    if running:
        try:
            scan.text("process", "top", container.top(ps_args="-eo pid,args"))
        except docker.errors.APIError:
            # It stopped between the inspect and `top` (a resident judge whose pipes were just
            # closed, a one-shot container at its end: the engine answers "ttrpc: closed"):
            # no process is left to scan, and anything else is still the engine's error.
            container.reload()
            running = container.attrs.get("State", {}).get("Running", False)
            if running:
                raise
    for exec_id in attrs.get("ExecIDs") or []:  # only execs still running are listed here
        try:
            info = container.client.api.exec_inspect(exec_id)
        except docker.errors.NotFound:
            continue
        scan.text("exec", f"exec {exec_id[:12]}", info.get("ProcessConfig"))
    # Finished execs vanish from inspect; the engine's event log still has their command lines
    # (it keeps only the most recent events, so scan soon after the grading).
    scan.text("exec", "events", _events(container, attrs.get("Created", "")))

    changed = [c["Path"] for c in container.diff() or [] if c.get("Kind") != 2]
    for path in _top_level(changed):
        scan.archive(container, "filesystem", path)

    mounted = [m.get("Destination") for m in attrs.get("Mounts") or [] if m.get("Destination")]
    if running:
        mounted += list((host.get("Tmpfs") or {}).keys())
    for path in _top_level(mounted):
        scan.archive(container, "mount-content", path)
    return scan.findings
