"""A `stdio` task's program: which language the submission is in, and its build.

The compiler reads the candidate's source, so it runs on the untrusted side: a container of
its own from the language's image, no network, the compile limits, and only its build
directory comes back, through the archive firewall, to become the candidate's /candidate
(docs/stdio.md). Nothing of the judge is ever in that container.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ...firewall.check import FirewallLimits
from ...firewall.materialise import read_materialised
from ...model.languages import LANGUAGES, Language
from ...model.task import Task
from ...runtime import ContainerSpec, ExecResult, GradingScope, Limits, Runtime, Scratch
from ...runtime.base import ceilings_hit
from ..core.controller import language_image_of
from ..core.intake import Crossing, Refused, Submission, firewall_limits, take_from_container

BUILD_DIR = "/build"
COMPILE_LOG_CAP = 64 << 10
"""Compiler output kept (stdout and stderr together); past it the compile fails."""
COMPILE_PIDS = 256
NO_PROGRAM = "compile:no-program"
"""The compiler exited 0 but left nothing its language's run command can start: a Rust
`#![crate_type = "lib"]` or a Go `package foo` is an `ar` archive named `main`, mode 0644."""
_ELF = b"\x7fELF"


@dataclass(frozen=True)
class Program:
    language: Language
    image: str
    files: Path
    """What the candidate container binds at /candidate: the built program, or the source."""


@dataclass(frozen=True)
class NotBuilt:
    """The submission has no program to run: the grading fails with `reason`."""

    reason: str
    detail: str = ""


def submitted_language(task: Task, taken: Submission) -> Language | NotBuilt:
    """The one language whose source file the submission holds. The firewall kept only the
    task's source names, so anything else was never taken."""
    spec = task.config.stdio
    assert spec is not None
    present = [
        LANGUAGES[name]
        for name in spec.languages
        if any(
            e.path == LANGUAGES[name].source and e.kind == "file" for e in taken.accepted.manifest
        )
    ]
    if not present:
        return NotBuilt("submission:no-source", ", ".join(spec.sources))
    if len(present) > 1:
        return NotBuilt("submission:ambiguous-language", ", ".join(p.source for p in present))
    return present[0]


CHECKER_SOURCES = (".cpp", ".cc", ".cxx")


def judge_image_of(rt: Runtime, task: Task, base_image: str) -> str:
    """The judge's image: the base image, or the C++ toolchain's when the task's checker is a
    testlib C++ source the judge compiles (trusted task code, never the candidate's)."""
    spec = task.config.stdio
    if spec is None or not (spec.checker_program or "").endswith(CHECKER_SOURCES):
        return base_image
    return language_image_of(rt, task, "cpp", base_image)


def compile_spec(task: Task, image: str, gid: str) -> ContainerSpec:
    spec = task.config.stdio
    assert spec is not None
    lim = task.config.limits
    return compile_container(image, gid, lim.artifact_bytes, spec.compile_memory_mb, lim.cpus)


def compile_container(
    image: str, gid: str, build_bytes: int, memory_mb: int, cpus: float
) -> ContainerSpec:
    """A compile container: a scratch build directory of `build_bytes`, the compile limits."""
    return ContainerSpec(
        image=image,
        grading_id=gid,
        role="compile",
        scratch=(Scratch(BUILD_DIR, build_bytes),),
        limits=Limits(memory_bytes=memory_mb * 2**20, pids=COMPILE_PIDS, cpus=cpus),
        workdir=BUILD_DIR,
    )


def source_tar(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.uid, info.gid = len(data), 0o644, 1000, 1000
        tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@dataclass(frozen=True)
class Compiled:
    """What one compile container did: the compiler's result, the ceilings the container hit,
    and, only when the compile succeeded (`compile_failure` is None), its build directory
    through the archive firewall."""

    result: ExecResult
    hit: list[str]
    built: Submission | Refused | None


def compile_failure(res: ExecResult, hit: list[str]) -> str | None:
    """The `compile:*` reason a compile failed with, or None if it succeeded."""
    if "memory" in hit:
        return "compile:memory"
    if res.timed_out:
        return "compile:timeout"
    if res.truncated:
        return "compile:output"
    if res.exited or res.exit_code != 0:
        return "compile:error"
    return None


def compile_in_container(
    scope: GradingScope,
    lang: Language,
    spec: ContainerSpec,
    sources: bytes,
    timeout: float,
    limits: FirewallLimits,
    cap: int,
) -> Compiled:
    """Unpack the tar `sources` into a fresh compile container's build directory, run the
    language's compiler there under `timeout`, and take the build directory back through the
    firewall (`limits`, `cap` raw bytes) if it succeeded; the container is removed either way."""
    assert lang.compile is not None
    rt = scope.runtime
    cid = scope.container(spec)
    try:
        rt.put_archive(cid, BUILD_DIR, sources)
        res = rt.exec(
            cid,
            lang.compile,
            deadline_s=timeout,
            output_cap=COMPILE_LOG_CAP,
            env={"HOME": "/tmp", **dict(lang.env)},
            workdir=BUILD_DIR,
        )
        hit = ceilings_hit(rt, cid)
        if compile_failure(res, hit) is not None:
            return Compiled(res, hit, None)
        how = Crossing(limits, None, BUILD_DIR.strip("/"), "build")
        return Compiled(res, hit, take_from_container(scope, cid, BUILD_DIR, cap, how))
    finally:
        scope.discard(cid)


def missing_program(lang: Language, files: Path) -> str | None:
    """Why the accepted build in `files` holds no program `lang.run` can start, or None. Only a
    run command that names the build's own file is checked (`./main`); an interpreter is the
    image's. Checked here because the runner cannot start such a file at all (exec fails), and
    nothing that reports then is the program's result."""
    target = lang.run[0]
    if not target.startswith("./"):
        return None
    name = target.removeprefix("./")
    try:
        fd = os.open(files / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return f"the build has no {name}"
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return f"the build's {name} is not a file"
        if not mode & 0o111:
            return f"the build's {name} is not executable"
        if os.read(fd, len(_ELF)) != _ELF:
            return f"the build's {name} is no ELF executable"
    finally:
        os.close(fd)
    return None


def build_program(
    scope: GradingScope, task: Task, taken: Submission, base_image: str
) -> Program | NotBuilt:
    """The submission's program, compiled if its language compiles. A compiler that fails,
    overruns its time, memory or output, or leaves a build the firewall refuses, fails the
    grading with a `compile:*` (or firewall) reason, as does a build with no program to run
    (`NO_PROGRAM`); the engine failing raises."""
    lang = submitted_language(task, taken)
    if isinstance(lang, NotBuilt):
        return lang
    image = language_image_of(scope.runtime, task, lang.name, base_image)
    if lang.compile is None:
        return Program(lang, image, taken.files)
    spec = task.config.stdio
    assert spec is not None
    source = read_materialised(taken.files, lang.source)
    done = compile_in_container(
        scope, lang, compile_spec(task, image, scope.grading_id),
        source_tar(lang.source, source), spec.compile_timeout, firewall_limits(task),
        task.config.limits.artifact_bytes,
    )  # fmt: skip
    failed = compile_failure(done.result, done.hit)
    if failed == "compile:error":
        return NotBuilt(failed, _log_tail(done.result.stdout + done.result.stderr))
    if failed is not None:
        return NotBuilt(failed)
    assert done.built is not None
    if isinstance(done.built, Refused):
        return NotBuilt(done.built.reason, done.built.detail)
    if (why := missing_program(lang, done.built.files)) is not None:
        return NotBuilt(NO_PROGRAM, why)
    return Program(lang, image, done.built.files)


def _log_tail(raw: bytes, cap: int = 2000) -> str:
    """The compiler's last words, printable ASCII only (they are the candidate's bytes)."""
    text = raw[-cap:].decode("utf-8", "replace")
    return "".join(ch if 0x20 <= ord(ch) < 0x7F or ch == "\n" else "?" for ch in text)
