#!/bin/sh
# Leave a solution that disables in-process timers and then stalls.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
