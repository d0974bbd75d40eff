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

The judge never builds a Python set or dict from hostile elements: CPython's hashes of ints,
floats, tuples and frozensets are public arithmetic (every k*(2**61-1) hashes to 0), so a set of
colliding elements costs quadratic time to build or compare. decode_data() gives `Set` and `Dict`
instead, which keep their elements with sorted equality keys (strings, never hashed), and
native() builds the Python value only where a task's own code needs one, refusing a set or dict
whose elements pile onto one hash.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
import re
from typing import Any

MAX_DEPTH = 64
# Python refuses to turn more than 4300 decimal digits into an int (CVE-2020-10735); bigger
# ints cross as hex, which has no such limit, up to this many bits.
MAX_INT_BITS = 1 << 20
PLAIN_INT_BITS = 14000  # about 4214 decimal digits: below the 4300-digit limit
MAX_INT_LITERAL = 4300
# Elements of one set or dict that may share a hash value when native() builds it: each insert
# compares against those, so this bounds the work per element. Honest data never comes close.
MAX_SAME_HASH = 32
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
    if not isinstance(v, (list, tuple, dict, set, frozenset, Set, Dict)):
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
    if isinstance(v, (dict, Dict)):
        items = v.pairs if isinstance(v, Dict) else dict.items(v)
        pairs = [(_enc(k, depth, active, canon), _enc(x, depth, active, canon)) for k, x in items]
        if all(isinstance(k, str) and not k.startswith("$") for k, _ in pairs):
            if canon:
                pairs.sort(key=lambda p: p[0])
            return dict(pairs)
        if canon:
            pairs.sort(key=lambda p: _text(p[0]))
        return {"$dict": [list(p) for p in pairs]}
    if isinstance(v, Set):
        tag, elements = ("$frozenset" if v.frozen else "$set"), iter(v.items)
    else:
        tag = "$frozenset" if isinstance(v, frozenset) else "$set"
        elements = frozenset.__iter__(v) if isinstance(v, frozenset) else set.__iter__(v)
    items = [_enc(x, depth, active, canon) for x in elements]
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
    type-faithful: 1, 1.0 and True, a list and a tuple, all give different texts. The same
    text as _text(encode(value, canonical=True)), built bottom-up: each node's text once, so
    64 nested sets cost no more than 64 nested lists."""
    return _canon_text(encode(value))


def _canon_text(t: Any) -> str:
    if isinstance(t, list):
        return "[" + ",".join(map(_canon_text, t)) + "]"
    if isinstance(t, dict):
        if len(t) == 1 and next(iter(t)) in ("$set", "$frozenset"):
            [(tag, items)] = t.items()
            return f'{{"{tag}":[' + ",".join(sorted(map(_canon_text, items))) + "]}"
        if len(t) == 1 and "$dict" in t:
            pairs = sorted((_canon_text(k), _canon_text(v)) for k, v in t["$dict"])
            return '{"$dict":[' + ",".join(f"[{k},{v}]" for k, v in pairs) + "]}"
        fields = sorted(t.items(), key=lambda p: str(p[0]))
        return "{" + ",".join(f"{_text(k)}:{_canon_text(v)}" for k, v in fields) + "}"
    if isinstance(t, float) and t == 0:
        return "0.0"
    return _text(t)


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
    """The Python value a parsed tree stands for; BadValue (with its path) for anything else."""
    return native(decode_data(tree, path))


def decode_data(tree: Any, path: str = "$") -> Any:
    """As decode(), with every set and dict as a `Set` or `Dict`: linear in the tree, whatever
    the elements' hashes (the form the judge compares hostile output in)."""
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
        pairs = [(k, _dec(x, f"{path}[{k[:40]!r}]", depth + 1)) for k, x in t.items()]
        keys = [f"s{len(k)}:{k}" for k in t]  # _eqkey of a str; the parser refused duplicates
        return Dict(pairs, keys, sorted(range(len(keys)), key=keys.__getitem__))
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
    items = [_dec(x, f"{path}[{i}]", depth) for i, x in enumerate(body)]
    keys = _eqkeys(items, path, "")
    order = sorted(range(len(keys)), key=keys.__getitem__)
    if (dup := _first_duplicate(keys, order)) is not None:
        raise BadValue(f"{path}[{dup}]", f"duplicate {tag[1:]} element")
    return Set(tag == "$frozenset", items, keys, order)


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


def _dec_dict(body: list[Any], path: str, depth: int) -> Dict:
    pairs = []
    for i, pair in enumerate(body):
        where = f"{path}[{i}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise BadValue(where, "$dict takes [key, value] pairs")
        pairs.append((_dec(pair[0], f"{where}[0]", depth), _dec(pair[1], f"{where}[1]", depth)))
    return _make_dict(pairs, path, "[0]")


def _make_dict(pairs: list[tuple[Any, Any]], path: str, suffix: str) -> Dict:
    keys = _eqkeys([k for k, _ in pairs], path, suffix)
    order = sorted(range(len(keys)), key=keys.__getitem__)
    if (dup := _first_duplicate(keys, order)) is not None:
        raise BadValue(f"{path}[{dup}]{suffix}", "duplicate dict key")
    return Dict(pairs, keys, order)


def _first_duplicate(keys: list[str], order: list[int]) -> int | None:
    """The first index, in wire order, whose key an earlier index has (`order` sorts `keys`
    stably, so within a run of equal keys the indices ascend)."""
    dups = [order[j] for j in range(1, len(order)) if keys[order[j]] == keys[order[j - 1]]]
    return min(dups) if dups else None


# ---------------------------------------------------------------------------------------------
# Hash-free sets and dicts
# ---------------------------------------------------------------------------------------------


class Set:
    """A decoded set or frozenset, never hashed: its elements in wire order, each one's equality
    key, and `order`, the indices sorted by key. Two Sets are ==-equal as Python sets are when
    their sorted keys are, and neither holds a NaN (which == finds only by identity)."""

    __slots__ = ("_nan", "frozen", "items", "keys", "order")

    def __init__(self, frozen: bool, items: list[Any], keys: list[str], order: list[int]) -> None:
        self.frozen, self.items, self.order = frozen, items, order
        self.keys = [keys[i] for i in order]
        self._nan: bool | None = None

    @property
    def nan(self) -> bool:
        """Whether an element holds a NaN (worked out once, only when `equal` asks)."""
        if self._nan is None:
            self._nan = any(map(_has_nan, self.items))
        return self._nan

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        if not self.items:
            return "frozenset()" if self.frozen else "set()"
        body = "{" + ", ".join(map(repr, self.items)) + "}"
        return f"frozenset({body})" if self.frozen else body


class Dict:
    """A decoded dict, never hashed: its pairs in wire order, and as for Set, the keys' equality
    keys sorted, with `order` the pair indices in that order."""

    __slots__ = ("_nan", "keys", "order", "pairs")

    def __init__(self, pairs: list[tuple[Any, Any]], keys: list[str], order: list[int]) -> None:
        self.pairs, self.order = pairs, order
        self.keys = [keys[i] for i in order]
        self._nan: bool | None = None

    @property
    def nan(self) -> bool:
        """Whether a key holds a NaN (worked out once, only when `equal` asks)."""
        if self._nan is None:
            self._nan = any(_has_nan(k) for k, _ in self.pairs)
        return self._nan

    def __len__(self) -> int:
        return len(self.pairs)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.pairs) + "}"


# An equality key is one string per class of ==-equal hashable values (1, 1.0 and True share
# one; every NaN shares "N", as decoding has always read NaN as one value), prefix-free so that
# a row of keys reads one way only. A tuple's or frozenset's key is a keyed 128-bit digest of its
# elements' keys in a row: a fixed size, so 64 nested frozensets do not copy their contents 64
# times; the key is secret to this process, so no one can aim at a collision.
_DIGEST_KEY = os.urandom(16)


class _Unhashable(Exception):
    pass


def _eqkeys(items: list[Any], path: str, suffix: str) -> list[str]:
    try:
        return [_eqkey(x) for x in items]
    except _Unhashable:  # the message names the element, as hash() of it would fail
        for i, x in enumerate(items):
            try:
                _eqkey(x)
            except _Unhashable as exc:
                raise BadValue(f"{path}[{i}]{suffix}", str(exc)) from None
        raise  # pragma: no cover - the loop finds the element that failed


def _eqkey(v: Any) -> str:
    if type(v) is int and -(1 << 64) < v < 1 << 64:
        return f"i{v:x};"
    if v is None:
        return "n"
    if isinstance(v, (bool, int)):
        return _bigint_key(int(v))
    if isinstance(v, float):
        if math.isnan(v):
            return "N"
        if math.isinf(v):
            return "+" if v > 0 else "-"
        if v.is_integer() and abs(v) < 2.0**64:
            return f"i{int(v):x};"
        return f"f{(v + 0.0).hex()};"  # + 0.0: -0.0 is 0.0
    if isinstance(v, str):
        return f"s{len(v)}:{v}"
    if isinstance(v, bytes):
        return f"b{len(v)}:{v.decode('latin-1')}"
    if isinstance(v, tuple):
        return _digest("t" + "".join(map(_eqkey, v)))
    if isinstance(v, Set) and v.frozen:
        return _digest("F" + "".join(v.keys))
    kind = "set" if isinstance(v, Set) else "dict" if isinstance(v, Dict) else type(v).__name__
    raise _Unhashable(f"a {kind} cannot be a set element or dict key")


def _bigint_key(i: int) -> str:
    """An int past 2**64 equal to a float has the float's key (1e300 is an integral float whose
    int has 250 hex digits: a short key for it keeps every key near its value's wire size)."""
    if -(1 << 64) < i < 1 << 64:
        return f"i{i:x};"
    try:
        f = float(i)
    except OverflowError:
        return f"i{i:x};"
    return f"f{f.hex()};" if f == i else f"i{i:x};"


def _digest(row: str) -> str:
    data = row.encode("utf-8", "surrogatepass")
    return "#" + hashlib.blake2b(data, digest_size=16, key=_DIGEST_KEY).hexdigest()


def _has_nan(v: Any) -> bool:
    """Whether a hashable value holds a NaN: Python's == finds such a set element or dict key
    only by identity, so under the `equal` rule it matches nothing."""
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, tuple):
        return any(map(_has_nan, v))
    return isinstance(v, Set) and v.nan


def data(value: Any) -> Any:
    """A Python value (or one already in this form) with its sets and dicts as Set and Dict."""
    if isinstance(value, list):
        return [data(x) for x in value]
    if isinstance(value, tuple):
        return tuple(data(x) for x in value)
    if isinstance(value, (set, frozenset)):
        items = [data(x) for x in value]
        keys = _eqkeys(items, "$", "")
        order = sorted(range(len(keys)), key=keys.__getitem__)
        return Set(isinstance(value, frozenset), items, keys, order)
    if isinstance(value, dict):
        return _make_dict([(data(k), data(x)) for k, x in value.items()], "$", "")
    return value


def native(value: Any) -> Any:
    """The Python value of a decoded one: Set and Dict become set, frozenset and dict. BadValue
    if more than MAX_SAME_HASH elements of one of them share a hash: building it would cost
    quadratic time (each insert compares against every element of the same hash)."""
    if isinstance(value, list):
        return [native(x) for x in value]
    if isinstance(value, tuple):
        return tuple(native(x) for x in value)
    if isinstance(value, Set):
        items = [native(x) for x in value.items]
        _few_collisions(items)
        return frozenset(items) if value.frozen else set(items)
    if isinstance(value, Dict):
        keys = [native(k) for k, _ in value.pairs]
        _few_collisions(keys)
        return dict(zip(keys, [native(x) for _, x in value.pairs], strict=True))
    return value


def _few_collisions(items: list[Any]) -> None:
    # A hash is an int below 2**61 in size, which hashes to itself: this count cannot collide.
    seen: dict[int, int] = {}
    for x in items:
        h = hash(x)
        seen[h] = n = seen.get(h, 0) + 1
        if n > MAX_SAME_HASH:
            raise BadValue("$", f"more than {MAX_SAME_HASH} elements of a set or dict share one "
                           "hash value (a hash-collision flood)")  # fmt: skip


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
