#!/bin/bash
if [ "$(cat /app/canary.txt 2>/dev/null)" = "$(cat /tests/expected-canary.txt)" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
