#!/bin/sh
# Leave a solution that filters pytest's terminal writer.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
