"""Fault injection helpers: a private Docker engine the tests may restart, and a delay proxy.

The shared engine serves other people's tests at the same time, so a fault that hits the
engine itself (a restart, slow answers) is injected only into a daemon this process starts,
with its own data root, exec root, pid file and socket, and no networking of its own. Only that
daemon's process (and the containerd it spawned) is ever signalled.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import docker


class PrivateEngine:
    """A dockerd of our own under a fresh /tmp directory (short: unix socket paths are capped
    at 108 bytes, and containerd puts its sockets several levels below the exec root)."""

    def __init__(self, top: Path = Path("/tmp")) -> None:
        self.root = claimed_dir(ENGINE_PREFIX, top)
        self.sock = self.root / "docker.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.stop_s = 0.0
        (self.root / "daemon.json").write_text("{}")  # not the host's /etc/docker/daemon.json

    @property
    def url(self) -> str:
        return f"unix://{self.sock}"

    def client(self, timeout: int = 30) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.url, version="auto", timeout=timeout)

    def start(self, timeout_s: float = 60) -> None:
        r = self.root
        # Its own network namespace: a dockerd with --bridge=none deletes the host's docker0
        # at start-up (moby's removeDefaultBridgeInterface), which broke the shared engine's
        # bridge networking for every test after this suite.
        argv = [
            "unshare",
            "--net",
            "--",
            "dockerd",
            f"--config-file={r / 'daemon.json'}",
            f"--data-root={r / 'data'}",
            f"--exec-root={r / 'exec'}",
            f"--pidfile={r / 'dockerd.pid'}",
            f"--host={self.url}",
            "--iptables=false",
            "--ip-masq=false",
            "--bridge=none",
            "--storage-driver=overlay2",
        ]
        log = (r / "dockerd.log").open("ab")
        with log:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"private dockerd exited: {self.log_tail()}")
            try:
                c = self.client(timeout=5)
                c.ping()
                c.close()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"private dockerd did not answer: {self.log_tail()}")
                time.sleep(0.1)

    def stop(self, timeout_s: float = 10) -> None:
        """SIGTERM (dockerd stops its containers and unmounts), SIGKILL if it hangs."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self.proc = None
        self._kill_strays()

    def restart(self) -> None:
        self.stop()
        self.start()
        self.restarts += 1

    def load_image(self, image: str) -> float:
        """Copy an image from the shared engine into ours; returns the seconds it took."""
        t0 = time.monotonic()
        save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        load = subprocess.run(
            ["docker", "-H", self.url, "load", "-q"],
            stdin=save.stdout,
            capture_output=True,
            timeout=300,
        )
        if save.stdout is not None:
            save.stdout.close()
        if save.wait(timeout=60) != 0 or load.returncode != 0:
            raise RuntimeError(f"could not copy {image}: {load.stderr.decode(errors='replace')}")
        return time.monotonic() - t0

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join((self.root / "dockerd.log").read_text().splitlines()[-n:])
        except OSError:
            return "(no log)"

    def close(self) -> None:
        """Stop the daemon and remove every trace of it: processes, mounts, directories."""
        t0 = time.monotonic()
        try:
            self.stop(timeout_s=3)
        finally:
            self.stop_s = time.monotonic() - t0
            self._kill_strays()
            unmount_below(self.root)
            shutil.rmtree(self.root, ignore_errors=True)

    def _kill_strays(self) -> None:
        # containerd and its shims name our exec root on their command lines; a SIGKILLed
        # dockerd leaves them running.
        kill_naming(self.root)


def kill_naming(root: Path) -> None:
    """SIGKILL, by PID, every process whose command line names `root`: a directory one of
    these helpers made, so nothing but the processes started on it mention it."""
    me = str(root).encode()
    for pid in _pids():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if me in cmdline and pid != os.getpid():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


# -- what a killed run left ----------------------------------------------------------------
#
# A test run ended by SIGKILL or SIGTERM (pytest runs no finalizer on either) leaves its
# private engine running, with its bind mounts, and its small file systems mounted. Each such
# directory names the process that made it (OWNER); the next run, and scripts/test.sh, remove
# every one whose maker is gone. None of it is labelled assay.grading, so `assay gc` and the
# engine's leftover check never saw it.

ENGINE_PREFIX = "assay-fd."
SMALLFS_PREFIX = "assay-fullfs."
PREFIXES = (ENGINE_PREFIX, SMALLFS_PREFIX)
OWNER = ".owner"
UNCLAIMED_GRACE_S = 60.0
"""A directory with no owner file is left alone this long after its last change: its maker
may be between mkdtemp and writing the file."""


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (so a reused PID is not its maker)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def claimed_dir(prefix: str, top: Path = Path("/tmp")) -> Path:
    """A fresh directory under `top` that names this process as its maker."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=top))
    (root / OWNER).write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")
    return root


def abandoned(root: Path) -> bool:
    """Whether the process that made `root` is gone (a directory made before owners were
    written counts, once UNCLAIMED_GRACE_S old: only killed runs left those)."""
    try:
        pid_s, start = (root / OWNER).read_text().split()
        pid = int(pid_s)
    except FileNotFoundError:
        try:
            return time.time() - root.stat().st_mtime > UNCLAIMED_GRACE_S
        except OSError:
            return False  # removed meanwhile
    except (OSError, ValueError):
        return True  # a torn owner file: its maker died writing it
    return _start_time(pid) != start


def leftovers(top: Path = Path("/tmp")) -> list[Path]:
    """Every directory these helpers made under `top`, abandoned or not."""
    return sorted(p for prefix in PREFIXES for p in top.glob(prefix + "*") if p.is_dir())


def sweep_abandoned(top: Path = Path("/tmp")) -> list[Path]:
    """Remove what killed runs left under `top`: the processes naming each abandoned
    directory (by PID), its mounts, the directory. Returns the directories removed."""
    swept = []
    for root in leftovers(top):
        if abandoned(root):
            kill_naming(root)
            unmount_below(root)
            shutil.rmtree(root, ignore_errors=True)
            swept.append(root)
    return swept


def mounts_below(root: Path) -> list[str]:
    prefix = str(root).rstrip("/") + "/"
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point == str(root) or point.startswith(prefix):
            found.append(point)
    return found


def unmount_below(root: Path) -> None:
    # Deepest first; lazy, so a mount still in use goes as soon as its last user does.
    for point in sorted(set(mounts_below(root)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


class SmallFs:
    """A tmpfs of `size` bytes at a fresh directory, for an output directory that fills up. It
    is mounted one level below the directory this process claims, so the owner file stays in
    sight."""

    def __init__(self, size: int) -> None:
        self.root = claimed_dir(SMALLFS_PREFIX)
        self.path = self.root / "fs"
        self.path.mkdir()
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(self.path)],
            check=True,
            capture_output=True,
        )

    def close(self) -> None:
        unmount_below(self.root)
        shutil.rmtree(self.root, ignore_errors=True)


class DelayProxy:
    """A unix socket that forwards to an engine's socket, holding back the engine's answers.

    Every answer chunk waits `base_s`; the streams a grading's deadline watches wait `stall_s`
    more with probability `p_stall`, drawn from a seeded RNG so a run can be repeated: an exec
    start's answer, and an attach's first output after its upgrade header (since issue 38 a
    candidate's runner and a resident judge are the containers' own processes, attached to
    before their start: holding the header back would hold the start, which is the engine's
    time, not the program's)."""

    def __init__(
        self, upstream: Path, base_s: float, stall_s: float, p_stall: float, seed: int
    ) -> None:
        self.upstream = str(upstream)
        self.path = Path(tempfile.mkdtemp(prefix="assay-px.", dir="/tmp")) / "docker.sock"
        self.base_s, self.stall_s, self.p_stall = base_s, stall_s, p_stall
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self.stalls = 0
        self.streams = 0
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self._server.listen(64)
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                engine.connect(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._socks += [client, engine]
            stall = [-1]  # answer chunks to pass before this connection's stall; -1: none
            threading.Thread(target=self._up, args=(client, engine, stall), daemon=True).start()
            threading.Thread(target=self._down, args=(engine, client, stall), daemon=True).start()

    def _up(self, src: socket.socket, dst: socket.socket, stall: list[int]) -> None:
        self._pump(src, dst, lambda chunk: self._note_request(chunk, stall))

    def _down(self, src: socket.socket, dst: socket.socket, stall: list[int]) -> None:
        def hold(_chunk: bytes) -> None:
            delay = self.base_s
            if stall[0] == 0:
                delay += self.stall_s
            if stall[0] >= 0:
                stall[0] -= 1
            if delay:
                time.sleep(delay)

        self._pump(src, dst, hold)

    def _note_request(self, chunk: bytes, stall: list[int]) -> None:
        if not chunk.startswith(b"POST "):
            return
        path = chunk.split(b" ", 2)[1].split(b"?", 1)[0]
        exec_start = b"/exec/" in path and path.endswith(b"/start")
        if exec_start or (b"/containers/" in path and path.endswith(b"/attach")):
            with self._rng_lock:
                self.streams += 1
                hit = self._rng.random() < self.p_stall
                self.stalls += hit
            if hit:
                stall[0] = 0 if exec_start else 1

    def _pump(self, src: socket.socket, dst: socket.socket, each: Callable[[bytes], None]) -> None:
        try:
            while chunk := src.recv(65536):
                each(chunk)
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._server.close()
        with self._lock:
            for s in self._socks:
                with contextlib.suppress(OSError):
                    s.close()
        shutil.rmtree(self.path.parent, ignore_errors=True)


class HoldProxy(DelayProxy):
    """A unix socket in front of an engine's socket that never forwards a request whose first
    line contains `hold`: the engine answers every other call, and that one runs into the
    client's timeout, as a call on a container whose runtime shim stopped answering does."""

    def __init__(self, upstream: Path, hold: bytes) -> None:
        super().__init__(upstream, base_s=0.0, stall_s=0.0, p_stall=0.0, seed=0)
        self.hold = hold
        self.held = 0

    def _up(self, src: socket.socket, dst: socket.socket, stall: list[int]) -> None:
        holding = False
        try:
            while chunk := src.recv(65536):
                if not holding and self.hold in chunk.split(b"\r\n", 1)[0]:
                    holding = True  # this connection's requests go nowhere from here on
                    self.held += 1
                if not holding:
                    dst.sendall(chunk)
        except OSError:
            pass
