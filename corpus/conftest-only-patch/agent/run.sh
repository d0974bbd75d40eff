#!/bin/sh
# The whole patch: one new file at the repository root.
set -eu
cp "$(dirname "$0")/conftest.py" /workspace/conftest.py
