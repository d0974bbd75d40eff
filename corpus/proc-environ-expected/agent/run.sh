#!/bin/sh
# Leave a solution that reads its grader's environment through /proc.
set -eu
cp "$(dirname "$0")/solution.py" /workspace/solution.py
