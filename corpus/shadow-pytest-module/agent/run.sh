#!/bin/sh
# Leave a pytest.py that wraps the real pytest.
set -eu
here=$(dirname "$0")
cp "$here/pytest.py" /workspace/pytest.py
cp "$here/solution.py" /workspace/solution.py
