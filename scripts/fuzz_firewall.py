"""Fuzz the archive firewall: run its property tests with many examples and count them.

    python scripts/fuzz_firewall.py                  # 10,000 examples per property
    python scripts/fuzz_firewall.py --examples 50000 --seed 1234

CI runs the same properties with 200 examples each (tests/unit/test_firewall_props.py).
Exit status is pytest's: 0 only if every example of every property passed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROPS = "tests/unit/test_firewall_props.py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fuzz the archive firewall.")
    parser.add_argument("--examples", type=int, default=10_000, help="examples per property")
    parser.add_argument("--seed", type=int, help="hypothesis seed (default: random)")
    args = parser.parse_args(argv)
    command = [
        sys.executable, "-m", "pytest", PROPS, "-p", "no:cacheprovider",
        "-k", "not refuses_raw", "--hypothesis-show-statistics",
    ]  # fmt: skip
    if args.seed is not None:
        command.append(f"--hypothesis-seed={args.seed}")
    env = {**os.environ, "ASSAY_FIREWALL_EXAMPLES": str(args.examples)}
    started = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    sys.stdout.write(proc.stdout[-4000:])
    sys.stderr.write(proc.stderr[-4000:])
    # Hypothesis prints "N passing, M failing, and K invalid test cases" per property and phase.
    counts = re.findall(r"(\d+) passing, (\d+) failing", proc.stdout)
    properties = len(re.findall(r"^tests/\S+::\S+:$", proc.stdout, re.MULTILINE))
    passing = sum(int(p) for p, _ in counts)
    failing = sum(int(f) for _, f in counts)
    print(
        f"\nfuzz_firewall: {properties} properties, {passing} passing examples, {failing} "
        f"failing, {elapsed:.0f} s, exit {proc.returncode}"
    )
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
