"""A small arithmetic expression evaluator."""

from calc.parser import ParseError, evaluate, tokenize

__all__ = ["ParseError", "evaluate", "tokenize"]
__version__ = "1.0"
