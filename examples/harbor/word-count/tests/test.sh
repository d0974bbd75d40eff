#!/bin/bash
# The reward is 1 only when wc.py's output is exactly what the checker computes.
python3 /tests/check.py > /logs/verifier/reward.txt
