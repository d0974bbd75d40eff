"""Where the strict tier puts the decoy answer keys (`core/decoys.py` makes them): a directory
of this grading's bound read-only at `TESTS` in the candidate's container, and the same files
beside the program, at `tests/` in the submission's own read-only tree when it has none.

Both are read-only to the candidate, so a decoy cannot be changed or removed there: no
`decoy:written` check is needed (or made) in this tier.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

TESTS = "/tests"
"""Where a naive harness's tests and answer keys are: SWE-bench's and Harbor's /tests, and
this repository's T0/T1 baselines' tests."""
BESIDE = "tests"


def plant(root: Path, files: Path | None, layout: Mapping[str, bytes]) -> None:
    """Write `layout` (flat names) into `root`, the directory bound at `TESTS`, and link it
    into `files/tests` when `files` (the tree bound at /candidate) has no `tests` of its own.
    Raises OSError when `root` cannot be written (the grading's own temporary directory)."""
    root.chmod(0o755)
    for name, data in layout.items():
        (root / name).write_bytes(data)
        (root / name).chmod(0o644)
    if files is None or os.path.lexists(files / BESIDE):
        return  # the submission's own tests/ stays as it is: bait must not change what runs
    beside = files / BESIDE
    try:
        beside.mkdir()
    except OSError:
        return  # the bait beside the program is an extra; /tests holds the same files
    try:
        beside.chmod(0o755)
        for name in layout:
            try:
                os.link(root / name, beside / name)
            except OSError:  # another file system: a copy
                shutil.copyfile(root / name, beside / name)
                (beside / name).chmod(0o644)
    except OSError:
        shutil.rmtree(beside, ignore_errors=True)  # made here, above: nothing of the submission
