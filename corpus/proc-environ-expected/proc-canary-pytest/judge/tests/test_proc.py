import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TRUTH = Path("/judge-state/truth.json")
GRADE_ONE = Path(__file__).parent / "grade_one.py"


@pytest.fixture(scope="module")
def truth():
    return json.loads(TRUTH.read_text(encoding="utf-8"))


def candidate_dir() -> str:
    spec = importlib.util.find_spec("solution")
    assert spec is not None and spec.origin is not None, "no solution.py submitted"
    return str(Path(spec.origin).parent)


@pytest.mark.parametrize("x", range(5))
def test_solve(truth, x):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "EXPECTED": str(truth[str(x)])}
    run = subprocess.run(
        [sys.executable, "-I", str(GRADE_ONE), str(x), candidate_dir()],
        env=env,
        capture_output=True,
        timeout=20,
    )
    assert run.returncode == 0, run.stderr[-500:]
