"""Freezing a cgroup v1 freezer group, shared by the Docker and runc backends' censuses."""

from __future__ import annotations

import time
from pathlib import Path

FREEZE_WAIT_S = 2.0


def freeze(state: Path, wait_s: float | None = None) -> bool:
    """Freeze the group whose `freezer.state` is `state`, as runc does; False if it would not
    hold FROZEN within `wait_s` (default `FREEZE_WAIT_S`). Raises OSError if the group's files
    cannot be written.

    One FROZEN write can leave the group FREEZING for good: just after a start, the
    container's first process may still be runc's init in the middle of its execve, waiting
    for its other threads to exit while they sit frozen (seen here in about one census in a
    hundred right after a start, under load). Only a thaw lets that exec finish, so a freeze
    that has not held within a few milliseconds is thawed for a moment and tried again."""
    deadline = time.monotonic() + (FREEZE_WAIT_S if wait_s is None else wait_s)
    tries = 0
    while True:
        state.write_text("FROZEN")
        if state.read_text().strip() == "FROZEN":
            return True
        if time.monotonic() > deadline:
            return False
        tries += 1
        if tries % 20 == 0:
            state.write_text("THAWED")
            time.sleep(0.01)
        else:
            time.sleep(0.0005)
