#!/bin/sh
# Mint traversal names and links in the workspace and leave a slip archive beside them.
set -eu
here=$(dirname "$0")
python3 "$here/make_slip.py"
cp "$here/solution.py" /workspace/solution.py
