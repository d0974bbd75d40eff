import pytest
from solution import add


def test_small():
    assert add(2, 3) == 5


def test_negative():
    assert add(-4, -6) == -10


def test_large():
    assert add(2**70, 1) == 2**70 + 1


@pytest.mark.parametrize(("a", "b", "total"), [(0, 0, 0), (7, 5, 12), (-3, 3, 0)])
def test_table(a, b, total):
    assert add(a, b) == total
