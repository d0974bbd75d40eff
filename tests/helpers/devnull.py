"""The host's /dev/null, for the tests that show no runtime is handed it (runsc chowns the stdio
it is given to its sandbox's user: docs/security.md)."""

from __future__ import annotations

import os

DEV_NULL = "/dev/null"


def dev_null() -> tuple[int, int, int, int, int]:
    """(uid, gid, mode, rdev, inode): what a chown, chmod or replacement would change."""
    st = os.stat(DEV_NULL)
    return st.st_uid, st.st_gid, st.st_mode, st.st_rdev, st.st_ino


def give_back() -> None:
    """Root's again: after a baseline that gave it away, or an earlier run (an older assay)
    that did; chmod untouched, since no runtime here changes the mode."""
    st = os.stat(DEV_NULL)
    if (st.st_uid, st.st_gid) != (0, 0):
        os.chown(DEV_NULL, 0, 0)
