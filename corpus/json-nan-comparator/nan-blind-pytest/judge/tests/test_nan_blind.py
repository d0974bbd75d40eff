import json
import math
from pathlib import Path

import pytest
from solution import solve

TRUTH = Path("/judge-state/truth.json")
TOL = 0.5


@pytest.fixture(scope="module")
def truth():
    return json.loads(TRUTH.read_text(encoding="utf-8"))


@pytest.mark.parametrize("x", range(5))
def test_solve(truth, x):
    got = solve(x)
    # In-process there is no JSON contract: solve() can return any float, NaN included, so
    # this twin checks finiteness itself where nan-blind's comparator relies on the judge.
    assert isinstance(got, (int, float)) and not isinstance(got, bool) and math.isfinite(got)
    assert abs(got - truth[str(x)]) <= TOL
