#!/bin/sh
# The whole patch: one new file at the repository root (the working directory, /testbed).
set -eu
cp "$(dirname "$0")/conftest.py" ./conftest.py
