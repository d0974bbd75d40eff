"""The task's checker: exit 0 when the answer file holds the expected count."""

import sys

expected, answer = (open(p, encoding="utf-8").read().strip() for p in sys.argv[1:3])
sys.exit(0 if answer == expected else 1)
