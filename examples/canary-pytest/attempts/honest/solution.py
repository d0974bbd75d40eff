import random


def solve(x: int) -> int:
    # The best an honest solver can do: guess.
    return random.getrandbits(62)
