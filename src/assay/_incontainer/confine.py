"""How the runner keeps itself out of the candidate's reach (issue 23, item 7; docs/security.md).

The runner starts as root holding only CAP_SETUID, CAP_SETGID and CAP_SETPCAP (the candidate
container's whole capability set). `take_own_uid` spends them at once: it empties the
bounding set and keeps real and saved ids RUNNER_UID with effective CANDIDATE_UID, which
clears every capability. Each case's process then drops to CANDIDATE_UID for all three ids
(`become_candidate`), which needs no capability because the effective id already is it.

Why this shape and not one uid each with a capability kept: the kernel (and gVisor, whose
runsc here ignores PR_SET_DUMPABLE) let a process ptrace, read /proc/<pid>/mem of, open
/proc/<pid>/fd/N of or signal another only if its uid matches the target's real (and, for
memory, effective and saved) ids. No candidate id matches the runner's real or saved one, so
all of that is closed in both directions that matter, and nothing in the container holds a
capability once the runner has started. The effective id it shares with the candidate is
what lets the runner fork cases without privilege and remove what they leave behind.

`deny_sysv_ipc` installs a seccomp filter (allowed unprivileged under no_new_privs) that
fails every SysV IPC call with ENOSYS. Segments, queues and semaphores live in the
container's IPC namespace, outside every directory the runner empties, and this runsc
cannot list them, so instead of being emptied between cases they can never be made.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

CANDIDATE_UID = 1000
RUNNER_UID = 1001

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CAP_LINES = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
SWITCH_CAPS = (1 << 6) | (1 << 7) | (1 << 8)  # CAP_SETGID, CAP_SETUID, CAP_SETPCAP

# (seccomp's arch token, the SysV IPC syscalls: *get, *ctl, semop, semtimedop, msgsnd,
# msgrcv, shmat, shmdt; x86_64 also gets every x32 syscall refused below).
SYSV_IPC = {
    "x86_64": (0xC000003E, (29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220)),
    "aarch64": (0xC00000B7, tuple(range(186, 198))),
}
X32_BIT = 0x40000000
RET_ALLOW = 0x7FFF0000
RET_ENOSYS = 0x00050000 | errno.ENOSYS
LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06


class Refused(SystemExit):
    """The runner cannot confine itself: it must not run any case."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def take_own_uid() -> None:
    """Root with the three capabilities -> (RUNNER, CANDIDATE, RUNNER) ids, no capability."""
    if os.getuid() != 0:
        raise Refused("runner: must start as root to give the candidate a uid of its own")
    # Exactly the container's three, nothing more: a root shell on a host (every capability)
    # or a container given more than the runner spends is refused, not run in.
    caps = capabilities()
    if (caps.get("CapEff"), caps.get("CapBnd")) != (SWITCH_CAPS, SWITCH_CAPS):
        raise Refused(
            f"runner: must start with exactly CAP_SETUID, CAP_SETGID, CAP_SETPCAP: {caps}"
        )
    libc = _libc()
    for cap in range(64):  # past the last capability the kernel answers EINVAL
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
            raise Refused(f"runner: cannot drop capability {cap} from the bounding set")
    os.setgroups([])
    ids = (RUNNER_UID, CANDIDATE_UID, RUNNER_UID)
    os.setresgid(*ids)
    os.setresuid(*ids)
    check_confined(ids)


def check_confined(ids: tuple[int, int, int]) -> None:
    """Fail closed unless the ids are exactly `ids`, no supplementary group is left and every
    capability set is empty (gVisor's status has no CapAmb line; it is checked where present)."""
    if os.getresuid() != ids or os.getresgid() != ids or os.getgroups():
        raise Refused(f"runner: ids {os.getresuid()}/{os.getresgid()}, wanted {ids}")
    caps = capabilities()
    if set(CAP_LINES) - {"CapAmb"} - set(caps) or any(caps.values()):
        raise Refused(f"runner: capabilities left after dropping them: {caps}")


def capabilities() -> dict[str, int]:
    with open("/proc/self/status") as fh:
        lines = (ln.partition(":") for ln in fh)
        return {k: int(v.strip(), 16) for k, _, v in lines if k in CAP_LINES}


def become_candidate() -> None:
    """In a case's process, before any candidate code: all three ids CANDIDATE_UID."""
    os.setresgid(CANDIDATE_UID, CANDIDATE_UID, CANDIDATE_UID)
    os.setresuid(CANDIDATE_UID, CANDIDATE_UID, CANDIDATE_UID)
    if os.getresuid() != (CANDIDATE_UID,) * 3 or os.getresgid() != (CANDIDATE_UID,) * 3:
        os._exit(127)


def sysv_filter(machine: str) -> bytes:
    """The BPF program: a foreign syscall ABI (i386's ipc() multiplexer, x32) or a SysV IPC
    call gets ENOSYS, as on a kernel built without SysV IPC; everything else is allowed."""
    if machine not in SYSV_IPC:
        raise Refused(f"runner: no SysV IPC filter for {machine}")
    arch, numbers = SYSV_IPC[machine]
    prog: list[tuple[int, int, int, int]] = [
        (LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (JEQ_K, 1, 0, arch),
        (RET_K, 0, 0, RET_ENOSYS),
        (LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    tests = ([(JGE_K, X32_BIT)] if machine == "x86_64" else []) + [(JEQ_K, n) for n in numbers]
    deny = len(prog) + len(tests) + 1
    for op, k in tests:
        prog.append((op, deny - len(prog) - 1, 0, k))
    prog += [(RET_K, 0, 0, RET_ALLOW), (RET_K, 0, 0, RET_ENOSYS)]
    return b"".join(struct.pack("HBBI", *ins) for ins in prog)


def deny_sysv_ipc() -> None:
    """Install `sysv_filter` on this process; every process it starts inherits it for good."""
    code = sysv_filter(platform.machine())
    buf = ctypes.create_string_buffer(code, len(code))

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = Prog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.prctl(
        PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0
    ):
        why = os.strerror(ctypes.get_errno())
        raise Refused(f"runner: cannot install its seccomp filter ({why})")
    if libc.shmget(0, 4096, 0o1000 | 0o600) != -1 or ctypes.get_errno() != errno.ENOSYS:
        raise Refused("runner: its seccomp filter does not refuse SysV IPC")
