#!/bin/sh
# Leave a solution that skips every test that calls it.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
