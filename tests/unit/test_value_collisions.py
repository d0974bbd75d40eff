"""Hash-collision floods in candidate output (issue 23): the judge's work stays linear.

CPython's hashes of ints, floats, tuples and frozensets are public arithmetic: every multiple
of 2**61-1 hashes to 0, so a 1 MiB `$set` of them cost the judge 41 s to build as a Python set.
The judge decodes hostile output without hashing it (values.decode_data) and builds Python sets
only for a task's own comparator, refusing a flood there. These tests count the work instead of
timing it: the numbers the parser hands the decoder are int and float subclasses that count
their __hash__ and __eq__ calls, so a quadratic algorithm shows up as a count, on any machine.
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from assay._incontainer import judge
from assay._incontainer import values as V

P = 2**61 - 1  # hash(k * P) == 0 for every int k
N = 1500  # elements per flood: the old decoder made ~N*N/2 = 1.1M comparisons, this one none


class Work:
    hashes: ClassVar[int] = 0
    eqs: ClassVar[int] = 0


class CInt(int):
    def __hash__(self) -> int:
        Work.hashes += 1
        return int.__hash__(self)

    def __eq__(self, other: object) -> bool:
        Work.eqs += 1
        return int.__eq__(self, other) is True

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)


class CFloat(float):
    def __hash__(self) -> int:
        Work.hashes += 1
        return float.__hash__(self)

    def __eq__(self, other: object) -> bool:
        Work.eqs += 1
        return float.__eq__(self, other) is True

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> type[Work]:
    """The parser's numbers become counting ones; the decoder keeps them as it keeps any int."""
    monkeypatch.setattr(V, "_int", lambda text: CInt(text))
    monkeypatch.setattr(V, "_float", lambda text: CFloat(text))
    Work.hashes = Work.eqs = 0
    return Work


def flood(shape: str, n: int = N, odd: bool = False) -> bytes:
    """A document of n elements that all share one hash; `odd` changes the last one."""
    ks = [k * P for k in range(1, n + 1)]
    if odd:
        ks[-1] += P
    if shape == "set":
        return json.dumps({"$set": ks}).encode()
    if shape == "frozenset":
        return json.dumps({"$frozenset": ks}).encode()
    if shape == "dict-keys":
        return json.dumps({"$dict": [[k, 0] for k in ks]}).encode()
    if shape == "tuples":
        return json.dumps({"$set": [{"$tuple": [k, "x"]} for k in ks]}).encode()
    if shape == "frozensets":
        return json.dumps({"$set": [{"$frozenset": [k]} for k in ks]}).encode()
    if shape == "floats":  # 2.0**(61*j) hashes to 1 for every int j, as k*P+1 does
        fs: list[Any] = [2.0 ** (61 * j) for j in range(-16, 17) if j not in (0, 1)]
        return json.dumps({"$set": fs + [k + 1 for k in ks[len(fs) :]]}).encode()
    assert shape == "nested"  # tuples of frozensets of colliding ints, as dict keys
    pairs = [[{"$tuple": [{"$frozenset": [k]}, k]}, [k]] for k in ks]
    return json.dumps({"$dict": pairs}).encode()


SHAPES = ["set", "frozenset", "dict-keys", "tuples", "frozensets", "floats", "nested"]
KINDS = ["exact", "equal", "float", "unordered", "truthy", "falsy"]


def comparator(kind: str) -> judge.Comparator:
    return judge.Comparator(
        argparse.Namespace(comparator=kind, custom=None, rel_tol=1e-9, abs_tol=1e-9)
    )


def decided(kind: str, expected: bytes, actual: bytes) -> bool:
    """The judge's steps for one case: parse and decode the output, compare with expected."""
    case = {"id": "c", "input": [], "expected": V.parse_json(expected, 1 << 22)}
    got = V.decode_data(V.parse_json(actual, 1 << 22))
    return comparator(kind)(case, got)[0]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_collision_flood_decodes_and_compares_without_hashing(
    shape: str, kind: str, counting: type[Work]
) -> None:
    honest = kind not in ("unordered", "falsy")  # neither passes a set or dict of N items
    assert decided(kind, flood(shape), flood(shape)) is honest
    if kind in ("exact", "equal", "float"):
        assert decided(kind, flood(shape), flood(shape, odd=True)) is False
    assert counting.eqs <= 8 * N  # linear: a leaf compared with its counterpart, a few times
    assert counting.hashes == 0  # no element ever went into a Python set or dict


def test_the_counter_sees_the_quadratic_build(counting: type[Work]) -> None:
    """What the tests above would count if a Python set were built: the counter works."""
    V.native(V.decode_data(V.parse_json(flood("set", n=V.MAX_SAME_HASH), 1 << 22)))
    assert counting.eqs >= V.MAX_SAME_HASH * (V.MAX_SAME_HASH - 1) // 2


@pytest.mark.parametrize("shape", SHAPES)
def test_python_values_refuse_a_flood_before_building_it(shape: str, counting: type[Work]) -> None:
    """decode() and a custom comparator's `actual` are real sets and dicts: they are built only
    when at most MAX_SAME_HASH elements share a hash, so each insert compares with few."""
    with pytest.raises(V.BadValue, match="share one hash value"):
        V.decode(V.parse_json(flood(shape), 1 << 22))
    assert counting.eqs == 0
    few = V.decode(V.parse_json(flood(shape, n=V.MAX_SAME_HASH), 1 << 22))
    assert len(few) == V.MAX_SAME_HASH


def run_compare(tmp: Path, monkeypatch: pytest.MonkeyPatch, outputs: list[bytes],
                expected: list[Any], custom: Path | None = None,
                ids: list[Any] | None = None) -> dict[str, Any]:  # fmt: skip
    cases = [{"id": f"c{i}", "input": [], "expected": e} for i, e in enumerate(expected)]
    state = tmp / "state.json"
    state.write_text(json.dumps(cases))
    runner = tmp / "runner.json"
    runner.write_text(json.dumps({"cases": [
        {"id": f"c{i}" if ids is None else ids[i], "status": "ok", "exit_code": 0,
         "duration_s": 0.1, "output_b64": base64.b64encode(o).decode()}
        for i, o in enumerate(outputs)
    ]}))  # fmt: skip
    monkeypatch.setattr(judge, "STATE", str(state))
    a = argparse.Namespace(kind="function", comparator="custom" if custom else "exact",
                           custom=str(custom) if custom else None, rel_tol=1e-9, abs_tol=1e-9,
                           output_cap=1 << 20, runner_output=str(runner),
                           diagnostics="owner")  # fmt: skip
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        judge.cmd_compare(a)
    return dict(json.loads(buf.getvalue()))


def test_the_judge_grades_a_flood_pass_and_fail_and_explains_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counting: type[Work]
) -> None:
    exp = json.loads(flood("set"))
    rep = run_compare(tmp_path, monkeypatch, [flood("set"), flood("set", odd=True)], [exp, exp])
    assert [c["status"] for c in rep["cases"]] == ["pass", "fail"]
    assert rep["reasons"] == ["compare:mismatch"]
    assert rep["diagnostics"][0]["actual"].startswith("{2305843009213693951, ")
    assert counting.hashes == 0


def test_a_custom_comparator_never_gets_a_flood(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counting: type[Work]
) -> None:
    cmp = tmp_path / "cmp.py"
    cmp.write_text("def compare(expected, actual):\n    return True\n")
    few = flood("set", n=V.MAX_SAME_HASH)
    rep = run_compare(tmp_path, monkeypatch, [flood("set"), few], [0, 0], custom=cmp)
    assert [c["status"] for c in rep["cases"]] == ["error", "pass"]
    assert rep["reasons"] == ["candidate:invalid-output"]


def test_runner_case_ids_must_be_strings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge indexes the runner's cases by id: a hostile runner's ids could be colliding
    ints, so anything but a string is invalid runner output."""
    rep = run_compare(tmp_path, monkeypatch, [b"1", b"1"], [1, 1], ids=[P, 2 * P])
    assert rep["reasons"] == ["runner:invalid-output", "runner:missing-case"]
    assert [c["status"] for c in rep["cases"]] == ["error", "error"]


def test_a_case_file_with_a_flood_is_refused_when_the_task_is_loaded() -> None:
    """docs/tasks.md: a task's own cases are Python values too (the candidate gets its input
    as one); a flood there is refused at load time, naming the case."""
    flooded = json.loads(flood("set"))
    for key in ("input", "expected"):
        case = {
            "id": "c1",
            "input": [1],
            "expected": 1,
            key: [flooded] if key == "input" else flooded,
        }
        with pytest.raises(judge.BadCase, match=r"case 'c1': .*share one hash value"):
            judge.check_case(case, 0, custom_file=False)


def test_the_controller_never_hashes_a_runner_case_id_that_is_not_a_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The host reads the runner's report too (a transform task's outputs): its case ids are
    hostile JSON, and a dict of thousands of colliding int ids would cost quadratic time."""
    from assay._internal.tiers.strict import grade as strict
    from assay._internal.tiers.strict import runner_report

    report = {"cases": [{"id": CInt(k * P), "status": "ok", "output_b64": ""} for k in range(N)]}
    monkeypatch.setattr(runner_report, "loads_strict", lambda raw, max_bytes: report)
    Work.hashes = Work.eqs = 0
    out = strict.transform_outputs(None, b"{}", [{"id": "c0"}], 1 << 20)  # type: ignore[arg-type]
    assert isinstance(out, bytes)
    assert Work.hashes == 0 and Work.eqs == 0


def _key_chars(v: Any) -> int:
    """Characters of equality keys a decoded value holds, over all its sets and dicts."""
    if isinstance(v, (list, tuple)):
        return sum(map(_key_chars, v))
    if isinstance(v, V.Set):
        return sum(map(len, v.keys)) + sum(map(_key_chars, v.items))
    if isinstance(v, V.Dict):
        return sum(map(len, v.keys)) + sum(_key_chars(k) + _key_chars(x) for k, x in v.pairs)
    return 0


@pytest.mark.parametrize("inner", ["ints", "floats", "big-floats", "strings"])
def test_equality_keys_stay_near_the_size_of_the_output(inner: str) -> None:
    """A frozenset's key is a fixed-size digest: 60 frozensets around 5,000 elements hold about
    the elements' keys once, not 60 times; a float's key stays short even when its int is not
    (1e300 as an int has 250 hex digits)."""
    elems: list[Any] = {
        "ints": list(range(5000)),
        "floats": [k + 0.5 for k in range(5000)],
        "big-floats": [float(k) * 1e300 for k in range(1, 5001)],
        "strings": [f"s{k}" for k in range(5000)],
    }[inner]
    doc: Any = {"$frozenset": elems}
    for _ in range(59):
        doc = {"$frozenset": [doc]}
    raw = json.dumps({"$set": [doc]}, separators=(",", ":")).encode()
    decoded = V.decode_data(V.parse_json(raw, 1 << 22))
    assert _key_chars(decoded) <= 6 * len(raw)
    assert len({len(k) for k in decoded.keys}) == 1 and len(decoded.keys[0]) == 33
