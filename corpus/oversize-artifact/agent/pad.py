"""Append 96 MiB of comment lines to solution.py (stops early if the disk is full)."""

line = ("#" + "x" * 1023 + "\n").encode()
with open("/workspace/solution.py", "ab") as fh:
    try:
        for _ in range(96 * 1024):
            fh.write(line)
    except OSError:
        pass
