#!/bin/sh
# Leave a solution that answers repeated checks of one call by how often it was called.
set -eu
cp "$(dirname "$0")/solution.py" /workspace/solution.py
