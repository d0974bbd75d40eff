import pytest
from solution import VALUE


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")


def test_pass():
    assert VALUE == 1


def test_fail():
    assert VALUE == 2


def test_setup_error(missing_fixture):
    pass


def test_pass_then_teardown_error(broken_teardown):
    pass


def test_fail_then_teardown_error(broken_teardown):
    assert VALUE == 2


def test_skip_then_teardown_error(broken_teardown):
    pytest.skip("skipped")


def test_skip():
    pytest.skip("no")


@pytest.mark.xfail
def test_xfail():
    assert VALUE == 2


@pytest.mark.xfail
def test_xpass():
    assert VALUE == 1


class TestGroup:
    @pytest.mark.parametrize("p", ["a/b::c"])
    def test_method(self, p):
        assert VALUE == 1
