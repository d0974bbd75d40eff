"""PID 1 of the harbor tier's tests container: runs the test script and ends the container with it.

    python3 -I -S /assay/harbor/init.py bash /tests/test.sh

Runs as the tests' uid (the candidate's), so what keeps it trusted is the kernel: as the
init of the container's PID namespace it receives no signal from inside that it did not ask
for, and it is non-dumpable, so no process without CAP_SYS_PTRACE may trace it (runc; gVisor
ignores the flag, docs/security.md). It traces the test script with PTRACE_O_TRACEEXIT, so
the script stops at its exit before anything of that exit can be seen from outside (its files
still open, its process not yet a zombie). Then, in this order:

1. `kill(-1, SIGKILL)`: every other process in the namespace, at once (a fork either finishes
   before the kernel walks the list or fails), so nothing writes the reward from here on;
2. every process still listed in /proc besides this one and the script (the killed ones stay
   as zombies until this init reaps them, and it does not) was alive when the script ended:
   exit 3, a leftover. Otherwise exit 0;
3. the kernel ends whatever is left as this init exits, before the container counts as stopped.

Exit 4: the script ended without the exit stop (kernels that skip it for SIGKILL) or
something else went wrong; the controller fails the grading on any code but 0.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PTRACE_TRACEME = 0
PTRACE_CONT = 7
PTRACE_SETOPTIONS = 0x4200
PTRACE_GETSIGINFO = 0x4202
PTRACE_O_TRACEEXEC = 0x10
PTRACE_O_TRACEEXIT = 0x40
PTRACE_O_EXITKILL = 0x100000
EVENT_EXEC = 4
EVENT_EXIT = 6
PR_SET_DUMPABLE = 4
WALL = 0x40000000
LEFTOVER = 3
BROKEN = 4

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
_libc.ptrace.restype = ctypes.c_long


def _ptrace(request: int, pid: int, data: int = 0) -> int:
    return int(_libc.ptrace(request, pid, None, ctypes.c_void_p(data)))


def _spawn(argv: list[str]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # Python ignores it; the script must not
            if _ptrace(PTRACE_TRACEME, 0) != 0:
                os._exit(BROKEN)
            os.execvp(argv[0], argv)  # noqa: S606 - the trusted `bash /tests/test.sh`
        finally:
            os._exit(BROKEN)
    return pid


def _others(script: int) -> int:
    me = os.getpid()
    return sum(1 for p in os.listdir("/proc") if p.isdigit() and int(p) not in (me, script))


def _end(script: int) -> int:
    os.kill(-1, signal.SIGKILL)
    return LEFTOVER if _others(script) else 0


def main(argv: list[str]) -> int:
    script = _spawn(argv)
    # The first stop is the script's exec (TRACEME); non-dumpable only after it, since gVisor
    # refuses PTRACE_TRACEME under a non-dumpable parent.
    _, status = os.waitpid(script, WALL)
    if not os.WIFSTOPPED(status) or _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        return BROKEN
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Python's handler would raise in this init
    if _ptrace(
        PTRACE_SETOPTIONS, script, PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL | PTRACE_O_TRACEEXEC
    ):
        return BROKEN
    _ptrace(PTRACE_CONT, script)
    return _supervise(script)


def _supervise(script: int) -> int:
    """Follow the script to its exit stop, reaping the orphans the namespace hands to its init.
    An orphan's zombie is reaped only after checking that the script has not reached its exit
    stop meanwhile: one that ended after that stop stays, and is counted as a leftover."""
    info = ctypes.create_string_buffer(128)
    orphan = 0
    while True:
        pid, status = os.waitpid(script, WALL | os.WNOHANG)
        if pid == script:
            if not os.WIFSTOPPED(status):
                os.kill(-1, signal.SIGKILL)
                return BROKEN
            event = status >> 16
            if event == EVENT_EXIT:
                return _end(script)
            if event == EVENT_EXEC:
                _ptrace(PTRACE_CONT, script)
                continue
            # A signal for the script: passed on. A group stop (no siginfo) is not kept.
            got = _libc.ptrace(PTRACE_GETSIGINFO, script, None, info) == 0
            _ptrace(PTRACE_CONT, script, os.WSTOPSIG(status) if got else 0)
            continue
        if orphan:
            os.waitpid(orphan, WALL | os.WNOHANG)
            orphan = 0
            continue
        # Wait for the next event of any child without taking it (WNOWAIT): the script's is
        # taken above, an orphan's on the next turn, after the script is checked again.
        seen = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT | WALL)
        if seen is not None and seen.si_pid != script:
            orphan = seen.si_pid


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    except BaseException:
        code = BROKEN
    os._exit(code)
