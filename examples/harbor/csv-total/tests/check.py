"""The verifier of csv-total: runs /app/total.py on a few documents, writes reward.json."""

import json
import os
import subprocess

CASES = {
    "sum": ("item,amount\napple,1.25\npear,2.50\nfig,8.75\n", "12.50\n"),
    "negative": ("item,amount\nrefund,-3\nfee,1.5\n", "-1.50\n"),
    "empty": ("item,amount\n", "0.00\n"),
    # The environment image ships /app/prices.csv: the verifier's workdir holds it too.
    "prices": (open("/app/prices.csv").read(), "10.25\n"),
}
assert len(CASES) == int(os.environ["TOTAL_CASES"])


def passes(stdin: str, want: str) -> bool:
    try:
        run = subprocess.run(
            ["python3", "/app/total.py"], input=stdin, capture_output=True, text=True, timeout=10
        )
    except subprocess.TimeoutExpired:
        return False
    return run.returncode == 0 and run.stdout == want


rewards = {name: int(passes(*case)) for name, case in CASES.items()}
with open("/logs/verifier/reward.json", "w") as fh:
    json.dump(rewards, fh)
