"""What a SWE-bench instance's `eval.sh` says about its image, read as data (a pure function).

assay never runs an instance's eval script: it applies the model patch and the test patch
itself and runs pytest with its own launcher for the exact FAIL_TO_PASS / PASS_TO_PASS ids
(docs/benchmarks.md). What it needs from the script is how the image runs its tests: the
environment activation (`source <conda>/bin/activate`, `conda activate <env>`), the
variables it exports, the working directory, and the test runner between SWE-bench's
markers. Every line must be one of the shapes swebench's eval scripts are made of; any other
line refuses the instance naming it, since an unknown step might be one its tests need.

The test runner decides whether the instance can be graded at all: assay reads results only
from pytest's JUnit report, never from a log, so Django's `runtests.py`, SymPy's `bin/test`,
tox and anything else are refused naming the runner.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"
MAX_SCRIPT_BYTES = 8 << 20

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_ENV_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_PATH = re.compile(r"^/[A-Za-z0-9_./+-]{0,255}$")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z0-9_]+)\1")
# Variables the activation sets itself, or that would change how assay's own launcher runs.
_RESERVED_ENV = frozenset({
    "PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH", "PYTHONUSERBASE",
    "PYTHONNOUSERSITE", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "HOME", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
})  # fmt: skip
_INFORMATIONAL_GIT = ("status", "show", "diff", "config", "log", "rev-parse")
_INSTALL = re.compile(
    r"^(?:(?:python3?|\S*/python3?)\s+-m\s+pip|pip3?)\s+install\b|^(?:python3?\s+)?setup\.py\b"
    r"|^(?:python3?)\s+setup\.py\b"
)


class EvalScriptRefused(ValueError):
    """The instance cannot be graded by assay as its eval script runs it; the message names the
    runner or the line."""


@dataclass(frozen=True)
class Activation:
    """How the image's tests find their interpreter: a conda environment's prefix (its `bin`
    goes first on PATH) and the variables the script exports."""

    conda_root: str | None = None
    env_name: str | None = None
    exports: tuple[tuple[str, str], ...] = ()

    @property
    def prefix(self) -> str | None:
        if self.conda_root is None or self.env_name is None:
            return None
        if self.env_name == "base":
            return self.conda_root
        return f"{self.conda_root}/envs/{self.env_name}"


@dataclass(frozen=True)
class EvalScript:
    """The facts assay takes from an eval script."""

    activation: Activation
    workdir: str
    runner: str
    test_command: str
    skipped: tuple[str, ...] = field(default=())
    """Lines assay does not run, each a note (the reinstall, most often)."""


def runner_of(command: str) -> str:
    """The test runner a command line starts: "pytest", or what it is otherwise (the refusal
    names it)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return "an unreadable command line"
    while words and "=" in words[0] and _NAME.match(words[0].split("=", 1)[0]):
        words = words[1:]  # VAR=value prefixes
    if not words:
        return "no command"
    prog = words[0].rsplit("/", 1)[-1]
    if prog in ("pytest", "py.test"):
        return "pytest"
    if re.fullmatch(r"python[0-9.]*", prog) and len(words) >= 3 and words[1] == "-m":
        if words[2] in ("pytest", "py.test"):
            return "pytest"
        return f"python -m {words[2]}"
    if re.fullmatch(r"python[0-9.]*", prog) and len(words) >= 2:
        script = words[1]
    else:
        script = words[0]
    if script.endswith("runtests.py"):
        return "Django's tests/runtests.py"
    if script.rstrip("/").endswith("bin/test"):
        return "SymPy's bin/test"
    if prog == "tox":
        return "tox"
    return prog


def parse_eval_script(text: str, workdir: str = "/testbed") -> EvalScript:
    """Read `text` (an instance's eval.sh); raises EvalScriptRefused naming the line or the
    runner that assay cannot grade from."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SCRIPT_BYTES:
        raise EvalScriptRefused(f"eval script over {MAX_SCRIPT_BYTES} bytes")
    root: str | None = None
    env: str | None = None
    exports: dict[str, str] = {}
    skipped: list[str] = []
    tests: list[str] = []
    state = "before"  # before -> tests -> after
    heredoc: str | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if heredoc is not None:
            if line == heredoc:
                heredoc = None
            continue
        if not line or line.startswith("#"):
            continue
        if line in (f": '{START}'", f': "{START}"', f"echo '{START}'", f'echo "{START}"'):
            if state != "before":
                raise EvalScriptRefused(f"eval.sh line {n}: a second start-of-tests marker")
            state = "tests"
            continue
        if line in (f": '{END}'", f': "{END}"', f"echo '{END}'", f'echo "{END}"'):
            if state != "tests":
                raise EvalScriptRefused(f"eval.sh line {n}: an end-of-tests marker out of place")
            state = "after"
            continue
        if state == "tests":
            tests.append(line)
            continue
        if (m := _HEREDOC.search(line)) is not None:
            if not line.startswith("git apply"):
                raise EvalScriptRefused(f"eval.sh line {n}: {_shown(line)!r} is not the test patch")
            heredoc = m.group(2)
            continue
        try:
            words = shlex.split(line)
        except ValueError:
            raise EvalScriptRefused(f"eval.sh line {n}: unreadable {_shown(line)!r}") from None
        kind = _classify(words, workdir)
        if kind == "set":
            continue
        if kind == "source":
            path = words[1]
            if not path.endswith("/bin/activate") or not _PATH.match(path):
                raise EvalScriptRefused(
                    f"eval.sh line {n}: sources {_shown(path)!r}, not an activate script"
                )
            root = path[: -len("/bin/activate")]
            continue
        if kind == "conda":
            if root is None or not _ENV_NAME.match(words[2]):
                raise EvalScriptRefused(
                    f"eval.sh line {n}: {_shown(line)!r} before any activate script"
                )
            env = words[2]
            continue
        if kind == "export":
            if state == "after":
                continue
            for assignment in words[1:]:
                name, _, value = assignment.partition("=")
                if not _NAME.match(name) or name in _RESERVED_ENV or "$" in value or "`" in value:
                    raise EvalScriptRefused(
                        f"eval.sh line {n}: cannot carry export {_shown(assignment)!r} into "
                        "the image"
                    )
                exports[name] = value
            continue
        if kind in ("cd", "git"):
            continue
        if kind == "install":
            skipped.append(line)
            continue
        raise EvalScriptRefused(f"eval.sh line {n}: a step assay does not run: {_shown(line)!r}")
    if heredoc is not None:
        raise EvalScriptRefused(f"eval.sh: the here-document {heredoc} is never closed")
    if state != "after":
        raise EvalScriptRefused(f"eval.sh: no test command between {START!r} and {END!r}")
    if len(tests) != 1:
        raise EvalScriptRefused(f"eval.sh: {len(tests)} lines between the test markers, not one")
    runner = runner_of(tests[0])
    if runner != "pytest":
        raise EvalScriptRefused(
            f"the instance's tests run with {runner}, whose results assay cannot read as JUnit "
            "(assay never grades from a log)"
        )
    return EvalScript(
        Activation(root, env, tuple(sorted(exports.items()))), workdir, runner, tests[0],
        tuple(skipped),
    )  # fmt: skip


def _classify(words: list[str], workdir: str) -> str:
    if not words:
        return "set"
    head = words[0]
    if head == "set" and all(w.startswith(("-", "+")) or w.isalpha() for w in words[1:]):
        return "set"
    if head in ("source", ".") and len(words) == 2:
        return "source"
    if head == "conda" and len(words) == 3 and words[1] == "activate":
        return "conda"
    if head == "export" and len(words) >= 2 and all("=" in w for w in words[1:]):
        return "export"
    if head == "cd" and len(words) == 2 and words[1].rstrip("/") == workdir.rstrip("/"):
        return "cd"
    if head == "git":
        rest = words[1:]
        while rest[:1] == ["-c"] and len(rest) >= 2:
            rest = rest[2:]
        if rest and rest[0] in _INFORMATIONAL_GIT:
            return "git"
        if rest and rest[0] == "checkout" and len(rest) >= 2:
            return "git"  # resetting the test files: assay resets them itself
    if (
        head == "rm"
        and len(words) >= 3
        and words[1] == "-f"
        and all(_relative(w) for w in words[2:])
    ):
        return "git"  # SWE-bench 5 removes the files the test patch creates: assay resets them
    if _INSTALL.match(" ".join(words)):
        return "install"
    return "other"


def _relative(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and not path.startswith("/") and ".." not in parts and "*" not in path


def _shown(text: str, cap: int = 120) -> str:
    return text if len(text) <= cap else text[:cap] + "..."
