#!/bin/sh
# Special files instead of regular ones.
set -eu
python3 "$(dirname "$0")/make_nodes.py"
