"""Run a piece of untrusted code once, in fresh offline containers, and return its bytes.

No judge is involved: the caller gets the program's stdout, stderr, exit code or signal, its
time and the limit it hit, and decides for itself. What protects the host is what protects a
`stdio` grading (docs/stdio.md):

- the code and its files become a tar that crosses the archive firewall like a submission, so
  a `..`, an absolute path, a NUL or a link in a name is refused (`Execution.refused`) before
  any container exists;
- a compiled language is built in a compile container of its own (program.py), and only its
  build directory comes back, through the firewall again;
- the program runs once under the trusted runner in a candidate container: no network, a
  read-only root, a uid of its own, the memory, process, wall and CPU limits;
- every container belongs to one grading scope, so it is removed on every exit, and an
  exception nobody raised on purpose leaves as an `InternalError`.

The runner's report is hostile bytes: it is read strictly, and a report that cannot be read is
an infrastructure error (`EngineError`) unless the container hit its memory limit, the one
way a program can take the runner down with it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from assay.errors import ImageMissingError, UsageError

from ..firewall.check import FirewallLimits
from ..firewall.mapping import write_mapping_tar
from ..model.languages import LANGUAGES, Language, language_image
from ..runtime import ContainerSpec, ExecResult, GradingScope, Limits, Runtime, RuntimeError_
from ..runtime.scope import new_grading_id
from ..tiers.core.controller import contained
from ..tiers.core.intake import Crossing, Refused, Submission, through_firewall
from ..tiers.strict.candidate import (
    RUNNER_CASES_BYTES,
    candidate_container,
    run_candidate,
    runner_command,
    runner_deadline,
    write_cases,
)
from ..tiers.strict.program import (
    NO_PROGRAM,
    compile_container,
    compile_failure,
    compile_in_container,
    missing_program,
)
from ..tiers.strict.runner_report import PROCESSES, UnreadableReport, read_case, report_cap

MAX_FILES_BYTES = 16 << 20
"""The code and its files together, as the firewall counts them."""
MAX_FILES = 1000
BUILD_BYTES = 64 << 20
"""The compile container's build directory, and what of it may come back."""
BUILD_TAR_BYTES = BUILD_BYTES + (MAX_FILES << 10)
"""The build directory's raw tar as the engine hands it out (headers on top of its bytes)."""
RUN_PIDS = 64
CPUS = 1.0
MAX_TIMEOUT_S = 600.0
MAX_MEMORY_MB = 65536
MIN_MEMORY_MB = 16
MAX_OUTPUT_CAP = 64 << 20
CASE_ID = "run"


@dataclass(frozen=True)
class RunRequest:
    language: str
    """An assay language name (`model.languages.LANGUAGES`): python3 c cpp java go rust
    javascript."""
    code: str
    """Becomes the language's source file (main.py, main.cpp, Main.java...); a lone surrogate
    reaches the compiler or interpreter as the bytes UTF-8 would give it (surrogatepass)."""
    stdin: bytes = b""
    """Must be UTF-8 (the runner's case input is text); otherwise the run is refused."""
    files: Mapping[str, bytes] = field(default_factory=dict)
    """Extra files beside the source, by relative name; they cross the firewall with it."""
    compile_timeout: float = 10.0
    run_timeout: float = 10.0
    """Wall seconds of the run, and its CPU seconds (RLIMIT_CPU, rounded up to a second)."""
    memory_mb: int = 1024
    """The memory limit of the compile container and of the run's container (each whole)."""
    output_cap: int = 1 << 20
    """Per stream (stdout, stderr), bytes; past it the program is killed (`limit` "output")."""

    def __post_init__(self) -> None:
        if self.language not in LANGUAGES:
            raise UsageError(f"unknown language {self.language!r} (one of {', '.join(LANGUAGES)})")
        if not isinstance(self.code, str) or not isinstance(self.stdin, bytes | bytearray):
            raise UsageError("code must be str and stdin bytes")
        for name, value in (("compile_timeout", self.compile_timeout),
                            ("run_timeout", self.run_timeout)):  # fmt: skip
            if not (_number(value) and 0 < value <= MAX_TIMEOUT_S):
                raise UsageError(f"{name} must be in (0, {MAX_TIMEOUT_S:g}] seconds")
        if not (_int(self.memory_mb) and MIN_MEMORY_MB <= self.memory_mb <= MAX_MEMORY_MB):
            raise UsageError(f"memory_mb must be in [{MIN_MEMORY_MB}, {MAX_MEMORY_MB}]")
        if not (_int(self.output_cap) and 1 <= self.output_cap <= MAX_OUTPUT_CAP):
            raise UsageError(f"output_cap must be in [1, {MAX_OUTPUT_CAP}] bytes")


@dataclass(frozen=True)
class Stage:
    status: Literal["finished", "timeout"]
    """finished: the process exited, or was ended by a signal or a limit's kill."""
    exit_code: int | None
    """None when a signal or a limit ended it, or it timed out."""
    signal: int | None
    """The signal that ended it (e.g. 9); the run stage only."""
    stdout: bytes
    """At most the request's `output_cap` (a compile's stdout and stderr: 64 KiB together)."""
    stderr: bytes
    seconds: float
    """Wall time: of the program (the runner's clock), or of the whole compile command."""
    limit: str | None
    """The limit that ended it or that it hit: one of time, cpu, memory, output, pids, disk;
    None when none did."""


@dataclass(frozen=True)
class Execution:
    grading_id: str
    compile: Stage | None
    """None: the language has no compile step, or the request was refused before it."""
    run: Stage | None
    """None: the compile failed, or the request (or the build) was refused."""
    refused: str | None
    """Why the request was refused, a reason code: the firewall's (`firewall:dot-dot`...) for
    the code and files, or for the build a compile left, `compile:no-program` for a build with
    nothing to run; `request:stdin-encoding`, `limit:stdin-bytes` for stdin."""


def execute(rt: Runtime, req: RunRequest, base_image: str) -> Execution:
    """Compile (if the language compiles) and run `req` once. Raises `EngineError` (an
    `InfrastructureError`) when the engine fails or the runner's report cannot be trusted,
    `ImageMissingError` when the language's image is not built: never a Stage that looks
    like a program's result. Safe to call from many threads on one `Runtime`."""
    lang = LANGUAGES[req.language]
    gid = new_grading_id()
    cases = _cases_json(req.stdin)
    if isinstance(cases, str):
        return Execution(gid, None, None, cases)
    image = _image_of(rt, lang, base_image)
    with contained(gid), GradingScope(rt, gid) as scope:
        taken = _take_files(scope, lang, req)
        if isinstance(taken, Refused):
            return Execution(gid, None, None, taken.reason)
        files, compiled = taken.files, None
        if lang.compile is not None:
            spec = compile_container(image, gid, BUILD_BYTES, req.memory_mb, CPUS)
            limits = FirewallLimits(
                max_entries=MAX_FILES, max_file_bytes=BUILD_BYTES, max_total_bytes=BUILD_BYTES
            )
            done = compile_in_container(
                scope, lang, spec, taken.archive.read_bytes(), req.compile_timeout, limits,
                BUILD_TAR_BYTES,
            )  # fmt: skip
            compiled = compile_stage(done.result, done.hit)
            if done.built is None:
                return Execution(gid, compiled, None, None)
            if isinstance(done.built, Refused):
                return Execution(gid, compiled, None, done.built.reason)
            if missing_program(lang, done.built.files) is not None:
                return Execution(gid, compiled, None, NO_PROGRAM)
            files = done.built.files
        return Execution(gid, compiled, _run(scope, lang, image, files, cases, req), None)


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    """An int or a float, never a bool (whose JSON is `true`)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _image_of(rt: Runtime, lang: Language, base_image: str) -> str:
    """The image `lang` builds and runs in, which must be on the engine already."""
    ref = language_image(lang.name, base_image)
    try:
        rt.image_digest(ref)
    except ImageMissingError:
        if ref == base_image:
            raise
        raise ImageMissingError(ref, f"assay build --languages {lang.name}") from None
    return ref


def _cases_json(stdin: bytes) -> bytes | str:
    """The runner's cases file: one stdio case holding `stdin`; or the reason it cannot be."""
    try:
        text = bytes(stdin).decode("utf-8")
    except UnicodeDecodeError:
        return "request:stdin-encoding"
    raw = json.dumps([{"id": CASE_ID, "input": {"stdin": text}}], ensure_ascii=False).encode()
    return raw if len(raw) <= RUNNER_CASES_BYTES else "limit:stdin-bytes"


def _take_files(scope: GradingScope, lang: Language, req: RunRequest) -> Submission | Refused:
    """The source and the files as one tar through the firewall, or why they were refused."""
    if lang.source in req.files:
        return Refused("firewall:duplicate", lang.source, "a file has the source's name")
    buf = io.BytesIO()
    write_mapping_tar({lang.source: req.code.encode("utf-8", "surrogatepass"), **req.files}, buf)
    buf.seek(0)
    limits = FirewallLimits(
        max_entries=MAX_FILES, max_file_bytes=MAX_FILES_BYTES, max_total_bytes=MAX_FILES_BYTES
    )
    return through_firewall(scope, buf, Crossing(limits, None, None, "sandbox"))


def compile_stage(res: ExecResult, hit: Sequence[str]) -> Stage:
    """A compile command's result as a Stage; it failed unless `exit_code` is 0 and `limit`
    None (`compile_failure`)."""
    failed = compile_failure(res, list(hit))
    limit = {"compile:memory": "memory", "compile:timeout": "time", "compile:output": "output"}
    named = limit.get(failed or "")
    if named is None and failed is not None and "pids" in hit:
        named = "pids"
    if res.exited and named is None:
        # The compile container stopped under the compiler at no limit: nothing the code did.
        raise RuntimeError_("the compile container stopped during the compile at no limit")
    status: Literal["finished", "timeout"] = "timeout" if res.timed_out else "finished"
    return Stage(status, res.exit_code, None, res.stdout, res.stderr, res.duration_s, named)


def run_spec(
    image: str, gid: str, files: Path, inputs: Path, memory_mb: int, runner: Sequence[str]
) -> ContainerSpec:
    """The run's container: a strict tier's candidate container with the request's limits,
    its runner `runner`."""
    limits = Limits(memory_bytes=memory_mb * 2**20, pids=RUN_PIDS, cpus=CPUS)
    return candidate_container(image, gid, files, inputs, limits, runner)


def run_argv(lang: Language, req: RunRequest) -> tuple[str, ...]:
    seconds = float(req.run_timeout)
    return runner_command(
        "stdio", seconds, req.output_cap, command=lang.run, cpu_seconds=seconds, keep_stderr=True
    )


def _run(
    scope: GradingScope, lang: Language, image: str, files: Path, cases: bytes, req: RunRequest
) -> Stage:
    inputs = scope.tempdir("inputs")
    inputs.chmod(0o755)
    write_cases(inputs, cases)
    spec = run_spec(image, scope.grading_id, files, inputs, req.memory_mb, run_argv(lang, req))
    cid = scope.container(spec, start=False)
    try:
        ran = run_candidate(
            scope, cid, runner_deadline(1, req.run_timeout), report_cap(req.output_cap)
        )
        res = ran.result
        if res.timed_out:
            # The runner outlived its program's deadline by the whole slack: the program kept
            # it busy (no honest run gets here), so the run counts as timed out.
            return Stage("timeout", None, None, b"", b"", res.duration_s, "time")
        if res.truncated:
            raise RuntimeError_("the runner wrote more than one case's report can hold")
        # A runner a signal ended was ended by its memory limit (run_candidate raised
        # otherwise), which the engine may have recorded after the stop.
        hit = [*ran.hit, "memory"] if ran.late_memory else list(ran.hit)
        try:
            if ran.stopped or res.exit_code != 0:
                raise UnreadableReport(f"the runner exited {res.exit_code}")
            return stage_from_report(res.stdout, hit, req.output_cap)
        except UnreadableReport as exc:
            if "memory" in hit:  # the program took the runner down with it at the limit
                return Stage("finished", None, None, b"", b"", res.duration_s, "memory")
            raise RuntimeError_(f"the runner's report cannot be read: {exc}") from None
    finally:
        scope.discard(cid)


def stage_from_report(raw: bytes, hit: Sequence[str], output_cap: int) -> Stage:
    """The run's Stage from the runner's report (read by `runner_report.read_case`: any doubt
    is `UnreadableReport`); `hit` is what the host saw the container hit, which names the
    limit where the runner named none. A program the runner could not start at all (status
    "error": its build is no executable) finished with exit code 126."""
    case = read_case(raw, CASE_ID, output_cap)
    out, err, secs = case.output, case.stderr, case.duration_s
    stage: Stage
    if case.status == "timeout":
        stage = Stage("timeout", None, None, out, err, secs, "time")
    elif case.status == "limit" and case.limit == "cpu":
        # The runner reports no exit for it: the rlimit's kill.
        stage = Stage("timeout", None, None, out, err, secs, "cpu")
    elif case.status == "residue":
        # The program left what could not be removed (the runner names it): processes that
        # outlived their kill, or a scratch place that could not be emptied. Its own doing.
        left = "pids" if case.places[0] == PROCESSES else "disk"
        stage = Stage("finished", case.exit_code, case.signal, out, err, secs, left)
    elif case.status == "error":
        # The program's own file could not be executed (the runner's command is trusted and
        # its interpreters are in the image): the program's failure, told as a shell tells
        # it, 126 "cannot execute", with the reason on stderr.
        stage = Stage("finished", 126, None, b"", err, secs, None)
    else:  # "ok", or a "limit" other than cpu, which the Stage names
        stage = Stage("finished", case.exit_code, case.signal, out, err, secs, case.limit)
    if stage.limit is None and hit:
        named = "memory" if "memory" in hit else "pids" if "pids" in hit else None
        if named is not None:
            stage = Stage(stage.status, stage.exit_code, stage.signal, stage.stdout,
                          stage.stderr, stage.seconds, named)  # fmt: skip
    return stage
