import json
from pathlib import Path

import evaluator
import pytest
from solution import solve

TRUTH = Path("/judge-state/truth.json")


@pytest.fixture(scope="module")
def truth():
    return json.loads(TRUTH.read_text(encoding="utf-8"))


@pytest.mark.parametrize("x", range(5))
def test_solve(truth, x):
    assert evaluator.evaluate(solve, x, truth[str(x)]) == 1.0
