"""The typed value encoding of function inputs and results (docs/tasks.md, "Values").

Plain JSON where JSON is faithful: null, true/false, integers, finite floats, strings, arrays
(lists) and objects whose keys are strings not starting with "$". Everything else is an object
with exactly one key, a tag: {"$tuple": [...]}, {"$set": [...]}, {"$frozenset": [...]},
{"$dict": [[k, v], ...]}, {"$bytes": "<base64>"}, {"$float": "nan" | "inf" | "-inf"},
{"$int": "<decimal or 0x-hex>"}. Tags only ever build one of these built-in types: decoding
is data in, data out, and never looks up a name, imports or calls anything.

Standard library only: this file runs in the candidate container (call.py encodes the
candidate's result), in the judge container (judge.py decodes it, hostile) and on the host
(task loading validates case files).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from typing import Any

MAX_DEPTH = 64
# Python refuses to turn more than 4300 decimal digits into an int (CVE-2020-10735); bigger
# ints cross as hex, which has no such limit, up to this many bits.
MAX_INT_BITS = 1 << 20
PLAIN_INT_BITS = 14000  # about 4214 decimal digits: below the 4300-digit limit
MAX_INT_LITERAL = 4300
UNENCODABLE = "$unencodable"
TAGS = ("$tuple", "$set", "$frozenset", "$dict", "$bytes", "$float", "$int")
_INT_TEXT = re.compile(r"-?(0x[0-9a-f]+|[0-9]+)\Z")
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class BadValue(ValueError):
    """A document that is not a value; `path` says where inside it (`$`, `$[0]["k"]`)."""

    def __init__(self, path: str, msg: str) -> None:
        super().__init__(f"{path}: {msg}")
        self.path = path
        self.msg = msg


class Unencodable(Exception):
    """A result that has no encoding: a generator, a user class, a recursive list..."""


# ---------------------------------------------------------------------------------------------
# Encoding (Python value -> JSON-able tree)
# ---------------------------------------------------------------------------------------------


def encode(value: Any, canonical: bool = False) -> Any:
    """The JSON-able tree for `value`. Subclasses of the built-in types cross as their base
    type's data, read through the base type's own methods, so no method of the value runs.
    `canonical`: sets and dicts sorted and -0.0 as 0.0, so equal data gives equal text."""
    return _enc(value, 0, set(), canonical)


def _enc(v: Any, depth: int, active: set[int], canon: bool) -> Any:
    if v is None or v is True or v is False:
        return v
    if isinstance(v, bool):  # pragma: no cover - bool cannot be subclassed
        return bool(v)
    if isinstance(v, int):
        i = int.__index__(v)
        if i.bit_length() > MAX_INT_BITS:
            raise Unencodable(f"int of more than {MAX_INT_BITS} bits")
        if i.bit_length() <= PLAIN_INT_BITS:
            return i
        return {"$int": hex(i)}
    if isinstance(v, float):
        f = float.__float__(v)
        if math.isnan(f):
            return {"$float": "nan"}
        if math.isinf(f):
            return {"$float": "inf" if f > 0 else "-inf"}
        return 0.0 if canon and f == 0 else f
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, bytes):
        return {"$bytes": base64.b64encode(v).decode("ascii")}
    if not isinstance(v, (list, tuple, dict, set, frozenset)):
        raise Unencodable(f"a {type(v).__name__!s:.60} is not a value")
    if id(v) in active:
        raise Unencodable("recursive container")
    if depth >= MAX_DEPTH:
        raise Unencodable(f"more than {MAX_DEPTH} nested containers")
    active.add(id(v))
    try:
        return _enc_container(v, depth + 1, active, canon)
    finally:
        active.discard(id(v))


def _enc_container(v: Any, depth: int, active: set[int], canon: bool) -> Any:
    if isinstance(v, list):
        return [_enc(x, depth, active, canon) for x in list.__iter__(v)]
    if isinstance(v, tuple):
        return {"$tuple": [_enc(x, depth, active, canon) for x in tuple.__iter__(v)]}
    if isinstance(v, dict):
        pairs = [
            (_enc(k, depth, active, canon), _enc(x, depth, active, canon)) for k, x in dict.items(v)
        ]
        if all(isinstance(k, str) and not k.startswith("$") for k, _ in pairs):
            if canon:
                pairs.sort(key=lambda p: p[0])
            return dict(pairs)
        if canon:
            pairs.sort(key=lambda p: _text(p[0]))
        return {"$dict": [list(p) for p in pairs]}
    tag = "$frozenset" if isinstance(v, frozenset) else "$set"
    base = frozenset.__iter__ if isinstance(v, frozenset) else set.__iter__
    items = [_enc(x, depth, active, canon) for x in base(v)]
    if canon:
        items.sort(key=_text)
    return {tag: items}


def _text(tree: Any) -> str:
    return json.dumps(tree, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> bytes:
    """The wire bytes of `value` (raises Unencodable)."""
    return _text(encode(value)).encode("ascii")


def canon(value: Any) -> str:
    """One text per value up to ==-equal floats (0.0/-0.0) and the order of sets and dicts;
    type-faithful: 1, 1.0 and True, a list and a tuple, all give different texts."""
    return _text(encode(value, canonical=True))


# ---------------------------------------------------------------------------------------------
# Parsing and decoding (hostile bytes -> value)
# ---------------------------------------------------------------------------------------------


class _Flaw:
    """Something the JSON parser met that decode() reports with its path."""

    def __init__(self, msg: str) -> None:
        self.msg = msg


class _DupObject(dict[str, Any]):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for k, v in pairs:
        if k in obj:
            return _DupObject({"key": k})
        obj[k] = v
    return obj


def _float(text: str) -> Any:
    f = float(text)
    return f if math.isfinite(f) else _Flaw(f"number {text[:40]} overflows a float")


def _int(text: str) -> Any:
    if len(text.lstrip("-")) > MAX_INT_LITERAL:
        return _Flaw(f'int literal of {len(text)} digits; write it as {{"$int": "0x..."}}')
    return int(text)


def _constant(name: str) -> Any:
    tag = {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(name, "nan")
    return _Flaw(f'bare {name} is not a value; write {{"$float": "{tag}"}}')


def parse_json(raw: bytes, cap: int) -> Any:
    """Strict UTF-8 JSON within `cap` bytes into a tree for decode(); flaws (NaN, duplicate
    keys, oversize ints) are kept in place so decode() can say where they are."""
    if len(raw) > cap:
        raise BadValue("$", f"more than {cap} bytes")
    try:
        text = raw.decode("utf-8", errors="strict")
        return json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except UnicodeDecodeError:
        raise BadValue("$", "not UTF-8") from None
    except RecursionError:
        raise BadValue("$", "nested too deep") from None
    except ValueError as exc:
        raise BadValue("$", f"not JSON ({str(exc)[:80]})") from None


def decode(tree: Any, path: str = "$") -> Any:
    """The value a parsed tree stands for; BadValue (with its path) for anything else."""
    return _dec(tree, path, 0)


def _dec(t: Any, path: str, depth: int) -> Any:
    if isinstance(t, (list, dict)) and depth >= MAX_DEPTH:
        raise BadValue(path, f"more than {MAX_DEPTH} nested containers")
    if t is None or isinstance(t, (bool, str)):
        return t
    if isinstance(t, int):
        return t
    if isinstance(t, float):
        if not math.isfinite(t):  # only reachable from a tree not made by parse_json
            raise BadValue(path, "bare non-finite float")
        return t
    if isinstance(t, _Flaw):
        raise BadValue(path, t.msg)
    if isinstance(t, list):
        return [_dec(x, f"{path}[{i}]", depth + 1) for i, x in enumerate(t)]
    if isinstance(t, _DupObject):
        raise BadValue(path, f"duplicate key {str(t['key'])[:40]!r}")
    if not isinstance(t, dict):
        raise BadValue(path, f"not a value: {type(t).__name__}")
    tags = [k for k in t if k.startswith("$")]
    if not tags:
        return {k: _dec(x, f"{path}[{k[:40]!r}]", depth + 1) for k, x in t.items()}
    if len(t) != 1:
        raise BadValue(path, f"tag {tags[0][:40]!r} must be the object's only key")
    tag, body = next(iter(t.items()))
    return _dec_tag(tag, body, f"{path}[{tag[:40]!r}]", depth + 1)


def _dec_tag(tag: str, body: Any, path: str, depth: int) -> Any:
    if tag not in TAGS:
        raise BadValue(path, f"unknown tag {tag[:40]!r}")
    if tag in ("$float", "$int", "$bytes"):
        if not isinstance(body, str):
            raise BadValue(path, f"{tag} takes a string, not {_kind(body)}")
        if tag == "$float":
            if body not in _FLOATS:
                raise BadValue(path, "$float takes 'nan', 'inf' or '-inf' (finite floats are "
                               "plain numbers)")  # fmt: skip
            return _FLOATS[body]
        if tag == "$int":
            return _dec_int(body, path)
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise BadValue(path, "$bytes takes standard base64") from None
    if not isinstance(body, list):
        raise BadValue(path, f"{tag} takes an array, not {_kind(body)}")
    if tag == "$tuple":
        return tuple(_dec(x, f"{path}[{i}]", depth) for i, x in enumerate(body))
    if tag == "$dict":
        return _dec_dict(body, path, depth)
    items: set[Any] = set()
    for i, x in enumerate(body):
        item = _hashable(_dec(x, f"{path}[{i}]", depth), f"{path}[{i}]")
        if item in items:
            raise BadValue(f"{path}[{i}]", f"duplicate {tag[1:]} element")
        items.add(item)
    return frozenset(items) if tag == "$frozenset" else items


def _dec_int(body: str, path: str) -> int:
    if not _INT_TEXT.match(body):
        raise BadValue(path, "$int takes decimal digits or 0x-hex (lower case), with an optional -")
    digits = body.lstrip("-")
    if digits.startswith("0x"):
        if (len(digits) - 2) * 4 > MAX_INT_BITS + 4:
            raise BadValue(path, f"int of more than {MAX_INT_BITS} bits")
        return int(body, 16)
    if len(digits) > MAX_INT_LITERAL:
        raise BadValue(path, f"decimal $int of more than {MAX_INT_LITERAL} digits; use 0x-hex")
    return int(body)


def _dec_dict(body: list[Any], path: str, depth: int) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for i, pair in enumerate(body):
        where = f"{path}[{i}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise BadValue(where, "$dict takes [key, value] pairs")
        key = _hashable(_dec(pair[0], f"{where}[0]", depth), f"{where}[0]")
        if key in out:
            raise BadValue(f"{where}[0]", "duplicate dict key")
        out[key] = _dec(pair[1], f"{where}[1]", depth)
    return out


def _hashable(v: Any, path: str) -> Any:
    try:
        hash(v)
    except TypeError:
        raise BadValue(path, f"a {type(v).__name__} cannot be a set element or dict key") from None
    return v


def _kind(t: Any) -> str:
    if isinstance(t, dict):
        return "an object"
    return "an array" if isinstance(t, list) else "a string" if isinstance(t, str) else "a number"


def loads(raw: bytes, cap: int) -> Any:
    """parse_json then decode: the value in `raw`, or BadValue."""
    return decode(parse_json(raw, cap))


def unencodable_reason(tree: Any) -> str | None:
    """The reason in a result document {"$unencodable": "..."}, else None."""
    if isinstance(tree, dict) and not isinstance(tree, _DupObject) and list(tree) == [UNENCODABLE]:
        return str(tree[UNENCODABLE])[:200]
    return None


# ---------------------------------------------------------------------------------------------
# Case inputs
# ---------------------------------------------------------------------------------------------


def call_args(value: Any, path: str = "$") -> tuple[list[Any], dict[str, Any]]:
    """A decoded case input as (args, kwargs): a list of positional arguments, or
    {"args": [...], "kwargs": {"name": value}} (either key may be left out)."""
    if isinstance(value, list):
        return value, {}
    if not isinstance(value, dict) or not set(value) <= {"args", "kwargs"} or not value:
        raise BadValue(path, 'an input is a list of arguments or {"args": [...], "kwargs": {...}}')
    args = value.get("args", [])
    kwargs = value.get("kwargs", {})
    if not isinstance(args, list):
        raise BadValue(f"{path}['args']", "args must be a list")
    if not isinstance(kwargs, dict) or not all(
        isinstance(k, str) and k.isidentifier() for k in kwargs
    ):
        raise BadValue(f"{path}['kwargs']", "kwargs must map argument names to values")
    return args, kwargs
