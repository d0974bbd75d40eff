"""sum-samples graded on its public tests: the statement's samples, the only tests this grader
has (the strict twin, sum-samples, also has hidden ones). The comparison is strict: tokens
equal, in order."""

import subprocess
import sys
from pathlib import Path

import pytest

PUBLIC = Path(__file__).parent / "public"


def program() -> Path:
    """main.py where the harness put the submission (the first sys.path entry holding one)."""
    for entry in sys.path:
        if (Path(entry or ".") / "main.py").is_file():
            return Path(entry or ".").resolve() / "main.py"
    raise AssertionError("no main.py submitted")


@pytest.mark.parametrize("case", ["s1", "s2"])
def test_public(case):
    run = subprocess.run(
        [sys.executable, str(program())],
        input=(PUBLIC / f"{case}.in").read_bytes(),
        capture_output=True,
        timeout=10,
        cwd="/tmp",
    )
    assert run.returncode == 0, run.stderr[-500:]
    assert run.stdout.split() == (PUBLIC / f"{case}.out").read_bytes().split()
