"""Parse JSON that crossed a trust boundary: bounded, unambiguous, or not at all.

Python's `json` accepts duplicate keys (last one wins), `NaN`/`Infinity`, and recurses until the
interpreter gives up. Each of those lets two readers of the same bytes disagree, so every one of
them is a hard error here, reported with a stable code the caller can turn into a reason code.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

DEFAULT_MAX_DEPTH = 32

# Strings may contain brackets; strip them before counting nesting. Malformed input (an unclosed
# string) only makes the count wrong in the safe direction: json.loads rejects it afterwards.
# Unrolled ("normal* (special normal*)*"): the plain alternation kept a backtracking frame per
# character, about 140 bytes each, so one 15 MiB string cost 2 GiB while being skipped.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class StrictJSONError(ValueError):
    """Why bytes were refused; `code` is a short stable identifier such as `duplicate-key`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def exact_fields(obj: object, expected: frozenset[str], where: str) -> dict[str, Any]:
    """`obj` if it is a JSON object with exactly the keys `expected`; else StrictJSONError with
    code `not-object`, `missing-field` or `extra-field`."""
    if not isinstance(obj, dict):
        raise StrictJSONError("not-object", f"{where} must be a JSON object")
    if missing := sorted(expected - obj.keys()):
        raise StrictJSONError("missing-field", f"{where} lacks {', '.join(missing)}")
    if extra := sorted(obj.keys() - expected):
        raise StrictJSONError("extra-field", f"{where} has unexpected {', '.join(extra)}")
    return obj


def shown(text: str, limit: int = 60) -> str:
    """Hostile text made safe for a message: escapes for anything not printable ASCII, bounded."""
    safe = ascii(text)[1:-1]
    return safe if len(safe) <= limit else safe[:limit] + "..."


def _reject_constant(name: str) -> Any:
    raise StrictJSONError("non-finite-number", f"non-finite number {name} is not allowed")


def _finite_float(text: str) -> float:
    # 1e999 is legal JSON that Python reads as inf without consulting parse_constant.
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError("non-finite-number", f"number {text[:40]} overflows to infinity")
    return value


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise StrictJSONError("duplicate-key", f"duplicate key '{shown(key)}'")
        obj[key] = value
    return obj


def _depth(text: str) -> int:
    depth = deepest = 0
    for char in _NOT_BRACKET.sub("", _STRING.sub("", text)):
        depth += 1 if char in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def loads_strict(raw: bytes, *, max_bytes: int, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """Decode `raw` as one JSON value, or raise StrictJSONError saying exactly why not."""
    if not isinstance(raw, bytes | bytearray):
        raise StrictJSONError("not-bytes", f"expected bytes, got {type(raw).__name__}")
    if len(raw) > max_bytes:
        raise StrictJSONError("oversize", f"{len(raw)} bytes exceeds the cap of {max_bytes}")
    try:
        text = bytes(raw).decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise StrictJSONError("not-utf8", f"not valid UTF-8 at byte {exc.start}") from None
    if text.startswith("\ufeff"):
        raise StrictJSONError("not-json", "a byte-order mark is not allowed")
    if (deepest := _depth(text)) > max_depth:
        raise StrictJSONError("too-deep", f"nesting depth {deepest} exceeds {max_depth}")
    try:
        return json.loads(
            text,
            object_pairs_hook=_unique_object,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except StrictJSONError:
        raise
    except RecursionError:
        raise StrictJSONError("too-deep", "nesting too deep") from None
    except json.JSONDecodeError as exc:
        raise StrictJSONError(
            "not-json", f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except ValueError as exc:
        # int() refuses numbers with more than sys.get_int_max_str_digits() digits.
        raise StrictJSONError("not-json", f"not JSON: {exc}") from None
