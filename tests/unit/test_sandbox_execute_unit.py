"""The sandbox's one run without an engine: the runner's report read as hostile bytes and mapped
to a Stage, the compile's result as a Stage, the request's checks, and `execute` on the fake
runtime (refusals before any container, an unreadable report, a build that is refused)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from assay._internal.runtime.base import ExecResult
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.runtime.scope import grading_tempdirs
from assay._internal.sandbox import execute as sx
from assay._internal.sandbox.execute import (
    RunRequest,
    Stage,
    UnreadableReport,
    compile_stage,
    execute,
    report_cap,
    stage_from_report,
)
from assay.errors import EngineError, UsageError

CAP = 1000


def _case(**over: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": "run",
        "signal": None,
        "status": "ok",
        "limit": None,
        "exit_code": 0,
        "duration_s": 0.5,
        "output_b64": base64.b64encode(b"out").decode(),
        "stderr_b64": base64.b64encode(b"err").decode(),
    }
    case.update(over)
    return case


def _report(*cases: dict[str, Any], runner: Any = "assay-runner/1") -> bytes:
    return json.dumps({"runner": runner, "cases": list(cases)}).encode()


def _stage(hit: tuple[str, ...] = (), **over: Any) -> Stage:
    return stage_from_report(_report(_case(**over)), hit, CAP)


# -- the runner's report ----------------------------------------------------------------------


def test_an_ok_case_is_a_finished_stage_with_its_bytes() -> None:
    assert _stage(exit_code=3) == Stage("finished", 3, None, b"out", b"err", 0.5, None)


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({"exit_code": None, "signal": 11}, ("finished", None, 11, None)),
        ({"status": "timeout", "limit": "time", "exit_code": None}, ("timeout", None, None, "time")),
        ({"status": "limit", "limit": "cpu", "exit_code": None}, ("timeout", None, None, "cpu")),
        ({"status": "limit", "limit": "output", "exit_code": None}, ("finished", None, None, "output")),
        ({"status": "limit", "limit": "memory", "exit_code": None, "signal": 9},
         ("finished", None, 9, "memory")),
        ({"status": "limit", "limit": "pids", "exit_code": 1}, ("finished", 1, None, "pids")),
        ({"status": "limit", "limit": "disk", "exit_code": 0}, ("finished", 0, None, "disk")),
        ({"status": "residue", "limit": "/tmp", "exit_code": 0}, ("finished", 0, None, "disk")),
    ],
)  # fmt: skip
def test_each_runner_outcome_maps_to_one_stage(over: dict[str, Any], expected: tuple[Any]) -> None:
    s = _stage(**over)
    assert (s.status, s.exit_code, s.signal, s.limit) == expected
    assert (s.stdout, s.stderr) == (b"out", b"err")


def test_a_limit_the_host_saw_names_the_limit_the_runner_did_not() -> None:
    assert _stage(("pids", "memory")).limit == "memory"
    assert _stage(("pids",)).limit == "pids"
    # the runner's own limit stands: it is the cause it saw first
    assert _stage(("memory",), status="timeout", limit="time", exit_code=None).limit == "time"


def test_a_program_the_runner_could_not_start_finished_with_126() -> None:
    """Its build is no executable: the program's failure, never an engine error."""
    raw = _case(status="error", exit_code=None, stderr_b64=base64.b64encode(b"\x00boom").decode())
    s = stage_from_report(_report(raw), (), CAP)
    assert (s.status, s.exit_code, s.signal, s.limit) == ("finished", 126, None, None)
    assert (s.stdout, s.stderr) == (b"", b"\x00boom")


BIG = 1 << 80
HOSTILE_CASES: dict[str, dict[str, Any]] = {
    "bool exit code": {"exit_code": True},
    "str exit code": {"exit_code": "0"},
    "float exit code": {"exit_code": 0.0},
    "huge exit code": {"exit_code": BIG},
    "negative exit code": {"exit_code": -9},
    "bool signal": {"exit_code": None, "signal": True},
    "signal out of range": {"exit_code": None, "signal": 65},
    "huge signal": {"exit_code": None, "signal": BIG},
    "exit code and signal": {"exit_code": 0, "signal": 9},
    "ok with no exit": {"exit_code": None},
    "ok with a limit": {"limit": "memory"},
    "bool duration": {"duration_s": True},
    "str duration": {"duration_s": "1"},
    "negative duration": {"duration_s": -1},
    "huge duration": {"duration_s": 1e300},
    "huge int duration": {"duration_s": BIG},
    "list status": {"status": ["ok"]},
    "unknown status": {"status": "passed"},
    "crash status": {"status": "crash"},
    "list limit": {"status": "limit", "limit": ["memory"], "exit_code": None},
    "dict limit": {"status": "limit", "limit": {"memory": 1}, "exit_code": None},
    "unknown limit": {"status": "limit", "limit": "time", "exit_code": None},
    "empty limit": {"status": "limit", "limit": "", "exit_code": None},
    "long limit": {"status": "residue", "limit": "/tmp" * 100},
    "residue with no place": {"status": "residue", "limit": None},
    "timeout with an exit code": {"status": "timeout", "limit": "time", "exit_code": 0},
    "timeout with no limit": {"status": "timeout", "limit": None, "exit_code": None},
    "another id": {"id": "run2"},
    "int id": {"id": 1},
    "output not base64": {"output_b64": "!!!!"},
    "output not a string": {"output_b64": None},
    "output base64 without padding": {"output_b64": "b3V"},
    "output over the cap": {"output_b64": base64.b64encode(b"y" * (CAP + 1)).decode()},
    "stderr over the cap": {"stderr_b64": base64.b64encode(b"y" * (CAP + 3)).decode()},
    "stderr a list": {"stderr_b64": ["ZXJy"]},
}


@pytest.mark.parametrize("what", sorted(HOSTILE_CASES))
def test_a_case_field_that_is_not_what_the_runner_writes_is_unreadable(what: str) -> None:
    with pytest.raises(UnreadableReport):
        _stage(**HOSTILE_CASES[what])


@pytest.mark.parametrize("key", sorted(_case()))
def test_a_case_missing_any_field_is_unreadable(key: str) -> None:
    case = _case()
    del case[key]
    with pytest.raises(UnreadableReport):
        stage_from_report(_report(case), (), CAP)


HOSTILE_REPORTS = {
    "empty": b"",
    "not json": b"{",
    "not utf-8": b'{"runner": "\xff"}',
    "nan": _report(_case()).replace(b"0.5", b"NaN"),
    "duplicate key": _report(_case()).replace(b'"exit_code": 0', b'"exit_code": 0, "exit_code": 1'),
    "a list": b"[]",
    "no cases": _report(),
    "two cases": _report(_case(), _case()),
    "cases not a list": json.dumps({"runner": "assay-runner/1", "cases": {"0": _case()}}).encode(),
    "case not an object": _report("run"),  # type: ignore[arg-type]
    "another runner": _report(_case(), runner="assay-runner/2"),
    "extra top key": json.dumps({"runner": "assay-runner/1", "cases": [_case()], "x": 1}).encode(),
    "extra case key": _report(_case(extra=1)),
    "too deep": b"[" * 100 + b"]" * 100,
    "oversize": b" " * (report_cap(CAP) + 1),
}


@pytest.mark.parametrize("what", sorted(HOSTILE_REPORTS))
def test_a_report_that_is_not_one_runner_case_is_unreadable(what: str) -> None:
    with pytest.raises(UnreadableReport):
        stage_from_report(HOSTILE_REPORTS[what], (), CAP)


# -- the compile's result -----------------------------------------------------------------------


def _res(code: int | None = 0, **kw: Any) -> ExecResult:
    base: dict[str, Any] = {"stdout": b"o", "stderr": b"e", "timed_out": False, "truncated": False}
    return ExecResult(exit_code=code, duration_s=1.5, **(base | kw))


@pytest.mark.parametrize(
    ("res", "hit", "expected"),
    [
        (_res(0), [], ("finished", 0, None)),
        (_res(0), ["pids"], ("finished", 0, None)),  # it built all the same
        (_res(1), [], ("finished", 1, None)),
        (_res(1), ["pids"], ("finished", 1, "pids")),
        (_res(1), ["memory", "pids"], ("finished", 1, "memory")),
        (_res(None, timed_out=True), [], ("timeout", None, "time")),
        (_res(None, truncated=True), [], ("finished", None, "output")),
        (_res(None, exited=True), ["memory"], ("finished", None, "memory")),
    ],
)
def test_a_compile_result_is_a_stage_whose_limit_says_why_it_failed(
    res: ExecResult, hit: list[str], expected: tuple[Any]
) -> None:
    s = compile_stage(res, hit)
    assert (s.status, s.exit_code, s.limit) == expected
    assert (s.signal, s.stdout, s.stderr, s.seconds) == (None, b"o", b"e", 1.5)


def test_a_compile_container_that_stopped_at_no_limit_is_an_engine_error() -> None:
    with pytest.raises(EngineError):
        compile_stage(_res(None, exited=True), [])


# -- the request --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"language": "python"},
        {"language": "cobol"},
        {"code": b"print(1)"},
        {"stdin": "text"},
        {"run_timeout": 0},
        {"run_timeout": -1.0},
        {"run_timeout": float("nan")},
        {"run_timeout": float("inf")},
        {"run_timeout": True},
        {"run_timeout": "1"},
        {"compile_timeout": 601},
        {"memory_mb": 8},
        {"memory_mb": 1 << 40},
        {"memory_mb": 256.0},
        {"memory_mb": True},
        {"output_cap": 0},
        {"output_cap": 1 << 40},
    ],
)
def test_a_request_out_of_range_is_a_usage_error(bad: dict[str, Any]) -> None:
    kw: dict[str, Any] = {"language": "python3", "code": "print(1)"} | bad
    with pytest.raises(UsageError):
        RunRequest(**kw)


# -- execute on the fake runtime ----------------------------------------------------------------


def _runner(report: bytes | None = None, oom: bool = False, seen: list[Any] | None = None) -> Any:
    """A fake `python3` that answers the runner's argv with `report` (default: an honest one
    echoing the case's stdin); `seen` gets (argv, cases.json, /candidate files)."""

    def program(c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]) -> Any:
        binds = {b.target: b.source for b in c.spec.binds}
        cases = json.loads((binds["/inputs"] / "cases.json").read_text())
        if seen is not None:
            files = sorted(str(p.relative_to(binds["/candidate"]))
                           for p in binds["/candidate"].rglob("*"))  # fmt: skip
            seen.append((argv, cases, files, c.spec))
        c.oom = oom
        out = base64.b64encode(cases[0]["input"]["stdin"].encode()).decode()
        honest = _report(_case(output_b64=out))
        return 0, honest if report is None else report, b""

    return program


def _gpp(
    code: int = 0, names: tuple[str, ...] = ("main",), oom: bool = False, made: bytes = b"\x7fELF"
) -> Any:
    def program(c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]) -> Any:
        for name in names:
            c.files[f"/build/{name}"] = made
            c.modes[f"/build/{name}"] = 0o755
        c.oom = oom
        return code, b"", b"main.cpp:1:1: error: nope\n" if code else b""

    return program


def _clean(rt: FakeRuntime, gid: str) -> None:
    assert rt.containers == {} and rt.leftovers(gid) == []
    assert grading_tempdirs(gid) == []


@pytest.fixture(autouse=True)
def _private_tmp(private_tempdir: Path) -> None:
    """Every temp dir of a run must be gone at its end (the fixture fails the test if not)."""


def test_a_run_passes_stdin_and_asks_the_runner_for_stderr() -> None:
    seen: list[Any] = []
    rt = FakeRuntime({"python3": _runner(seen=seen)})
    ex = execute(rt, RunRequest("python3", "x", stdin="é\n".encode(), files={"d/a": b"1"}), "b")
    assert ex.run is not None and ex.run.stdout == "é\n".encode()
    argv, cases, files, spec = seen[0]
    assert argv[:3] == ("python3", "-I", "/assay/runner.py") and "--keep-stderr" in argv
    assert argv[argv.index("--command-json") + 1] == '["python3", "main.py"]'
    assert cases == [{"id": "run", "input": {"stdin": "é\n"}}]
    assert files == ["d", "d/a", "main.py"]
    assert spec.switch_user and spec.hardened and spec.limits.pids == sx.RUN_PIDS
    _clean(rt, ex.grading_id)


@pytest.mark.parametrize(
    ("files", "reason"),
    [({"../x": b""}, "firewall:dot-dot"), ({"/etc/x": b""}, "firewall:absolute-path"),
     ({"a\x00b": b""}, "firewall:control-char"), ({"main.py": b""}, "firewall:duplicate"),
     ({"MAIN.py": b""}, "firewall:case-collision"),
     ({"big": b"x" * (sx.MAX_FILES_BYTES + 1)}, "firewall:file-size")],
)  # fmt: skip
def test_files_the_firewall_refuses_start_no_container(
    files: dict[str, bytes], reason: str
) -> None:
    rt = FakeRuntime({"python3": _runner()})
    created: list[Any] = []
    rt.create = lambda spec: created.append(spec)  # type: ignore[method-assign,assignment,return-value]
    ex = execute(rt, RunRequest("python3", "print(1)", files=files), "b")
    assert (ex.refused, ex.compile, ex.run) == (reason, None, None)
    assert created == []
    _clean(rt, ex.grading_id)


def test_stdin_that_is_not_utf8_or_too_large_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    rt = FakeRuntime({"python3": _runner()})
    ex = execute(rt, RunRequest("python3", "x", stdin=b"\xff"), "b")
    assert (ex.refused, ex.run) == ("request:stdin-encoding", None)
    monkeypatch.setattr(sx, "RUNNER_CASES_BYTES", 100)
    ex = execute(rt, RunRequest("python3", "x", stdin=b"y" * 70), "b")
    assert (ex.refused, ex.run) == ("limit:stdin-bytes", None)
    ex = execute(rt, RunRequest("python3", "x", stdin=b"y" * 40), "b")
    assert ex.refused is None and ex.run is not None and ex.run.stdout == b"y" * 40
    _clean(rt, ex.grading_id)


def test_an_unreadable_report_is_an_engine_error_and_leaves_nothing() -> None:
    rt = FakeRuntime({"python3": _runner(report=b'{"runner": "assay-runner/1"}')})
    with pytest.raises(EngineError, match="report cannot be read"):
        execute(rt, RunRequest("python3", "x"), "b")
    assert rt.containers == {} and grading_tempdirs(None) == []


def test_an_unreadable_report_at_the_memory_limit_is_the_programs_doing() -> None:
    rt = FakeRuntime({"python3": _runner(report=b"", oom=True)})
    ex = execute(rt, RunRequest("python3", "x"), "b")
    assert ex.run is not None
    assert (ex.run.status, ex.run.exit_code, ex.run.limit) == ("finished", None, "memory")
    _clean(rt, ex.grading_id)


def test_a_compiled_language_builds_first_and_runs_what_was_built() -> None:
    seen: list[Any] = []
    rt = FakeRuntime({"g++": _gpp(), "python3": _runner(seen=seen)})
    ex = execute(rt, RunRequest("cpp", "int main(){}", files={"in.txt": b"1"}), "b")
    assert ex.compile is not None and (ex.compile.exit_code, ex.compile.limit) == (0, None)
    assert ex.run is not None and ex.refused is None
    argv, _cases, files, spec = seen[0]
    assert files == ["in.txt", "main", "main.cpp"]
    assert argv[argv.index("--command-json") + 1] == '["./main"]'
    assert spec.image == "assay-lang-cpp:latest"
    _clean(rt, ex.grading_id)


def test_a_build_with_no_program_to_run_is_refused_and_runs_nothing() -> None:
    """Issue 36: a compiler that exits 0 leaving an archive as `main` (Rust's crate_type lib,
    Go's `package foo`): the runner could not start it, and the sandbox route named that an
    engine error (no result) though the request's code made it."""
    seen: list[Any] = []
    rt = FakeRuntime({"g++": _gpp(made=b"!<arch>\n"), "python3": _runner(seen=seen)})
    ex = execute(rt, RunRequest("cpp", "int main(){}"), "b")
    assert (ex.refused, ex.run, seen) == ("compile:no-program", None, [])
    assert ex.compile is not None and ex.compile.exit_code == 0
    _clean(rt, ex.grading_id)


@pytest.mark.parametrize(
    ("gpp", "limit"), [(_gpp(code=1), None), (_gpp(code=1, oom=True), "memory")]
)
def test_a_failed_compile_runs_nothing(gpp: Any, limit: str | None) -> None:
    seen: list[Any] = []
    rt = FakeRuntime({"g++": gpp, "python3": _runner(seen=seen)})
    ex = execute(rt, RunRequest("cpp", "int main( {"), "b")
    assert (ex.run, ex.refused, seen) == (None, None, [])
    assert ex.compile is not None and (ex.compile.exit_code, ex.compile.limit) == (1, limit)
    assert b"error: nope" in ex.compile.stderr
    _clean(rt, ex.grading_id)


def test_a_build_the_firewall_refuses_runs_nothing() -> None:
    seen: list[Any] = []
    rt = FakeRuntime({"g++": _gpp(names=("main", "x\x01y")), "python3": _runner(seen=seen)})
    ex = execute(rt, RunRequest("cpp", "int main(){}"), "b")
    assert (ex.run, ex.refused, seen) == (None, "firewall:control-char", [])
    assert ex.compile is not None and ex.compile.exit_code == 0
    _clean(rt, ex.grading_id)
