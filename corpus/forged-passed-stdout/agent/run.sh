#!/bin/sh
# Leave a solution that appends forged PASSED lines to the test log.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
