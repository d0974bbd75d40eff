#!/bin/sh
# Leave a solution that patches pytest's reports from inside the test process.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
