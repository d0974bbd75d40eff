"""`assay serve` started for real, as the README starts it: a subprocess on 127.0.0.1 and a
free port, its token in a file; stopped with SIGTERM (the drain path), after which nothing it
made may remain on the runc backend."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from assay._internal.runtime.oci import host

ROOT = Path(__file__).resolve().parents[2]
ASSAY = Path(sys.executable).with_name("assay")


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    base: str
    token: str
    log: Path

    @property
    def url(self) -> str:
        """The base with the token as its first path segment (what verl is given)."""
        return f"{self.base}/{self.token}"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def owned_by(pid: int) -> list[str]:
    """Containers on the runc backend whose controller was process `pid`."""
    left = []
    for m in host.all_metas():
        if isinstance(m, host.Meta) and m.owner.split(":")[2] == str(pid):
            left.append(f"{m.role}:{m.cid[:12]}")
    return left


@contextmanager
def running_server(tmp: Path, *args: str, start_timeout: float = 60.0) -> Iterator[Server]:
    port = free_port()
    token_file = tmp / "token"
    log = tmp / "serve.log"
    argv = [str(ASSAY), "serve", "--runtime", "runc", "--port", str(port),
            "--token-file", str(token_file), *args]  # fmt: skip
    # A temporary directory of its own: whatever the server leaves in it is a leak.
    tmpdir = tmp / "server-tmp"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir))
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    server = None
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"assay serve exited {proc.returncode}:\n{log.read_text()}")
            try:
                if requests.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"assay serve did not answer:\n{log.read_text()}")
            time.sleep(0.2)
        server = Server(proc, base, token_file.read_text().strip(), log)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise AssertionError("assay serve did not stop within 120 s of SIGTERM") from None
    assert proc.returncode == 0, f"assay serve exited {proc.returncode}:\n{log.read_text()}"
    assert owned_by(proc.pid) == [], "assay serve left containers"
    assert sorted(p.name for p in tmpdir.iterdir()) == [], "assay serve left temporary files"
