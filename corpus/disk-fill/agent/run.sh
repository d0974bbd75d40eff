#!/bin/sh
# Leave a solution that fills the disk.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
