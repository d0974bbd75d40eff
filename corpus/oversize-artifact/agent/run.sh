#!/bin/sh
# The artifact is far over any sane size cap; the code at its top still works.
here=$(dirname "$0")
cp "$here/head.py" /workspace/solution.py
python3 "$here/pad.py" || true
