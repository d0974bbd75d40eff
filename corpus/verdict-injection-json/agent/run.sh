#!/bin/sh
# Leave a solution whose outputs look like a passing verdict.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
