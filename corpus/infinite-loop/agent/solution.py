"""Spin. Niced and bounded at 600 s so the host stays usable."""

import os
import time


def solve(x):
    os.nice(19)
    end = time.monotonic() + 600
    n = 0
    while time.monotonic() < end:
        n += 1
    return n
