"""Issue 36, items 4 and 5. A hostile dataset row costs work linear in its bytes and is refused
with a named reason before the structures it would size are built, and InlineTasks never holds
its lock while a row is built; one bad row (a decoder's error, a bug, a failed write) is that
row's refusal in import-report.json, never the end of an import nor a task half-written."""

from __future__ import annotations

import base64
import errno
import json
import os
import pickle
import shutil
import struct
import threading
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay import InlineTasks
from assay._internal.importers import (
    apps,
    harbor,
    humaneval,
    livecodebench,
    safepickle,
    stdio_task,
    swebench,
)
from assay._internal.importers.stdio_task import MAX_ARGS, MAX_SAME_HASH, read_rows, run_import
from assay._internal.model.task import load_task
from assay.cli import main
from assay.errors import EngineUnavailableError, TaskError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "datasets"
LCB_ROWS = [
    json.loads(line) for line in (FIXTURES / "livecodebench.jsonl").read_text().splitlines()
]
HARBOR_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "harbor"
P61 = (1 << 61) - 1  # CPython hashes an int as its value mod this: k * P61 all hash to 0
LIVENESS = 60.0
"""Seconds a thread gets before the test calls it stuck: a guard against hanging the suite
when the behaviour is broken, never a measure of speed (no assertion compares times)."""


def colliding_keys(n: int, per_hash: int = 0) -> list[int]:
    """n ints; all of one hash when `per_hash` is 0, else `per_hash` of each hash value."""
    if not per_hash:
        return [k * P61 for k in range(1, n + 1)]
    return [(i % per_hash + 1) * P61 + i // per_hash for i in range(n)]


def function_row(arg: dict[str, Any], problem_id: int = 1) -> dict[str, Any]:
    io = {"fn_name": "f", "inputs": [[arg]], "outputs": [1]}
    return {"problem_id": problem_id, "question": "q", "input_output": json.dumps(io)}


def import_rows(tmp_path: Path, source: str, rows: list[Any]) -> list[stdio_task.Outcome]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    convert = {"apps": apps.convert_apps, "livecodebench": livecodebench.convert}[source]
    return run_import(source, read_rows(path), convert, tmp_path / "out")


def leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith("."))


class CountingInt(int):
    """An int that counts its == calls: each dict insert calls it once per key of the same
    hash it probes, so the count is the work a dict of these keys cost, without a clock."""

    eqs = 0

    def __eq__(self, other: object) -> bool:
        CountingInt.eqs += 1
        return int.__eq__(self, other)

    __hash__ = int.__hash__


# ---------------------------------------------------------------------------------------------
# Item 4: bounded work on hostile rows
# ---------------------------------------------------------------------------------------------


def test_the_hostile_keys_collide_as_the_attack_needs() -> None:
    keys = colliding_keys(1000)
    assert len({hash(k) for k in keys}) == 1 and len(set(keys)) == 1000
    spread = colliding_keys(1000, per_hash=MAX_SAME_HASH)
    assert max(sum(1 for k in spread if hash(k) == h) for h in {hash(k) for k in spread}) == 32


def test_int_keys_sharing_a_hash_are_refused_before_the_dict_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """APPS turns an argument dict whose keys read as ints into an int-keyed dict; n keys of
    one hash cost n**2/2 comparisons (3 MB: 108 s, under InlineTasks' lock). Now the row is
    refused naming the flood after at most MAX_SAME_HASH comparisons per key."""
    n = 3000
    monkeypatch.setattr(apps, "int", CountingInt, raising=False)
    CountingInt.eqs = 0
    [outcome] = import_rows(
        tmp_path, "apps", [function_row({str(k): 0 for k in colliding_keys(n)})]
    )
    assert outcome.status == "refused"
    assert outcome.reason == (
        "inputs[0][0]: more than 32 keys share one hash value (a hash-collision flood)"
    )
    assert CountingInt.eqs <= MAX_SAME_HASH * n  # n**2/2 = 4.5 million before the fix
    report = json.loads((tmp_path / "out" / "import-report.json").read_text())
    assert report["rows"][0]["reason"] == outcome.reason


def test_int_keys_at_the_bound_are_kept_and_cost_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """32 keys per hash value is what the judge itself accepts: the task is written, its
    input an int-keyed dict as APPS makes it, and every insert compared at most 32 keys."""
    n = 3200
    keys = colliding_keys(n, per_hash=MAX_SAME_HASH)
    monkeypatch.setattr(apps, "int", CountingInt, raising=False)
    CountingInt.eqs = 0
    [outcome] = import_rows(tmp_path, "apps", [function_row({str(k): k % 7 for k in keys})])
    assert outcome.status == "written", outcome.reason
    assert CountingInt.eqs <= MAX_SAME_HASH * n
    [case] = json.loads((tmp_path / "out" / "apps-1" / "judge" / "cases.json").read_text())
    pairs = case["input"][0]["$dict"]
    assert len(pairs) == n and {k for k, _ in pairs} == set(keys)
    load_task(tmp_path / "out" / "apps-1")


def test_a_key_past_the_int_digit_limit_is_not_converted() -> None:
    """APPS's int() raises past 4300 digits, so the dict keeps its str keys; with the limit
    lifted, int() of a long key is quadratic in its digits, so it is never called on one."""
    long_key = "9" * 5000
    assert apps.int_keys([{long_key: 1, "2": 2}], 1) == ([{long_key: 1, "2": 2}], 1)


def test_counts_are_refused_before_the_cases_are_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    real = apps.function_case

    def counting(cid: str, args: Any, expected: Any) -> dict[str, Any]:
        built.append(cid)
        return real(cid, args, expected)

    monkeypatch.setattr(apps, "function_case", counting)
    io = {"fn_name": "f", "inputs": [[1]] * 2001, "outputs": [1] * 2001}
    row = {"problem_id": 1, "question": "q", "input_output": json.dumps(io)}
    [outcome] = import_rows(tmp_path / "tests", "apps", [row])
    assert outcome.reason == "more than 2000 tests" and built == []
    io = {"fn_name": "f", "inputs": [[0] * (MAX_ARGS + 1)], "outputs": [1]}
    row = {"problem_id": 2, "question": "q", "input_output": json.dumps(io)}
    [outcome] = import_rows(tmp_path / "args", "apps", [row])
    assert outcome.reason == f"more than {MAX_ARGS} arguments in inputs[0]" and built == []


def test_call_arguments_as_lines_are_counted_before_they_are_parsed(tmp_path: Path) -> None:
    """verl's and LiveCodeBench's call-based input is one JSON document per line: a million
    lines were a million parses (1 MB: 3.9 s) and became a call with a million arguments."""
    lines = "\n".join(["1"] * (MAX_ARGS + 1))
    io = {"fn_name": "f", "inputs": [lines], "outputs": ["1"]}
    verl = {"ground_truth": json.dumps(io), "question": "q", "extra_info": {"index": 3}}
    [outcome] = import_rows(tmp_path / "verl", "apps", [verl])
    assert outcome.reason == f"more than {MAX_ARGS} arguments (lines) in inputs[0]"
    tests = [{"input": lines, "output": "1", "testtype": "functional"}]
    lcb = {**LCB_ROWS[2], "public_test_cases": json.dumps(tests), "private_test_cases": ""}
    [outcome] = import_rows(tmp_path / "lcb", "livecodebench", [lcb])
    assert outcome.reason == f"more than {MAX_ARGS} arguments (lines) in test public-1 input"
    with pytest.raises(stdio_task.Refused, match="longer than"):
        apps.verl_case("1" * (stdio_task.MAX_FIELD_BYTES + 1), "1", 0)
    ok = {**io, "inputs": ["\n".join(["1"] * MAX_ARGS)]}
    [outcome] = import_rows(tmp_path / "ok", "apps", [{**verl, "ground_truth": json.dumps(ok)}])
    assert outcome.status == "written", outcome.reason


def test_an_inline_hostile_row_is_a_task_error_naming_the_flood() -> None:
    io = {"fn_name": "f", "inputs": [[{str(k): 0 for k in colliding_keys(2000)}]], "outputs": [1]}
    tasks = InlineTasks()
    try:
        with pytest.raises(TaskError, match=r"inputs\[0\]\[0\]: more than 32 keys share one"):
            tasks.task(io)
        # A lone surrogate (JSON's "\ud800") is the row's fault: a TaskError, no other error.
        with pytest.raises(TaskError, match="not-utf8"):
            tasks.task('{"inputs": ["\ud800"], "outputs": ["1"]}')
    finally:
        tasks.close()


HONEST = {"inputs": ["1 2\n"], "outputs": ["3\n"]}


def test_a_row_being_built_delays_no_inline_request_for_other_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hostile row's build is held open (as a slow one would be) while an honest request
    for other tests is made: that one completes while the hostile build is still running, and
    a second request for the hostile row waits for the same build rather than starting one."""
    hostile = json.dumps(
        {"fn_name": "f", "inputs": [[{str(k): 0 for k in colliding_keys(500)}]], "outputs": [1]}
    )
    started, release = threading.Event(), threading.Event()
    builds: list[str] = []
    real_build = apps.build

    def build(row: dict[str, Any], io: dict[str, Any], verl: bool, tid: str, source: str) -> Any:
        if row.get("input_output") == hostile:
            builds.append(tid)
            started.set()
            release.wait(LIVENESS)
        return real_build(row, io, verl, tid, source)

    monkeypatch.setattr(apps, "build", build)
    tasks = InlineTasks()
    refusals: list[BaseException] = []

    def hostile_request() -> None:
        try:
            tasks.task(hostile)
        except TaskError as exc:
            refusals.append(exc)

    first = threading.Thread(target=hostile_request, daemon=True)
    second = threading.Thread(target=hostile_request, daemon=True)
    honest_done = threading.Event()
    made: list[Any] = []

    def honest_request() -> None:
        made.append(tasks.task(HONEST))
        honest_done.set()

    try:
        first.start()
        assert started.wait(LIVENESS), "the hostile build never started"
        second.start()
        honest = threading.Thread(target=honest_request, daemon=True)
        honest.start()
        finished_first = honest_done.wait(LIVENESS)
        hostile_still_building = first.is_alive() and second.is_alive()
    finally:
        release.set()
        first.join(LIVENESS)
        second.join(LIVENESS)
        tasks.close()
    assert finished_first, "the honest request waited for the hostile row's build"
    assert hostile_still_building
    assert made[0].config.stdio is not None
    assert len(builds) == 1  # the second request waited for the first one's build
    assert len(refusals) == 2
    assert all("hash-collision flood" in str(r) for r in refusals)


# ---------------------------------------------------------------------------------------------
# Item 5: the pickle decoder raises only its own error
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "opcode"),
    [
        (b"I-+5\n.", "INT"),
        (b"I+-5\n.", "INT"),
        (b"I5_0\n.", "INT"),
        (b"I\xd9\xa3\n.", "INT"),  # an Arabic-Indic digit: isdigit() says yes, int() no
        (b"L--5L\n.", "LONG"),
        (b"L5LL\n.", "LONG"),
        (b"V\\u12\n.", "UNICODE"),
        (b"V\\U0001\n.", "UNICODE"),
    ],
)
def test_text_opcodes_that_escaped_are_refused(payload: bytes, opcode: str) -> None:
    with pytest.raises(safepickle.PickleRefused) as err:
        safepickle.loads(payload, max_bytes=1 << 10)
    assert err.value.opcode == opcode


def test_text_opcodes_still_read_what_pickle_writes() -> None:
    for value in (0, -5, 2**70, -(2**70), "a\\u00e9\u20ac\U0001f600\n"):
        assert safepickle.loads(pickle.dumps(value, protocol=0), max_bytes=1 << 10) == value
    assert safepickle.loads(b"I+5\n.", max_bytes=64) == 5
    assert safepickle.loads(b"L5L\n.", max_bytes=64) == 5
    assert safepickle.loads(b"I01\n.", max_bytes=64) is True


def _flood_pickle(keys: list[int]) -> bytes:
    body = b"".join(b"\x8a" + bytes([(k.bit_length() + 8) // 8]) +
                    k.to_bytes((k.bit_length() + 8) // 8, "little", signed=True) + b"K\x00"
                    for k in keys)  # fmt: skip
    return b"\x80\x04}(" + body + b"u."


def test_a_pickled_dict_of_colliding_keys_is_refused() -> None:
    """Before: 40,000 such keys (560 KB of pickle) decoded in 14 s; a 64 MiB pickle, hours."""
    with pytest.raises(safepickle.PickleRefused, match="hash-collision flood") as err:
        safepickle.loads(_flood_pickle(colliding_keys(40_000)), max_bytes=1 << 26)
    assert err.value.opcode == "SETITEMS"
    at_bound = colliding_keys(3200, per_hash=safepickle.MAX_SAME_HASH)
    decoded = safepickle.loads(_flood_pickle(at_bound), max_bytes=1 << 26)
    assert decoded == dict.fromkeys(at_bound, 0)
    # The same key set again replaces its value: not counted as another colliding key.
    again = b"\x80\x04}(" + b"K\x07K\x00" * 100 + b"u."
    assert safepickle.loads(again, max_bytes=1 << 12) == {7: 0}


# A pickle is a program: random bytes rarely get past the first opcode, so the examples are
# opcode sequences, each with arguments of its own shape (text lines of signs, digits and
# escapes; fixed-size and length-prefixed binary, lengths sometimes lying), plus mutations of
# real pickles of every protocol. Against the decoder of 3f56704 this finds the ValueError and
# the UnicodeDecodeError of issue 36 within a few hundred examples.
_LINE_OPS = b"IFLVgpSP"
_FIXED = {b"J": 4, b"K": 1, b"M": 2, b"G": 8, b"q": 1, b"h": 1, b"r": 4, b"j": 4, b"\x80": 1,
          b"\x95": 8, b"\x82": 1}  # fmt: skip
_SIZED = {b"\x8c": "<B", b"X": "<I", b"\x8d": "<Q", b"C": "<B", b"B": "<I", b"\x8e": "<Q",
          b"\x8a": "<B", b"\x8b": "<i"}  # fmt: skip
_BARE = b"().0N\x88\x89]lae)t\x85\x86\x87}dsu\x94R\x93bco\x81\x8f\x97"
_LINE_ARG = st.one_of(
    st.from_regex(rb"[+-]{0,3}[0-9]{0,4}[L_ ]?", fullmatch=True),
    st.from_regex(rb"[0-9.eE+-]{0,6}|nan|inf", fullmatch=True),
    st.from_regex(
        rb"([a-z]|\\u[0-9a-f]{0,4}|\\U[0-9a-f]{0,8}|\\x[0-9a-f]{0,2}|\\)*", fullmatch=True
    ),
    st.binary(max_size=8),
)
_SEEDS = sorted(
    {
        pickle.dumps(v, protocol=p)
        for p in range(6)
        for v in (
            ["text", "ünï", 0, -1, 2**31, -(2**70), 1.5, True, None, [1, (2, "3")]],
            {"k": [1, 2], 7: "x", 1.5: None},
            "x" * 300,
        )
    }
)


@st.composite
def _token(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["line", "fixed", "sized", "bare"]))
    if kind == "line":
        op = bytes([draw(st.sampled_from(list(_LINE_OPS)))])
        return op + draw(_LINE_ARG).replace(b"\n", b"") + b"\n"
    if kind == "fixed":
        op = draw(st.sampled_from(sorted(_FIXED)))
        return op + draw(st.binary(min_size=_FIXED[op], max_size=_FIXED[op]))
    if kind == "sized":
        op = draw(st.sampled_from(sorted(_SIZED)))
        payload = draw(st.binary(max_size=8))
        fmt = _SIZED[op]
        n = draw(st.one_of(st.just(len(payload)), st.integers(0, 300), st.integers(-3, -1)))
        n = n if fmt == "<i" else max(0, min(n, 255 if fmt == "<B" else n))
        return op + struct.pack(fmt, n) + payload
    return bytes([draw(st.sampled_from(list(_BARE)))])


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(_SEEDS)))
    edits = st.tuples(st.sampled_from(["set", "insert", "delete"]), st.integers(0, 1 << 12),
                      st.integers(0, 255))  # fmt: skip
    for op, pos, value in draw(st.lists(edits, min_size=1, max_size=6)):
        pos %= len(data) + 1
        if op == "insert":
            data.insert(pos, value)
        elif data and op == "set":
            data[min(pos, len(data) - 1)] = value
        elif data:
            del data[min(pos, len(data) - 1)]
    return bytes(data)


_PICKLES = st.one_of(
    st.lists(_token(), min_size=1, max_size=5).map(lambda ts: b"".join(ts) + b"."),
    _mutated(),
    st.binary(max_size=64),
)


@settings(
    max_examples=int(os.environ.get("ASSAY_PICKLE_EXAMPLES", "1500")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(_PICKLES)
def test_malformed_pickles_raise_only_pickle_refused(data: bytes) -> None:
    try:
        safepickle.loads(data, max_bytes=1 << 16)
    except safepickle.PickleRefused:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=256))
def test_malformed_zlib_raises_only_pickle_refused(data: bytes) -> None:
    try:
        safepickle.inflate(data, max_bytes=1 << 16)
    except safepickle.PickleRefused:
        pass


# ---------------------------------------------------------------------------------------------
# Item 5: one bad row is that row's refusal
# ---------------------------------------------------------------------------------------------


def lcb_packed(payload: bytes) -> str:
    return base64.b64encode(zlib.compress(payload)).decode()


def test_a_bad_pickle_row_refuses_that_row_and_the_import_goes_on(tmp_path: Path) -> None:
    """Before: `I-+5` raised ValueError out of the import (exit 3), no report, and the rows
    after it lost."""
    honest = LCB_ROWS[0]
    rows = [
        honest,
        {**LCB_ROWS[1], "question_id": "bad_int", "private_test_cases": lcb_packed(b"I-+5\n.")},
        {**LCB_ROWS[1], "question_id": "bad_uni", "private_test_cases": lcb_packed(b"V\\u12\n.")},
        LCB_ROWS[1],
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["import", "livecodebench", str(path), "--out", str(out)])
    assert result.exit_code == 1, result.output  # some row refused (docs/tasks.md, README)
    report = json.loads((out / "import-report.json").read_text())
    got = [(r["id"], r["status"]) for r in report["rows"]]
    assert got == [("lcb-abc999_a", "written"), ("lcb-bad_int", "refused"),
                   ("lcb-bad_uni", "refused"), ("lcb-1999_a", "written")]  # fmt: skip
    assert "INT: not a bounded decimal integer" in report["rows"][1]["reason"]
    assert "UNICODE: a bad \\u escape" in report["rows"][2]["reason"]
    assert sorted(p.name for p in out.iterdir()) == [
        "import-report.json", "lcb-1999_a", "lcb-abc999_a"
    ]  # fmt: skip


def test_an_unexpected_exception_refuses_its_row_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = livecodebench.build

    def build(row: dict[str, Any], task_id: str) -> Any:
        if task_id == "lcb-abc999_a":
            raise KeyError("a bug's own message")
        return real(row, task_id)

    monkeypatch.setattr(livecodebench, "build", build)
    outcomes = import_rows(tmp_path, "livecodebench", LCB_ROWS[:2])
    assert [o.status for o in outcomes] == ["refused", "written"]
    assert outcomes[0].task_id == "lcb-abc999_a"
    reason = outcomes[0].reason or ""
    assert reason.startswith("internal error: KeyError: ") and "a bug" in reason
    report = json.loads((tmp_path / "out" / "import-report.json").read_text())
    assert report["counts"]["refused: internal error: KeyError"] == 1


def test_a_row_that_fails_to_parse_unexpectedly_is_refused_and_the_file_read_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = stdio_task.loads_strict

    def loads(raw: bytes, **kw: Any) -> Any:
        if b"abc999_a" in raw:
            raise MemoryError("row too big for this machine")
        return real(raw, **kw)

    monkeypatch.setattr(stdio_task, "loads_strict", loads)
    outcomes = import_rows(tmp_path, "livecodebench", LCB_ROWS[:2])
    assert [o.status for o in outcomes] == ["refused", "written"]
    assert outcomes[0].reason == "internal error: MemoryError: 'row too big for this machine'"


def test_a_write_that_fails_half_way_leaves_no_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def full_disk(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        if ".lcb-abc999_a." in str(path) and str(path).endswith("tests.json"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", full_disk)
    outcomes = import_rows(tmp_path, "livecodebench", LCB_ROWS[:2])
    assert [o.status for o in outcomes] == ["refused", "written"]
    assert outcomes[0].reason is not None
    assert outcomes[0].reason.startswith("internal error: OSError: ")
    assert outcomes[0].task_id == "lcb-abc999_a"
    out = tmp_path / "out"
    assert not (out / "lcb-abc999_a").exists() and leftovers(out) == []


def test_a_failed_rewrite_keeps_the_earlier_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import_rows(tmp_path, "livecodebench", LCB_ROWS[:1])
    before = (tmp_path / "out" / "lcb-abc999_a" / "judge" / "tests.json").read_bytes()
    real_rename = Path.rename

    def rename(self: Path, target: Any) -> Any:
        if self.name.endswith(".tmp") and Path(target).name == "lcb-abc999_a":
            raise OSError(errno.EIO, "I/O error")
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    [outcome] = import_rows(tmp_path, "livecodebench", LCB_ROWS[:1])
    assert outcome.status == "refused" and "OSError" in (outcome.reason or "")
    assert (tmp_path / "out" / "lcb-abc999_a" / "judge" / "tests.json").read_bytes() == before
    assert leftovers(tmp_path / "out") == []


def _problem(n: int) -> dict[str, Any]:
    return {"task_id": f"HumanEval/{n}", "prompt": "def f(x):\n", "entry_point": "f",
            "canonical_solution": "    return x\n", "test": ""}  # fmt: skip


def test_humaneval_one_problem_failing_is_its_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [{"id": "L1", "input": [1], "expected": 1}]

    def probe(problem: dict[str, Any], timeout: float = 0) -> dict[str, Any]:
        if problem["task_id"] == "HumanEval/1":
            raise RuntimeError("probe crashed")
        return {"cases": cases}

    real_write = humaneval._write_files

    def write(root: Path, problem: dict[str, Any], probed: dict[str, Any], n: int) -> None:
        real_write(root, problem, probed, n)
        if n == 2:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(humaneval, "probe", probe)
    monkeypatch.setattr(humaneval, "_write_files", write)
    out = tmp_path / "out"
    results = humaneval.import_humaneval(out, problems=[_problem(n) for n in range(4)])
    assert [r.task_dir is not None for r in results] == [True, False, False, True]
    assert results[1].reason == "internal error: RuntimeError: 'probe crashed'"
    assert results[2].reason.startswith("internal error: OSError: ")
    report = json.loads((out / "import-report.json").read_text())
    assert sorted(report["not_converted"]) == ["HumanEval/1", "HumanEval/2"]
    assert sorted(p.name for p in out.iterdir()) == [
        "humaneval-0", "humaneval-3", "import-report.json"
    ]  # fmt: skip
    load_task(out / "humaneval-3")


def test_humaneval_a_probe_answer_of_the_wrong_shape_is_a_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Done:
        returncode = 0
        stderr = ""

        def __init__(self, stdout: str) -> None:
            self.stdout = stdout

    for stdout, why in (("[1, 2]", "probe exited 0"), ('{"cases": 5}', "no list of cases"),
                        ('{"cases": [], "custom": 3}', "not text")):  # fmt: skip
        monkeypatch.setattr(humaneval.subprocess, "run", lambda *a, _o=stdout, **k: Done(_o))
        assert why in humaneval.probe(_problem(0))["error"]


def test_harbor_one_task_failing_is_its_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    for name in ("greet", "csv-total"):
        shutil.copytree(HARBOR_EXAMPLES / name, src / name)
    real_copy = harbor._copy_file

    def copy(a: Path, b: Path) -> None:
        if b.name == "instruction.md" and "csv-total" in str(b):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_copy(a, b)

    monkeypatch.setattr(harbor, "_copy_file", copy)
    out = tmp_path / "out"
    results = harbor.import_tree(src, out)
    by_id = {r.task_id: r for r in results}
    assert by_id["greet"].refusal is None
    assert str(by_id["csv-total"].refusal).startswith("internal error: OSError: ")
    assert sorted(p.name for p in out.iterdir()) == ["greet"]  # no csv-total half-written


def test_swebench_one_instance_failing_is_its_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a row and converting it each refuse only that instance; an engine that does not
    answer is no instance's fault and still ends the import (exit 3)."""

    def from_row(row: dict[str, Any]) -> Any:
        if row["instance_id"] == "a__b-1":
            raise RuntimeError("parser bug")
        return SimpleNamespace(instance_id=row["instance_id"])

    def convert(inst: Any, out: Path, has_image: Any, runner: Any) -> swebench.Result:
        if inst.instance_id == "a__b-2":
            raise OSError(errno.ENOSPC, "No space left on device")
        return swebench.Result(source="", instance_id=inst.instance_id, task_id="a__b-3")

    monkeypatch.setattr(swebench, "instance_from_row", from_row)
    monkeypatch.setattr(swebench, "convert", convert)
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"instance_id": f"a__b-{n}"}) + "\n" for n in (1, 2, 3)))
    results = swebench.import_swebench(path, tmp_path / "out", lambda ref: True)
    reasons = [r.reason or "" for r in results]
    assert reasons[0] == "internal error: RuntimeError: 'parser bug'"
    assert reasons[1].startswith("internal error: OSError: ") and reasons[2] == ""

    def no_engine(inst: Any, out: Path, has_image: Any, runner: Any) -> swebench.Result:
        raise EngineUnavailableError("no engine answers")

    monkeypatch.setattr(swebench, "convert", no_engine)
    with pytest.raises(EngineUnavailableError):
        swebench.import_swebench(path, tmp_path / "out2", lambda ref: True)
