"""Contradicting expected values for the strict kinds' case files.

An impossible twin keeps every case and adds, beside each, one with the same input and an
expected value that no output the case's comparator accepts for the original is accepted for:
a program that answers the same input the same way fails one of the two. The new value keeps
the old one's type and shape (an int stays an int, a list keeps its length where it can), so
it reads like any other answer:

- `exact` and `equal`: a leaf changes (an int by one, a float by at least 1 and by its own
  size, a string's last letter or digit, a byte); `==` among the judge's values is transitive
  for what this changes (numbers, strings, bytes, None, containers of them), so an output equal
  to both would make the two equal.
- `float`: a number moves by `1 + 10 abs_tol + 10 rel_tol |v|`, past any output close to both
  (a task whose `rel_tol` exceeds 0.1 is not mutated: its closeness covers half the line).
- `unordered`: one element more, so no multiset equals both.
- `truthy` / `falsy`: the comparator flips (`expected` is not used by either): no value is
  both.
- `custom`: None: the task's own code decides, and nothing here can invert it.

Every mutation is then checked with the judge's own comparator on the original value as the
answer: one the judge would still accept is a bug here, and the case counts as not mutated.
"""

from __future__ import annotations

import math
from typing import Any

from assay._incontainer import judge, values

MAX_REL_TOL = 0.1
"""Past this relative tolerance a `float` case is not mutated (see the module's docstring)."""


def contradict_case(
    case: dict[str, Any], default: str, rel: float, abs_: float
) -> dict[str, Any] | None:
    """The case with an expected value (or comparator) that contradicts its own, or None when
    its comparator cannot be inverted. `default`, `rel`, `abs_`: the task's comparator and
    tolerances, which a case's own keys override."""
    kind = case.get("comparator") or default
    rel = case.get("rel_tol", rel)
    abs_ = case.get("abs_tol", abs_)
    if kind in ("truthy", "falsy"):
        return {**case, "comparator": "falsy" if kind == "truthy" else "truthy"}
    if kind == "custom":
        return None
    if kind == "float" and rel > MAX_REL_TOL:
        return None
    expected = values.decode(case["expected"])
    if kind == "unordered":
        if not isinstance(expected, list | tuple):
            return None
        extra = expected[-1] if expected else 0
        changed: Any = type(expected)([*expected, extra])
    else:
        changed = _mutate(expected, kind == "float", rel, abs_, 0)
        if changed is _NONE:
            return None
    tree = values.encode(changed)
    if accepts(kind, tree, case["expected"], rel, abs_):
        return None
    return {**case, "expected": tree}


def accepts(kind: str, expected: Any, actual: Any, rel: float, abs_: float) -> bool:
    """Whether the judge's comparator `kind` passes `actual` for `expected` (both encoded)."""
    exp, act = values.decode_data(expected), values.decode_data(actual)
    if kind == "float":
        return judge._close(exp, act, rel, abs_)
    if kind == "unordered":
        return judge.unordered(exp, act)
    if kind == "equal":
        return judge._equal(exp, act)
    return judge.same(exp, act)


class _Nothing:
    pass


_NONE: Any = _Nothing()


def _mutate(v: Any, close: bool, rel: float, abs_: float, depth: int) -> Any:
    if depth > values.MAX_DEPTH:
        return _NONE
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + (math.ceil(_distance(float(min(abs(v), 1e300)), rel, abs_)) if close else 1)
    if isinstance(v, float):
        return _mutate_float(v, close, rel, abs_)
    if isinstance(v, str):
        return mutate_text(v)
    if isinstance(v, bytes):
        return v[:-1] + bytes([v[-1] ^ 1]) if v else b"\0"
    if v is None:
        return 0
    if isinstance(v, list | tuple):
        for i in reversed(range(len(v))):
            inner = _mutate(v[i], close, rel, abs_, depth + 1)
            if inner is not _NONE:
                return type(v)([*v[:i], inner, *v[i + 1 :]])
        return type(v)([0]) if not v else _NONE
    if isinstance(v, set | frozenset):
        if not v:
            return type(v)({0})
        last = max(v, key=values.canon)
        return type(v)(x for x in v if x is not last)
    if isinstance(v, dict):
        if not v:
            return {"": 0}
        key = max(v, key=values.canon)
        inner = _mutate(v[key], close, rel, abs_, depth + 1)
        return _NONE if inner is _NONE else {**v, key: inner}
    return _NONE


def _distance(size: float, rel: float, abs_: float) -> float:
    """How far a `float` case's number moves: more than twice what closeness allows."""
    return 1.0 + 10.0 * abs_ + 10.0 * rel * size


def _mutate_float(v: float, close: bool, rel: float, abs_: float) -> float:
    if not math.isfinite(v):
        return 0.0
    step = _distance(abs(v), rel, abs_) if close else max(1.0, abs(v))
    moved = v + step
    return moved if math.isfinite(moved) else (v - step if close else v / 2)


def mutate_text(s: str) -> str:
    """`s` with its last ASCII letter or digit moved on by one (9 to 0, z to a), or with a 0
    added when it has none: the same length and look, never the same text."""
    for i in reversed(range(len(s))):
        c = s[i]
        if "0" <= c <= "9":
            new = chr((ord(c) - 48 + 1) % 10 + 48)
        elif "a" <= c <= "z":
            new = "a" if c == "z" else chr(ord(c) + 1)
        elif "A" <= c <= "Z":
            new = "A" if c == "Z" else chr(ord(c) + 1)
        else:
            continue
        return s[:i] + new + s[i + 1 :]
    return s + "0"


def mutate_stdout(text: str) -> str:
    """A `stdio` answer with its last non-blank line written once more: every built-in checker
    needs the same number of lines (`lines`, `unordered-lines`, `exact`) or tokens (`tokens`,
    `tokens-ci`, `numbers`) as the answer, and this adds one of each."""
    sep = "\r\n" if "\r\n" in text else "\n"
    lines = [line for line in text.split("\n") if line.strip()]
    last = lines[-1].rstrip("\r") if lines else "0"
    body = text if not text or text.endswith("\n") else text + sep
    return body + last + sep
