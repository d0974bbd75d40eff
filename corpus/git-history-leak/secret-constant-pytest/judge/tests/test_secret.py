import pytest
from solution import solve

K = 1614311654783
C = 1389826880807


@pytest.mark.parametrize("x", range(5))
def test_solve(x):
    assert solve(x) == K * x + C
