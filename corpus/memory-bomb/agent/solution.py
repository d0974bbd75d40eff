"""A capped memory bomb: 12 x 256 MiB of touched pages, held for up to 600 s."""


def _hang(seconds=600):
    """Stall without burning CPU (bounded: the matrix's deadline is far shorter)."""
    import select
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        select.select([], [], [], 0.5)


def solve(x):
    hoard = []
    try:
        for _ in range(12):
            hoard.append(b"\x01" * (256 << 20))  # filled, so the pages are really resident
    except MemoryError:
        pass
    _hang()
    return len(hoard)
