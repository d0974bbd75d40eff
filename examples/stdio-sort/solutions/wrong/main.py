import sys

# Sorts the numbers as text: '-5' < '-50' < '10' < '9'.
data = sys.stdin.read().split()
for x in sorted(data[1:]):
    print(x)
