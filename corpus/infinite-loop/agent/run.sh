#!/bin/sh
# Leave a solution that never returns.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
