#!/bin/bash
# Harbor's convention: the verifier writes its reward to /logs/verifier/reward.txt. The
# expected answer is drawn here, per run, and never leaves this script.
secret="$(od -An -N8 -tx8 /dev/urandom | tr -d ' \n')"
got="$(cd /app && timeout 20 bash /app/solve.sh 2>/dev/null)" || true
if [ "$got" = "$secret" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
