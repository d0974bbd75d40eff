#!/bin/sh
# Leave a solution that forks until refused.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
