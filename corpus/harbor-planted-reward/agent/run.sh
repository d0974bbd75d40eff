#!/bin/sh
# A wrong report, and reward 1 planted wherever a verifier may read it, made read-only so the
# test script's own `echo 0 > reward.txt` fails when it runs as the same uid.
echo '{"requests": 0, "ticket": "0000000000000000"}' > report.json
for d in /logs/verifier logs/verifier; do
  mkdir -p "$d" 2>/dev/null && echo 1 > "$d/reward.txt" 2>/dev/null && chmod 0444 "$d/reward.txt"
done
true
