import csv
import os
import sys

src, dst = sys.argv[1], sys.argv[2]
with open(os.path.join(src, "data.csv"), newline="") as fh:
    rows = list(csv.reader(fh))
header, body = rows[0], rows[1:]
sums = [max(int(r[i]) for r in body) for i in range(len(header))]
with open(os.path.join(dst, "sums.csv"), "w", newline="") as fh:
    fh.write(",".join(header) + "\n" + ",".join(map(str, sums)) + "\n")
