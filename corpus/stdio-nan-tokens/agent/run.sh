#!/bin/sh
# Leave a program that prints nan for every number.
set -eu
cp "$(dirname "$0")/main.py" /workspace/main.py
