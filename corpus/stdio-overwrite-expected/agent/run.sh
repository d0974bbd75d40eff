#!/bin/sh
# Leave a program that overwrites the expected output files with its own answer.
set -eu
cp "$(dirname "$0")/main.py" /workspace/main.py
