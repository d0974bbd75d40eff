#!/bin/sh
# Leave a program that echoes its input numbers unsorted.
set -eu
cp "$(dirname "$0")/main.py" /workspace/main.py
