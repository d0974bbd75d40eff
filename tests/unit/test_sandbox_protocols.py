"""Issue 28: the SandboxFusion (`/run_code`) and Piston (`/api/v2/execute`, `/runtimes`) wire
protocols, as pure mappings onto the execute core (no engine here).

Requests: what is accepted as SandboxFusion/Piston accept it, what is refused and why (hostile
numbers, NaN, bad base64, unknown languages), and that file names reach the firewall untouched.
Responses: every Stage shape, read back by the sandbox-fusion client's own pydantic models and
its `summary_run_code_result`, and the fields verl's sandbox_fusion client reads.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import signal as signal_module
from typing import Any

import pytest
import sandbox_fusion
from pydantic import ValidationError
from sandbox_fusion import RunCodeResponse, SummaryMapping, summary_run_code_result

from assay._internal.sandbox import piston
from assay._internal.sandbox import sandboxfusion as sf
from assay._internal.sandbox.execute import Execution, Stage
from assay._internal.sandbox.sandboxfusion import RequestRefused, ServerLimits

LIMITS = ServerLimits()
VERSIONS = {
    "python3": "3.11.2",
    "c": "12.2.0",
    "cpp": "12.2.0",
    "java": "17.0.12",
    "go": "1.19.8",
    "rust": "1.63.0",
    "javascript": "18.19.0",
}


def stage(
    status: str = "finished",
    exit_code: int | None = 0,
    signal: int | None = None,
    stdout: bytes = b"",
    stderr: bytes = b"",
    seconds: float = 0.25,
    limit: str | None = None,
) -> Stage:
    assert status in ("finished", "timeout")
    return Stage(status, exit_code, signal, stdout, stderr, seconds, limit)  # type: ignore[arg-type]


def execution(
    compile: Stage | None = None, run: Stage | None = None, refused: str | None = None
) -> Execution:
    return Execution("g-test-1", compile, run, refused)


# ---------------------------------------------------------------------------------------------
# SandboxFusion requests


def sf_request(**fields: Any) -> sf.RunCodeRequest:
    body: dict[str, Any] = {"code": "print(1)", "language": "python", **fields}
    return sf.RunCodeRequest.model_validate(body)


def sf_refused(limits: ServerLimits = LIMITS, **fields: Any) -> RequestRefused:
    with pytest.raises(RequestRefused) as caught:
        sf.to_run_request(sf_request(**fields), limits)
    return caught.value


def test_sf_defaults_are_sandboxfusions_with_the_servers_memory_default() -> None:
    req = sf.to_run_request(sf_request(), ServerLimits(default_memory_mb=777, output_cap=12345))
    assert req.language == "python3" and req.code == "print(1)"
    assert req.compile_timeout == 10.0 and req.run_timeout == 10.0
    assert req.memory_mb == 777 and req.output_cap == 12345
    assert req.stdin == b"" and dict(req.files) == {}


def test_sf_accepts_verls_body_as_verl_sends_it() -> None:
    """verl's `call_sandbox_api` body: int timeouts, stdin null, memory 1024, empty files."""
    body = json.loads(
        json.dumps(
            {
                "compile_timeout": 10,
                "run_timeout": 7,
                "code": "x",
                "stdin": None,
                "memory_limit_MB": 1024,
                "language": "python",
                "files": {},
                "fetch_files": [],
            }
        )
    )
    req = sf.to_run_request(sf.RunCodeRequest.model_validate(body), LIMITS)
    assert (req.run_timeout, req.memory_mb, req.stdin) == (7.0, 1024, b"")


def test_sf_accepts_the_sandbox_fusion_clients_body_and_ignores_unknown_fields() -> None:
    client_body = sandbox_fusion.RunCodeRequest(code="print(2)", language="cpp", stdin="5").dict()
    req = sf.to_run_request(
        sf.RunCodeRequest.model_validate({**client_body, "surprise": [1, 2]}), LIMITS
    )
    assert (req.language, req.code, req.stdin) == ("cpp", "print(2)", b"5")


@pytest.mark.parametrize(
    ("theirs", "ours"),
    [
        ("python", "python3"),
        ("cpp", "cpp"),
        ("nodejs", "javascript"),
        ("go", "go"),
        ("java", "java"),
        ("rust", "rust"),
    ],
)
def test_sf_language_names_map_to_assays(theirs: str, ours: str) -> None:
    assert sf.to_run_request(sf_request(language=theirs), LIMITS).language == ours


@pytest.mark.parametrize("name", ["php", "bash", "python2", "pytest", "typescript", "go_test"])
def test_sf_other_sandboxfusion_languages_are_refused_naming_the_supported_ones(name: str) -> None:
    err = sf_refused(language=name)
    assert err.field == "language" and "not supported by assay" in err.message
    assert repr(name) in err.message
    for supported in ("python", "cpp", "nodejs", "go", "java", "rust"):
        assert supported in err.message


@pytest.mark.parametrize("name", ["c", "python3", "Python", "", "x" * 10_000])
def test_sf_unknown_languages_are_refused_with_a_short_message(name: str) -> None:
    err = sf_refused(language=name)
    assert err.message.startswith("unknown language") and "nodejs" in err.message
    assert len(err.message) < 200


@pytest.mark.parametrize(
    "body",
    [{"language": "python"}, {"code": "x"}, {"code": 1, "language": "python"}, {"code": None}],
)
def test_sf_code_and_language_are_required_strings(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        sf.RunCodeRequest.model_validate(body)


def test_sf_stdin_text_becomes_utf8_bytes() -> None:
    assert sf.to_run_request(sf_request(stdin="é 1\n"), LIMITS).stdin == "é 1\n".encode()
    err = sf_refused(stdin="a\ud800b")
    assert err.field == "stdin" and "surrogate" in err.message


def test_sf_files_are_decoded_and_none_or_ignore_marked_entries_skipped() -> None:
    files = {"data/in.txt": "aGVsbG8=", "skip.txt": None, "x_IGNORE_THIS_FILE": "aGk=", "e": ""}
    req = sf.to_run_request(sf_request(files=files), LIMITS)
    assert dict(req.files) == {"data/in.txt": b"hello", "e": b""}


@pytest.mark.parametrize(
    "content", ["aGVsbG8", "aGVsbG8=\n", "aGV sbG8=", "!!!!", "-_-_", "aGVsbG8==", "é"]
)
def test_sf_bad_base64_is_refused(content: str) -> None:
    err = sf_refused(files={"f.txt": content})
    assert err.field == "files" and "base64" in err.message and "'f.txt'" in err.message


def test_sf_file_count_and_size_are_bounded() -> None:
    small = ServerLimits(max_files=2, max_file_bytes=3)
    assert dict(sf.to_run_request(sf_request(files={"a": "YWJj"}), small).files) == {"a": b"abc"}
    assert "maximum of 3 bytes" in sf_refused(small, files={"a": "YWJjZA=="}).message
    assert "maximum of 3 bytes" in sf_refused(small, files={"a": "YWJj" * 1000}).message
    many = {f"f{i}": "" for i in range(3)}
    assert "maximum of 2" in sf_refused(small, files=many).message
    # skipped entries do not count
    assert sf.to_run_request(sf_request(files={**many, "f2": None}), small).files.keys() == {
        "f0",
        "f1",
    }


HOSTILE_NAMES = ["/etc/passwd", "../escape", "a/../../b", "", "./x", "a\x00b", "C:\\x", "~/.ssh"]


@pytest.fixture
def no_path_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing in the mapping may look at the filesystem or resolve a name."""

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"the mapping touched a path: {args}")

    for name in ("realpath", "abspath", "normpath", "exists", "isfile", "join"):
        monkeypatch.setattr(os.path, name, forbidden)
    for name in ("stat", "lstat", "open", "listdir", "scandir"):
        monkeypatch.setattr(os, name, forbidden)
    monkeypatch.setattr(pathlib.Path, "resolve", forbidden)


@pytest.mark.usefixtures("no_path_resolution")
def test_sf_file_names_reach_the_firewall_untouched() -> None:
    files = {name: "eA==" for name in HOSTILE_NAMES}
    req = sf.to_run_request(sf_request(files=files), LIMITS)
    assert list(req.files) == HOSTILE_NAMES and set(req.files.values()) == {b"x"}


def test_sf_fetch_files_is_refused_saying_why() -> None:
    assert sf.to_run_request(sf_request(fetch_files=[]), LIMITS).files == {}
    err = sf_refused(fetch_files=["out.txt"])
    assert err.field == "fetch_files" and "does not outlive the run" in err.message


def test_sf_memory_minus_one_is_the_default_and_limits_are_refused_not_clamped() -> None:
    limits = ServerLimits(default_memory_mb=512, min_memory_mb=16, max_memory_mb=2048)
    assert sf.to_run_request(sf_request(memory_limit_MB=-1), limits).memory_mb == 512
    assert sf.to_run_request(sf_request(memory_limit_MB=2048), limits).memory_mb == 2048
    assert sf.to_run_request(sf_request(memory_limit_MB=16), limits).memory_mb == 16
    for value in (2049, 10**40):
        err = sf_refused(limits, memory_limit_MB=value)
        assert err.field == "memory_limit_MB" and "maximum of 2048" in err.message
    assert "(a huge number)" in sf_refused(limits, memory_limit_MB=10**40).message
    for value in (15, 0, -2, -(10**40)):
        assert "minimum of 16" in sf_refused(limits, memory_limit_MB=value).message


@pytest.mark.parametrize("name", ["compile_timeout", "run_timeout"])
@pytest.mark.parametrize("value", [0, -1, -0.0, math.nan, math.inf, -math.inf, 60.001, 1e300])
def test_sf_bad_timeouts_are_refused(name: str, value: float) -> None:
    err = sf_refused(**{name: value})
    assert err.field == name


def test_sf_nan_and_infinity_from_json_are_refused() -> None:
    # Python's json module (FastAPI's) accepts these non-standard literals.
    for literal in ("NaN", "Infinity", "1e400"):
        body = json.loads(f'{{"code": "x", "language": "python", "run_timeout": {literal}}}')
        with pytest.raises(RequestRefused, match="finite"):
            sf.to_run_request(sf.RunCodeRequest.model_validate(body), LIMITS)


def test_sf_timeouts_up_to_the_servers_maxima_are_kept() -> None:
    limits = ServerLimits(max_run_timeout=30.0, max_compile_timeout=20.0)
    req = sf.to_run_request(sf_request(run_timeout=30, compile_timeout=0.5), limits)
    assert (req.run_timeout, req.compile_timeout) == (30.0, 0.5)
    assert "maximum of 20" in sf_refused(limits, compile_timeout=20.5).message


@pytest.mark.parametrize(
    "fields",
    [
        {"default_memory_mb": 8192},
        {"min_memory_mb": 0},
        {"default_memory_mb": 8, "min_memory_mb": 16},
        {"max_run_timeout": 0.0},
        {"max_compile_timeout": math.nan},
        {"max_files": -1},
    ],
)
def test_server_limits_must_be_consistent(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="ServerLimits"):
        ServerLimits(**fields)


def test_sf_refusal_body_has_fastapis_validation_shape() -> None:
    err = sf_refused(fetch_files=["x"])
    body = sf.refusal(err.message, err.field)
    assert body == {
        "detail": [{"type": "value_error", "loc": ["body", "fetch_files"], "msg": err.message}]
    }
    assert sf.refusal("m")["detail"][0]["loc"] == ["body"]


# ---------------------------------------------------------------------------------------------
# SandboxFusion responses


MAPPING = SummaryMapping(
    Success="success",
    Failed="failed",
    CompileFailed="compile_failed",
    CompileTimeout="compile_timeout",
    RunFailed="run_failed",
    RunTimeout="run_timeout",
)

OK = stage(stdout=b"42\n")
CPP_BUILT = stage(exit_code=0, seconds=1.5)

# (id, execution, top status, compile (status, rc) or None, run (status, rc) or None,
#  the client's summary, the result verl's `_process_single_case` computes from these fields)
SF_CASES: list[tuple[str, Execution, str, Any, Any, str, Any]] = [
    ("exit-0", execution(run=OK), "Success", None, ("Finished", 0), "success", "True/False"),
    (
        "exit-1",
        execution(run=stage(exit_code=1)),
        "Failed",
        None,
        ("Finished", 1),
        "run_failed",
        -2,
    ),
    (
        "segv",
        execution(run=stage(exit_code=None, signal=11)),
        "Failed",
        None,
        ("Finished", -11),
        "run_failed",
        -2,
    ),
    (
        "memory",
        execution(run=stage(exit_code=None, signal=9, limit="memory")),
        "Failed",
        None,
        ("Finished", -9),
        "run_failed",
        -2,
    ),
    (
        "output",
        execution(run=stage(exit_code=None, limit="output")),
        "Failed",
        None,
        ("Finished", -9),
        "run_failed",
        -2,
    ),
    (
        "pids-exit-0",
        execution(run=stage(exit_code=0, limit="pids")),
        "Failed",
        None,
        ("Finished", -9),
        "run_failed",
        -2,
    ),
    (
        "disk-sigxfsz",
        execution(run=stage(exit_code=None, signal=25, limit="disk")),
        "Failed",
        None,
        ("Finished", -9),
        "run_failed",
        -2,
    ),
    (
        "wall-timeout",
        execution(run=stage("timeout", exit_code=None, limit="time", stdout=b"part")),
        "Failed",
        None,
        ("TimeLimitExceeded", None),
        "run_timeout",
        -3,
    ),
    (
        "cpu-limit",
        execution(run=stage(exit_code=None, signal=24, limit="cpu")),
        "Failed",
        None,
        ("TimeLimitExceeded", None),
        "run_timeout",
        -3,
    ),
    (
        "no-status",
        execution(run=stage(exit_code=None)),
        "Failed",
        None,
        ("Finished", -9),
        "run_failed",
        -2,
    ),
    (
        "compiled-ok",
        execution(CPP_BUILT, OK),
        "Success",
        ("Finished", 0),
        ("Finished", 0),
        "success",
        "True/False",
    ),
    (
        "compiled-run-fails",
        execution(CPP_BUILT, stage(exit_code=3)),
        "Failed",
        ("Finished", 0),
        ("Finished", 3),
        "run_failed",
        -2,
    ),
    (
        "compile-error",
        execution(stage(exit_code=1, stderr=b"main.cpp:1: error")),
        "Failed",
        ("Finished", 1),
        None,
        "compile_failed",
        -4,
    ),
    (
        "compile-timeout",
        execution(stage("timeout", exit_code=None, limit="time")),
        "Failed",
        ("TimeLimitExceeded", None),
        None,
        "compile_timeout",
        -4,
    ),
    (
        "compile-memory",
        execution(stage(exit_code=None, limit="memory")),
        "Failed",
        ("Finished", -9),
        None,
        "compile_failed",
        -4,
    ),
    (
        "refused",
        execution(refused="firewall:dot-dot"),
        "Failed",
        None,
        None,
        "failed",
        -1,
    ),
    (
        "refused-build",
        execution(CPP_BUILT, None, "firewall:link"),
        "Failed",
        None,
        None,
        "failed",
        -1,
    ),
]


def _pair(result: dict[str, Any] | None) -> tuple[str, int | None] | None:
    return None if result is None else (result["status"], result["return_code"])


@pytest.mark.parametrize(
    ("execution_", "status", "compiled", "ran", "summary"),
    [case[1:6] for case in SF_CASES],
    ids=[case[0] for case in SF_CASES],
)
def test_sf_response_for_every_stage_shape_reads_as_intended_by_the_real_client(
    execution_: Execution, status: str, compiled: Any, ran: Any, summary: str
) -> None:
    out = sf.to_response(execution_)
    wire = json.loads(json.dumps(out))
    assert wire["status"] == status
    assert _pair(wire["compile_result"]) == compiled
    assert _pair(wire["run_result"]) == ran
    assert wire["executor_pod_name"] is None and wire["files"] == {}
    assert isinstance(wire["message"], str)
    assert wire["assay"]["grading_id"] == "g-test-1"
    parsed = RunCodeResponse.parse_obj(wire)
    assert parsed.status.value == status
    assert summary_run_code_result(parsed, MAPPING) == summary


@pytest.mark.parametrize(
    ("execution_", "status", "compiled", "ran", "verl"),
    [(case[1], case[2], case[3], case[4], case[6]) for case in SF_CASES],
    ids=[case[0] for case in SF_CASES],
)
def test_sf_response_fields_verl_reads(
    execution_: Execution, status: str, compiled: Any, ran: Any, verl: Any
) -> None:
    """verl (utils/reward_score/sandbox_fusion/utils.py `_process_single_case`) reads `status`,
    `compile_result.{status, return_code}` and `run_result.{status, return_code, stdout}` with
    `.get()`. Its result codes, from those fields:
      True/False  status Success and run_result.status Finished (then stdout is compared);
      -4          status Failed and compile_result is Error/TimeLimitExceeded or Finished rc != 0;
      -3          status Failed and run_result.status TimeLimitExceeded;
      -2          status Failed and run_result Error, or Finished with rc != 0;
      -1          status SandboxError, or Failed with neither a compile error nor a run_result.
    """
    wire = json.loads(json.dumps(sf.to_response(execution_)))
    compile_result, run_result = wire.get("compile_result"), wire.get("run_result")
    assert wire.get("status") == status
    if verl == "True/False":
        assert status == "Success" and run_result["status"] == "Finished"
        assert run_result["stdout"] == execution_.run.stdout.decode()  # type: ignore[union-attr]
        return
    assert status == "Failed"
    compile_error = compile_result is not None and (
        compile_result["status"] == "TimeLimitExceeded" or compile_result["return_code"] != 0
    )
    assert compile_error == (verl == -4)
    if verl == -4:
        assert run_result is None
    elif verl == -3:
        assert run_result["status"] == "TimeLimitExceeded"
    elif verl == -2:
        assert run_result["status"] == "Finished" and run_result["return_code"] != 0
    else:
        assert verl == -1 and compile_result is None and run_result is None


def test_sf_success_carries_the_programs_bytes_and_time() -> None:
    out = sf.to_response(execution(run=stage(stdout=b"\xffok\n", stderr=b"warn", seconds=0.0188)))
    assert out["status"] == "Success" and out["message"] == ""
    assert out["compile_result"] is None
    assert out["run_result"] == {
        "status": "Finished",
        "execution_time": 0.0188,
        "return_code": 0,
        "stdout": "\ufffdok\n",
        "stderr": "warn",
    }
    assert out["assay"] == {"grading_id": "g-test-1", "limit": None}


def test_sf_a_timeout_keeps_what_was_printed_and_has_no_return_code() -> None:
    out = sf.to_response(execution(run=stage("timeout", None, None, b"partial", b"e", 10.0)))
    assert out["run_result"]["return_code"] is None
    assert (out["run_result"]["stdout"], out["run_result"]["stderr"]) == ("partial", "e")


def test_sf_a_limit_is_named_in_message_and_in_the_assay_field() -> None:
    out = sf.to_response(execution(run=stage(exit_code=None, signal=9, limit="memory")))
    assert out["message"] == "run: memory limit exceeded"
    assert out["assay"] == {"grading_id": "g-test-1", "limit": "memory"}
    out = sf.to_response(execution(stage("timeout", exit_code=None, limit="time")))
    assert out["message"] == "compile: time limit exceeded" and out["assay"]["limit"] == "time"


def test_sf_a_refusal_says_why_and_runs_nothing() -> None:
    out = sf.to_response(execution(refused="firewall:absolute-path"))
    assert out["status"] == "Failed" and "firewall:absolute-path" in out["message"]
    assert "not run" in out["message"]
    assert out["compile_result"] is None and out["run_result"] is None


@pytest.mark.parametrize(
    "execution_",
    [execution(), execution(CPP_BUILT, None)],
    ids=["no-stage", "compiled-but-not-run"],
)
def test_sf_an_execution_without_a_run_after_a_good_compile_is_a_sandbox_error(
    execution_: Execution,
) -> None:
    out = sf.to_response(execution_)
    assert out["status"] == "SandboxError" and out["run_result"] is None
    assert out["compile_result"] is None and "without running" in out["message"]
    assert RunCodeResponse.parse_obj(out).status.value == "SandboxError"


def test_sf_sandbox_error_is_sandboxfusions_and_the_client_raises_on_it() -> None:
    out = sf.sandbox_error("engine unreachable", "g-1")
    assert out == {
        "status": "SandboxError",
        "message": "engine unreachable",
        "compile_result": None,
        "run_result": None,
        "executor_pod_name": None,
        "files": {},
        "assay": {"grading_id": "g-1", "limit": None},
    }
    parsed = RunCodeResponse.parse_obj(json.loads(json.dumps(out)))
    assert parsed.message == "engine unreachable"
    with pytest.raises(Exception, match="unexpected result status"):
        summary_run_code_result(parsed, MAPPING)


def test_sf_every_finished_stage_has_an_int_return_code() -> None:
    shapes = [
        stage(exit_code=e, signal=s, limit=lim)
        for e in (None, 0, 1, 255)
        for s in (None, 6, 9, 24)
        for lim in (None, "memory", "output", "pids", "disk")
    ]
    for shape in shapes:
        result = sf.to_response(execution(run=shape))["run_result"]
        assert result["status"] == "Finished" and type(result["return_code"]) is int
        if shape.limit is None and shape.signal is None and shape.exit_code is not None:
            assert result["return_code"] == shape.exit_code
        elif shape.limit is None and shape.signal is not None:
            assert result["return_code"] == -shape.signal
        else:
            assert result["return_code"] == -9


# ---------------------------------------------------------------------------------------------
# Piston requests


def piston_request(**fields: Any) -> piston.PistonExecuteRequest:
    body: dict[str, Any] = {
        "language": "python",
        "version": "*",
        "files": [{"content": "print(input())"}],
        **fields,
    }
    return piston.parse_request(body)


def piston_refused(limits: ServerLimits = LIMITS, **fields: Any) -> RequestRefused:
    with pytest.raises(RequestRefused) as caught:
        piston.to_run_request(piston_request(**fields), limits, VERSIONS)
    return caught.value


def test_piston_defaults_are_pistons() -> None:
    req, rt = piston.to_run_request(piston_request(), LIMITS, VERSIONS)
    assert (rt.language, rt.version, rt.assay_language) == ("python", "3.11.2", "python3")
    assert req.language == "python3" and req.code == "print(input())"
    assert req.stdin == b"\n"  # Piston adds the trailing newline
    assert (req.compile_timeout, req.run_timeout) == (10.0, 3.0)
    assert req.memory_mb == LIMITS.default_memory_mb and dict(req.files) == {}
    assert req.output_cap == LIMITS.output_cap


@pytest.mark.parametrize(
    ("alias", "piston_name", "ours"),
    [
        ("python", "python", "python3"),
        ("python3", "python", "python3"),
        ("py", "python", "python3"),
        ("py3", "python", "python3"),
        ("c", "c", "c"),
        ("gcc", "c", "c"),
        ("c++", "c++", "cpp"),
        ("cpp", "c++", "cpp"),
        ("g++", "c++", "cpp"),
        ("java", "java", "java"),
        ("go", "go", "go"),
        ("golang", "go", "go"),
        ("rust", "rust", "rust"),
        ("rs", "rust", "rust"),
        ("javascript", "javascript", "javascript"),
        ("js", "javascript", "javascript"),
        ("node-js", "javascript", "javascript"),
        ("node-javascript", "javascript", "javascript"),
    ],
)
def test_piston_language_aliases(alias: str, piston_name: str, ours: str) -> None:
    req, rt = piston.to_run_request(piston_request(language=alias), LIMITS, VERSIONS)
    assert (req.language, rt.language, rt.version) == (ours, piston_name, VERSIONS[ours])


@pytest.mark.parametrize(
    ("language", "version"),
    [
        ("python", "3.x"),
        ("python", ">=3"),
        ("python", "3.11"),
        ("python", ""),
        ("node", "*"),
        ("Python", "*"),
        ("bash", "*"),
        ("c++", "3.11.2"),
    ],
)
def test_piston_unknown_runtimes_are_refused_in_pistons_words(language: str, version: str) -> None:
    err = piston_refused(language=language, version=version)
    assert err.message == f"{language}-{version} runtime is unknown"
    assert piston.error_body(err.message) == {"message": err.message}


def test_piston_exact_version_and_unbuilt_languages() -> None:
    req, _ = piston.to_run_request(piston_request(version="3.11.2"), LIMITS, VERSIONS)
    assert req.language == "python3"
    with pytest.raises(RequestRefused, match=r"^rust-\* runtime is unknown$"):
        piston.to_run_request(piston_request(language="rust"), LIMITS, {"python3": "3.11.2"})


def test_piston_first_utf8_file_is_the_program_the_others_are_files() -> None:
    files = [
        {"name": "data.bin", "content": "aGk=", "encoding": "base64"},
        {"name": "prog.py", "content": "print(1)", "encoding": "utf8"},
        {"content": "helper = 1"},
        {"name": "", "content": "6869", "encoding": "hex"},
        {"name": "b.txt", "content": "é", "encoding": "utf8"},
    ]
    req, _ = piston.to_run_request(piston_request(files=files), LIMITS, VERSIONS)
    assert req.code == "print(1)"
    assert dict(req.files) == {
        "data.bin": b"hi",
        "file2.code": b"helper = 1",
        "file3.code": b"hi",
        "b.txt": "é".encode(),
    }


@pytest.mark.parametrize(
    "files",
    [[], [{"content": "aGk=", "encoding": "base64"}], [{"content": "00", "encoding": "hex"}]],
)
def test_piston_needs_a_utf8_file(files: list[dict[str, str]]) -> None:
    assert (
        piston_refused(files=files).message == "files must include at least one utf8 encoded file"
    )


@pytest.mark.parametrize(
    ("content", "encoding"),
    [("aGk", "base64"), ("a GK=", "base64"), ("é", "base64"), ("6", "hex"), ("zz", "hex")],
)
def test_piston_bad_encodings_are_refused(content: str, encoding: str) -> None:
    files = [{"content": "x"}, {"name": "f", "content": content, "encoding": encoding}]
    assert piston_refused(files=files).message == f"files[1].content is not valid {encoding}"


def test_piston_extra_file_limits_and_duplicates() -> None:
    small = ServerLimits(max_files=1, max_file_bytes=2)
    two = [{"content": "x"}, {"name": "a", "content": "ab"}, {"name": "b", "content": "c"}]
    assert "maximum of 1" in piston_refused(small, files=two).message
    big = [{"content": "x"}, {"name": "a", "content": "abc"}]
    assert "maximum of 2 bytes" in piston_refused(small, files=big).message
    huge = [{"content": "x"}, {"name": "a", "content": "00" * 1000, "encoding": "hex"}]
    assert "maximum of 2 bytes" in piston_refused(small, files=huge).message
    dup = [{"content": "x"}, {"name": "a", "content": "1"}, {"name": "a", "content": "2"}]
    assert "given twice" in piston_refused(files=dup).message
    # a lone surrogate in a utf8 extra file cannot become bytes
    bad = [{"content": "x"}, {"name": "a", "content": "\udc80"}]
    assert piston_refused(files=bad).message == "files[1].content is not valid utf8"


@pytest.mark.usefixtures("no_path_resolution")
def test_piston_file_names_reach_the_firewall_untouched() -> None:
    files = [{"content": "x"}] + [{"name": n, "content": "y"} for n in HOSTILE_NAMES if n]
    req, _ = piston.to_run_request(piston_request(files=files), LIMITS, VERSIONS)
    assert list(req.files) == [n for n in HOSTILE_NAMES if n]


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [("", b"\n"), (None, b"\n"), ("a", b"a\n"), ("a\n", b"a\n"), ("1 2\n3", b"1 2\n3\n")],
)
def test_piston_stdin_gets_a_trailing_newline_like_piston(
    stdin: str | None, expected: bytes
) -> None:
    req, _ = piston.to_run_request(piston_request(stdin=stdin), LIMITS, VERSIONS)
    assert req.stdin == expected


def test_piston_stdin_must_be_unicode_and_args_are_refused() -> None:
    assert piston_refused(stdin="\ud800").field == "stdin"
    assert piston.to_run_request(piston_request(args=[]), LIMITS, VERSIONS)[0].language
    err = piston_refused(args=["--fast"])
    assert err.field == "args" and "no arguments" in err.message


def test_piston_timeouts_are_milliseconds_within_the_servers_maxima() -> None:
    limits = ServerLimits(max_run_timeout=20.0, max_compile_timeout=30.0)
    req, _ = piston.to_run_request(
        piston_request(run_timeout=2500, compile_timeout=30000), limits, VERSIONS
    )
    assert (req.run_timeout, req.compile_timeout) == (2.5, 30.0)
    assert (
        piston_refused(limits, run_timeout=20001).message
        == "run_timeout cannot exceed the configured limit of 20000"
    )
    assert (
        piston_refused(limits, compile_timeout=-5).message == "compile_timeout must be non-negative"
    )
    assert piston_refused(limits, run_timeout=0).message == "run_timeout must be more than 0"
    # a server maximum below Piston's default is the default
    req, _ = piston.to_run_request(piston_request(), ServerLimits(max_run_timeout=1.0), VERSIONS)
    assert req.run_timeout == 1.0


@pytest.mark.parametrize(
    "name", ["run_timeout", "compile_timeout", "run_cpu_time", "run_memory_limit"]
)
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_piston_non_finite_numbers_from_json_are_refused(name: str, literal: str) -> None:
    body = json.loads(
        f'{{"language": "python", "version": "*", "files": [{{"content": "x"}}], "{name}": {literal}}}'
    )
    with pytest.raises(RequestRefused) as caught:
        piston.to_run_request(piston.parse_request(body), LIMITS, VERSIONS)
    assert caught.value.field == name


def test_piston_cpu_time_may_not_bind_before_the_timeout() -> None:
    req, _ = piston.to_run_request(
        piston_request(run_timeout=5000, run_cpu_time=5000, compile_cpu_time=10000),
        LIMITS,
        VERSIONS,
    )
    assert req.run_timeout == 5.0
    err = piston_refused(run_timeout=5000, run_cpu_time=4999)
    assert err.field == "run_cpu_time" and "below run_timeout is not supported" in err.message
    assert piston_refused(compile_cpu_time=9000).field == "compile_cpu_time"
    assert piston_refused(run_cpu_time=-1).message == "run_cpu_time must be non-negative"


def test_piston_memory_limits_are_bytes() -> None:
    mib = 1 << 20
    limits = ServerLimits(default_memory_mb=512, min_memory_mb=16, max_memory_mb=2048)

    def mb(**fields: Any) -> int:
        return piston.to_run_request(piston_request(**fields), limits, VERSIONS)[0].memory_mb

    assert mb() == 512 and mb(run_memory_limit=-1) == 512
    assert mb(run_memory_limit=256 * mib) == 256
    assert mb(run_memory_limit=256 * mib + 1) == 257  # rounded up to a whole MiB
    assert mb(run_memory_limit=2048 * mib) == 2048
    over = piston_refused(limits, run_memory_limit=2048 * mib + 1)
    assert over.message == f"run_memory_limit cannot exceed the configured limit of {2048 * mib}"
    assert piston_refused(limits, run_memory_limit=1e300).field == "run_memory_limit"
    assert (
        piston_refused(limits, run_memory_limit=-2).message
        == "run_memory_limit must be non-negative"
    )
    assert "more than 0" in piston_refused(limits, run_memory_limit=0).message
    assert "at least" in piston_refused(limits, run_memory_limit=15 * mib).message


def test_piston_compile_memory_must_match_the_run_for_a_compiled_language() -> None:
    mib = 1 << 20
    same = {"run_memory_limit": 256 * mib, "compile_memory_limit": 256 * mib}
    assert piston.to_run_request(piston_request(language="c++", **same), LIMITS, VERSIONS)[0]
    err = piston_refused(language="c++", run_memory_limit=256 * mib, compile_memory_limit=512 * mib)
    assert err.field == "compile_memory_limit"
    # only the run's limit given: the compile shares it
    req, _ = piston.to_run_request(
        piston_request(language="c++", run_memory_limit=256 * mib), LIMITS, VERSIONS
    )
    assert req.memory_mb == 256
    # python has no compile step: its compile limit is moot
    req, _ = piston.to_run_request(
        piston_request(run_memory_limit=256 * mib, compile_memory_limit=512 * mib), LIMITS, VERSIONS
    )
    assert req.memory_mb == 256


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"version": "*", "files": []}, "language is required as a string"),
        ({"language": 3, "version": "*", "files": []}, "language is required as a string"),
        ({"language": "py", "version": 1.0, "files": []}, "version is required as a string"),
        ({"language": "py", "version": "*", "files": "x"}, "files is required as an array"),
        ({"language": "py", "version": "*"}, "files is required as an array"),
        (
            {"language": "py", "version": "*", "files": [{}]},
            "files[0].content is required as a string",
        ),
        (
            {"language": "py", "version": "*", "files": [{"content": "x"}, {"content": 1}]},
            "files[1].content is required as a string",
        ),
        (
            {"language": "py", "version": "*", "files": [{"content": "x", "encoding": "utf16"}]},
            "files[0].encoding must be one of utf8, base64, hex",
        ),
        (
            {"language": "py", "version": "*", "files": [], "run_timeout": "3000"},
            "If specified, run_timeout must be a number",
        ),
        (
            {"language": "py", "version": "*", "files": [], "run_memory_limit": True},
            "If specified, run_memory_limit must be a number",
        ),
        (
            {"language": "py", "version": "*", "files": [], "args": "x"},
            "args must be an array of strings",
        ),
        ({"language": "py", "version": "*", "files": [], "stdin": 5}, "stdin must be a string"),
        ([1, 2], "the request body must be a JSON object"),
    ],
)
def test_piston_parse_request_answers_in_pistons_words(body: Any, message: str) -> None:
    with pytest.raises(RequestRefused) as caught:
        piston.parse_request(body)
    assert caught.value.message == message


def test_piston_parse_request_ignores_unknown_fields() -> None:
    req = piston.parse_request(
        {"language": "py", "version": "*", "files": [{"content": "x", "x": 1}], "unknown": {}}
    )
    assert req.files[0].content == "x"


def test_request_models_have_a_json_schema_for_fastapi() -> None:
    assert "memory_limit_MB" in sf.RunCodeRequest.model_json_schema()["properties"]
    assert "run_memory_limit" in piston.PistonExecuteRequest.model_json_schema()["properties"]


# ---------------------------------------------------------------------------------------------
# Piston responses and runtimes


def test_piston_runtimes_lists_the_built_languages_with_pistons_names() -> None:
    out = piston.runtimes({"python3": "3.11.2", "cpp": "12.2.0", "javascript": "18.19.0"})
    assert out == [
        {"language": "python", "version": "3.11.2", "aliases": ["py", "py3", "python3"]},
        {"language": "c++", "version": "12.2.0", "aliases": ["cpp", "g++"], "runtime": "gcc"},
        {
            "language": "javascript",
            "version": "18.19.0",
            "aliases": ["node-javascript", "node-js", "javascript", "js"],
            "runtime": "node",
        },
    ]
    assert len(piston.runtimes(VERSIONS)) == 7 and piston.runtimes({}) == []


PY = piston.resolve_runtime("python", "*", VERSIONS)
CPP = piston.resolve_runtime("cpp", "*", VERSIONS)


def piston_stage(shape: Stage) -> dict[str, Any]:
    out = piston.to_response(execution(run=shape), PY)
    assert "compile" not in out
    return dict(out["run"])


STAGE_KEYS = [
    "signal",
    "stdout",
    "stderr",
    "code",
    "output",
    "memory",
    "message",
    "status",
    "cpu_time",
    "wall_time",
]


@pytest.mark.parametrize(
    ("shape", "code", "signal", "status", "message"),
    [
        (stage(exit_code=0), 0, None, None, None),
        (stage(exit_code=1), 1, None, "RE", "Exited with error status 1"),
        (stage(exit_code=None, signal=11), None, "SIGSEGV", "SG", "Caught fatal signal 11"),
        (stage(exit_code=None, signal=40), None, "SIGRTMIN+6", "SG", "Caught fatal signal 40"),
        (stage(exit_code=None, signal=50), None, "SIGRTMAX-14", "SG", "Caught fatal signal 50"),
        (stage(exit_code=None, signal=64), None, "SIGRTMAX", "SG", "Caught fatal signal 64"),
        (stage(exit_code=None, signal=99), None, None, "SG", "Caught fatal signal 99"),
        (
            stage("timeout", exit_code=None, limit="time"),
            None,
            "SIGKILL",
            "TO",
            "Time limit exceeded (wall clock)",
        ),
        (
            stage(exit_code=None, signal=24, limit="cpu"),
            None,
            "SIGKILL",
            "TO",
            "Time limit exceeded",
        ),
        (
            stage(exit_code=None, signal=9, limit="output"),
            None,
            "SIGKILL",
            "OL",
            "output length exceeded",
        ),
        (
            stage(exit_code=None, signal=9, limit="memory"),
            None,
            "SIGKILL",
            "SG",
            "Memory limit exceeded",
        ),
        (stage(exit_code=None, limit="memory"), None, "SIGKILL", "SG", "Memory limit exceeded"),
        (stage(exit_code=0, limit="pids"), None, "SIGKILL", "SG", "Process limit exceeded"),
        (
            stage(exit_code=None, signal=25, limit="disk"),
            None,
            "SIGXFSZ",
            "SG",
            "File size limit exceeded",
        ),
        (stage(exit_code=None), None, "SIGKILL", "SG", "Caught fatal signal 9"),
    ],
)
def test_piston_stage_for_every_shape(
    shape: Stage, code: int | None, signal: str | None, status: str | None, message: str | None
) -> None:
    out = piston_stage(shape)
    assert list(out) == STAGE_KEYS
    assert (out["code"], out["signal"], out["status"], out["message"]) == (
        code,
        signal,
        status,
        message,
    )
    assert out["memory"] is None and out["cpu_time"] is None and out["wall_time"] == 250


@pytest.mark.parametrize("number", range(1, 32))
def test_piston_signal_names_are_the_kernels(number: int) -> None:
    try:
        name = signal_module.Signals(number).name
    except ValueError:
        pytest.skip(f"no signal {number} here")
    if number == 6:
        name = "SIGABRT"  # Python may name it SIGIOT
    got = piston_stage(stage(exit_code=None, signal=number))["signal"]
    assert got == name or (number == 29 and got == "SIGIO")


def test_piston_stage_text_and_output() -> None:
    out = piston_stage(stage(stdout=b"a\xff\n", stderr=b"warn\n", seconds=1.2344))
    assert (out["stdout"], out["stderr"]) == ("a\ufffd\n", "warn\n")
    assert out["output"] == "a\ufffd\nwarn\n" and out["wall_time"] == 1234


def test_piston_response_for_an_interpreted_language() -> None:
    out = piston.to_response(execution(run=OK), PY)
    assert list(out) == ["run", "language", "version", "assay"]
    assert (out["language"], out["version"], out["run"]["stdout"]) == ("python", "3.11.2", "42\n")
    assert out["assay"] == {"grading_id": "g-test-1", "limit": None}
    json.dumps(out)


def test_piston_response_for_a_compiled_language() -> None:
    out = piston.to_response(execution(CPP_BUILT, stage(exit_code=3)), CPP)
    assert list(out) == ["compile", "run", "language", "version", "assay"]
    assert (out["language"], out["version"]) == ("c++", "12.2.0")
    assert (out["compile"]["code"], out["compile"]["wall_time"]) == (0, 1500)
    assert (out["run"]["code"], out["run"]["status"]) == (3, "RE")


@pytest.mark.parametrize(
    ("failed", "status"),
    [
        (stage(exit_code=1, stderr=b"main.cpp:1: error"), "RE"),
        (stage("timeout", exit_code=None, limit="time"), "TO"),
        (stage(exit_code=None, limit="memory"), "SG"),
    ],
)
def test_piston_compile_failure_copies_compile_into_run(failed: Stage, status: str) -> None:
    out = piston.to_response(execution(failed), CPP)
    assert out["run"] == out["compile"] and out["run"] is not out["compile"]
    assert out["compile"]["status"] == status and out["compile"]["code"] != 0
    assert out["assay"]["limit"] == failed.limit


def test_piston_a_refused_execution_is_a_400_and_no_stage_is_an_internal_error() -> None:
    with pytest.raises(RequestRefused, match=r"firewall:dot-dot"):
        piston.to_response(execution(refused="firewall:dot-dot"), PY)
    with pytest.raises(ValueError, match="without running"):
        piston.to_response(execution(), PY)
    with pytest.raises(ValueError, match="without running"):
        piston.to_response(execution(CPP_BUILT, None), CPP)
