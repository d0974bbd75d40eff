#!/bin/sh
# Leave a solution that floods the console.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
