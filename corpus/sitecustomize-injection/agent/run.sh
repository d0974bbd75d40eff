#!/bin/sh
# Leave a sitecustomize.py where a PYTHONPATH that includes the workspace finds it.
set -eu
here=$(dirname "$0")
cp "$here/sitecustomize.py" /workspace/sitecustomize.py
cp "$here/solution.py" /workspace/solution.py
