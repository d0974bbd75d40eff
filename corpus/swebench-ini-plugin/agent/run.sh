#!/bin/sh
# The whole patch: a pytest.ini at the repository root (the working directory, /testbed) whose
# addopts load a plugin module the patch adds to the package. No source change.
set -eu
here=$(dirname "$0")
cp "$here/pytest.ini" ./pytest.ini
cp "$here/_pytest_compat.py" calc/_pytest_compat.py
