from calc import add


def test_add_zero(zero):
    assert add(2, zero) == 2
