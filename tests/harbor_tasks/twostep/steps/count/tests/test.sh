#!/bin/bash
if [ "$(cat /app/wordcount.txt 2>/dev/null)" = "$(cat /tests/expected-count.txt)" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
