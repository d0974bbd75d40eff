"""The typed value encoding (src/assay/_incontainer/values.py; docs/tasks.md "Values")."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay._incontainer import values as V

CAP = 1 << 22

hashables = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**5000), max_value=10**5000)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.binary(),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4),
    max_leaves=8,
)
any_value = st.recursive(
    hashables,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner)
        | st.dictionaries(hashables, inner, max_size=4)
        | st.dictionaries(st.text(), inner, max_size=4)
        | st.sets(hashables, max_size=4)
        | st.frozensets(hashables, max_size=4)
    ),
    max_leaves=20,
)


def roundtrip(v: Any) -> Any:
    return V.loads(V.dumps(v), CAP)


@settings(max_examples=300, deadline=None)
@given(any_value)
def test_every_value_round_trips_type_faithfully(v: Any) -> None:
    back = roundtrip(v)
    assert V.canon(back) == V.canon(v)
    assert type(back) is type(v)


@settings(max_examples=200, deadline=None)
@given(any_value)
def test_canon_is_stable_under_reencoding(v: Any) -> None:
    assert V.canon(roundtrip(roundtrip(v))) == V.canon(v)


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (None, "null"),
        (True, "true"),
        (3, "3"),
        (3.0, "3.0"),
        ("s", '"s"'),
        ([1, "a"], '[1,"a"]'),
        ({"a": 1}, '{"a":1}'),
        ((1, 2), '{"$tuple":[1,2]}'),
        ({1}, '{"$set":[1]}'),
        (frozenset({1}), '{"$frozenset":[1]}'),
        (b"hi", '{"$bytes":"aGk="}'),
        (math.inf, '{"$float":"inf"}'),
        (-math.inf, '{"$float":"-inf"}'),
        ({1: "a"}, '{"$dict":[[1,"a"]]}'),
        ({"$tuple": 1}, '{"$dict":[["$tuple",1]]}'),
    ],
)
def test_documented_wire_forms(value: Any, wire: str) -> None:
    """The examples in docs/tasks.md, both ways."""
    assert V.dumps(value).decode() == wire
    back = V.loads(wire.encode(), CAP)
    assert type(back) is type(value) and V.canon(back) == V.canon(value)


def test_nan_crosses_only_as_a_tag() -> None:
    assert V.dumps(math.nan) == b'{"$float":"nan"}'
    assert math.isnan(V.loads(b'{"$float":"nan"}', CAP))


def test_a_dict_that_looks_like_a_tag_stays_a_dict() -> None:
    """A candidate cannot smuggle a tag through a dict key: "$"-keys force the $dict form."""
    for key in ("$tuple", "$unencodable", "$x"):
        back = roundtrip({key: [1]})
        assert back == {key: [1]} and type(back) is dict


def test_huge_ints_cross_as_hex_past_the_decimal_limit() -> None:
    n = 7**20000  # ~16900 decimal digits: int(str) would refuse it
    wire = V.dumps(n)
    assert wire.startswith(b'{"$int":"0x')
    assert V.loads(wire, CAP) == n
    assert V.loads(V.dumps(-n), CAP) == -n
    assert V.loads(b'{"$int": "123"}', CAP) == 123


def test_subclasses_cross_as_base_data_and_their_methods_never_run() -> None:
    class Liar(int):
        def __eq__(self, other: object) -> bool:
            return True

        def __index__(self) -> int:
            return 99

        __hash__ = int.__hash__

    class Lister(list):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter([9])

    assert V.dumps(Liar(5)) == b"5"
    assert V.dumps(Lister([1, 2])) == b"[1,2]"


def _gen() -> Any:
    yield 1


class Own:
    pass


def _recursive() -> list[Any]:
    x: list[Any] = []
    x.append(x)
    return x


def _deep(n: int) -> list[Any]:
    x: list[Any] = []
    for _ in range(n):
        x = [x]
    return x


@pytest.mark.parametrize(
    "value",
    [_gen(), Own(), _recursive(), {"k": _recursive()}, bytearray(b"x"), print, _deep(V.MAX_DEPTH)],
    ids=[
        "generator",
        "own-class",
        "recursive-list",
        "recursive-in-dict",
        "bytearray",
        "function",
        "too-deep",
    ],
)
def test_unencodable_results_raise(value: Any) -> None:
    with pytest.raises(V.Unencodable):
        V.dumps(value)


def test_shared_but_not_recursive_containers_encode() -> None:
    x = [1]
    assert roundtrip([x, x]) == [[1], [1]]


HOSTILE = [
    (b'{"$foo": 1}', "$['$foo']", "unknown tag"),
    (b'{"$tuple": 1}', "$['$tuple']", "takes an array"),
    (b'{"$bytes": 1}', "$['$bytes']", "takes a string"),
    (b'{"$bytes": "***"}', "$['$bytes']", "base64"),
    (b'{"$float": "1.5"}', "$['$float']", "'nan', 'inf' or '-inf'"),
    (b'{"$int": "1e5"}', "$['$int']", "decimal digits or 0x-hex"),
    (b'{"$int": 5}', "$['$int']", "takes a string"),
    (b"[1, NaN]", "$[1]", "bare NaN"),
    (b'{"a": [Infinity]}', "$['a'][0]", "bare Infinity"),
    (b"1e999", "$", "overflows a float"),
    (b'{"a": 1, "a": 2}', "$", "duplicate key"),
    (b'{"$tuple": [], "x": 1}', "$", "only key"),
    (b'{"$set": [1, 1]}', "$['$set'][1]", "duplicate set element"),
    (b'{"$set": [[1]]}', "$['$set'][0]", "cannot be a set element"),
    (b'{"$dict": [[1, 2], [1, 3]]}', "$['$dict'][1][0]", "duplicate dict key"),
    (b'{"$dict": [[true, 2], [1, 3]]}', "$['$dict'][1][0]", "duplicate dict key"),
    (b'{"$dict": [[1, 2, 3]]}', "$['$dict'][0]", "[key, value] pairs"),
    (b'{"$dict": [[{"$set": []}, 1]]}', "$['$dict'][0][0]", "cannot be a set element"),
    (b'{"$unencodable": "x"}', "$['$unencodable']", "unknown tag"),
    (b"9" * 5000, "$", "int literal of 5000 digits"),
    (b'{"$int": "0x' + b"f" * 300000 + b'"}', "$['$int']", "more than 1048576 bits"),
    (b'{"$int": "' + b"9" * 5000 + b'"}', "$['$int']", "use 0x-hex"),
    (b"[" * 65 + b"]" * 65, "$" + "[0]" * 64, "more than 64 nested containers"),
    (
        b'{"$tuple": [' * 65 + b"]}" * 65,
        "$" + "['$tuple'][0]" * 64,
        "more than 64 nested containers",
    ),
    (b"[" * 100000 + b"]" * 100000, "$", "nested too deep"),
    (b"\xff", "$", "not UTF-8"),
    (b"[1,", "$", "not JSON"),
]


@pytest.mark.parametrize(("raw", "path", "msg"), HOSTILE, ids=[h[2] for h in HOSTILE])
def test_hostile_documents_are_refused_with_their_path(raw: bytes, path: str, msg: str) -> None:
    with pytest.raises(V.BadValue) as info:
        V.loads(raw, CAP)
    assert info.value.path == path
    assert msg in info.value.msg


def test_byte_cap() -> None:
    with pytest.raises(V.BadValue, match="more than 10 bytes"):
        V.loads(b"[" + b"1," * 10 + b"1]", 10)


def test_depth_limit_is_exactly_64_containers() -> None:
    ok = _deep(V.MAX_DEPTH - 1)  # 64 lists
    assert V.loads(json.dumps(ok).encode(), CAP) == ok
    assert roundtrip(ok) == ok
    with pytest.raises(V.Unencodable):
        V.dumps(_deep(V.MAX_DEPTH))


@pytest.mark.parametrize(
    ("given", "args", "kwargs"),
    [
        ([1, 2], [1, 2], {}),
        ({"args": [1]}, [1], {}),
        ({"kwargs": {"b": 2}}, [], {"b": 2}),
        ({"args": [1], "kwargs": {"b": (2,)}}, [1], {"b": (2,)}),
    ],
)
def test_call_args_shapes(given: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
    assert V.call_args(given) == (args, kwargs)


@pytest.mark.parametrize(
    "given",
    [5, {}, {"args": 1}, {"kwargs": {"1x": 2}}, {"kwargs": {1: 2}}, {"args": [], "x": 1}, (1, 2)],
)
def test_call_args_refuses_other_shapes(given: Any) -> None:
    with pytest.raises(V.BadValue):
        V.call_args(given)


def test_documented_subclasses_cross_as_their_base_types_data() -> None:
    """docs/tasks.md: an IntEnum, a Counter, a namedtuple cross as int, dict, tuple."""
    import collections
    import enum

    class Colour(enum.IntEnum):
        RED = 1

    point = collections.namedtuple("point", "x y")
    for value, plain in [
        (Colour.RED, 1),
        (collections.Counter("aab"), {"a": 2, "b": 1}),
        (point(1, 2), (1, 2)),
    ]:
        back = roundtrip(value)
        assert type(back) is type(plain) and back == plain


@pytest.mark.parametrize("value", [bytearray(b"x"), memoryview(b"x"), 1j, range(3)])
def test_other_types_have_no_encoding(value: Any) -> None:
    with pytest.raises(V.Unencodable):
        V.dumps(value)


@settings(max_examples=300, deadline=None)
@given(any_value)
def test_canon_is_the_sorted_canonical_encoding(v: Any) -> None:
    """canon() builds its text bottom-up (linear under deep nesting); it is the same text as
    the canonical encoding sorted and dumped in one piece."""
    reference = json.dumps(V.encode(v, canonical=True), separators=(",", ":"), allow_nan=False)
    assert V.canon(v) == reference
    assert V.canon(V.decode_data(json.loads(V.dumps(v)))) == reference
