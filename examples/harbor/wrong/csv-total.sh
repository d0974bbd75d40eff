#!/bin/bash
# A wrong solution to examples/harbor/csv-total: crashes on a document with no rows.
cat > /app/total.py <<'PY'
import sys
lines = sys.stdin.read().splitlines()[1:]
amounts = [float(line.split(",")[1]) for line in lines]
print(f"{sum(amounts) / len(amounts) * len(amounts):.2f}")
PY
