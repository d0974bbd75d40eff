"""Piston's API v2 (`POST /api/v2/execute`, `GET /api/v2/runtimes`), mapped onto the execute
core (pure: no I/O).

Contracts from engineer-man/piston `api/src/api/v2.js` and `api/src/job.js`: timeouts and CPU
times in milliseconds, memory limits in bytes (-1: none), the first utf8 file is the program,
stdin gets a trailing newline when it lacks one, a bad request is HTTP 400 `{"message": ...}`
(`error_body`), and on a compile failure `run` is a copy of `compile`.

Deliberate differences from Piston: seven runtimes, one version each (the selector must be
`*` or that exact version); `args` is refused (the program runs with none); extra files are
placed beside the program but only the program is compiled; a memory limit of -1 (or none)
means the server's default; a CPU time below its timeout is refused (assay's CPU limit follows
the timeout); `memory` and `cpu_time` in a stage are null; `output` is stdout then stderr, not
interleaved; a refused file is a 400, not Piston's empty 500.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from assay._internal.model.languages import LANGUAGES
from assay._internal.sandbox.execute import Execution, RunRequest, Stage
from assay._internal.sandbox.sandboxfusion import RequestRefused, ServerLimits

__all__ = [
    "RUNTIMES",
    "PistonExecuteRequest",
    "PistonFile",
    "PistonRuntime",
    "RequestRefused",
    "ServerLimits",
    "error_body",
    "parse_request",
    "resolve_runtime",
    "runtimes",
    "to_response",
    "to_run_request",
]

DEFAULT_COMPILE_TIMEOUT_MS = 10_000
DEFAULT_RUN_TIMEOUT_MS = 3_000
"""Piston's defaults (api/src/config.js)."""

_MIB = 1 << 20


@dataclass(frozen=True)
class PistonRuntime:
    """One entry of GET /runtimes, and the assay language it runs as."""

    language: str
    """Piston's name for it."""
    aliases: tuple[str, ...]
    assay_language: str
    runtime: str | None = None
    """The package providing the language, when Piston names one (gcc for c and c++)."""
    version: str = ""


RUNTIMES: tuple[PistonRuntime, ...] = (
    PistonRuntime("python", ("py", "py3", "python3"), "python3"),
    PistonRuntime("c", ("gcc",), "c", "gcc"),
    PistonRuntime("c++", ("cpp", "g++"), "cpp", "gcc"),
    PistonRuntime("java", (), "java"),
    PistonRuntime("go", ("go", "golang"), "go"),
    PistonRuntime("rust", ("rs",), "rust"),
    PistonRuntime(
        "javascript", ("node-javascript", "node-js", "javascript", "js"), "javascript", "node"
    ),
)
"""Piston's names and aliases (its packages' metadata.json) for assay's languages."""


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class PistonFile(_Model):
    name: str | None = None
    """Missing or empty: `file<i>.code`, as Piston names it."""
    content: str
    encoding: Literal["utf8", "base64", "hex"] | None = None
    """None is utf8."""


class PistonExecuteRequest(_Model):
    """Piston's execute body. Strict types, as Piston checks them (`typeof`): a number is a
    JSON number, not a string or a boolean. Unknown fields are ignored."""

    language: str
    version: str
    files: list[PistonFile]
    stdin: str | None = ""
    args: list[str] | None = None
    compile_timeout: float | None = None
    """Milliseconds (wall)."""
    run_timeout: float | None = None
    compile_cpu_time: float | None = None
    """Milliseconds."""
    run_cpu_time: float | None = None
    compile_memory_limit: float | None = None
    """Bytes; -1: none (here: the server's default)."""
    run_memory_limit: float | None = None


def error_body(message: str) -> dict[str, Any]:
    """Piston's HTTP 400 body (for `RequestRefused.message`)."""
    return {"message": message}


_NUMBERS = (
    "compile_timeout",
    "run_timeout",
    "compile_cpu_time",
    "run_cpu_time",
    "compile_memory_limit",
    "run_memory_limit",
)


def parse_request(body: object) -> PistonExecuteRequest:
    """Validate a decoded JSON body, with Piston's messages for what it checks itself, so a
    route can answer 400 `{"message"}` instead of FastAPI's 422."""
    try:
        return PistonExecuteRequest.model_validate(body)
    except ValidationError as err:
        first = err.errors()[0]
        loc = tuple(first["loc"])
        raise RequestRefused(_message(loc, first["msg"]), str(loc[0]) if loc else None) from None


def _message(loc: tuple[int | str, ...], msg: str) -> str:
    match loc:
        case ():
            return "the request body must be a JSON object"
        case ("language" | "version" as name,):
            return f"{name} is required as a string"
        case ("files",):
            return "files is required as an array"
        case ("files", int(i)):
            return f"files[{i}] must be an object"
        case ("files", int(i), "content"):
            return f"files[{i}].content is required as a string"
        case ("files", int(i), "encoding"):
            return f"files[{i}].encoding must be one of utf8, base64, hex"
        case ("files", int(i), "name"):
            return f"files[{i}].name must be a string"
        case (str(name),) if name in _NUMBERS:
            return f"If specified, {name} must be a number"
        case ("stdin",):
            return "stdin must be a string"
        case ("args", *_):
            return "args must be an array of strings"
    return f"{'.'.join(str(part) for part in loc)}: {msg}"


def _versioned(versions: Mapping[str, str]) -> list[PistonRuntime]:
    return [
        PistonRuntime(rt.language, rt.aliases, rt.assay_language, rt.runtime, version)
        for rt in RUNTIMES
        if (version := versions.get(rt.assay_language)) is not None
    ]


def runtimes(versions: Mapping[str, str]) -> list[dict[str, Any]]:
    """GET /runtimes: the languages this server can run, `versions` being assay language ->
    the version its image has (a language missing from it is not listed)."""
    out: list[dict[str, Any]] = []
    for rt in _versioned(versions):
        entry: dict[str, Any] = {
            "language": rt.language,
            "version": rt.version,
            "aliases": list(rt.aliases),
        }
        if rt.runtime is not None:
            entry["runtime"] = rt.runtime
        out.append(entry)
    return out


def resolve_runtime(language: str, version: str, versions: Mapping[str, str]) -> PistonRuntime:
    """The runtime a request names (by name or alias, and `*` or the exact version), or
    Piston's `<language>-<version> runtime is unknown`."""
    for rt in _versioned(versions):
        if (language == rt.language or language in rt.aliases) and version in ("*", rt.version):
            return rt
    raise RequestRefused(f"{language[:100]}-{version[:100]} runtime is unknown", "language")


def _decode(i: int, file: PistonFile) -> bytes:
    try:
        if file.encoding == "base64":
            return base64.b64decode(file.content.encode("ascii"), validate=True)
        if file.encoding == "hex":
            return bytes.fromhex(file.content)
        return file.content.encode("utf-8")
    except (UnicodeEncodeError, binascii.Error, ValueError):
        encoding = file.encoding or "utf8"
        raise RequestRefused(f"files[{i}].content is not valid {encoding}", "files") from None


def _files(req: PistonExecuteRequest, limits: ServerLimits) -> tuple[str, dict[str, bytes]]:
    """The program (the first utf8 file) and the other files by name. Names pass on untouched:
    the firewall checks them, nothing here looks at or resolves a path."""
    program: str | None = None
    extra: dict[str, bytes] = {}
    longest = 2 * limits.max_file_bytes  # hex, the longest encoding
    for i, file in enumerate(req.files):
        if program is None and file.encoding in (None, "utf8"):
            program = file.content  # the execute core encodes it (lone surrogates included)
            continue
        name = file.name or f"file{i}.code"
        if len(file.content) > longest:
            raise RequestRefused(
                f"files[{i}] is over this server's maximum of {limits.max_file_bytes} bytes",
                "files",
            )
        data = _decode(i, file)
        if len(data) > limits.max_file_bytes:
            raise RequestRefused(
                f"files[{i}] is over this server's maximum of {limits.max_file_bytes} bytes",
                "files",
            )
        if name in extra:
            raise RequestRefused(f"files[{i}].name {name[:80]!r} is given twice", "files")
        extra[name] = data
    if program is None:
        raise RequestRefused("files must include at least one utf8 encoded file", "files")
    if len(extra) > limits.max_files:
        raise RequestRefused(
            f"{len(extra)} files besides the program is more than this server's maximum of "
            f"{limits.max_files}",
            "files",
        )
    return program, extra


def _number(name: str, value: float) -> float:
    if not math.isfinite(value):
        raise RequestRefused(f"If specified, {name} must be a number", name)
    if value < 0:
        raise RequestRefused(f"{name} must be non-negative", name)
    return value


def _timeout(name: str, value: float | None, default_ms: int, max_seconds: float) -> float:
    """Seconds, from Piston's milliseconds."""
    max_ms = max_seconds * 1000
    if value is None:
        return min(default_ms, max_ms) / 1000
    if _number(name, value) == 0:
        raise RequestRefused(f"{name} must be more than 0", name)
    if value > max_ms:
        raise RequestRefused(f"{name} cannot exceed the configured limit of {max_ms:g}", name)
    return value / 1000


def _cpu_time(name: str, value: float | None, timeout: float, timeout_name: str) -> None:
    """Accepted when it does not bind before the timeout: assay's CPU limit is the timeout."""
    if value is None:
        return
    if _number(name, value) < timeout * 1000:
        raise RequestRefused(
            f"{name} below {timeout_name} is not supported: assay limits CPU time to the "
            "timeout (leave it out, or make it at least the timeout)",
            name,
        )


def _memory_mb(name: str, value: float | None, limits: ServerLimits) -> int:
    """Whole MiB, rounded up, from Piston's bytes."""
    if value is None or value == -1:
        return limits.default_memory_mb
    if _number(name, value) == 0:
        raise RequestRefused(f"{name} must be more than 0, or -1 for the default", name)
    if value > limits.max_memory_mb * _MIB:
        raise RequestRefused(
            f"{name} cannot exceed the configured limit of {limits.max_memory_mb * _MIB}", name
        )
    mb = math.ceil(value / _MIB)
    if mb < limits.min_memory_mb:
        raise RequestRefused(f"{name} must be at least {limits.min_memory_mb * _MIB}", name)
    return mb


def to_run_request(
    req: PistonExecuteRequest, limits: ServerLimits, versions: Mapping[str, str]
) -> tuple[RunRequest, PistonRuntime]:
    """The execute core's request for a Piston one, and the runtime it named (for
    `to_response`), or `RequestRefused`."""
    rt = resolve_runtime(req.language, req.version, versions)
    program, extra = _files(req, limits)
    if req.args:
        raise RequestRefused(
            "args is not supported: assay runs the program with no arguments", "args"
        )
    stdin = req.stdin or ""
    if not stdin.endswith("\n"):
        stdin += "\n"  # as Piston does (job.js)
    try:
        stdin_bytes = stdin.encode("utf-8")
    except UnicodeEncodeError:
        raise RequestRefused("stdin is not valid Unicode (a lone surrogate)", "stdin") from None
    compile_timeout = _timeout(
        "compile_timeout",
        req.compile_timeout,
        DEFAULT_COMPILE_TIMEOUT_MS,
        limits.max_compile_timeout,
    )
    run_timeout = _timeout(
        "run_timeout", req.run_timeout, DEFAULT_RUN_TIMEOUT_MS, limits.max_run_timeout
    )
    _cpu_time("compile_cpu_time", req.compile_cpu_time, compile_timeout, "compile_timeout")
    _cpu_time("run_cpu_time", req.run_cpu_time, run_timeout, "run_timeout")
    compile_mb = _memory_mb("compile_memory_limit", req.compile_memory_limit, limits)
    run_mb = _memory_mb("run_memory_limit", req.run_memory_limit, limits)
    explicit = req.compile_memory_limit not in (None, -1)
    compiled = LANGUAGES[rt.assay_language].compile is not None
    if compiled and explicit and compile_mb != run_mb:
        raise RequestRefused(
            "a compile_memory_limit other than run_memory_limit is not supported: assay gives "
            "both stages one memory limit (leave it out, or make it equal)",
            "compile_memory_limit",
        )
    request = RunRequest(
        language=rt.assay_language,
        code=program,
        stdin=stdin_bytes,
        files=extra,
        compile_timeout=compile_timeout,
        run_timeout=run_timeout,
        memory_mb=run_mb,
        output_cap=limits.output_cap,
    )
    return request, rt


_SIGNALS: dict[int, str] = {
    **{
        n: name
        for n, name in enumerate(
            (
                *("SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS"),
                *("SIGFPE", "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM"),
                *("SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN"),
                *("SIGTTOU", "SIGURG", "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH"),
                *("SIGIO", "SIGPWR", "SIGSYS"),
            ),
            start=1,
        )
    },
    34: "SIGRTMIN",
    **{34 + k: f"SIGRTMIN+{k}" for k in range(1, 16)},
    **{64 - k: f"SIGRTMAX-{k}" for k in range(1, 15)},
    64: "SIGRTMAX",
}
"""Piston's names for signal numbers (api/src/globals.js); an unknown number is null there."""

_LIMIT_MESSAGES = {
    "memory": "Memory limit exceeded",
    "pids": "Process limit exceeded",
    "disk": "File size limit exceeded",
}


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _stage(stage: Stage) -> dict[str, Any]:
    """Piston's stage object. `status`/`message` follow isolate's and Piston's: TO for a time
    or CPU limit, OL for the output limit (which stream is not known here), SG for a signal
    death or another limit kill, RE for a non-zero exit, null for exit 0."""
    code: int | None = None
    signal: str | None = None
    status: str | None = None
    message: str | None = None
    if stage.status == "timeout" or stage.limit in ("time", "cpu"):
        signal, status = "SIGKILL", "TO"
        wall = stage.limit != "cpu"
        message = "Time limit exceeded (wall clock)" if wall else "Time limit exceeded"
    elif stage.limit == "output":
        signal, status, message = "SIGKILL", "OL", "output length exceeded"
    elif stage.limit is not None:
        status = "SG"
        signal = "SIGKILL" if stage.signal is None else _SIGNALS.get(stage.signal)
        message = _LIMIT_MESSAGES.get(stage.limit, f"{stage.limit} limit exceeded")
    elif stage.signal is not None:
        signal, status = _SIGNALS.get(stage.signal), "SG"
        message = f"Caught fatal signal {stage.signal}"
    elif stage.exit_code is None:  # neither exited nor signalled: reported as killed
        signal, status, message = "SIGKILL", "SG", "Caught fatal signal 9"
    else:
        code = stage.exit_code
        if code != 0:
            status, message = "RE", f"Exited with error status {code}"
    stdout, stderr = _text(stage.stdout), _text(stage.stderr)
    return {
        "signal": signal,
        "stdout": stdout,
        "stderr": stderr,
        "code": code,
        "output": stdout + stderr,
        "memory": None,
        "message": message,
        "status": status,
        "cpu_time": None,
        "wall_time": round(stage.seconds * 1000),
    }


def to_response(ex: Execution, rt: PistonRuntime) -> dict[str, Any]:
    """Piston's execute response (HTTP 200) for an execution, plus an `assay` object
    (`grading_id`, `limit`). A refused execution raises `RequestRefused` (answer 400
    `error_body`); one with no stage at all raises ValueError (an internal error: 500)."""
    if ex.refused is not None:
        raise RequestRefused(f"the program was not run: the request was refused ({ex.refused})")
    compiled = None if ex.compile is None else _stage(ex.compile)
    if ex.run is not None:
        ran, limit = _stage(ex.run), ex.run.limit
    elif ex.compile is not None and compiled is not None and compiled["code"] != 0:
        ran, limit = dict(compiled), ex.compile.limit  # Piston: run is a copy of compile
    else:
        raise ValueError(f"execution {ex.grading_id} ended without running the program")
    out: dict[str, Any] = {} if compiled is None else {"compile": compiled}
    out |= {
        "run": ran,
        "language": rt.language,
        "version": rt.version,
        "assay": {"grading_id": ex.grading_id, "limit": limit},
    }
    return out
