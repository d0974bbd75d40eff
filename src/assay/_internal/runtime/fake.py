"""An in-memory runtime for fast unit tests: no processes, a virtual clock, dict filesystems.

It understands a tiny command vocabulary (the one the conformance suite uses) plus
programs a test registers by argv[0], so pipeline logic can be tested without Docker.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import os
import posixpath
import tarfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO

from .base import ArchiveTooLarge, ContainerSpec, ExecResult, RuntimeError_, Spawned
from .owner import owner_is_dead, this_owner


@dataclass
class FakeContainer:
    spec: ContainerSpec
    files: dict[str, bytes] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)
    """A file's mode where it is not 0644 (a compiler's output is executable)."""
    state: str = "created"
    log: bytearray = field(default_factory=bytearray)
    oom: bool = False
    procs: list[tuple[int, str]] = field(default_factory=lambda: [(1, "docker-init"), (2, "sleep")])
    owner: str = field(default_factory=this_owner)
    exit_code: int | None = None
    ran_s: float = 0.0
    stdin: bytes = b""
    """What a spawned main process was given on its stdin (`cat` with no file prints it)."""


Program = Callable[[FakeContainer, tuple[str, ...], Mapping[str, str]], tuple[int, bytes, bytes]]
STATUS_SCRIPT = "grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs):' /proc/self/status"
"""The command the conformance suite asks for a process's ids and capabilities with."""
SWITCH_CAPS = (1 << 6) | (1 << 7) | (1 << 8)  # CAP_SETGID, CAP_SETUID, CAP_SETPCAP
MEMORY_HOG = "head -c 1073741824 /dev/zero | tail -n 1 > /dev/null"
"""A command that takes memory until its container's limit kills it (tail keeps the one
line it has read, which never ends)."""


class FakeRuntime:
    name = "fake"

    def __init__(self, programs: Mapping[str, Program] | None = None) -> None:
        self.containers: dict[str, FakeContainer] = {}
        self.volumes: set[str] = set()
        self.programs = dict(programs or {})
        self._ids = itertools.count(1)

    def _get(self, cid: str) -> FakeContainer:
        try:
            return self.containers[cid]
        except KeyError:
            raise RuntimeError_(f"container vanished: {cid}") from None

    def create(self, spec: ContainerSpec) -> str:
        cid = f"fake{next(self._ids):08d}"
        # Shared mounts: the same dict, so either container sees what the other wrote.
        files = self._get(spec.mounts_of).files if spec.mounts_of is not None else {}
        self.containers[cid] = FakeContainer(spec, files)
        for s in spec.scratch:
            self.volumes.add(f"{cid}:{s.target}")
        return cid

    def start(self, cid: str) -> None:
        c = self._get(cid)
        c.state = "running"
        if not c.spec.init:
            # The command is the container's init: it runs to its end, and the container
            # (every process in it) ends with it.
            c.procs = [(1, c.spec.command[0])]
            c.exit_code, _, _, c.ran_s = self._run(c, c.spec.command, c.spec.env)
            c.procs, c.state = [], "exited"

    def _spawnable(self, cid: str) -> FakeContainer:
        c = self._get(cid)
        if not c.spec.spawned:
            raise RuntimeError_(f"spawn: {cid} was not created to be spawned")
        if c.state != "created":
            raise RuntimeError_(f"spawn: {cid} was started already")
        c.state = "running"
        return c

    def _ended(self, c: FakeContainer, code: int | None, seconds: float) -> None:
        # The main process's end is the container's: nothing of it runs any more.
        c.exit_code, c.ran_s, c.procs, c.state = code, seconds, [], "exited"

    def spawn(self, cid: str) -> Spawned:
        """The main process runs on a thread once its stdin has ended (it reads all of it
        first), writing its output into real pipes; no virtual time passes."""
        c = self._spawnable(cid)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe() if c.spec.stdin else (-1, -1)

        def main() -> None:
            try:
                if in_r >= 0:
                    chunks = []
                    while chunk := os.read(in_r, 65536):
                        chunks.append(chunk)
                    c.stdin = b"".join(chunks)
                code, out, err, seconds = self._run(c, c.spec.command, c.spec.env)
                for fd, data in ((out_w, out), (err_w, err)):
                    try:
                        view = memoryview(data)
                        while view:
                            view = view[os.write(fd, view) :]
                    except OSError:
                        pass  # the reader closed its end
                self._ended(c, code, seconds)
            finally:
                for fd in (in_r, out_w, err_w):
                    if fd >= 0:
                        os.close(fd)

        threading.Thread(target=main, daemon=True).start()
        return Spawned(
            cid,
            stdin=os.fdopen(in_w, "wb", buffering=0) if in_w >= 0 else None,
            stdout=os.fdopen(out_r, "rb", buffering=0),
            stderr=os.fdopen(err_r, "rb", buffering=0),
        )

    def run(
        self, cid: str, *, deadline_s: float, output_cap: int, stdin: bytes = b""
    ) -> ExecResult:
        """As `exec` on the virtual clock, with the spec's command as the main process."""
        if stdin and not self._get(cid).spec.stdin:
            raise ValueError("stdin given to a container whose spec reads none")
        c = self._spawnable(cid)
        c.stdin = stdin
        code, out, err, seconds = self._run(c, c.spec.command, c.spec.env)
        if seconds > deadline_s:
            self._ended(c, None, deadline_s)
            return ExecResult(None, b"", b"", True, False, deadline_s)
        if len(out) + len(err) > output_cap:
            self._ended(c, None, seconds)
            return ExecResult(None, out[:output_cap], b"", False, True, seconds)
        self._ended(c, code, seconds)
        return ExecResult(code, out, err[: max(output_cap - len(out), 0)], False, False, seconds)

    def kill(self, cid: str) -> None:
        if cid in self.containers:
            self.containers[cid].state = "exited"

    def pause(self, cid: str) -> None:
        c = self._get(cid)
        if c.state != "running":
            raise RuntimeError_("pause: container is not running")
        c.state = "paused"

    def remove(self, cid: str) -> None:
        self.containers.pop(cid, None)
        self.volumes = {v for v in self.volumes if not v.startswith(f"{cid}:")}

    def wait(self, cid: str, deadline_s: float) -> int | None:
        c = self._get(cid)
        if c.state != "exited" or c.ran_s > deadline_s:
            return None
        return 0 if c.exit_code is None else c.exit_code

    def exec(
        self,
        cid: str,
        argv: tuple[str, ...],
        *,
        deadline_s: float,
        output_cap: int,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        capture: bool = True,
        keep_container: bool = False,
    ) -> ExecResult:
        c = self._get(cid)
        if c.state != "running":
            raise RuntimeError_("exec: container is not running")
        code, out, err, seconds = self._run(c, argv, env or {})
        if seconds > deadline_s:
            return ExecResult(None, b"", b"", True, False, deadline_s)
        if not capture:
            out, err = b"", b""
        if len(out) + len(err) > output_cap:
            if not keep_container:
                c.state = "exited"
            return ExecResult(None, out[:output_cap], b"", False, True, seconds)
        return ExecResult(code, out, err, False, False, seconds)

    def _run(
        self, c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes, float]:
        if argv and argv[0] in self.programs:
            code, out, err = self.programs[argv[0]](c, argv, env)
            return code, out, err, 0.0
        match argv:
            case ("true",):
                return 0, b"", b"", 0.0
            case ("false",):
                return 1, b"", b"", 0.0
            case ("echo", *words):
                return 0, (" ".join(words) + "\n").encode(), b"", 0.0
            case ("sleep", secs):
                return 0, b"", b"", float(secs)
            case ("cat",):
                return 0, c.stdin, b"", 0.0
            case ("cat", path):
                if path in c.files:
                    return 0, c.files[path], b"", 0.0
                return 1, b"", f"cat: {path}: No such file or directory\n".encode(), 0.0
            case ("sh", "-c", script) if script.endswith("&"):
                # A process left running after the exec ends (what a judge's census looks for).
                c.procs.append((max(pid for pid, _ in c.procs) + 1, script.split()[0]))
                return 0, b"", b"", 0.0
            case ("sh", "-c", "yes"):
                return 0, b"y\n" * (1 << 20), b"", 0.0
            case ("sh", "-c", script) if script.startswith("yes | head -c "):
                return 0, (b"y\n" * (1 << 20))[: int(script.split()[-1])], b"", 0.0
            case ("sh", "-c", script) if script.startswith("exit "):
                return int(script.split()[1]), b"", b"", 0.0
            case ("sh", "-c", script) if script.startswith("printf '#!/bin/sh\\necho ran"):
                # A program written to /tmp and run there (the fake's /tmp is exec).
                if self._writable(c, "/tmp/p"):
                    return 0, b"ran\n", b"", 0.0
                return 1, b"", b"sh: Read-only file system\n", 0.0
            case ("sh", "-c", script) if script.startswith("printf %s ") and " > " in script:
                text, path = script.removeprefix("printf %s ").split(" > ", 1)
                if self._writable(c, path):
                    c.files[path] = text.encode()
                    return 0, b"", b"", 0.0
                return 1, b"", b"sh: Read-only file system\n", 0.0
            case ("id", "-u"):
                return 0, (self._uid(c) + "\n").encode(), b"", 0.0
            case ("sh", "-c", "kill -9 $$"):
                return 128 + 9, b"", b"", 0.0
            case ("sh", "-c", script) if script == MEMORY_HOG:
                c.oom = True
                return 128 + 9, b"", b"", 0.0
            case ("sh", "-c", script) if script == STATUS_SCRIPT:
                caps = f"{SWITCH_CAPS:016x}" if c.spec.switch_user else "0" * 16
                lines = [f"Uid:\t{self._uid(c)}", f"CapEff:\t{caps}", f"CapBnd:\t{caps}"]
                return 0, ("\n".join(lines) + "\nNoNewPrivs:\t1\n").encode(), b"", 0.0
        return 127, b"", f"fake: unknown command {argv!r}\n".encode(), 0.0

    @staticmethod
    def _uid(c: FakeContainer) -> str:
        """The uid the running command has: a `switch_user` container's runner starts as root
        (its main process, or an exec); any other command runs as the spec's user."""
        return "0" if c.spec.switch_user else c.spec.user.split(":")[0]

    def _writable(self, c: FakeContainer, path: str) -> bool:
        specs = [c.spec]
        if c.spec.mounts_of is not None:
            specs.append(self._get(c.spec.mounts_of).spec)
        tops = [s.target for spec in specs for s in spec.scratch] + ["/tmp"]
        tops += [b.target for spec in specs for b in spec.binds if not b.read_only]
        return not c.spec.hardened or any(path.startswith(t + "/") for t in tops)

    def put_archive(self, cid: str, path: str, data: bytes) -> None:
        c = self._get(cid)
        if c.spec.hardened and not self._writable(c, path + "/x"):
            raise RuntimeError_("put_archive: container rootfs is marked read-only")
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            for m in tf.getmembers():
                if m.isfile():
                    fh = tf.extractfile(m)
                    assert fh is not None
                    c.files[posixpath.join(path, m.name)] = fh.read()

    def get_archive(self, cid: str, path: str, sink: BinaryIO, cap: int) -> int:
        c = self._get(cid)
        base = posixpath.basename(path.rstrip("/"))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            d = tarfile.TarInfo(base)
            d.type, d.mode = tarfile.DIRTYPE, 0o755
            tf.addfile(d)
            for name in sorted(c.files):
                if name.startswith(path.rstrip("/") + "/"):
                    ti = tarfile.TarInfo(base + name[len(path.rstrip("/")) :])
                    ti.size, ti.mode = len(c.files[name]), c.modes.get(name, 0o644)
                    tf.addfile(ti, io.BytesIO(c.files[name]))
        data = buf.getvalue()
        if len(data) > cap:
            raise ArchiveTooLarge(cap)
        sink.write(data)
        return len(data)

    def logs(self, cid: str, cap: int) -> bytes:
        return bytes(self._get(cid).log[:cap])

    def oom_killed(self, cid: str) -> bool:
        return self._get(cid).oom

    def limit_events(self, cid: str) -> dict[str, int]:
        return {"memory": 1} if self._get(cid).oom else {}

    def processes(self, cid: str) -> list[tuple[int, str]]:
        return list(self._get(cid).procs)

    def census(self, cid: str) -> frozenset[int]:
        return frozenset(pid for pid, _ in self._get(cid).procs)

    def image_digest(self, image: str) -> str:
        # Distinct per image, as on an engine, so a test can tell which image a role recorded.
        return "sha256:" + hashlib.sha256(image.encode()).hexdigest()

    def sweep(self, grading_id: str | None = None) -> int:
        doomed = [
            cid
            for cid, c in self.containers.items()
            if grading_id is None or c.spec.grading_id == grading_id
        ]
        for cid in doomed:
            self.remove(cid)
        return len(doomed)

    def gradings(self) -> set[str]:
        return {c.spec.grading_id for c in self.containers.values()}

    def orphans(self) -> set[str]:
        dead: dict[str, bool] = {}
        for c in self.containers.values():
            gid = c.spec.grading_id
            dead[gid] = dead.get(gid, True) and owner_is_dead(c.owner) is True
        return {gid for gid, is_dead in dead.items() if is_dead}

    def leftovers(self, grading_id: str | None = None) -> list[str]:
        return [
            f"container:{cid}"
            for cid, c in self.containers.items()
            if grading_id is None or c.spec.grading_id == grading_id
        ] + [f"volume:{v}" for v in self.volumes if grading_id is None]
