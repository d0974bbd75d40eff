#!/bin/sh
# Leave a solution that corrupts its output channel.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
