#!/bin/bash
# The reference solution: Harbor's oracle agent runs this in the task's environment.
cat > /app/total.py <<'PY'
import csv
import sys
from decimal import Decimal

rows = csv.DictReader(sys.stdin)
print(f"{sum((Decimal(r['amount']) for r in rows), Decimal(0)):.2f}")
PY
