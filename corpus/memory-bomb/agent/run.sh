#!/bin/sh
# Leave a solution that eats memory.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
