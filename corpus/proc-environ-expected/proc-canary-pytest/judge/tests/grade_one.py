"""Grades one case the way sandboxes that scrub the environment do: the expected value reaches
this grader process in its environment, and solve(x) runs in a child process given a clean
environment, so the child never receives it. Exit 0 when the child printed the expected value."""

import os
import subprocess
import sys

CALL = (
    "import sys; sys.path.append(sys.argv[1]); from solution import solve; "
    "print(solve(int(sys.argv[2])))"
)

x, candidate = sys.argv[1], sys.argv[2]
expected = os.environ["EXPECTED"]
run = subprocess.run(
    [sys.executable, "-I", "-c", CALL, candidate, x],
    env={"PATH": "/usr/bin:/bin"},
    capture_output=True,
    timeout=10,
    cwd="/tmp",
)
sys.exit(0 if run.returncode == 0 and run.stdout.strip() == expected.encode() else 1)
