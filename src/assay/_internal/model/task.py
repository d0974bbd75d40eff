"""The task format: `task.toml`, `inputs/` (all the agent ever sees) and `judge/` (never leaves
the judge). Parsing is strict: an unknown or missing key is an error naming file and key."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assay.errors import TaskEnvironmentError, TaskError

from .languages import ALL_LANGUAGES, LANGUAGES
from .testpatch import read_test_patch, under_test_dirs

Kind = Literal["function", "cli", "transform", "stdio", "pytest", "harbor"]
STRICT_KINDS: frozenset[str] = frozenset({"function", "cli", "transform", "stdio"})


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class TaskLimits(_Strict):
    case_timeout: float = Field(5.0, gt=0, le=600)
    total_timeout: float = Field(120.0, gt=0, le=7200)
    agent_timeout: float = Field(300.0, gt=0, le=86400)
    memory_mb: int = Field(512, ge=16, le=65536)
    pids: int = Field(128, ge=8, le=4096)
    cpus: float = Field(1.0, gt=0, le=64)
    output_bytes: int = Field(1 << 20, ge=1, le=1 << 30)
    cpu_seconds: float | None = Field(None, gt=0, le=600)
    """CPU seconds of one case's process (`stdio`; default: case_timeout)."""
    artifact_bytes: int = Field(64 << 20, ge=1, le=4 << 30)
    artifact_entries: int = Field(10_000, ge=1, le=1_000_000)
    """The most members a submission's archive may have, and a repository task's repository."""


class FunctionSpec(_Strict):
    entry: str = Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$"
    )
    """`module:function`, or `module:Class.method` (called on a fresh `Class()` per case)."""


class CommandSpec(_Strict):
    command: list[str] = Field(min_length=1)


Checker = Literal[
    "exact", "lines", "tokens", "numbers", "tokens-ci", "unordered-lines", "python", "testlib"
]
PROGRAM_CHECKERS = frozenset({"python", "testlib"})


class StdioSpec(_Strict):
    """A program read from one source file in one of `languages`, run once per test on its
    stdin; its stdout is decided by `checker` in the judge (docs/stdio.md)."""

    languages: list[str] = Field(default_factory=lambda: list(ALL_LANGUAGES), min_length=1)
    checker: Checker = "lines"
    abs_tol: float | None = Field(None, ge=0, allow_inf_nan=False)
    rel_tol: float | None = Field(None, ge=0, allow_inf_nan=False)
    checker_program: str | None = None
    """A path under judge/: the `python` checker module or the `testlib` checker."""
    compile_timeout: float = Field(60.0, gt=0, le=600)
    compile_memory_mb: int = Field(1024, ge=64, le=16384)

    @model_validator(mode="after")
    def _check(self) -> StdioSpec:
        if unknown := sorted(set(self.languages) - set(ALL_LANGUAGES)):
            raise ValueError(
                f"unknown language {unknown[0][:40]!r} (known: {', '.join(ALL_LANGUAGES)})"
            )
        if len(set(self.languages)) != len(self.languages):
            raise ValueError("stdio.languages names a language twice")
        if self.checker in PROGRAM_CHECKERS and self.checker_program is None:
            raise ValueError(f"checker = {self.checker!r} needs stdio.checker_program")
        if self.checker_program is not None:
            path = PurePosixPath(self.checker_program)
            if path.is_absolute() or ".." in path.parts or not path.parts:
                raise ValueError("stdio.checker_program must be a relative path under judge/")
        return self

    @property
    def tolerances(self) -> tuple[float, float]:
        """(rel_tol, abs_tol) of the `numbers` checker."""
        rel = DEFAULT_TOL if self.rel_tol is None else self.rel_tol
        return rel, DEFAULT_TOL if self.abs_tol is None else self.abs_tol

    @property
    def sources(self) -> list[str]:
        """The source file names a submission may consist of (one of them)."""
        return [LANGUAGES[name].source for name in self.languages]


Comparator = Literal["exact", "equal", "truthy", "falsy", "float", "unordered", "custom"]
DEFAULT_TOL = 1e-9


class JudgeSpec(_Strict):
    cases: str | None = None
    generator: str | None = None
    comparator: Comparator = "exact"
    tolerance: float | None = Field(None, ge=0, allow_inf_nan=False)
    rel_tol: float | None = Field(None, ge=0, allow_inf_nan=False)
    abs_tol: float | None = Field(None, ge=0, allow_inf_nan=False)
    custom: str | None = None
    diagnostics: Literal["none", "owner"] = "owner"
    """`owner`: failed cases get an excerpt of expected and actual (and a diff) written beside
    the signed verdict for the task's owner; `none`: the judge produces none."""

    @model_validator(mode="after")
    def _one_source(self) -> JudgeSpec:
        if (self.cases is None) == (self.generator is None):
            raise ValueError("exactly one of judge.cases and judge.generator is required")
        if self.comparator == "custom" and self.custom is None:
            raise ValueError("comparator = 'custom' needs judge.custom (the comparator module)")
        if self.tolerance is not None and (self.rel_tol, self.abs_tol) != (None, None):
            raise ValueError("judge.tolerance is the older spelling of rel_tol + abs_tol: not both")
        return self

    @property
    def tolerances(self) -> tuple[float, float]:
        """(rel_tol, abs_tol) for `float`; `tolerance` sets both (the older spelling)."""
        if self.tolerance is not None:
            return self.tolerance, self.tolerance
        rel = DEFAULT_TOL if self.rel_tol is None else self.rel_tol
        return rel, DEFAULT_TOL if self.abs_tol is None else self.abs_tol


class PytestSpec(_Strict):
    tests: list[str] | None = None
    truth: str | None = None
    # A repository task (docs/tasks.md, "Repository tasks"): the code under test is the
    # repository at the environment's workdir, graded with SWE-bench's lists.
    fail_to_pass: list[str] | None = None
    pass_to_pass: list[str] = Field(default_factory=list)
    test_patch: str | None = None
    test_dirs: list[str] = Field(default_factory=lambda: ["tests"], min_length=1)

    @property
    def is_repository(self) -> bool:
        return self.fail_to_pass is not None

    @model_validator(mode="after")
    def _repository(self) -> PytestSpec:
        if not self.is_repository:
            if self.test_patch is not None or self.pass_to_pass:
                raise ValueError("test_patch and pass_to_pass need fail_to_pass")
            # An empty list would grade zero tests: a task that checks nothing is refused at
            # load, as an empty case file is, never graded into a verdict.
            if self.tests is not None and not self.tests:
                raise ValueError("tests must name at least one test (leave it out to collect them)")
            return self
        if self.test_patch is None:
            raise ValueError("a repository task (fail_to_pass) needs test_patch")
        if self.tests is not None or self.truth is not None:
            raise ValueError("a repository task takes fail_to_pass/pass_to_pass, not tests/truth")
        if not self.fail_to_pass:
            raise ValueError("fail_to_pass must name at least one test")
        if set(self.fail_to_pass) & set(self.pass_to_pass):
            raise ValueError("a test cannot be in both fail_to_pass and pass_to_pass")
        for d in self.test_dirs:
            parts = d.strip("/").split("/")
            if d.startswith("/") or any(p in ("", ".", "..") for p in parts):
                raise ValueError(f"test_dirs entry {d!r} is not a relative path")
        for key, ids in (("fail_to_pass", self.fail_to_pass), ("pass_to_pass", self.pass_to_pass)):
            for test_id in ids:
                # Only test_dirs are closed to the submission: a listed test elsewhere is one
                # the candidate may rewrite (or replace with a file that always passes).
                if not under_test_dirs(test_id.split("::", 1)[0], self.test_dirs):
                    raise ValueError(
                        f"{key} id {test_id!r} is not under test_dirs {self.test_dirs}"
                    )
        return self


HARBOR_TEST = "tests/test.sh"
"""A Harbor task's verifier entry point, under judge/ (`assay import harbor` puts it there)."""


HARBOR_VERIFIER_PATHS = ("/logs", "/tests")
"""Where a Harbor verifier keeps its reward and its tests."""
RESERVED_ROOTS = ("/task", "/agent", "/proc", "/sys", "/dev")
"""assay's own mount points and the kernel's: never a harbor task's workdir."""


DECOY_PREFIX = "assay-decoy-"
"""What every decoy marker starts with (tiers/core/decoys.py). A strict task's judge/ may not
hold it: the markers are fresh per grading, so no expected value can equal one, and a task
that spells the prefix out is refused at load rather than trusted to (docs/tamper.md)."""


class DecoySpec(_Strict):
    """`[decoys]`: answer keys planted as bait for the strict tier's candidate (docs/tamper.md).
    On by default; `enabled = false` turns them off for this task."""

    enabled: bool = True


class HarborSpec(_Strict):
    """`[harbor]`: what a task imported from Harbor needs beyond the common keys
    (docs/tasks.md, "Harbor tasks"). Its test script is judge/tests/test.sh."""

    verifier_env: dict[str, str] = Field(default_factory=dict, max_length=64)


IMAGE_REF = r"^([a-z0-9][a-z0-9._/:-]{0,254}@)?sha256:[0-9a-f]{64}$"
"""A pinned image: `name@sha256:<digest>` (a repo digest) or `sha256:<id>` (a local image id)."""
WORKDIR = r"^/[A-Za-z0-9._/-]{0,254}$"
IMAGE_WORKDIR = "image"
"""`workdir = "image"`: the image's own WORKDIR, read from the image when it is built or found
(Harbor's default when a task names no workdir)."""
ENV_CONTEXT_FORBIDDEN = frozenset({"judge", "solutions", "attempts"})
"""Top-level task directories a build context may not be or lie under: judge/ never leaves the
judge, and a reference solution baked into the image would hand the agent the answer."""


class EnvironmentSpec(_Strict):
    """`[environment]`: the image the agent and candidate containers run (docs/tasks.md)."""

    dockerfile: str | None = None
    image: str | None = Field(None, pattern=IMAGE_REF)
    workdir: str = Field("/workspace", pattern=f"{WORKDIR}|^{IMAGE_WORKDIR}$")

    @model_validator(mode="after")
    def _one_source(self) -> EnvironmentSpec:
        if (self.dockerfile is None) == (self.image is None):
            raise ValueError("exactly one of environment.dockerfile and environment.image")
        if self.workdir != IMAGE_WORKDIR and (problem := workdir_problem(self.workdir)):
            raise ValueError(f"environment.workdir {problem}")
        if self.dockerfile is not None:
            _check_dockerfile_path(self.dockerfile)
        return self


def workdir_problem(workdir: str, kind: str = "") -> str | None:
    """Why `workdir` cannot be a task's workdir (None when it can): for every task, an absolute
    path below /; for a harbor task, also clear of the verifier's /logs and /tests, since the
    artifacts are restored under the workdir, never where the reward is."""
    parts = workdir.split("/")
    if not re.fullmatch(WORKDIR[1:-1], workdir) or ".." in parts or "." in parts:
        return "must be an absolute path below /, no . or .."
    if workdir.rstrip("/") in ("", "/"):
        return "must be an absolute path below /, no . or .."
    if kind == "harbor":
        workdir = workdir.rstrip("/")
        for own in HARBOR_VERIFIER_PATHS + RESERVED_ROOTS:
            if workdir == own or own.startswith(workdir + "/") or workdir.startswith(own + "/"):
                return f"of a harbor task may not overlap {own}"
    return None


def _check_dockerfile_path(rel: str) -> None:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or rel != path.as_posix():
        raise ValueError(
            "environment.dockerfile is a plain path relative to the task directory, inside it"
        )
    if len(path.parts) < 2:
        raise ValueError(
            "environment.dockerfile must be in a subdirectory (e.g. environment/Dockerfile): "
            "that directory is the build context, and the task root holds judge/"
        )
    if path.parts[0] in ENV_CONTEXT_FORBIDDEN:
        raise ValueError(f"environment.dockerfile may not be under {path.parts[0]}/")


class TaskConfig(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")
    kind: Kind
    artifacts: list[str] = Field(min_length=1)
    description: str = ""
    impossible: bool = False
    """An impossible twin (`assay impossible`, docs/tamper.md): no solution can pass it, so
    its verdicts are marked and a pass fails as `twin:passed`."""
    limits: TaskLimits = TaskLimits()
    function: FunctionSpec | None = None
    cli: CommandSpec | None = None
    transform: CommandSpec | None = None
    stdio: StdioSpec | None = None
    judge: JudgeSpec | None = None
    pytest: PytestSpec | None = None
    harbor: HarborSpec | None = None
    environment: EnvironmentSpec | None = None
    decoys: DecoySpec = DecoySpec()

    @property
    def has_program_checker(self) -> bool:
        """Whether a case may name a checker program: a custom comparator (`judge.custom`),
        or a `stdio` task's `checker_program` (what the judge's `--custom-file` says)."""
        if self.stdio is not None:
            return self.stdio.checker_program is not None
        return self.judge is not None and self.judge.custom is not None

    @model_validator(mode="before")
    @classmethod
    def _stdio_artifacts(cls, data: Any) -> Any:
        """A `stdio` submission is one source file named by its language: the artifacts are
        those names, derived here, never declared (a declared glob could take more)."""
        if not isinstance(data, dict) or data.get("kind") != "stdio":
            return data
        if "artifacts" in data:
            raise ValueError(
                "kind 'stdio' takes no artifacts: the submission is one source file named by "
                "its language (main.py, main.cpp, Main.java...)"
            )
        section = data.get("stdio")
        section = {} if section is None else section
        names = section.get("languages", ALL_LANGUAGES) if isinstance(section, dict) else ()
        # A bad section is reported by its own validation below, at its own location.
        sources = [LANGUAGES[n].source for n in names if isinstance(n, str) and n in LANGUAGES]
        return {**data, "stdio": section, "artifacts": sources or ["main.py"]}

    @model_validator(mode="after")
    def _kind_section(self) -> TaskConfig:
        sections = {
            "function": self.function,
            "cli": self.cli,
            "transform": self.transform,
            "stdio": self.stdio,
        }
        for name, value in sections.items():
            if (name == self.kind) != (value is not None):
                raise ValueError(f"[{name}] is required for kind {name!r} and only for it")
        if self.kind in STRICT_KINDS and self.judge is None:
            raise ValueError(f"[judge] is required for kind {self.kind!r}")
        if self.kind == "pytest" and self.judge is not None:
            raise ValueError("kind 'pytest' takes [pytest], not [judge]")
        if self.kind != "pytest" and self.pytest is not None:
            raise ValueError("[pytest] is only for kind 'pytest'")
        if self.kind == "harbor" and self.judge is not None:
            raise ValueError("kind 'harbor' runs judge/tests/test.sh, not [judge]")
        if self.kind != "harbor" and self.harbor is not None:
            raise ValueError("[harbor] is only for kind 'harbor'")
        workdir = self.environment.workdir if self.environment else "/workspace"
        if workdir != IMAGE_WORKDIR and (problem := workdir_problem(workdir, self.kind)):
            raise ValueError(f"environment.workdir {problem}")
        return self


class Task:
    """A loaded task: its validated config and where its parts live."""

    def __init__(self, root: Path, config: TaskConfig, digest: str) -> None:
        self.root = root
        self.config = config
        self.digest = digest
        self._image_workdir: str | None = None

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def environment(self) -> EnvironmentSpec | None:
        """The task's own `[environment]`, or None: it runs on the grading's base image."""
        return self.config.environment

    @property
    def workdir(self) -> str:
        """Where the agent works and the submission is taken from (`/workspace` by default).
        For `workdir = "image"`, the image's WORKDIR, known once the image was built or found
        (`resolve_workdir`); asked before that, it is an error, never a guess."""
        env = self.config.environment
        if env is None:
            return "/workspace"
        if env.workdir != IMAGE_WORKDIR:
            return env.workdir
        if self._image_workdir is None:
            raise TaskEnvironmentError(
                str(self.root / "task.toml"),
                "environment.workdir is the image's WORKDIR, not yet read from the image",
                fix=f"assay build {self.root}",
            )
        return self._image_workdir

    def resolve_workdir(self, image_workdir: str) -> None:
        """Take the image's WORKDIR as the workdir of a `workdir = "image"` task; raises
        TaskEnvironmentError when it cannot be one (unset, /, or over the verifier's paths)."""
        env = self.config.environment
        if env is None or env.workdir != IMAGE_WORKDIR:
            return
        problem = workdir_problem(image_workdir or "/", self.config.kind)
        if problem:
            raise TaskEnvironmentError(
                str(self.root / "task.toml"),
                f"the image's WORKDIR {image_workdir or '(none)'!r} {problem}",
                fix="name the directory the agent works in with environment.workdir",
            )
        self._image_workdir = image_workdir.rstrip("/")

    @property
    def build_context(self) -> Path | None:
        """The directory assay builds the environment from (the Dockerfile's), or None."""
        env = self.config.environment
        if env is None or env.dockerfile is None:
            return None
        return (self.root / env.dockerfile).parent

    @property
    def inputs_dir(self) -> Path:
        return self.root / "inputs"

    @property
    def judge_dir(self) -> Path:
        return self.root / "judge"


def _location(err: dict[str, object]) -> str:
    return ".".join(str(p) for p in err.get("loc", ())) or "(top level)"  # type: ignore[attr-defined]


def load_task(path: Path | str) -> Task:
    """Load and validate the task directory at `path` (docs/tasks.md). Raises
    `assay.errors.TaskError` naming the file and the key that is wrong."""
    root = Path(path).resolve()
    toml_path = root / "task.toml"
    if not toml_path.is_file():
        raise TaskError(str(toml_path), "no task.toml here; a task directory needs one")
    try:
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskError(str(toml_path), f"not valid TOML: {exc}") from exc
    try:
        config = TaskConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        kind = first["type"]
        where = _location(dict(first))
        if kind == "extra_forbidden":
            msg = f"unknown key {where!r}"
        elif kind == "missing":
            msg = f"missing key {where!r}"
        else:
            msg = f"key {where!r}: {first['msg']}"
        raise TaskError(str(toml_path), msg) from exc
    for needed in ("inputs", "judge"):
        if not (root / needed).is_dir():
            raise TaskError(str(root), f"missing {needed}/ directory")
    judge_files = (
        [config.judge.cases, config.judge.generator, config.judge.custom] if config.judge else []
    )
    if config.pytest:
        judge_files += [config.pytest.truth, config.pytest.test_patch]
    if config.stdio:
        judge_files.append(config.stdio.checker_program)
    if config.environment is not None and config.environment.dockerfile is not None:
        _check_dockerfile_file(root, toml_path, config.environment.dockerfile)
    for rel in filter(None, judge_files):
        if not (root / "judge" / rel).is_file():
            raise TaskError(str(toml_path), f"judge file {rel!r} does not exist under judge/")
    if config.pytest is not None and config.pytest.test_patch is not None:
        read_test_patch(root / "judge" / config.pytest.test_patch, config.pytest.test_dirs)
    if config.kind == "harbor" and not (root / "judge" / HARBOR_TEST).is_file():
        raise TaskError(str(toml_path), f"a harbor task needs judge/{HARBOR_TEST}")
    if config.judge is not None and config.judge.cases is not None:
        check_case_file(root / "judge" / config.judge.cases, config)
    if config.kind in STRICT_KINDS and config.decoys.enabled:
        check_no_decoy_prefix(root / "judge")
    return Task(root, config, tree_digest(root))


def _check_dockerfile_file(root: Path, toml_path: Path, rel: str) -> None:
    """The Dockerfile exists, and neither it nor its directory leaves the task through a link."""
    path = root / rel
    if not path.is_file():
        raise TaskError(str(toml_path), f"environment.dockerfile {rel!r} does not exist")
    here = root
    for part in PurePosixPath(rel).parts:
        here = here / part
        if here.is_symlink():
            raise TaskError(
                str(toml_path), f"environment.dockerfile {rel!r}: {part!r} is a symbolic link"
            )


def check_case_file(path: Path, config: TaskConfig) -> None:
    """The judge's own case checks, run here so a bad case file fails before any container
    starts, naming the file, the case and the place inside the value (docs/tasks.md)."""
    from assay._incontainer import judge

    assert config.judge is not None
    try:
        judge.load_case_file(str(path), config.has_program_checker, config.kind)
    except judge.BadCase as exc:
        raise TaskError(str(path), str(exc)) from None
    except OSError as exc:
        raise TaskError(str(path), f"cannot read: {exc.strerror}") from None


def check_no_decoy_prefix(judge: Path) -> None:
    """Refuse a judge/ that holds `DECOY_PREFIX` anywhere (names or bytes, through links as
    tree_digest reads them): an expected value that looks like a decoy must be a task error,
    never a false alarm. Raises `TaskError` naming the file."""
    needle = DECOY_PREFIX.encode()
    for dirpath, dirnames, filenames in os.walk(judge, onerror=_unreadable):
        for name in sorted(filenames) + sorted(dirnames):
            path = Path(dirpath) / name
            if needle in name.encode("utf-8", "surrogateescape"):
                raise TaskError(str(path), f"the name holds the decoy prefix {DECOY_PREFIX!r}")
            if name in filenames and path.is_file() and _holds(path, needle):
                raise TaskError(
                    str(path), f"holds the decoy prefix {DECOY_PREFIX!r}: an expected value "
                    "may not look like a decoy answer key (or set [decoys] enabled = false)",
                )  # fmt: skip


def _holds(path: Path, needle: bytes, chunk: int = 1 << 20) -> bool:
    """Whether the file holds `needle`, read in chunks that overlap by less than it."""
    tail = b""
    try:
        with path.open("rb") as fh:
            while block := fh.read(chunk):
                if needle in tail + block:
                    return True
                tail = block[-(len(needle) - 1) :]
    except OSError as exc:
        _unreadable(exc)
    return False


def case_file_inputs(path: Path, config: TaskConfig) -> bytes:
    """What the judge's `prepare` prints for a fixed cases file: each case's id and input, no
    expected value. Made by the judge's own code, so both give the same bytes."""
    from assay._incontainer import judge

    assert config.judge is not None
    try:
        cases = judge.load_case_file(str(path), config.has_program_checker, config.kind)
    except judge.BadCase as exc:
        raise TaskError(str(path), str(exc)) from None
    except OSError as exc:
        raise TaskError(str(path), f"cannot read: {exc.strerror}") from None
    return json.dumps([{"id": c["id"], "input": c["input"]} for c in cases]).encode()


UNDIGESTED_TOP = frozenset({"solutions", "attempts"})
"""Reference submissions beside the task, not part of it; only at the top: a `solutions/`
under `inputs/` is something the agent sees, one under `judge/` something the judge runs."""

COMPILED_DIRS = frozenset({"__pycache__"})
COMPILED_EXT = (".pyc", ".pyo")
CACHE_FIX = (
    "delete it (find TASK -name __pycache__ -prune -exec rm -r {} + -o -name '*.py[co]' -delete)"
)


def tree_digest(root: Path) -> str:
    """sha256 over the task tree (paths and bytes, sorted; links as their targets), so a
    verdict names the exact task. Every file counts: compiled Python is refused instead of
    being left out, since a `.pyc` can be what runs (`compiled_python`)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root, onerror=_unreadable):
        top = dirpath == str(root)
        dirnames[:] = sorted(d for d in dirnames if not (top and d in UNDIGESTED_TOP))
        here = Path(dirpath)
        # A link to a directory is listed with the directories and never walked into: it is
        # digested as a link, like a link to a file, so changing its target changes the digest.
        links = [d for d in dirnames if (here / d).is_symlink()]
        dirnames[:] = [d for d in dirnames if d not in links]
        for name in sorted([*filenames, *links]):
            p = here / name
            rel = p.relative_to(root).as_posix()
            compiled_python(p, rel)
            h.update(rel.encode() + b"\0")
            if p.is_symlink():
                h.update(b"L" + os.readlink(p).encode() + b"\0")
            elif p.is_file():
                h.update(hashlib.sha256(p.read_bytes()).digest())
            else:
                raise TaskError(str(p), "not a regular file, directory or link")
        for d in dirnames:
            compiled_python(here / d, (here / d).relative_to(root).as_posix())
    return "sha256:" + h.hexdigest()


def _unreadable(exc: OSError) -> None:
    """A directory the walk cannot list would otherwise be left out of the digest silently."""
    raise TaskError(str(exc.filename), f"cannot read: {exc.strerror}")


def compiled_python(path: Path, rel: str) -> None:
    """Refuse a bytecode cache or compiled module anywhere in the task. Python imports a
    `__pycache__/*.pyc` instead of its source when the size and mtime it records match the
    source's (or, hash-based and unchecked, whatever the source holds), and a `foo.pyc` with
    no `foo.py` as the module itself: either can change what the judge, the tests or a
    generator run while the source a reviewer reads stays the same. Left out of the digest
    (as they were until issue 23), they changed what ran without changing the digest;
    digested, a local test run would change the task's identity. So they are refused."""
    if path.name in COMPILED_DIRS or path.name.endswith(COMPILED_EXT):
        raise TaskError(str(path), f"compiled Python in the task ({rel}): {CACHE_FIX}")


VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS"})
BUNDLE_MAGIC = (b"# v2 git bundle", b"# v3 git bundle")


def vcs_history(inputs: Path) -> list[str]:
    """Version-control data under inputs/: work-tree metadata, bare repositories (HEAD +
    objects/ + refs/, whatever the folder is called) and git bundles. An agent that can read
    history can read a future fix or a deleted answer (SWE-bench #465)."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(inputs):
        here = Path(dirpath)
        rel = here.relative_to(inputs).as_posix()
        names = set(dirnames) | set(filenames)
        if {"HEAD", "objects", "refs"} <= names:
            found.append(rel)
            dirnames[:] = []
            continue
        for name in sorted(names & VCS_DIRS):
            found.append(name if rel == "." else f"{rel}/{name}")
        dirnames[:] = [d for d in dirnames if d not in VCS_DIRS]
        for name in filenames:
            try:
                with open(here / name, "rb") as fh:
                    head = fh.read(16)
            except OSError:
                continue
            if head.startswith(BUNDLE_MAGIC):
                found.append(name if rel == "." else f"{rel}/{name}")
    return sorted(found)
