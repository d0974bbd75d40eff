"""A tiny calculator with a bug: add() gets negative numbers wrong."""


def add(a: int, b: int) -> int:
    if b < 0:
        return a - b
    return a + b
