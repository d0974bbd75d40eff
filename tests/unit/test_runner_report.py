"""The runner's `assay-runner/1` report has one shape: the runner that writes it, the in-container
judge that reads it with its own reader (it imports nothing of assay) and the host's reader
(`tiers/strict/runner_report.py`) are held to the host module's field set, statuses and limits.
The runner and the judge are read as source, so a field or status added to one of them alone
fails here. Also the candidate run's probe (`tiers/strict/candidate.py`) on the fake runtime."""

from __future__ import annotations

import ast
import base64
import json
from pathlib import Path
from typing import Any

import pytest

from assay._incontainer import judge, runner
from assay._internal.runtime import ContainerSpec, Limits, RuntimeError_, base
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.runtime.scope import GradingScope
from assay._internal.tiers.strict import candidate
from assay._internal.tiers.strict import runner_report as rr

RUNNER_SRC = ast.parse(Path(runner.__file__).read_text(encoding="utf-8"))
JUDGE_SRC = ast.parse(Path(judge.__file__).read_text(encoding="utf-8"))


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keys(node: ast.Dict) -> set[str]:
    return {k for k in map(_str, node.keys) if k is not None}


def _assigned(tree: ast.AST, name: str) -> set[str]:
    """Every string constant assigned to `name`, alone or in a tuple assignment."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == name:
                found.add(_str(node.value) or "")
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                for t, v in zip(target.elts, node.value.elts, strict=True):
                    if isinstance(t, ast.Name) and t.id == name:
                        found.add(_str(v) or "")
    return found - {""}


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    (fn,) = (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return fn


def test_the_runner_writes_the_report_the_host_reads() -> None:
    tops = [n for n in ast.walk(RUNNER_SRC) if isinstance(n, ast.Dict) and "runner" in _keys(n)]
    assert [(_keys(n), _str(n.values[0])) for n in tops] == [(rr.REPORT_FIELDS, rr.RUNNER_ID)]
    (case,) = (n for n in ast.walk(RUNNER_SRC) if isinstance(n, ast.Dict) and "status" in _keys(n))
    assert _keys(case) == rr.CASE_FIELDS
    added = {
        _str(n.slice)
        for n in ast.walk(RUNNER_SRC)
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
    }
    assert rr.STDERR_FIELD in added


def test_the_runner_reports_exactly_the_statuses_the_host_knows() -> None:
    # run_one's first result is a status too ("error": a program it could not start).
    returned = {
        _str(n.value.elts[0])
        for n in ast.walk(_function(RUNNER_SRC, "run_one"))
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)
    }
    assert (_assigned(RUNNER_SRC, "status") | returned) - {None} == rr.STATUSES


def test_the_runner_names_exactly_the_limits_the_host_knows() -> None:
    named = _assigned(RUNNER_SRC, "limit") - {"time"}  # a timeout is its own status
    assert named | set(runner.CGROUP_COUNTERS) == rr.LIMITS
    assert runner.MAX_CASES_BYTES == candidate.RUNNER_CASES_BYTES


def test_the_judge_reads_the_fields_and_statuses_the_host_knows() -> None:
    read = set()
    for n in ast.walk(JUDGE_SRC):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "rc":
            read.add(_str(n.slice))
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "get"
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "rc"
        ):
            read.add(_str(n.args[0]))
    assert read == rr.CASE_FIELDS  # a grading never asks for stderr
    compared = {
        _str(c)
        for n in ast.walk(JUDGE_SRC)
        if isinstance(n, ast.Compare) and isinstance(n.left, ast.Name) and n.left.id == "rstatus"
        for c in n.comparators
    }
    assert compared == rr.STDIO_STATUSES
    assert judge.STDIO_LIMITS == rr.LIMITS


def _case(status: str, limit: str | None = None, **over: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": "run", "signal": None, "status": status, "limit": limit, "exit_code": None,
        "duration_s": 0.5, "output_b64": "", "stderr_b64": "",
    }  # fmt: skip
    return case | over


CONSISTENT = {
    "ok": _case("ok", exit_code=0),
    "timeout": _case("timeout", "time"),
    "limit": _case("limit", "memory"),
    "residue": _case("residue", "processes,/tmp"),
    "error": _case("error"),
    "crash": _case("crash", exit_code=1),
}


@pytest.mark.parametrize("status", sorted(rr.STATUSES))
def test_the_host_and_the_judge_accept_the_same_stdio_statuses(status: str) -> None:
    assert set(CONSISTENT) == rr.STATUSES
    raw = json.dumps({"runner": rr.RUNNER_ID, "cases": [CONSISTENT[status]]}).encode()
    judged = judge.stdio_runner_failure(CONSISTENT[status])
    if status in rr.STDIO_STATUSES:
        assert rr.read_case(raw, "run", 100).status == status
        assert judged is None or judged[1] != "runner:invalid-output"
    else:
        with pytest.raises(rr.UnreadableReport):
            rr.read_case(raw, "run", 100)
        assert judged == ("error", "runner:invalid-output")


@pytest.mark.parametrize("limit", sorted(rr.LIMITS | {"time", "processes"}))
def test_the_host_and_the_judge_accept_the_same_limits(limit: str) -> None:
    raw = json.dumps({"runner": rr.RUNNER_ID, "cases": [_case("limit", limit)]}).encode()
    judged = judge.stdio_runner_failure(_case("limit", limit))
    if limit in rr.LIMITS:
        assert rr.read_case(raw, "run", 100).limit == limit
        assert judged == ("limit", f"limit:{limit}")
    else:
        with pytest.raises(rr.UnreadableReport):
            rr.read_case(raw, "run", 100)
        assert judged == ("error", "runner:invalid-output")


def test_a_residue_names_its_places_processes_first() -> None:
    raw = json.dumps({"runner": rr.RUNNER_ID, "cases": [CONSISTENT["residue"]]}).encode()
    assert rr.read_case(raw, "run", 100).places == (rr.PROCESSES, "/tmp")


def test_ok_outputs_keeps_ok_cases_by_string_id_and_reads_nothing_else() -> None:
    cases = [
        {"id": "a", "status": "ok", "output_b64": "eA=="},
        {"id": "b", "status": "limit", "output_b64": ""},
        {"id": 3, "status": "ok", "output_b64": ""},
        {"id": "c", "status": "ok"},
    ]
    raw = json.dumps({"runner": rr.RUNNER_ID, "cases": cases}).encode()
    assert rr.ok_outputs(raw) == {"a": "eA==", "c": None}
    for bad in (b"", b"[]", b'{"cases": 1}', b'{"cases": [1]}', b'{"cases": [{"status": "ok"}]}'):
        assert rr.ok_outputs(bad) is None


@pytest.mark.parametrize("text", [None, 7, "é", "!!!!", "eA"])
def test_b64_bytes_refuses_what_is_not_base64(text: object) -> None:
    with pytest.raises(rr.UnreadableReport):
        rr.b64_bytes(text, "output_b64")


def test_b64_bytes_holds_its_cap() -> None:
    assert rr.b64_bytes(base64.b64encode(b"x" * 10).decode(), "k", 10) == b"x" * 10
    with pytest.raises(rr.UnreadableReport):
        rr.b64_bytes(base64.b64encode(b"x" * 11).decode(), "k", 10)


# -- the candidate's run, on the fake runtime ----------------------------------------------


class LateOom(FakeRuntime):
    """A container the runner's program stops, whose OOM kill the engine records late (or,
    with `oom` False, never)."""

    def __init__(self, oom: bool) -> None:
        super().__init__({"python3": self._runner})
        self.oom, self.asked = oom, 0

    @staticmethod
    def _runner(c: FakeContainer, argv: tuple[str, ...], env: Any) -> tuple[int, bytes, bytes]:
        c.state = "exited"
        return 137, b"", b""

    def oom_killed(self, cid: str) -> bool:
        self.asked += 1
        return self.oom and self.asked > 1


def _spec(tmp_path: Path) -> ContainerSpec:
    return candidate.candidate_container(
        "img", "g-runner-report", tmp_path, tmp_path, Limits(1 << 30, 64, 1.0), ("python3",)
    )


def test_a_run_stopped_at_its_memory_limit_names_it_though_the_engine_was_late(
    tmp_path: Path,
) -> None:
    rt = LateOom(oom=True)
    with GradingScope(rt, "g-runner-report") as scope:
        cid = scope.container(_spec(tmp_path), start=False)
        ran = candidate.run_candidate(scope, cid, 10.0, 1 << 20)
    assert ran.stopped and ran.hit == () and ran.late_memory


def test_a_run_stopped_at_no_limit_is_no_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An OOM event that never comes is waited for STOPPED_GRACE_S; the fake has none to lag.
    monkeypatch.setattr(base, "STOPPED_GRACE_S", 0.5)
    rt = LateOom(oom=False)
    with GradingScope(rt, "g-runner-report") as scope:
        cid = scope.container(_spec(tmp_path), start=False)
        with pytest.raises(RuntimeError_, match="stopped during its run at no limit"):
            candidate.run_candidate(scope, cid, 10.0, 1 << 20)


def test_an_honest_run_is_never_probed(tmp_path: Path) -> None:
    rt = FakeRuntime({"python3": lambda c, argv, env: (0, b"{}", b"")})
    rt.wait = None  # type: ignore[assignment,method-assign]  # an exit 0 never asks
    with GradingScope(rt, "g-runner-report") as scope:
        cid = scope.container(_spec(tmp_path), start=False)
        ran = candidate.run_candidate(scope, cid, 10.0, 1 << 20)
    assert (ran.stopped, ran.hit, ran.result.stdout) == (False, (), b"{}")


def test_the_runner_argv_of_each_caller() -> None:
    argv = candidate.runner_command(
        "stdio", 2.0, 100, command=("./main",), cpu_seconds=2.0, keep_stderr=True
    )
    assert argv == (
        "python3", "-I", "/assay/runner.py", "--kind", "stdio", "--case-timeout", "2.0",
        "--output-cap", "100", "--command-json", '["./main"]', "--cpu-seconds", "2.0",
        "--keep-stderr",
    )  # fmt: skip
    assert candidate.runner_deadline(1, 10.0) == 40.0
    assert candidate.runner_deadline(4, 5.0, 30.0) == 30.0
