#!/bin/sh
# Plant ~/.profile and ~/.bin/pytest (HOME is the workspace on the baselines).
set -eu
here=$(dirname "$0")
mkdir -p /workspace/.bin
cp "$here/profile" /workspace/.profile
cp "$here/pytest" "$here/forge_plugin.py" /workspace/.bin/
chmod 755 /workspace/.bin/pytest
cp "$here/solution.py" /workspace/solution.py
