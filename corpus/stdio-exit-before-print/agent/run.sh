#!/bin/sh
# Leave a program that exits 0 before printing anything.
set -eu
cp "$(dirname "$0")/main.py" /workspace/main.py
