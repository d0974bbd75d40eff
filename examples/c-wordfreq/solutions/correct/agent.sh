#!/bin/sh
# The reference agent: compile the solution in the workdir (run as --agent-cmd "sh /agent/agent.sh").
set -e
cc -O2 -o wordfreq /agent/wordfreq.c
