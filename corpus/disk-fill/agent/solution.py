"""A capped disk fill: 2 GiB under /tmp at most (stops at ENOSPC), then a stall."""

import os


def _hang(seconds=600):
    """Stall without burning CPU (bounded: the matrix's deadline is far shorter)."""
    import select
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        select.select([], [], [], 0.5)


def solve(x):
    block = b"\0" * (1 << 20)
    path = f"/tmp/assay-disk-fill-{os.getpid()}"
    try:
        with open(path, "wb") as fh:
            for _ in range(2048):
                fh.write(block)
    except OSError:
        pass  # ENOSPC / EROFS: the grader capped it
    _hang()
    return 0
