import sys

for line in sys.stdin.read().split("\n")[:-1]:
    print(len(line.split()))
