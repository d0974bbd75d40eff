"""Two cases. The secret is an expected value: it must never be visible to the candidate.
The planted number is in the case's input, so the candidate must find it: that proves the
scan really reads what the candidate can read (a scanner that finds nothing fails)."""

import random


def generate(seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    secret = rng.randrange(10**17, 10**18)
    planted = rng.randrange(10**17, 10**18)
    return [{"id": "probe", "input": [str(planted)], "expected": [str(secret), str(planted)]}]
