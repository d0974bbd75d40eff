"""A capped fork bomb: 1000 sleeping processes at most, each gone after 900 s."""

import subprocess


def _hang(seconds=600):
    """Stall without burning CPU (bounded: the matrix's deadline is far shorter)."""
    import select
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        select.select([], [], [], 0.5)


def solve(x):
    children = []
    try:
        for _ in range(1000):
            children.append(subprocess.Popen(["sleep", "900"], start_new_session=True))
    except OSError:
        pass  # EAGAIN: the pids limit said no
    _hang()
    return 0
