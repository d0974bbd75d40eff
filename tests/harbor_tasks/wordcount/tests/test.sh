#!/bin/bash
# Terminal-Bench's shape: the interpreter from PATH, the grader's helper from the image, the
# reward written by this script when the check exits 0.
if python3 /opt/grader/grader.py /tests/expected.txt /app/wordcount.txt; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
