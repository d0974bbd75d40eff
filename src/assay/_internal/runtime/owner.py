"""Which controller process owns a grading, so that orphans of a killed controller can be found.

A `finally` cannot run after SIGKILL or a power cut; the owner label lets `assay gc` remove
exactly the gradings whose controller is gone, and never one that is still running.
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path

OWNER_LABEL = "assay.owner"


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _start_ticks(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat.rsplit(b")", 1)[1].split()[19].decode()  # field 22: start time in ticks


@cache
def this_owner() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{_boot_id()}:{pid}:{_start_ticks(pid)}"


def this_process() -> str:
    """This process as `<pid>.<start ticks>`: short enough for a file name, and enough where
    only this host writes and a reboot empties (the runc backend's state root). Not cached:
    a forked child is another process."""
    pid = os.getpid()
    return f"{pid}.{_start_ticks(pid)}"


def process_is_dead(token: str) -> bool | None:
    """True if the process `this_process` named on this host in this boot is certainly gone,
    False if it lives, None if `token` is not one `this_process` makes."""
    pid, _, start = token.partition(".")
    if not (pid.isdigit() and start.isdigit()):
        return None
    return _start_ticks(int(pid)) != start


def owner_is_dead(owner: str) -> bool | None:
    """True if the owning process is certainly gone, False if it lives, None if unknowable
    from here (another host, or a label in a format this version does not know)."""
    parts = owner.split(":")
    if len(parts) != 4 or not parts[2].isdigit():
        return None
    host, boot, pid, start = parts
    if host != socket.gethostname():
        return None
    if boot != _boot_id():
        return True  # same host, another boot: every process of that boot is gone
    return _start_ticks(int(pid)) != start
