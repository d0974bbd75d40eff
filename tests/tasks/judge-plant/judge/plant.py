"""A task's comparator that looks for what an earlier step could have left in the judge, then
leaves all it can: module state, an environment variable, files in every writable place, and
processes that try to outlive it (one of them detached twice over). What it saw goes to stderr as
one line, `PLANT {json}`, which the worker sends back with the step's result."""

import ctypes
import errno
import json
import os
import subprocess
import sys
import time

FOUND: list[str] = []  # module state: a step that finds something here inherited it
PLACES = ("/tmp", "/dev/shm", "/state", "/exchange", "/dev/mqueue")
PTRACE_SEIZE = 0x4206


def _processes() -> dict[str, dict[str, object]]:
    me, found = os.getpid(), {}
    for e in os.listdir("/proc"):
        if not e.isdigit() or int(e) == me:
            continue
        try:
            with open(f"/proc/{e}/status") as fh:
                uid = next(ln.split()[1:4] for ln in fh if ln.startswith("Uid:"))
            with open(f"/proc/{e}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, StopIteration):
            continue
        found[e] = {"uid": uid, "cmd": cmd}
    return found


def _try(fn) -> str:  # type: ignore[no-untyped-def]
    try:
        fn()
        return "allowed"
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))


def _seize(pid: int) -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(PTRACE_SEIZE, pid, 0, 0) == 0:
        return "allowed"
    return errno.errorcode.get(ctypes.get_errno(), "?")


def _sysv() -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.shmget(0, 4096, 0o1000 | 0o600) != -1:
        return "allowed"
    return errno.errorcode.get(ctypes.get_errno(), "?")


def compare(expected: object, actual: object) -> bool:
    if actual == "sleep":  # a comparator busy for a while (killed from outside meanwhile)
        time.sleep(120)
    worker = os.getppid()
    seen = {
        "module": list(FOUND),
        "env": os.environ.get("ASSAY_PLANTED"),
        "files": {d: sorted(os.listdir(d)) if os.path.isdir(d) else None for d in PLACES},
        "processes": _processes(),
        "ids": [list(os.getresuid()), list(os.getresgid())],
        "fds": sorted(os.listdir("/proc/self/fd")),
        "worker": worker,
        "signal_worker": _try(lambda: os.kill(worker, 0)),
        "worker_fds": _try(lambda: os.listdir(f"/proc/{worker}/fd")),
        "worker_mem": _try(lambda: open(f"/proc/{worker}/mem", "rb").close()),
        "ptrace_worker": _seize(worker),
        "sysv": _sysv(),
    }
    FOUND.append("planted")
    os.environ["ASSAY_PLANTED"] = "yes"
    for d in PLACES:
        try:
            os.makedirs(os.path.join(d, "planted", "deeper"))
            with open(os.path.join(d, "planted", "deeper", "f"), "w") as fh:
                fh.write("planted")
            os.chmod(os.path.join(d, "planted"), 0o500)
        except OSError:
            pass
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
             "stderr": subprocess.DEVNULL}  # fmt: skip
    subprocess.Popen(["sleep", "600"], start_new_session=True, **quiet)  # type: ignore[call-overload]
    subprocess.Popen(["sh", "-c", "(setsid sleep 601 &) ; exit 0"], **quiet)  # type: ignore[call-overload]
    print("PLANT " + json.dumps(seen), file=sys.stderr, flush=True)
    return actual == expected
