"""SandboxFusion's `POST /run_code`, mapped onto the execute core (pure: no I/O).

The request model takes exactly SandboxFusion's fields (bytedance/SandboxFusion
`sandbox/server/sandbox_api.py`), ignoring unknown ones as SandboxFusion does; `to_run_request`
turns it into a `RunRequest` or raises `RequestRefused` (HTTP 422, body `refusal`);
`to_response` turns an `Execution` into SandboxFusion's `RunCodeResponse` JSON, and
`sandbox_error` is the answer for an infrastructure failure (HTTP 200, as SandboxFusion does).

Deliberate differences from SandboxFusion: six languages; `files` are checked by assay's
firewall (no absolute or `..` paths); `fetch_files` is refused; `memory_limit_MB` -1 means the
server's default, not "no limit"; a value over a server maximum is refused, never clamped.
`ServerLimits` and `RequestRefused` are shared with the Piston mapping (`piston.py`).
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from assay._internal.sandbox.execute import Execution, RunRequest, Stage
from assay.errors import UsageError


@dataclass(frozen=True)
class ServerLimits:
    """What one request may ask of the server (`assay serve`'s configuration)."""

    default_memory_mb: int = 1024
    """The memory limit when a request names none (SandboxFusion's -1, Piston's -1/absent)."""
    min_memory_mb: int = 16
    max_memory_mb: int = 4096
    max_run_timeout: float = 60.0
    """Seconds."""
    max_compile_timeout: float = 60.0
    """Seconds."""
    max_files: int = 64
    """Extra files beside the program."""
    max_file_bytes: int = 8 << 20
    """One extra file, decoded."""
    output_cap: int = 1 << 20
    """Bytes kept per stream (stdout, stderr) of each stage; more is a limit:output kill."""

    def __post_init__(self) -> None:
        if not 0 < self.min_memory_mb <= self.default_memory_mb <= self.max_memory_mb:
            raise ValueError("ServerLimits: need 0 < min_memory_mb <= default <= max_memory_mb")
        if not (self.max_run_timeout > 0 and self.max_compile_timeout > 0):
            raise ValueError("ServerLimits: the maximum timeouts must be more than 0")
        if min(self.max_files, self.max_file_bytes, self.output_cap) < 0:
            raise ValueError("ServerLimits: counts and sizes cannot be negative")


class RequestRefused(UsageError):
    """The request cannot be run as asked. `message` says why in words meant for the client;
    `field` names the request field at fault, when one is."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class RunCodeRequest(BaseModel):
    """SandboxFusion's request body. Lax types and ignored extras, as SandboxFusion's own
    pydantic model has them (an int timeout is a float, `"10"` is 10.0). `language` is any
    string: an unsupported one is refused by `to_run_request` naming the supported ones."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    compile_timeout: float = 10
    run_timeout: float = 10
    memory_limit_MB: int = -1
    code: str
    stdin: str | None = None
    language: str
    files: dict[str, str | None] = {}
    """Path -> base64 content; None skips the entry (as SandboxFusion does)."""
    fetch_files: list[str] = []


LANGUAGES: dict[str, str] = {
    "python": "python3",
    "cpp": "cpp",
    "nodejs": "javascript",
    "go": "go",
    "java": "java",
    "rust": "rust",
}
"""SandboxFusion's language name -> assay's. SandboxFusion has no plain C."""

SANDBOXFUSION_LANGUAGES: frozenset[str] = frozenset(
    {
        # the server's list (sandbox/runners/types.py)
        *("python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash"),
        *("typescript", "sql", "rust", "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala"),
        *("julia", "pytest", "junit", "kotlin_script", "jest", "verilog", "python_gpu"),
        *("lean", "swift", "racket"),
        # the sandbox-fusion 0.3.7 client's additions
        *("python2", "gtest", "react"),
    }
)

_SKIP_MARK = "IGNORE_THIS_FILE"
"""SandboxFusion skips a `files` entry whose name contains this (runners/base.py)."""

_KILL_LIMITS = frozenset({"memory", "output", "pids", "disk"})
_TIME_LIMITS = frozenset({"time", "cpu"})


def _supported() -> str:
    return ", ".join(LANGUAGES)


def _language(name: str) -> str:
    if name in LANGUAGES:
        return LANGUAGES[name]
    shown = repr(name[:40])
    if name in SANDBOXFUSION_LANGUAGES:
        raise RequestRefused(
            f"language {shown} is not supported by assay (supported: {_supported()})", "language"
        )
    raise RequestRefused(f"unknown language {shown} (supported: {_supported()})", "language")


def _seconds(name: str, value: float, maximum: float) -> float:
    if not math.isfinite(value):
        raise RequestRefused(f"{name} must be a finite number of seconds", name)
    if value <= 0:
        raise RequestRefused(f"{name} must be more than 0 seconds (got {value:g})", name)
    if value > maximum:
        raise RequestRefused(
            f"{name} {value:g} is over this server's maximum of {maximum:g} seconds", name
        )
    return float(value)


def _memory_mb(value: int, limits: ServerLimits) -> int:
    if value == -1:
        return limits.default_memory_mb
    shown = str(value) if abs(value) < 10**12 else "(a huge number)"
    if value < limits.min_memory_mb:
        raise RequestRefused(
            f"memory_limit_MB {shown} is below this server's minimum of "
            f"{limits.min_memory_mb} (-1 asks for the default, {limits.default_memory_mb})",
            "memory_limit_MB",
        )
    if value > limits.max_memory_mb:
        raise RequestRefused(
            f"memory_limit_MB {shown} is over this server's maximum of {limits.max_memory_mb}",
            "memory_limit_MB",
        )
    return value


def _utf8(name: str, text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise RequestRefused(f"{name} is not valid Unicode (a lone surrogate)", name) from None


def _files(files: dict[str, str | None], limits: ServerLimits) -> dict[str, bytes]:
    """Decode the base64 values strictly. Names pass on untouched: the firewall checks them,
    nothing here looks at or resolves a path."""
    kept = {name: data for name, data in files.items() if data is not None}
    kept = {name: data for name, data in kept.items() if _SKIP_MARK not in name}
    if len(kept) > limits.max_files:
        raise RequestRefused(
            f"{len(kept)} files is more than this server's maximum of {limits.max_files}",
            "files",
        )
    longest = 4 * ((limits.max_file_bytes + 2) // 3)
    out: dict[str, bytes] = {}
    for name, data in kept.items():
        shown = repr(name[:80])
        if len(data) > longest:
            raise RequestRefused(
                f"file {shown} is over this server's maximum of {limits.max_file_bytes} bytes",
                "files",
            )
        try:
            out[name] = base64.b64decode(data.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error):
            raise RequestRefused(
                f"file {shown}: the content is not valid base64", "files"
            ) from None
        if len(out[name]) > limits.max_file_bytes:
            raise RequestRefused(
                f"file {shown} is over this server's maximum of {limits.max_file_bytes} bytes",
                "files",
            )
    return out


def to_run_request(req: RunCodeRequest, limits: ServerLimits) -> RunRequest:
    """The execute core's request for a SandboxFusion one, or `RequestRefused`."""
    language = _language(req.language)
    if req.fetch_files:
        raise RequestRefused(
            "fetch_files is not supported: assay runs the code in a sandbox whose working "
            "directory does not outlive the run, so there is nothing to fetch files from",
            "fetch_files",
        )
    return RunRequest(
        language=language,
        code=req.code,
        stdin=b"" if req.stdin is None else _utf8("stdin", req.stdin),
        files=_files(req.files, limits),
        compile_timeout=_seconds(
            "compile_timeout", req.compile_timeout, limits.max_compile_timeout
        ),
        run_timeout=_seconds("run_timeout", req.run_timeout, limits.max_run_timeout),
        memory_mb=_memory_mb(req.memory_limit_MB, limits),
        output_cap=limits.output_cap,
    )


def refusal(message: str, field: str | None = None) -> dict[str, Any]:
    """The HTTP 422 body for a refusal (`RequestRefused.message`, `.field`): FastAPI's
    validation shape, the one SandboxFusion answers a bad request with, so a client sees one
    422 format from `/run_code`."""
    loc: list[str] = ["body"] if field is None else ["body", field]
    return {"detail": [{"type": "value_error", "loc": loc, "msg": message}]}


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _timed_out(stage: Stage) -> bool:
    return stage.status == "timeout" or stage.limit in _TIME_LIMITS


def _return_code(stage: Stage) -> int:
    """Always an int for a Finished stage (the sandbox-fusion client raises on None): a limit
    kill is -9, a signal death -signum (what SandboxFusion's asyncio reports), else the exit
    status; a stage that ended with neither is reported as killed (-9)."""
    if stage.limit in _KILL_LIMITS:
        return -9
    if stage.signal is not None:
        return -stage.signal
    if stage.exit_code is not None:
        return stage.exit_code
    return -9


def _command_result(stage: Stage) -> dict[str, Any]:
    timed_out = _timed_out(stage)
    return {
        "status": "TimeLimitExceeded" if timed_out else "Finished",
        "execution_time": stage.seconds,
        "return_code": None if timed_out else _return_code(stage),
        "stdout": _text(stage.stdout),
        "stderr": _text(stage.stderr),
    }


def _ok(result: dict[str, Any]) -> bool:
    return bool(result["status"] == "Finished" and result["return_code"] == 0)


def _body(
    status: str,
    message: str,
    compile_result: dict[str, Any] | None,
    run_result: dict[str, Any] | None,
    grading_id: str | None,
    limit: str | None,
) -> dict[str, Any]:
    return {
        "status": status,
        "message": message,
        "compile_result": compile_result,
        "run_result": run_result,
        "executor_pod_name": None,
        "files": {},
        "assay": {"grading_id": grading_id, "limit": limit},
    }


def sandbox_error(message: str, grading_id: str | None = None) -> dict[str, Any]:
    """SandboxFusion's answer when the sandbox itself failed (HTTP 200): the sandbox-fusion
    client raises on it and verl scores the case -1, never a wrong answer."""
    return _body("SandboxError", message, None, None, grading_id, None)


def to_response(ex: Execution) -> dict[str, Any]:
    """SandboxFusion's `RunCodeResponse` JSON for an execution, plus an `assay` object
    (`grading_id`, and the `limit` that ended the last stage) that SandboxFusion's clients
    ignore."""
    if ex.refused is not None:
        message = f"the program was not run: the request was refused ({ex.refused})"
        return _body("Failed", message, None, None, ex.grading_id, None)
    compiled = None if ex.compile is None else _command_result(ex.compile)
    ran = None if ex.run is None else _command_result(ex.run)
    if ex.run is not None:
        last, name = ex.run, "run"
    elif ex.compile is not None and compiled is not None and not _ok(compiled):
        last, name = ex.compile, "compile"
    else:  # no run stage after a successful (or no) compile: not a program result
        return sandbox_error("the execution ended without running the program", ex.grading_id)
    status = "Success" if all(_ok(r) for r in (compiled, ran) if r is not None) else "Failed"
    message = "" if last.limit is None else f"{name}: {last.limit} limit exceeded"
    return _body(status, message, compiled, ran, ex.grading_id, last.limit)
