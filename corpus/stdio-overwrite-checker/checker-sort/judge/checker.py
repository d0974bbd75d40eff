"""The task's checker: every number within 1e-6, as many as expected, in order.

The same file serves both graders. The strict tier's judge imports it and calls `check` in the
judge container. The pytest twin runs it the way open-r1's Codeforces scoring does (the checker
uploaded into the sandbox beside the program, run there after it: `python3 checker.py INPUT
ANSWER OUTPUT`, "1" on stdout for accepted).
"""

import sys

TOL = 1e-6


def check(input: bytes, output: bytes, answer: bytes) -> bool:
    got, want = output.split(), answer.split()
    if len(got) != len(want):
        return False
    try:
        return all(abs(float(a) - float(b)) <= TOL for a, b in zip(got, want, strict=True))
    except ValueError:
        return False


if __name__ == "__main__":
    paths = sys.argv[1:4]
    fin, fans, fout = (open(p, "rb").read() for p in paths)
    print(1 if check(fin, fout, fans) else 0)
