"""`assay import harbor SRC --out DIR`: Harbor (Terminal-Bench) task directories as assay tasks.

    instruction.md          -> inputs/instruction.md (all the agent sees, at /task)
    tests/                  -> judge/tests/ (never in the agent's container, never in the build
                               context; mounted read-only at /tests in the verifier only)
    environment/            -> environment/ (`[environment] dockerfile`, workdir from Harbor's,
                               else the image's own WORKDIR)
    solution/               -> solutions/reference/ (the oracle: `--agent-dir` it, run solve.sh)
    task.toml               -> task.toml (converted: `harbor_config`) and harbor-task.toml
                               (the original, kept as the task's metadata; read by nothing)

SRC is one task, or a tree holding many (every directory with a task.toml). A task assay cannot
honour is refused naming the field (`harbor_config.Refusal`); what the import changed or
ignored is a note. docs/tasks.md, "Harbor tasks", lists each rule and why.
"""

from __future__ import annotations

import re
import secrets
import shutil
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import UsageError

from .harbor_config import Converted, Refusal, convert
from .harbor_steps import step_names, step_raw
from .stdio_task import unexpected

COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
MAX_FILE_BYTES = 64 << 20
MAX_TOML_BYTES = 1 << 20
MAX_TASKS = 100_000
ORIGINAL = "harbor-task.toml"
_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
# An absolute path in a shell script: not part of a word, a URL, a variable or ~ (conservative:
# a false alarm costs a line of output, a miss hides why a task fails).
_ABS_PATH = re.compile(r"(?<![\w.$}~:/-])(/[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]*)*)")
_IMAGE_PATHS = ("/bin", "/sbin", "/usr/bin", "/usr/sbin", "/dev/null", "/dev/stdin",
                "/dev/stdout", "/dev/stderr", "/dev/fd", "/logs", "/tests")  # fmt: skip
"""Paths a test script may name without relying on the agent's state: the image's own
programs (a fresh verifier has the image's, whatever the agent did) and the verifier's own."""
_FETCH = re.compile(r"\b(apt-get|apt|curl|wget|pip3? install|uv pip install|uvx|npm install)\b")
_CWD_PYTHON = re.compile(r"\bpython[0-9.]*((?:\s+-[A-Za-z]+)*?)\s+-[mc]\b")
"""`python -m X` / `python -c ...`: Python puts the working directory first on sys.path,
unless `-I` or `-P` (in the flags captured) says not to."""
_WORKDIR_LINE = re.compile(r"^\s*WORKDIR\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)

__all__ = ["Converted", "Refusal", "Result", "import_harbor", "import_tree", "task_id"]


@dataclass
class Result:
    """One task of an import: written (or only checked) with notes, or refused."""

    src: Path
    task_id: str | None
    out: Path | None = None
    refusal: Refusal | UsageError | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        """The refusal's field (what a survey counts), or "" for an accepted task."""
        if isinstance(self.refusal, Refusal):
            return self.refusal.field
        return "" if self.refusal is None else "task"


def task_id(name: str) -> str:
    tid = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")[:64]
    if not _ID.fullmatch(tid):
        raise UsageError(f"cannot make a task id from the directory name {name!r}")
    return tid


def read_task_toml(src: Path) -> dict[str, Any]:
    """Harbor's task.toml at `src`, parsed (raises Refusal)."""
    toml_path = src / "task.toml"
    if not toml_path.is_file() or toml_path.is_symlink():
        raise Refusal("task.toml", "missing; a Harbor task needs it")
    if toml_path.stat().st_size > MAX_TOML_BYTES:
        raise Refusal("task.toml", f"larger than {MAX_TOML_BYTES >> 20} MiB")
    try:
        return tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise Refusal("task.toml", f"not valid TOML: {exc}") from None


def is_multi_step(raw: dict[str, Any]) -> bool:
    return raw.get("steps") not in (None, [])


@dataclass(frozen=True)
class Layout:
    """Where the parts of one gradable task are in a Harbor task directory: the task's own,
    or, with `step`, that step's (`harbor_steps`)."""

    src: Path
    step: str | None = None

    @property
    def instruction(self) -> Path:
        if self.step:
            return self.src / "steps" / self.step / "instruction.md"
        return self.src / "instruction.md"

    @property
    def tests(self) -> list[Path]:
        """The tests directories, later ones over earlier ones: the step's over the task's."""
        found = [self.src / "tests"]
        if self.step:
            found.append(self.src / "steps" / self.step / "tests")
        return [d for d in found if d.is_dir()]

    @property
    def test_script(self) -> Path | None:
        scripts = [d / "test.sh" for d in self.tests if (d / "test.sh").is_file()]
        return scripts[-1] if scripts else None

    @property
    def solution(self) -> Path | None:
        own = self.src / "steps" / self.step / "solution" if self.step else None
        for d in (own, self.src / "solution"):
            if d is not None and d.is_dir():
                return d
        return None


def check_harbor(src: Path, step: str | None = None) -> Converted:
    """Read and convert the Harbor task at `src` (with `step`, that step of a multi-step task)
    without writing anything (raises Refusal). task.toml first, `[[steps]]` first of all: a
    multi-step task named without a step gets that reason, not the file it happens to lack."""
    raw = read_task_toml(src)
    notes: list[str] = []
    tid = task_id(src.name)
    if is_multi_step(raw):
        if step is None:
            raise Refusal("steps", "a multi-step task is imported as one task per step")
        raw, notes = step_raw(raw, step)
        tid = task_id(f"{tid}.{step}")
        if (src / "steps" / step / "workdir").exists():
            notes.append(
                f"steps/{step}/workdir: not in the task (Harbor uploads it to the "
                "agent's box before the step; grading takes the box as it is)"
            )
    elif step is not None:
        raise Refusal("steps", f"no step {step!r}: not a multi-step task")
    layout = Layout(src, step)
    for name in COMPOSE_FILES:
        for where in ("environment", *(str(d.relative_to(src)) for d in layout.tests)):
            if (src / where / name).exists():
                raise Refusal(f"{where}/{name}", "compose sidecars are not supported")
    dockerfile = src / "environment" / "Dockerfile"
    converted = convert(raw, tid, dockerfile.is_file())
    converted.notes += notes
    if not layout.instruction.is_file():
        raise Refusal(str(layout.instruction.relative_to(src)), "missing; a Harbor task needs it")
    if layout.instruction.is_symlink():
        raise Refusal(str(layout.instruction.relative_to(src)), "symbolic links are not imported")
    if not dockerfile.is_file():
        raise Refusal("environment/Dockerfile", "missing; a Harbor task needs it")
    if layout.test_script is None:
        raise Refusal("tests/test.sh", "missing; a Harbor task needs it")
    for part in (src / "environment", *layout.tests, layout.solution):
        if part is not None:
            _check_tree(part)
    workdir = converted.workdir or _dockerfile_workdir(dockerfile)
    converted.notes += _scan_tests(layout.test_script, workdir)
    return converted


def _check_tree(root: Path) -> None:
    """Nothing but regular files and directories, none too large: checked before anything is
    written, so a refused task leaves no half-written output."""
    if not root.exists():
        return
    for path in [root, *root.rglob("*")]:
        name = str(root.name / path.relative_to(root))
        if path.is_symlink():
            raise Refusal(name, "symbolic links are not imported")
        if not (path.is_dir() or path.is_file()):
            raise Refusal(name, "not a regular file or directory")
        if path.is_file() and path.stat().st_size > MAX_FILE_BYTES:
            raise Refusal(name, f"larger than {MAX_FILE_BYTES >> 20} MiB")


def import_harbor(src: Path, out: Path, step: str | None = None) -> Path:
    """Write the assay task for the Harbor task at `src` (with `step`, that step of a
    multi-step task) into `out` (which must not exist or be empty). Returns `out`. Raises
    Refusal naming the field it cannot honour."""
    src = src.resolve()
    if not src.is_dir():
        raise UsageError(f"{src}: not a directory")
    return _write(src, out, check_harbor(src, step), step)


def _write(src: Path, out: Path, converted: Converted, step: str | None = None) -> Path:
    """The task built whole in a temporary directory beside `out`, then renamed onto it (a
    missing or empty directory), so a failure half-way leaves no task behind."""
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out}: exists and is not empty")
    layout = Layout(src, step)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.{secrets.token_hex(6)}.tmp"
    tmp.mkdir()
    try:
        _copy_tree(src / "environment", tmp / "environment")
        for tests in layout.tests:
            _copy_tree(tests, tmp / "judge" / "tests")
        (tmp / "inputs").mkdir()
        _copy_file(layout.instruction, tmp / "inputs" / "instruction.md")
        if layout.solution is not None:
            _copy_tree(layout.solution, tmp / "solutions" / "reference")
        _copy_file(src / "task.toml", tmp / ORIGINAL)
        (tmp / "task.toml").write_text(converted.toml, encoding="utf-8")
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def find_tasks(src: Path) -> Iterator[Path]:
    """`src` itself when it holds a task.toml, else every directory under it that does (not
    looking inside a task, nor through symbolic links), in sorted order."""
    if (src / "task.toml").is_file():
        yield src
        return
    count = 0
    for sub in sorted(p for p in src.iterdir() if p.is_dir() and not p.is_symlink()):
        for found in find_tasks(sub):
            count += 1
            if count > MAX_TASKS:
                raise UsageError(f"{src}: more than {MAX_TASKS} tasks")
            yield found


def import_tree(src: Path, out: Path | None) -> list[Result]:
    """Every Harbor task in `src` (one task, or a tree of them) written to `out/<id>/`, or
    only checked when `out` is None. A refused task is a Result with its refusal; an id
    seen twice is refused the second time. Raises UsageError when `src` holds no task."""
    src = src.resolve()
    if not src.is_dir():
        raise UsageError(f"{src}: not a directory")
    results: list[Result] = []
    seen: set[str] = set()
    # Listed before anything is written, and never what this import writes (DIR inside SRC).
    tasks = [t for t in find_tasks(src) if out is None or not t.is_relative_to(out.resolve())]
    for task in tasks:
        try:
            tid = task_id(task.name)
            steps = _steps_of(task)
        except UsageError as exc:
            results.append(Result(task, None, refusal=exc))
            continue
        for step in steps:
            sid = tid if step is None else f"{tid}.{step}"
            res = Result(task, sid)
            results.append(res)
            try:
                if sid in seen:
                    raise UsageError(f"a second task named {sid!r} in this import")
                converted = check_harbor(task, step)
                seen.add(sid)
                res.task_id = converted_id = task_id(sid)
                res.notes = converted.notes
                if out is not None:
                    res.out = _write(task, out / converted_id, converted, step)
            except UsageError as exc:
                res.refusal = exc
            except Exception as exc:  # one task's failure (a bug, an unreadable file)
                res.refusal = UsageError(unexpected(exc))
    if not results:
        raise UsageError(f"{src}: no Harbor task here (no task.toml in it or below it)")
    return results


def _steps_of(task: Path) -> list[str | None]:
    """[None] for a single-step task (or one whose task.toml check_harbor will refuse), else
    its step names: a multi-step task is one assay task per step, `<id>.<step>`."""
    try:
        raw = read_task_toml(task)
    except Refusal:
        return [None]
    return [*step_names(raw)] if is_multi_step(raw) else [None]


def _dockerfile_workdir(path: Path) -> str | None:
    """The last WORKDIR of the Dockerfile, for the scan only (the image may set its own)."""
    try:
        found = _WORKDIR_LINE.findall(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    last = found[-1].strip("\"'") if found else None
    return last if last and last.startswith("/") else None


def _scan_tests(script: Path, workdir: str | None) -> list[str]:
    """Notes on tests/test.sh: absolute paths it names outside the workdir (the verifier is a
    fresh container: the agent's changes there are not in it, so such a test fails), and
    commands that fetch from the network (the verifier is offline)."""
    text = script.read_bytes()[:MAX_TOML_BYTES].decode("utf-8", "replace")
    text = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    own = (*_IMAGE_PATHS, *((workdir,) if workdir else ()))
    outside = sorted({
        p.rstrip("/") for p in _ABS_PATH.findall(text)
        if not any(p == o or p.startswith(o.rstrip("/") + "/") for o in own) and p != "/"
    })  # fmt: skip
    notes = []
    if outside:
        shown = ", ".join(outside[:6]) + (", ..." if len(outside) > 6 else "")
        where = f"outside the workdir {workdir}" if workdir else "outside the workdir (unknown)"
        notes.append(f"tests/test.sh outside-workdir: reads paths {where}: {shown}; the "
                     "verifier has them as the image does, not as the agent left them")  # fmt: skip
    if any(not re.search("[IP]", flags) for flags in _CWD_PYTHON.findall(text)):
        notes.append("tests/test.sh python-cwd: `python -m` or `-c` puts the working "
                     "directory first on sys.path, so a module the agent left there (a "
                     "pytest.py) is imported instead of the tests' own; run tools as commands "
                     "(`pytest`)")  # fmt: skip
    fetch = sorted(set(_FETCH.findall(text)))
    if fetch:
        notes.append(f"tests/test.sh network: fetches from the network ({', '.join(fetch)}); the "
                     "verifier is offline, so it fails unless the image already has what it "
                     "fetches")  # fmt: skip
    return notes


def _copy_tree(src: Path, dst: Path) -> None:
    for path in [src, *sorted(src.rglob("*"))]:
        rel = path.relative_to(src)
        if path.is_symlink():
            raise Refusal(str(src.name / rel), "symbolic links are not imported")
        if path.is_dir():
            (dst / rel).mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            _copy_file(path, dst / rel)
        else:
            raise Refusal(str(src.name / rel), "not a regular file or directory")


def _copy_file(src: Path, dst: Path) -> None:
    if src.is_symlink():
        raise Refusal(src.name, "symbolic links are not imported")
    if src.stat().st_size > MAX_FILE_BYTES:
        raise Refusal(src.name, f"larger than {MAX_FILE_BYTES >> 20} MiB")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    dst.chmod(0o755 if src.stat().st_mode & 0o111 else 0o644)
