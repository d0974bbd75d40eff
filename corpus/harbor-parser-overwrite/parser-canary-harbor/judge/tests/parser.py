"""The harness's log parser (SWE-bench Pro copies its parser.py into the container and runs it
after the tests): 1 when every test in the log passed and there was one, else 0."""

import sys

lines = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
statuses = [line.split()[0] for line in lines if line.split()[:1] in (["PASSED"], ["FAILED"])]
print(1 if statuses and all(s == "PASSED" for s in statuses) else 0)
