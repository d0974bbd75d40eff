"""The trusted runner in the candidate container.

Calls the candidate once per case, each in a fresh process, under a per-case timeout,
with capped output, and kills every other process between cases so nothing carries
over. It prints one JSON document on its own stdout. It starts as root and first takes a
uid of its own, with no capability left (confine.py): a candidate process sharing its uid
could open /proc/<runner>/fd/1 or its memory and forge other cases' results.

Killing and CPU accounting rest on the kernel's own bookkeeping, never on a listing the
candidate can shape (issue 36). After a case, `kill(-1, SIGKILL)` reaches every process of the
candidate's uid at once, and the case is over only when /proc holds no process of that uid in
any state. A case's CPU is what the kernel added to the CPU of reaped children: the runner's
(its case's process and what that reaped) and init's (every orphan, which init reaps). Reading
/proc for live processes instead missed one whose main thread had exited while another ran
(its stat reads `Z`), and the runner's own children's CPU missed every orphan.

Function cases are forked from the runner by default (`--spawn fork`) instead of started as
a new interpreter: the runner never loads candidate code, so each case's process starts as a
copy of a process no candidate touched, and dies with its case (docs/security.md).
"""

import atexit
import base64
import importlib.util
import io
import json
import math
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
import traceback
from typing import Any

# Every place a candidate process can write: the root file system and every bind are
# read-only. Each is emptied after every case (a transform's /output once it is packed).
SCRATCH = ("/tmp", "/dev/shm", "/dev/mqueue")
MAX_CASES_BYTES = 16 << 20
CGROUP_COUNTERS = {
    "pids": ("/sys/fs/cgroup/pids/pids.events", "max"),
    "memory": ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),
}


def counter(name: str) -> int:
    path, key = CGROUP_COUNTERS[name]
    try:
        with open(path) as fh:
            for line in fh:
                k, _, v = line.partition(" ")
                if k == key:
                    return int(v)
    except OSError:
        pass
    return -1


KILL_DEADLINE_S = 5.0


def candidate_pids(uid: int) -> list[int]:
    """Every process whose real uid is `uid`, in any state (a zombie, or a process whose main
    thread has exited, included: the kernel keeps its /proc entry, with its ids, until it is
    reaped). The candidate can neither hide an entry nor change its uid."""
    found = []
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(e))
                        break
        except (OSError, ValueError, IndexError):
            continue  # gone since the listing
    return found


def kill_all(uid: int, deadline_s: float = KILL_DEADLINE_S) -> bool:
    """SIGKILL every process of the candidate and wait until none is left, not even as a
    zombie; True then, False if some still existed at the deadline (the caller must not run
    another case).

    `kill(-1)` is the kernel's own walk of its task list: it reaches every process the
    runner's ids may signal (the candidate's uid), whatever state /proc shows, and spares
    init (root) and the runner. A fork in progress either completes before
    the walk or fails. The runner reaps its own children; init reaps the orphans."""
    end = time.monotonic() + deadline_s
    delay = 0.0005
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):  # nothing of the candidate's is left
            pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not candidate_pids(uid):
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def reset_path(path: str) -> None:
    """Remove whatever is at path without following it."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def pack_output(outdir: str) -> bytes:
    """The case's output folder as a tar, links and special files included as such (the
    controller's firewall refuses them); bounded by the size of the /output volume."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        if os.path.isdir(outdir) and not os.path.islink(outdir):
            for entry in sorted(os.listdir(outdir)):
                tf.add(os.path.join(outdir, entry), arcname=entry, recursive=True)
    return buf.getvalue()


def tmp_full() -> bool:
    """True if the candidate filled /tmp (checked before it is emptied)."""
    st = os.statvfs("/tmp")
    return st.f_bavail * st.f_frsize < (256 << 10)


def empty_dir(top: str) -> bool:
    """Remove everything under top, whatever modes the candidate left; True if top is then
    empty. Only called once every candidate process is dead, so nothing races it."""
    if not os.path.isdir(top):
        return True
    try:
        # Every entry is ours (the candidate's uid is our effective one), so a directory made
        # unreadable or unwritable is given back its modes before anything under it is removed.
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


def load_sibling(name: str) -> Any:
    """A module beside this file (trusted code only), loaded before any case runs."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(f"assay_{name}", os.path.join(here, f"{name}.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Forked:
    """A case's process forked from the runner, with the part of `subprocess.Popen` that
    `run_one` uses. The child takes the candidate's uid (`become`), then becomes what
    `python3 -I call.py ENTRY FD` would be: its own session, the case's cwd and environment,
    only fds 0-2 and the result pipe, default SIGINT; it exits through `os._exit`, so it can
    never return into the runner's code."""

    def __init__(
        self, call: Any, entry: str, wfd: int, cwd: str, env: dict[str, str], become: Any
    ) -> None:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the case's process
            code = 127
            try:
                become()
                os.setsid()
                for fd, target in ((in_r, 0), (out_w, 1), (err_w, 2)):
                    os.dup2(fd, target)
                os.closerange(3, wfd)
                os.closerange(wfd + 1, os.sysconf("SC_OPEN_MAX"))
                os.chdir(cwd)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.environ.clear()
                os.environ.update(env)
                sys.argv = ["/assay/call.py", entry, str(wfd)]
                code = run_as_main(call.main)
            finally:
                os._exit(code)
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = open(in_w, "wb", buffering=0)
        self.stdout = open(out_r, "rb", buffering=0)
        self.stderr = open(err_r, "rb", buffering=0)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired("case", timeout or 0.0)
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def run_as_main(main: Any) -> int:
    """What the interpreter does around a script's main: SystemExit's code, a traceback and
    1 for any other exception, non-daemon threads joined and atexit run before exiting."""
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
    except BaseException:  # the case's own exit handlers failing is the case's business
        code = code or 1
    return code


def run_one(
    argv: list[str],
    stdin_bytes: bytes,
    cwd: str,
    timeout: float,
    cap: int,
    result_pipe: bool,
    env: dict[str, str],
    fork: tuple[Any, str] | None,
    become: Any,
    uid: int,
) -> tuple[str, int | None, dict[str, bytes], str | None, float, bool]:
    """Run argv (or, with `fork` = (call module, entry), fork the function call) in a process
    that first calls `become` (the drop to the candidate's uid, `uid`); return (status, exit_code,
    outputs dict, limit, seconds, alone): `alone` is False when some process of the candidate
    could not be killed (`kill_all`)."""
    extra: tuple[int, ...] = ()
    rfd = wfd = None
    if result_pipe:
        rfd, wfd = os.pipe()
        argv = [*argv, str(wfd)]
        extra = (wfd,)
    t0 = time.monotonic()
    proc: Any
    try:
        if fork is not None:
            assert wfd is not None
            proc = Forked(fork[0], fork[1], wfd, cwd, env, become)
        else:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=extra,
                close_fds=True,
                env=env,
                start_new_session=True,
                preexec_fn=become,
            )
    except OSError as exc:
        # The program could not be started (a build that is no executable, ENOEXEC, EACCES):
        # every output stream is there, empty, for the caller's per-kind pick.
        outs = {"stdout": b"", "stderr": str(exc).encode(), "result": b""}
        return "error", None, outs, None, 0.0, kill_all(uid)
    if wfd is not None:
        os.close(wfd)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    bufs = {"stdout": bytearray(), "stderr": bytearray(), "result": bytearray()}
    sel = selectors.DefaultSelector()
    pending = memoryview(stdin_bytes)
    if pending:
        # Fed through the selector: a candidate that never reads must not block the runner.
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
    else:
        proc.stdin.close()
    sel.register(proc.stdout.fileno(), selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr.fileno(), selectors.EVENT_READ, "stderr")
    if rfd is not None:
        sel.register(rfd, selectors.EVENT_READ, "result")
    limit = None
    status = "ok"
    while any(k.data != "stdin" for k in sel.get_map().values()):
        left = timeout - (time.monotonic() - t0)
        if left <= 0:
            status, limit = "timeout", "time"
            break
        for key, _ in sel.select(timeout=min(left, 0.5)):
            fd = int(key.fd)
            if key.data == "stdin":
                try:
                    pending = pending[os.write(fd, pending[:65536]) :]
                except (BrokenPipeError, BlockingIOError, OSError):
                    pending = pending[:0]
                if not pending:
                    sel.unregister(fd)
                    proc.stdin.close()
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                sel.unregister(fd)
                continue
            bufs[key.data].extend(chunk)
            if len(bufs[key.data]) > cap:
                status, limit = "limit", "output"
                break
        if limit:
            break
    if not proc.stdin.closed:
        proc.stdin.close()
    if status == "ok":
        try:
            proc.wait(timeout=max(timeout - (time.monotonic() - t0), 0.01))
        except subprocess.TimeoutExpired:
            status, limit = "timeout", "time"
    seconds = time.monotonic() - t0
    if proc.poll() is None:
        proc.kill()
    proc.wait()  # reap our own child before kill_all's waitpid(-1) could steal its status
    alone = kill_all(uid)
    proc.stdout.close()
    proc.stderr.close()
    if rfd is not None:
        os.close(rfd)
    outs = {k: bytes(v[:cap]) for k, v in bufs.items()}
    return status, proc.returncode if status == "ok" else None, outs, limit, seconds, alone


def cpu_capped(become: Any, seconds: float) -> Any:
    """`become`, then RLIMIT_CPU: SIGXCPU at `seconds` of CPU, SIGKILL a second later (a
    process that ignores SIGXCPU)."""
    soft = max(1, math.ceil(seconds))

    def capped() -> None:
        become()
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))

    return capped


def reaped_cpu() -> float:
    """CPU seconds of every process reaped so far by the runner (each case's own process, with
    what it reaped) or by init (every orphan: the runner, init's child, is no subreaper, so
    orphans go to PID 1). Once `kill_all` has returned True, every process a
    case started is in one of the two, so the difference across a case is all of its CPU.
    Init's share is read from its /proc stat (cutime, cstime: readable by any uid)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open("/proc/1/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    # After the command's ")": state is field 3, so cutime (16) and cstime (17) are 13 and 14.
    ticks = int(fields[13]) + int(fields[14])
    return usage.ru_utime + usage.ru_stime + ticks / os.sysconf("SC_CLK_TCK")


def over_cpu(code: int | None, used: float, seconds: float) -> bool:
    """The case's process was ended by its CPU limit, or spent more CPU than it allows (the
    limit's granularity is a second, so a process may finish over it: it still failed it).
    SIGXCPU is the limit's own signal; the reaped CPU time (rusage) can read below the
    kernel's count that sent it on a loaded machine, so it is not asked. A SIGKILL is the hard
    limit only when the process had used its seconds (else the memory limit, or the runner)."""
    if code == -signal.SIGXCPU:
        return True
    if code == -signal.SIGKILL and used >= seconds * 0.95:
        return True
    return used > seconds


def case_env() -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}


def safe_rel(name: str) -> bool:
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and all(p not in ("", ".", "..") for p in parts)


def stand_in() -> None:
    """Fork: the parent stays root, init's child, until the runner (the child, which goes on
    from here) ends, and then ends the same way. Init forwards every signal it receives to
    its child and dies if it may not (tini); root without CAP_KILL may not signal the runner
    once it has ids of its own, and signals do reach init (the Go runtime of runc, which
    starts the container, preempts with SIGURG). The parent takes them and ignores them;
    whatever SIGKILLs it stops the container, which is what such a signal means."""
    pid = os.fork()
    if pid == 0:
        return
    for sig in signal.valid_signals():
        if sig not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
            try:
                signal.signal(sig, signal.SIG_IGN)
            except (OSError, ValueError):
                pass
    for fd in (0, 1, 2):  # the runner's output is the runner's alone
        os.close(fd)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    os._exit(code if code >= 0 else 128 - code)


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", required=True, choices=["function", "cli", "transform", "stdio"])
    ap.add_argument("--entry")
    ap.add_argument("--command-json")
    ap.add_argument("--case-timeout", type=float, required=True)
    ap.add_argument("--output-cap", type=int, required=True)
    ap.add_argument("--cases", default="/inputs/cases.json")
    ap.add_argument("--spawn", choices=["fork", "exec"], default="exec")
    ap.add_argument("--cpu-seconds", type=float)
    # Opt-in, for a caller that reads a program's stderr too (the sandbox's one run): each
    # stdio case's result then carries "stderr_b64". A grading never passes it.
    ap.add_argument("--keep-stderr", action="store_true")
    # Variables every case's process gets on top of case_env(): the grading's decoy answer
    # keys (docs/tamper.md), bait only, never a value the case needs.
    ap.add_argument("--env-json")
    a = ap.parse_args()
    if b"init" not in open("/proc/1/cmdline", "rb").read():
        # kill_all() kills every process it may: only sane inside a container's own
        # pid namespace (PID 1 is the container's init, the runner's parent).
        raise SystemExit("runner: refusing to run outside a container")
    if os.getppid() == 1:
        stand_in()
    confine = load_sibling("confine")
    # Before anything else: from here on no capability is left, so kill_all() cannot reach
    # beyond the candidate's uid, and no process of the candidate can reach ours.
    confine.take_own_uid()
    confine.deny_sysv_ipc()
    # Its stdin (the container's) is a host descriptor that gVisor lets any uid reopen
    # through /proc; the runner reads nothing from it, and /dev/null is everyone's anyway.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # Loaded before any candidate code runs, so every forked case starts from trusted state.
    call = load_sibling("call") if a.kind == "function" and a.spawn == "fork" else None
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    env = case_env()
    extra = json.loads(a.env_json) if a.env_json else {}
    env.update({k: v for k, v in extra.items() if isinstance(v, str) and k not in env})
    with open(a.cases, "rb") as fh:
        cases = json.loads(fh.read(MAX_CASES_BYTES + 1)[:MAX_CASES_BYTES])
    results: list[dict[str, object]] = []
    places = SCRATCH + (("/output",) if a.kind == "transform" else ())
    for index, case in enumerate(cases):
        if results and results[-1]["status"] == "residue":
            # What a case left could not be removed: no later case can be trusted to run
            # without it, so none runs.
            results.append(dict(results[-1], id=case["id"], duration_s=0.0, output_b64=""))
            continue
        before = {k: counter(k) for k in CGROUP_COUNTERS}
        payload = case["input"]
        cwd = "/candidate"
        if a.kind == "function":
            argv = ["python3", "-I", "/assay/call.py", a.entry]
            stdin = json.dumps(payload).encode()
            result_pipe = True
        else:
            argv = list(json.loads(a.command_json))
            result_pipe = False
            stdin = b""
            if a.kind == "cli":
                argv += [str(x) for x in payload.get("args", [])]
                stdin = payload.get("stdin", "").encode()
            elif a.kind == "stdio":
                stdin = payload["stdin"].encode()
            else:
                indir, outdir = "/tmp/in", f"/output/{index}"
                for fresh in (indir, outdir):  # an earlier case may have planted anything here
                    reset_path(fresh)
                    os.makedirs(fresh)
                for name, text in payload.get("files", {}).items():
                    if not safe_rel(name):
                        raise SystemExit(f"runner: unsafe input file name {name!r}")
                    os.makedirs(os.path.dirname(os.path.join(indir, name)), exist_ok=True)
                    with open(os.path.join(indir, name), "w", encoding="utf-8") as fh:
                        fh.write(text)
                argv += [indir, outdir]
        become = confine.become_candidate
        if a.cpu_seconds is not None:
            become = cpu_capped(become, a.cpu_seconds)
        cpu_before = reaped_cpu()
        status, code, outs, limit, secs, alone = run_one(
            argv, stdin, cwd, a.case_timeout, a.output_cap, result_pipe, env,
            (call, a.entry) if call is not None else None, become, confine.CANDIDATE_UID,
        )  # fmt: skip
        if a.cpu_seconds is not None and over_cpu(code, reaped_cpu() - cpu_before, a.cpu_seconds):
            status, code, limit = "limit", None, "cpu"
        packed = b""
        if a.kind == "transform":
            # Captured now, while no candidate process lives, so no later case can touch
            # this case's slot; the controller firewalls each archive on its own.
            try:
                packed = pack_output(f"/output/{index}")
            except OSError:  # e.g. a file the candidate made unreadable
                status, limit = "error", None
            if len(packed) > a.output_cap:
                packed, status, limit = b"", "limit", "output"
        if tmp_full():
            status, limit = "limit", "disk"
        # Every writable place is emptied, not only /tmp: nothing a case leaves may reach
        # the next one, and a place that cannot be emptied fails the case.
        dirty = [place for place in places if not empty_dir(place)]
        for name in CGROUP_COUNTERS:
            if counter(name) > before[name] >= 0:
                status, limit = "limit", name
        if a.kind == "function" and status == "ok" and code != 0:
            status = "crash"
        if not alone:
            dirty.insert(0, "processes")
        if dirty:
            status, limit = "residue", ",".join(dirty)
        signum: int | None = None
        if a.kind == "stdio" and code is not None and code < 0:
            # A stdio program a signal ended: the signal apart, never read as an exit code.
            signum, code = -code, None
        results.append(
            {
                "id": case["id"],
                "signal": signum,
                "status": status,
                "limit": limit,
                "exit_code": code,
                "duration_s": round(secs, 6),
                "output_b64": base64.b64encode(
                    {
                        "function": outs["result"],
                        "cli": outs["stdout"],
                        "stdio": outs["stdout"],
                    }.get(a.kind, packed)
                ).decode(),
            }
        )
        if a.keep_stderr and a.kind == "stdio":
            results[-1]["stderr_b64"] = base64.b64encode(outs["stderr"]).decode()
    sys.stdout.write(json.dumps({"runner": "assay-runner/1", "cases": results}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
