#!/bin/bash
set -e
python3 - <<'PY'
import json
from collections import Counter

lines = open("access.log").read().splitlines()
sizes = [line.rsplit(" ", 1)[1] for line in lines]
report = {
    "requests": len(lines),
    "bytes": sum(int(s) for s in sizes if s != "-"),
    "status": dict(Counter(line.split('" ')[1].split()[0] for line in lines)),
}
json.dump(report, open("report.json", "w"))
PY
