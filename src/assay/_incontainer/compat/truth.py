"""Trusted wrapper that runs a task's ground-truth generator in the compat tier's prep container.

Usage: python3 -I /assay/compat/truth.py GENERATOR SEED STATE_DIR

GENERATOR is the task's `[pytest].truth` file (under /judge-src); it defines
`make_truth(seed: int, state: pathlib.Path) -> None` and writes its files under `state`.
No candidate code exists in this container; the files reach the verification container
through the controller (capped, firewalled) and are mounted there read-only.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: truth.py GENERATOR SEED STATE_DIR\n")
        return 2
    generator, seed, state = argv
    spec = importlib.util.spec_from_file_location("assay_task_truth", generator)
    if spec is None or spec.loader is None:
        sys.stderr.write(f"truth: cannot load {generator}\n")
        return 2
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_truth(int(seed), Path(state))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
