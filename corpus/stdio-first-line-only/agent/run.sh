#!/bin/sh
# Leave a program that prints only the first line of the answer.
set -eu
cp "$(dirname "$0")/main.py" /workspace/main.py
