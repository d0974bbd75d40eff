#!/bin/sh
# Leave a solution that reads the ground truth from disk when called.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
