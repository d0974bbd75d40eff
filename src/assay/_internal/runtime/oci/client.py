"""The OCI runtime's command line, and nothing else: argv built from typed arguments, the
process started, its output read to a deadline and a cap, its JSON log read for errors. The
shape of containerd's go-runc (a `Runc` value holding the binary, `--root` and the global
flags; one method per subcommand), for the subcommands this backend uses.

`Flavour` is what differs between the runtimes the backend drives (runc, gVisor's runsc), as
data: the global flags and `run`'s flags this module puts on the command line, and the facts
about the runtime the lifecycle (runtime.py) and the bundle act on. runc's is `RUNC`; runsc's
is in runsc.py, with the reasons for each difference.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from assay.errors import EngineError, EngineUnavailableError

STOP_WAIT_S = 10.0
READ_CHUNK = 65536


def runtime_env() -> dict[str, str]:
    """The OCI runtime's environment: this process's, with Go's signal-based preemption off.
    runc is a Go program whose scheduler preempts goroutines with SIGURG, and `run` in the
    foreground passes every signal it receives on to the container's PID 1: tini then
    forwards it to its child, and when that child is the strict runner, whose ids root
    without CAP_KILL may not signal, tini dies of the EPERM, the container with it. Seen in
    about one run in thirty of `test_runner_processes.py` under load."""
    godebug = os.environ.get("GODEBUG", "")
    return {**os.environ, "GODEBUG": ",".join(filter(None, (godebug, "asyncpreemptoff=1")))}


@dataclass(frozen=True)
class Flavour:
    """One OCI runtime as this backend drives it."""

    name: str
    """The binary's name, and the directory of its state under the backend's state root."""
    global_flags: tuple[str, ...] = ()
    run_flags: tuple[str, ...] = ("--keep",)
    """`run`'s own flags. runc: `--keep`, so that runc keeps its state after the main process
    ends, for `wait` and `remove`."""
    chooses_network: bool = False
    """The network is the runtime's, chosen at `run` (`--network=none` for a container with
    its own network namespace, else `--network=host`), not the bundle's."""
    pids_backstop: tuple[int, int] | None = None
    """(base, per task): the host's pids cgroup counts the runtime's own threads, so it gets
    `base + per task * pids` and the container's tasks are limited inside the runtime by
    RLIMIT_NPROC at the spec's pids. None: the cgroup holds the spec's pids."""
    makes_cgroups: bool = False
    """The runtime removes the cgroups it created when the container ends, counters and all:
    the backend makes the memory and pids groups, with their limits, before `run`."""
    hidden_processes: str | None = None
    """Why the host cannot see the container's processes in its cgroup: then `processes`
    asks the runtime's `ps`, and there is no census. None: it sees them."""
    start_failure: tuple[str, tuple[str, ...]] = ("", ("unable to start container process",))
    """(context, markers): an exec whose logged failure holds the context and one marker
    could not start its command (no such binary or working directory): exit 126, as Docker
    reports it, not a failure of the runtime."""
    dies_first: str | None = None
    """A word in an exec's failure when the container died under it before `run` noticed:
    the lifecycle gives `run` `STOP_WAIT_S` to exit before it decides the exec failed."""
    shares_root: bool = False
    """A container with a read-only root may run on the image's shared root itself (the
    runtime makes nothing in a root whose mount points exist), with no overlay of its own."""
    chowns_stdio: bool = False
    """The runtime chowns the stdio descriptors it is given to its sandbox's user, a device
    among them (runsc; runc skips /dev/null since 1.1.5, opencontainers/runc#3707): it is
    never given the host's /dev/null (`Client`)."""
    forgets_by_hand: bool = False
    """What `delete` does for a container whose `run --keep` has exited (its cgroups, named in
    its state, and its state directory) the lifecycle may do itself, with no runtime process:
    runc's. runsc keeps more than that (a sandbox process, lock files)."""

    def could_not_start(self, failure: str) -> bool:
        context, markers = self.start_failure
        return context in failure and any(m in failure for m in markers)

    def cgroup_pids(self, pids: int) -> int:
        """The pids limit of the container's host cgroup for a spec's `pids`."""
        if self.pids_backstop is None:
            return pids
        base, per_task = self.pids_backstop
        return base + per_task * pids


RUNC = Flavour(name="runc", shares_root=True, forgets_by_hand=True)


def _empty_pipe(ours: list[int]) -> int:
    """A pipe's read end, its write end closed: end-of-file at once, as from /dev/null."""
    r, w = os.pipe()
    os.close(w)
    ours.append(r)
    return r


def _drained_pipe(ours: list[int]) -> int:
    """A pipe's write end whose read end a thread empties until every writer is gone."""
    r, w = os.pipe()
    ours.append(w)
    reader = os.fdopen(r, "rb", buffering=0)
    threading.Thread(target=_drain, args=(reader,), daemon=True, name="stdio-drain").start()
    return w


class Client:
    """One OCI runtime binary with its `--root` and global flags; one method per subcommand.
    Every process is started in a session of its own, so that a terminal's Ctrl-C is the
    controller's to handle."""

    def __init__(
        self,
        binary: str,
        root: Path,
        global_flags: tuple[str, ...] = (),
        *,
        private_stdio: bool = False,
    ) -> None:
        self.binary = binary
        self.root = root
        self.global_flags = global_flags
        self.env = runtime_env()
        self.private_stdio = private_stdio
        """Stand pipes of this process's in for /dev/null in the runtime's stdio (a runtime
        that `chowns_stdio` would give the host's /dev/null away): an empty one to read, one
        drained by a thread to write."""

    def argv(self, *args: str, log: Path | None = None, flags: tuple[str, ...] = ()) -> list[str]:
        """The command line of one subcommand: the binary, the global flags (these `flags`
        after the client's own), then `args`."""
        argv = [self.binary, "--root", str(self.root), *self.global_flags, *flags]
        if log is not None:
            argv += ["--log", str(log), "--log-format", "json"]
        return [*argv, *args]

    def _popen(
        self,
        argv: list[str],
        out: int,
        fix: str | None,
        *,
        stdin: int = subprocess.DEVNULL,
        err: int | None = None,
    ) -> subprocess.Popen[bytes]:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        err = out if err is None else err
        ours: list[int] = []  # stand-ins for /dev/null: the child holds its copies
        if self.private_stdio:
            if stdin == subprocess.DEVNULL:
                stdin = _empty_pipe(ours)
            if out == subprocess.DEVNULL:
                out = _drained_pipe(ours)
            if err == subprocess.DEVNULL:
                err = out if out in ours else _drained_pipe(ours)
        try:
            return subprocess.Popen(
                argv,
                stdin=stdin,
                stdout=out,
                stderr=err,
                start_new_session=True,
                env=self.env,
            )
        except OSError as exc:
            raise EngineUnavailableError(
                f"cannot run {self.binary}: {exc.strerror}", fix=fix
            ) from exc
        finally:
            for fd in ours:
                os.close(fd)

    def run(
        self,
        cid: str,
        bundle: Path,
        log: Path,
        *,
        pid_file: Path | None = None,
        run_flags: tuple[str, ...] = (),
        flags: tuple[str, ...] = (),
        stdio: tuple[int, int, int] | None = None,
    ) -> subprocess.Popen[bytes]:
        """`run` in the foreground: the container's only supervisor, whose exit status is the
        main process's. `stdio`: (stdin, stdout, stderr) descriptors the runtime passes on to
        the main process (runc copies between them and pipes of its own); else /dev/null.
        `pid_file`: where the runtime writes the main process's host pid once it started."""
        pid = ("--pid-file", str(pid_file)) if pid_file is not None else ()
        argv = self.argv(
            "run", *run_flags, "--bundle", str(bundle), *pid, cid, log=log, flags=flags
        )
        fix = f"apt-get install {Path(self.binary).name}"
        if stdio is None:
            return self._popen(argv, subprocess.DEVNULL, fix)
        stdin, out, err = stdio
        return self._popen(argv, out, fix, stdin=stdin, err=err)

    def exec(self, cid: str, process: Path, log: Path, *, capture: bool) -> subprocess.Popen[bytes]:
        """`exec --process`: one command in the running container, its output piped back if
        `capture`."""
        out = subprocess.PIPE if capture else subprocess.DEVNULL
        return self._popen(self.argv("exec", "--process", str(process), cid, log=log), out, None)

    def delete(self, cid: str) -> None:
        """`delete --force`: the runtime's record of a container whose processes are already
        killed; a runtime that does not answer in time or cannot run leaves it to the caller."""
        try:
            subprocess.run(
                self.argv("delete", "--force", cid),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, check=False, timeout=STOP_WAIT_S, env=self.env,
            )  # fmt: skip
        except (subprocess.TimeoutExpired, OSError):
            pass

    def ps(self, cid: str) -> list[tuple[int, str]]:
        """(pid, command name) of each process `ps` lists, as the runtime sees them."""
        out = subprocess.run(self.argv("ps", cid), capture_output=True, timeout=30, check=False)
        name = Path(self.binary).name
        if out.returncode != 0:
            raise EngineError(
                f"{name} ps {cid[:12]}: {out.stderr.decode(errors='replace').strip()[:300]}"
            )
        rows = []
        for line in out.stdout.decode(errors="replace").splitlines()[1:]:
            cols = line.split()
            if len(cols) >= 7 and cols[1].isdigit():
                rows.append((int(cols[1]), Path(cols[6]).name))
        return rows


def version(binary: str) -> str | None:
    """`<binary> --version`'s output, None if it would not run."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.decode(errors="replace") if out.returncode == 0 else None


def log_errors(log: Path) -> str:
    """The runtime's own error lines from its JSON log ("" if it logged none): what separates
    a failure of the runtime from the exit status of the command it ran."""
    try:
        text = log.read_text(errors="replace")[-8192:]
    except OSError:
        return ""
    msgs = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("level") in ("error", "fatal"):
            msgs.append(str(entry.get("msg", ""))[:500])
    return "; ".join(msgs)


def collect(
    proc: subprocess.Popen[bytes], deadline: float, cap: int, capture: bool
) -> tuple[bytearray, bytearray, bool, bool]:
    """Read stdout and stderr until both close, the deadline passes or their sum passes cap."""
    out, err = bytearray(), bytearray()
    if not capture:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0))
            return out, err, False, False
        except subprocess.TimeoutExpired:
            return out, err, True, False
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return out, err, True, False
            for key, _ in sel.select(timeout=left):
                chunk = os.read(key.fd, READ_CHUNK)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                if len(out) + len(err) > cap:
                    return out, err, False, True
        left = deadline - time.monotonic()
        try:
            proc.wait(timeout=max(left, 0))
        except subprocess.TimeoutExpired:
            return out, err, True, False
        return out, err, False, False
    finally:
        sel.close()


def drain_and_reap(proc: subprocess.Popen[bytes]) -> None:
    """Read a left-running exec's pipes to their end (a writer blocked on a full pipe must
    not keep its container from dying) and reap the runtime's process."""
    readers = [
        threading.Thread(target=_drain, args=(s,), daemon=True)
        for s in (proc.stdout, proc.stderr)
        if s is not None
    ]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    proc.wait()


def _drain(stream: BinaryIO) -> None:
    try:
        while stream.read(READ_CHUNK):
            pass
    except (OSError, ValueError):
        pass
    finally:
        stream.close()
