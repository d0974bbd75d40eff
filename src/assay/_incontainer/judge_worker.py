"""The judge container's resident worker: its main process, for as long as the container lives.

The controller sends it framed requests on its stdin and reads one framed response per request
on its stdout (`assay-judge-worker/1`, below). It runs the judge's steps (`prepare`, `compare`:
judge.py beside it, with the argv judge.py takes) and `reset`, without a `runc exec` or an
interpreter start per grading. It never runs candidate code: the candidate's output reaches a
step only as the bytes judge.py parses as data.

Isolation (docs/security.md, "The resident judge"):

- Each step runs in a child forked from this process, which has loaded judge.py and its
  siblings but never any task's code (generator, comparator, checker): the child loads what the
  task needs, does the step and exits, so no module, global or environment variable of one step
  is there for the next. Its stdin is /dev/null; its stdout and stderr are pipes to this
  process, its only way out; it holds none of this process's descriptors.
- The worker keeps a uid of its own (`confine.take_own_uid`: real and saved 1001, effective
  1000, no capability left) and each child drops to the judge's uid 1000 for all three ids, as
  the candidate's runner does with its cases. So a step cannot signal or ptrace the worker,
  read its memory or open its descriptors (the request and response pipes) through /proc.
  The process init started stays as init's child with init's ids and waits for the worker
  (`keep`): init forwards signals from outside to it, which it could not to the worker.
- After every step `kill(-1, SIGKILL)` reaches every process of the judge's uid, repeated until
  /proc shows none in any state; /tmp, /dev/shm and /dev/mqueue are emptied. `reset` (between
  two gradings) does the same and also empties /state and /exchange, which carry one grading's
  own data from its `prepare` to its `compare`, and proves it; it runs again, unasked, at the
  next grading's first request. A worker serves one grading between two resets: a request
  naming another grading is refused by exiting.
- Bytes a step printed are read into an anonymous mapping that is unmapped once sent, so no
  copy of one grading's report or inputs stays in the worker's heap for a later child to find.

Frames, both ways: a 4-byte big-endian length, then that many bytes.

- Request (controller -> worker): the body is one JSON object, at most REQUEST_CAP bytes:
  `{"op": "prepare"|"compare", "grading": ID, "argv": [...], "deadline_s": S, "output_cap": N}`
  (argv is judge.py's, its first word the op) or `{"op": "reset"}`.
- Response (worker -> controller): the body is a 4-byte big-endian header length, a JSON header
  of at most HEADER_CAP bytes, then the step's stdout and stderr bytes. For a step:
  `{"op", "exit_code", "timed_out", "truncated", "clean", "duration_s", "stdout", "stderr"}`,
  the last two the byte counts that follow (stdout at most the request's output_cap, stderr the
  last STDERR_CAP bytes); `clean` says every process of the step is gone and its scratch is
  empty. For `reset`: `{"op": "reset", "clean": bool}`. First of all, once ready, the worker
  sends `{"op": "hello", "worker": PROTOCOL, "confined": bool, "pid": N}`.

A request that is out of frame (too long, cut short, not that JSON) ends the worker: the
controller sent it, so nothing here can be trusted to resynchronise. At EOF between frames the
worker kills what is left and exits 0.

`--local DIR` is for tests outside a container: no uid switch, no `kill(-1)` (which would reach
every process of the test's user), only the step's own session killed, and the writable places
are DIR/tmp, DIR/shm, DIR/state and DIR/exchange.
"""

import atexit
import importlib.util
import json
import mmap
import os
import selectors
import shutil
import signal
import struct
import sys
import threading
import time
import traceback
from typing import Any, NoReturn

PROTOCOL = "assay-judge-worker/1"
LENGTH = struct.Struct(">I")
REQUEST_CAP = 64 << 10
HEADER_CAP = 4 << 10
OUTPUT_CAP = 32 << 20
"""The most stdout a step may be asked to send back (the controller asks 16 MiB of prepare's
inputs, 8 MiB of compare's report)."""
STDERR_CAP = 64 << 10
MAX_ARGV = 64
MAX_ARG_CHARS = 4096
MAX_GRADING_CHARS = 128
MAX_DEADLINE_S = 86400.0
KILL_DEADLINE_S = 5.0
STEPS = ("prepare", "compare")
STEP_KEYS = frozenset({"op", "grading", "argv", "deadline_s", "output_cap"})
JUDGE_UID = 1000
SCRATCH = ("/tmp", "/dev/shm", "/dev/mqueue")
"""Emptied after every step: nothing a step leaves there is any later step's."""
GRADING = ("/state", "/exchange")
"""A grading's own data (prepare's cases, a transform's outputs): emptied by `reset`."""


class OutOfFrame(Exception):
    """A request this worker cannot take: it stops."""


def load_sibling(name: str) -> Any:
    """Assay's own module beside this file (the read-only /assay bind), before any step."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(f"assay_{name}", os.path.join(here, f"{name}.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- frames -------------------------------------------------------------------------------


def read_exact(fd: int, n: int) -> bytes | None:
    """n bytes from fd; None at EOF before the first byte; OutOfFrame at EOF after it."""
    chunks: list[bytes] = []
    got = 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            if got == 0:
                return None
            raise OutOfFrame(f"cut short after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for k, v in pairs:
        if k in obj:
            raise OutOfFrame("duplicate key")
        obj[k] = v
    return obj


def _no_constant(name: str) -> NoReturn:
    raise OutOfFrame(f"non-finite number {name}")


def read_request(fd: int) -> dict[str, Any] | None:
    """The next request, checked; None at EOF between frames."""
    head = read_exact(fd, LENGTH.size)
    if head is None:
        return None
    (size,) = LENGTH.unpack(head)
    if not 0 < size <= REQUEST_CAP:
        raise OutOfFrame(f"request of {size} bytes")
    body = read_exact(fd, size)
    if body is None:
        raise OutOfFrame("request cut short")
    try:
        req = json.loads(body.decode("utf-8"), object_pairs_hook=_no_dupes,
                         parse_constant=_no_constant)  # fmt: skip
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise OutOfFrame(f"request is not JSON: {type(exc).__name__}") from None
    return check_request(req)


def check_request(req: Any) -> dict[str, Any]:
    if not isinstance(req, dict):
        raise OutOfFrame("request is not an object")
    op = req.get("op")
    if op == "reset":
        if set(req) != {"op"}:
            raise OutOfFrame("reset takes nothing else")
        return req
    if op not in STEPS or set(req) != STEP_KEYS:
        raise OutOfFrame("unknown request")
    argv, grading = req["argv"], req["grading"]
    if not (isinstance(argv, list) and 0 < len(argv) <= MAX_ARGV and argv[0] == op):
        raise OutOfFrame("argv must be judge.py's, starting with the op")
    if not all(isinstance(a, str) and len(a) <= MAX_ARG_CHARS and "\0" not in a for a in argv):
        raise OutOfFrame("argv must be strings")
    if not (isinstance(grading, str) and 0 < len(grading) <= MAX_GRADING_CHARS):
        raise OutOfFrame("grading must be a short string")
    deadline, cap = req["deadline_s"], req["output_cap"]
    if isinstance(deadline, bool) or not isinstance(deadline, (int, float)):
        raise OutOfFrame("deadline_s must be a number")
    if not 0 < deadline <= MAX_DEADLINE_S:
        raise OutOfFrame("deadline_s out of range")
    if isinstance(cap, bool) or not isinstance(cap, int) or not 0 <= cap <= OUTPUT_CAP:
        raise OutOfFrame("output_cap out of range")
    return req


def write_all(fd: int, parts: list[Any]) -> None:
    """Every byte of `parts` (bytes or memoryviews) to fd, in order."""
    views = [memoryview(p).cast("B") for p in parts if len(p)]
    while views:
        n = os.writev(fd, views[:64])
        while n:
            if n >= len(views[0]):
                n -= len(views[0])
                views.pop(0)
            else:
                views[0] = views[0][n:]
                n = 0


def respond(fd: int, header: dict[str, Any], *payload: Any) -> None:
    head = json.dumps(header, separators=(",", ":")).encode()
    assert len(head) <= HEADER_CAP
    size = LENGTH.size + len(head) + sum(len(p) for p in payload)
    write_all(fd, [LENGTH.pack(size), LENGTH.pack(len(head)), head, *payload])


# -- places and processes -----------------------------------------------------------------


class Places:
    """What this worker may kill and empty: in a container every process of the judge's uid
    and the container's writable places; with `--local`, a step's session and DIR's places."""

    def __init__(self, local: str | None) -> None:
        self.local = local
        self.scratch: tuple[str, ...]
        self.grading: tuple[str, ...]
        if local is None:
            self.scratch, self.grading = SCRATCH, GRADING
        else:
            self.scratch = (os.path.join(local, "tmp"), os.path.join(local, "shm"))
            self.grading = (os.path.join(local, "state"), os.path.join(local, "exchange"))

    def kill_all(self, session: int | None) -> bool:
        """SIGKILL every process a step may have left and wait until /proc shows none, not even
        as a zombie: True then, False if some remained at the deadline. `session`: the step's
        child (--local only: there only its session is killed)."""
        end = time.monotonic() + KILL_DEADLINE_S
        delay = 0.0005
        while True:
            if self.local is None:
                try:
                    # The kernel's own walk of its task list: every process the worker's ids may
                    # signal (the judge's uid), whatever /proc shows; init (root) and the worker
                    # itself are spared. A fork in progress completes before the walk or fails.
                    os.kill(-1, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            elif session is not None:
                for pid in self.left(session):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            reap()
            if not self.left(session):
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def left(self, session: int | None) -> list[int]:
        """Every other process of the judge's uid (--local: of the step's session), in any
        state: a zombie, or one whose main thread exited, keeps its /proc entry and ids until
        it is reaped."""
        if self.local is not None and session is None:
            return []
        me = os.getpid()
        found = []
        for e in os.listdir("/proc"):
            if not e.isdigit() or int(e) == me:
                continue
            try:
                if self.local is None:
                    with open(f"/proc/{e}/status", "rb") as fh:
                        for line in fh:
                            if line.startswith(b"Uid:"):
                                if int(line.split()[1]) == JUDGE_UID:
                                    found.append(int(e))
                                break
                else:
                    with open(f"/proc/{e}/stat", "rb") as fh:
                        fields = fh.read().rsplit(b")", 1)[1].split()
                    if int(fields[3]) == session:  # field 6 of stat: the session id
                        found.append(int(e))
            except (OSError, ValueError, IndexError):
                continue  # gone since the listing
        return found

    def empty(self, tops: tuple[str, ...]) -> bool:
        """Empty each of `tops`; True if all are empty then. Only called once no process of
        the judge's uid lives, so nothing races it. Every one is tried, whatever the others
        did."""
        emptied = [empty_dir(top) for top in tops]
        return all(emptied)


def reap() -> None:
    """Collect every exited child of the worker (a step's child; init reaps the orphans)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def empty_dir(top: str) -> bool:
    """Remove everything under top, whatever modes a step left, without following links;
    True if top is then empty (or absent)."""
    if not os.path.isdir(top):
        return True
    try:
        for root, dirs, _files in os.walk(top):
            for d in dirs:
                path = os.path.join(root, d)
                if not os.path.islink(path):
                    os.chmod(path, 0o700)
        for entry in os.scandir(top):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        return not os.listdir(top)
    except (OSError, RecursionError):
        return False


# -- a step in a forked child -------------------------------------------------------------


def run_as_main(main: Any) -> int:
    """What the interpreter does around a script's main: SystemExit's code, a traceback and
    1 for any other exception, atexit handlers run, streams flushed."""
    code = 0
    try:
        main()
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code & 0xFF
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        code = code or 1
    return code


class Step:
    """One step's result as the response carries it. Its stdout is read into an anonymous
    private mapping made after the fork (no process of the step shares it), one byte past the
    cap so that an overrun shows, and unmapped once sent."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.exit_code: int | None = None
        self.timed_out = False
        self.truncated = False
        self.stdout = mmap.mmap(-1, cap + 1, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self.size = 0
        self.stderr = bytearray()
        self.duration_s = 0.0

    def take(self, fd: int) -> int:
        """One read from the step's stdout into the mapping: the bytes read (0 at EOF, or once
        the mapping is full: past the cap, nothing more is wanted)."""
        if self.size > self.cap:
            return 0
        with memoryview(self.stdout) as whole, whole[self.size :] as room:
            n = os.readv(fd, [room])
        self.size += n
        return n

    def take_err(self, fd: int) -> int:
        """One read from the step's stderr, of which the last STDERR_CAP bytes are kept."""
        chunk = os.read(fd, 65536)
        self.stderr += chunk
        if len(self.stderr) > 2 * STDERR_CAP:
            del self.stderr[:-STDERR_CAP]
        return len(chunk)

    @property
    def overran(self) -> bool:
        return self.size > self.cap


def fork_step(judge: Any, argv: list[str], become: Any, cwd: str) -> tuple[int, int, int]:
    """(pid, stdout, stderr read ends) of a child that becomes the judge's uid and runs
    `judge.py ARGV` as `python3 -I /assay/judge.py ARGV` would, in a session of its own; it
    exits through `os._exit`, so it can never return into the worker's code."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 127
        try:
            become()
            os.setsid()
            for fd, target in ((null, 0), (out_w, 1), (err_w, 2)):
                os.dup2(fd, target)
            # The worker's request and response pipes among them: the step holds none.
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))
            os.chdir(cwd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            try:  # if the judge's memory runs out, the kernel takes the step, not the worker
                with open("/proc/self/oom_score_adj", "w") as fh:
                    fh.write("1000")
            except OSError:
                pass
            sys.argv = [judge.__file__, *argv]
            code = run_as_main(judge.main)
        finally:
            os._exit(code)
    for fd in (out_w, err_w, null):
        os.close(fd)
    return pid, out_r, err_r


def run_step(
    places: Places, judge: Any, argv: list[str], deadline_s: float, cap: int, become: Any,
    cwd: str,
) -> tuple[Step, bool]:  # fmt: skip
    """Run one step; (its result, clean): clean when every process it started is gone and its
    scratch is empty."""
    t0 = time.monotonic()
    pid, out_r, err_r = fork_step(judge, argv, become, cwd)
    step = Step(cap)
    status: int | None = None
    try:
        status = _collect(pid, out_r, err_r, step, t0 + deadline_s)
    finally:
        # Whatever happened, the child goes first (its status is the worker's to reap), then
        # everything it started, then what they left in the pipes (no writer lives now).
        if status is None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status = os.waitpid(pid, 0)
        alone = places.kill_all(pid)
        _drain(out_r, err_r, step)
        os.close(out_r)
        os.close(err_r)
    step.duration_s = time.monotonic() - t0
    if step.overran:
        step.truncated, step.size = True, cap
    elif not step.timed_out:
        step.exit_code = os.waitstatus_to_exitcode(status)
    clean = alone and places.empty(places.scratch)
    return step, clean


def _collect(pid: int, out_r: int, err_r: int, step: Step, end: float) -> int | None:
    """Read the step's output until its child exits (its wait status), or None once its
    deadline passed or its stdout passed the cap (the caller then kills it)."""
    sel = selectors.DefaultSelector()
    sel.register(out_r, selectors.EVENT_READ, step.take)
    sel.register(err_r, selectors.EVENT_READ, step.take_err)
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
        sel.register(pidfd, selectors.EVENT_READ, None)
    except (AttributeError, OSError):  # no pidfd here (an old kernel, gVisor): poll instead
        pass
    try:
        while True:
            got, status = os.waitpid(pid, os.WNOHANG)
            if got:
                return status
            left = end - time.monotonic()
            if left <= 0:
                step.timed_out = True
                return None
            for key, _ in sel.select(min(left, 0.5 if pidfd is not None else 0.002)):
                if key.data is not None and key.data(key.fd) == 0:
                    sel.unregister(key.fd)
            if step.overran:
                return None
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)


def _drain(out_r: int, err_r: int, step: Step) -> None:
    """What the step's processes wrote before they died; never blocks."""
    for fd, take in ((out_r, step.take), (err_r, step.take_err)):
        os.set_blocking(fd, False)
        try:
            while take(fd):
                pass
        except BlockingIOError:
            pass


# -- the worker ---------------------------------------------------------------------------


class Worker:
    def __init__(self, local: str | None) -> None:
        self.places = Places(local)
        self.grading: str | None = None  # the grading it serves until the next reset
        self.served = 0  # gradings it started
        self.cwd = os.getcwd()
        self.confined = False
        self.become: Any = lambda: None
        if local is None:
            self._confine()
        self.judge = load_sibling("judge")
        # The protocol's pipes move out of 0 and 1 (non-inheritable, so no step's exec gets
        # them; the child closes them anyway), and 0 and 1 point at /dev/null.
        self.requests, self.responses = os.dup(0), os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)

    def _confine(self) -> None:
        confine = load_sibling("confine")
        if os.getuid() == 0:
            confine.take_own_uid()  # exactly the switch's three capabilities, or refused
            self.confined = True
        elif os.getuid() != JUDGE_UID:
            raise SystemExit(f"judge-worker: started as uid {os.getuid()}")
        confine.deny_sysv_ipc()
        self.become = confine.become_candidate if self.confined else (lambda: None)

    def serve(self) -> int:
        respond(self.responses, {"op": "hello", "worker": PROTOCOL,
                                 "confined": self.confined, "pid": os.getpid()})  # fmt: skip
        while True:
            req = read_request(self.requests)
            if req is None:
                self.places.kill_all(None)
                return 0
            if req["op"] == "reset":
                respond(self.responses, {"op": "reset", "clean": self.reset()})
                continue
            if self.grading is None:
                # A grading's first request: the last one's reset ran when it ended, and runs
                # again now, so that not even what started in the idle judge meanwhile (only
                # an exec of the controller's could) reaches this grading.
                if self.served and not self.reset():
                    raise OutOfFrame("cannot start a grading clean")
                self.grading = req["grading"]
                self.served += 1
            elif req["grading"] != self.grading:
                raise OutOfFrame("a request of another grading before a reset")
            self.step(req)

    def step(self, req: dict[str, Any]) -> None:
        cap = int(req["output_cap"])
        step, clean = run_step(
            self.places, self.judge, list(req["argv"]), float(req["deadline_s"]), cap,
            self.become, self.cwd,
        )  # fmt: skip
        err = bytes(step.stderr[-STDERR_CAP:])
        header = {
            "op": req["op"], "exit_code": step.exit_code, "timed_out": step.timed_out,
            "truncated": step.truncated, "clean": clean, "duration_s": round(step.duration_s, 6),
            "stdout": step.size, "stderr": len(err),
        }  # fmt: skip
        try:
            with memoryview(step.stdout) as whole, whole[: step.size] as out:
                respond(self.responses, header, out, err)
        finally:
            step.stdout.close()  # unmapped: nothing of it stays in this process

    def reset(self) -> bool:
        """Between two gradings: nothing of the last one runs, and every writable place is
        empty; the next request may name any grading."""
        self.grading = None
        alone = self.places.kill_all(None)
        emptied = self.places.empty(self.places.scratch + self.places.grading)
        return alone and emptied and not self.places.left(None)


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def keep() -> None:
    """Return in a child, the worker, and stay in this process, init's child, until it ends.

    Init (root, without CAP_KILL) forwards to its child whatever signal the runtime hands it,
    and stops the container when it cannot: runc forwards the SIGURG the Go runtime sends its
    own threads for preemption, and init could not signal a worker with ids of its own
    (EPERM), so a judge died now and then under load. This process keeps init's ids, which no
    step has, holds neither of the controller's pipes, and takes a forwarded SIGURG (or
    SIGWINCH) as every process does by default: not at all. Any other signal from outside ends
    it, and the container with it."""
    if os.getppid() != 1 or b"init" not in _cmdline(1):
        # kill(-1) ends every process the worker may signal: only sane under a container's own
        # init, in that container's pid namespace.
        raise SystemExit("judge-worker: refusing to run outside a container")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        return
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    _, status = os.waitpid(pid, 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def main() -> None:
    local = None
    if sys.argv[1:2] == ["--local"] and len(sys.argv) == 3:
        local = sys.argv[2]
    elif sys.argv[1:]:
        raise SystemExit("usage: judge_worker.py [--local DIR]")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if local is None:
        keep()
    worker = Worker(local)
    try:
        code = worker.serve()
    except Exception as exc:  # out of frame, the controller gone, or a fault of its own
        sys.stderr.write(f"judge-worker: {type(exc).__name__}: {exc}\n")
        worker.places.kill_all(None)
        code = 2
    raise SystemExit(code)


if __name__ == "__main__":
    main()
