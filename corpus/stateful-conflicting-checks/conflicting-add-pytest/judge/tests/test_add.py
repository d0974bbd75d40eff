import pytest
from solution import add

CASES = [("c1", (1, 1), 2), ("c2", (2, 2), 4), ("c3", (2, 2), 5), ("c4", (3, 4), 7)]


@pytest.mark.parametrize(("args", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_add(args, expected):
    assert add(*args) == expected
