"""checker-sort graded as open-r1's Codeforces scoring grades a program (cf_scoring.py): the
program, its input, the correct output and the task's checker.py share one directory (the
box), the program runs there, then `python3 checker.py input answer output` runs there too and
"1" on its stdout accepts. The box is this module's `box/`; the program's output goes to a
temporary file, since the box may be read-only."""

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

BOX = Path(__file__).parent / "box"
IDS = ["t1", "t2", "t3"]


def program() -> Path:
    """main.py where the harness put the submission (the first sys.path entry holding one)."""
    for entry in sys.path:
        if (Path(entry or ".") / "main.py").is_file():
            return Path(entry or ".").resolve() / "main.py"
    raise AssertionError("no main.py submitted")


@pytest.mark.parametrize("case", IDS)
def test_case(case):
    stdin = (BOX / f"{case}.in").read_bytes()
    run = subprocess.run(
        [sys.executable, str(program())], input=stdin, capture_output=True, timeout=10, cwd=BOX
    )
    assert run.returncode == 0, run.stderr[-500:]
    with tempfile.NamedTemporaryFile(suffix=".out") as out:
        out.write(run.stdout)
        out.flush()
        verdict = subprocess.run(
            [sys.executable, "checker.py", f"{case}.in", f"{case}.ans", out.name],
            capture_output=True,
            timeout=10,
            cwd=BOX,
        )
    assert verdict.returncode == 0 and verdict.stdout.strip() == b"1", verdict.stderr[-500:]
