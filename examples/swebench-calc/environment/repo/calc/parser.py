"""A recursive-descent parser for arithmetic expressions.

Grammar::

    expression := term (("+" | "-") term)*
    term       := factor (("*" | "/") factor)*
    factor     := NUMBER | "-" factor | "(" expression ")"
"""

from __future__ import annotations

OPERATORS = "+-*/()"


class ParseError(ValueError):
    """The expression is not well formed."""


def tokenize(text: str) -> list[str]:
    """Split `text` into numbers and operators."""
    tokens = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or ch == ".":
            j = i
            while j < len(text) and (text[j].isdigit() or text[j] == "."):
                j += 1
            tokens.append(text[i:j])
            i = j
        elif ch in OPERATORS:
            tokens.append(ch)
            i += 1
        else:
            raise ParseError(f"unexpected character {ch!r} at position {i}")
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self.pos += 1
        return token

    def expression(self) -> float:
        left = self.term()
        if self.peek() in ("+", "-"):
            op = self.take()
            right = self.expression()
            return left + right if op == "+" else left - right
        return left

    def term(self) -> float:
        left = self.factor()
        if self.peek() in ("*", "/"):
            op = self.take()
            right = self.term()
            return left * right if op == "*" else left / right
        return left

    def factor(self) -> float:
        token = self.take()
        if token is None:
            raise ParseError("unexpected end of expression")
        if token == "(":
            value = self.expression()
            if self.take() != ")":
                raise ParseError("missing closing parenthesis")
            return value
        if token == "-":
            return -self.factor()
        try:
            return float(token)
        except ValueError:
            raise ParseError(f"expected a number, got {token!r}") from None


def evaluate(text: str) -> float:
    """The value of the arithmetic expression `text`."""
    parser = _Parser(tokenize(text))
    value = parser.expression()
    if parser.peek() is not None:
        raise ParseError(f"unexpected {parser.peek()!r} after the expression")
    return value
