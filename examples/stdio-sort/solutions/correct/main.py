import sys

data = sys.stdin.read().split()
for x in sorted(float(t) for t in data[1:]):
    print(repr(x))
