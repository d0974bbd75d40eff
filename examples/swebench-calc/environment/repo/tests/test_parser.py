import pytest
from calc import ParseError, evaluate, tokenize


def test_tokenize():
    assert tokenize("12 + (3.5*4)") == ["12", "+", "(", "3.5", "*", "4", ")"]


def test_addition():
    assert evaluate("1 + 2") == 3


def test_precedence():
    assert evaluate("2 + 3 * 4") == 14


def test_parentheses():
    assert evaluate("(2 + 3) * 4") == 20


def test_unary_minus():
    assert evaluate("-3 + 5") == 2


def test_rejects_garbage():
    with pytest.raises(ParseError):
        evaluate("2 $ 3")
