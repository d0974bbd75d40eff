#!/bin/sh
# Leave a solution that introspects its caller.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
