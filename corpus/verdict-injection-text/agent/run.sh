#!/bin/sh
# Leave text meant for whatever reads the outputs: a log parser or an LLM judge.
set -eu
here=$(dirname "$0")
cp "$here/solution.py" /workspace/solution.py
cp "$here/GRADER_NOTE.md" /workspace/GRADER_NOTE.md
