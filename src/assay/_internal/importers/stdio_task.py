"""The shared half of the dataset importers (`assay import apps|taco|codecontests|
livecodebench`): reading rows, the task a row becomes, and writing it.

Every row is hostile. A row is read with a size cap and parsed by strict JSON (no duplicate
keys, no NaN, bounded depth); each field's type is checked where it is read, and every count
(tests, arguments of a call) and size is checked before the structures it sizes are built, so a
row costs work linear in its bytes; a row that cannot become a task is refused with a reason
naming the field, collected in the report, and the import goes on with the next row. Any other
exception while a row is converted or written refuses that row too, naming the exception
("internal error: ..."): one bad row never ends an import. A task directory is built under a
fresh temporary directory inside --out and renamed into place, so a reader sees the old task,
none, or the whole new one, never half of one; its name is a validated task id, so nothing is
ever written outside --out.

Every test's id says whether the agent can see it (`visible:<name>`: a public test, or one
whose input the statement shows; `hidden:<name>`: visibility.py), and a task with no hidden
test is refused last, after every other check (`require_hidden`), unless the import opts in.

Two task shapes come out (docs: design-27):
- a `stdio` task: task.toml, inputs/README.md, judge/tests.json, solutions/<name>/<source>;
- a `function` task (APPS/TACO rows with fn_name, LiveCodeBench functional rows): task.toml,
  inputs/README.md, judge/cases.json, judge/compare.py, solutions/<name>/solution.py.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay._incontainer import judge, values
from assay._internal.model.strict_json import StrictJSONError, loads_strict
from assay.errors import UsageError

from .visibility import (
    VISIBLE_ONLY_DESCRIPTION,
    VISIBLE_ONLY_NOTE,
    Shown,
    TooLong,
    Visibility,
)

# Input: one JSONL line (or a whole .json list) and the JSON strings nested inside rows.
MAX_ROW_BYTES = 64 << 20
MAX_JSON_FILE_BYTES = 256 << 20
MAX_ROW_DEPTH = 32
MAX_NESTED_JSON_BYTES = 64 << 20
# Output: per task.
MAX_TESTS = 2000
# Arguments of one call (a function test's input): a LeetCode method takes a handful; a row of
# a million one-line "arguments" would otherwise be parsed one JSON document at a time.
MAX_ARGS = 256
# Keys of one dict that may share a hash value: the judge's own bound (values.native), so a row
# it would refuse is refused here before the dict is built (ints hash as public arithmetic).
MAX_SAME_HASH = values.MAX_SAME_HASH
MAX_REASON_CHARS = 300
MAX_FIELD_BYTES = 8 << 20  # one test's stdin or expected stdout
MAX_TESTS_FILE_BYTES = 16 << 20  # judge/tests.json (the stdio kind's own cap) and cases.json
MAX_STATEMENT_BYTES = 1 << 20
MAX_SOLUTION_BYTES = 1 << 20
MAX_SOLUTIONS_PER_LANGUAGE = 5  # per kind (correct/wrong) and language

TASK_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
SOURCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,47}")
"""An id taken from a row (APPS problem_id, LiveCodeBench question_id): a plain name, so `../x`,
`a/b`, an empty id or a dot are refused, not cleaned into something else."""
SOLUTION_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,47}")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")

SOURCE_FILES = {
    "python3": "main.py",
    "c": "main.c",
    "cpp": "main.cpp",
    "java": "Main.java",
    "go": "main.go",
    "rust": "main.rs",
    "javascript": "main.js",
}
"""The one source file a submission in each language is (the stdio kind's language table)."""

CHECKERS = ("exact", "lines", "tokens", "numbers", "tokens-ci", "unordered-lines")
REPORT = "import-report.json"


class Refused(Exception):
    """A row that does not become a task; the message says which field and why. `task_id`:
    the id the row would have had, once known (set by `tagged`)."""

    task_id: str | None = None


@contextmanager
def tagged(task_id: str) -> Iterator[None]:
    """Refusals raised inside name `task_id`; so does any other exception, as a refusal that
    names it (`unexpected`), so the report says which row's task it was."""
    try:
        yield
    except Refused as exc:
        exc.task_id = exc.task_id or task_id
        raise
    except Exception as exc:
        refused = Refused(unexpected(exc))
        refused.task_id = task_id
        raise refused from exc


# ---------------------------------------------------------------------------------------------
# The tasks a row becomes
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Solution:
    name: str  # solutions/<name>/
    language: str  # a SOURCE_FILES key; function tasks: "python3" (written as solution.py)
    source: str


@dataclass
class StdioTask:
    id: str
    description: str
    statement: str
    tests: list[dict[str, Any]]  # {"id", "input": {"stdin"}, "expected": {"stdout"}}
    checker: str = "tokens"
    abs_tol: float | None = None
    rel_tol: float | None = None
    case_timeout: float = 2.0
    cpu_seconds: float | None = None
    memory_mb: int | None = None
    solutions: list[Solution] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    kind: str = "stdio"
    visibility: Visibility | None = None
    """Which tests the agent can see; None: not known (an inline row sent without its
    statement), and then the ids carry no label."""


@dataclass
class FunctionTask:
    id: str
    description: str
    statement: str
    function: str  # what solution.py defines: `name`, or `Solution.name` (a method)
    cases: list[dict[str, Any]]  # the function kind's cases (values already encoded)
    compare: str | None  # judge/compare.py, or None for comparator = "equal"
    case_timeout: float = 4.0
    solutions: list[Solution] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    kind: str = "function"
    visibility: Visibility | None = None


Task = StdioTask | FunctionTask


@dataclass
class Outcome:
    """One row's result, as the report lists it."""

    row: int  # 1-based line (JSONL) or element (JSON list) number
    task_id: str | None
    status: str  # written | would-write | refused
    kind: str | None = None
    tests: int = 0
    checker: str | None = None
    reason: str | None = None
    notes: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    solutions: int = 0
    visibility: Visibility | None = None

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"row": self.row, "id": self.task_id, "status": self.status}
        if self.status == "refused":
            doc["reason"] = self.reason
            return doc
        doc |= {"kind": self.kind, "tests": self.tests, "checker": self.checker,
                "solutions": self.solutions}  # fmt: skip
        if self.visibility is not None:
            doc |= self.visibility.as_json()
        if self.notes:
            doc["notes"] = self.notes
        if self.skipped:
            doc["skipped"] = self.skipped
        return doc


# ---------------------------------------------------------------------------------------------
# Reading rows and checking fields
# ---------------------------------------------------------------------------------------------


def read_rows(path: Path, limit: int | None = None) -> Iterator[tuple[int, Any]]:
    """(row number, parsed row or a Refused) for each row of a JSONL file or a .json list.
    A line too long or not JSON is a Refused for that row only; the file itself not being
    readable, or a .json file that is not a list, is a UsageError."""
    if limit is not None and limit <= 0:
        return
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    with fh:
        if path.suffix == ".json":
            yield from _json_list(fh.read(MAX_JSON_FILE_BYTES + 1), path, limit)
            return
        number = 0
        while limit is None or number < limit:
            line = fh.readline(MAX_ROW_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_ROW_BYTES and not line.endswith(b"\n"):
                while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
                    pass
                number += 1
                yield number, Refused(f"row longer than {MAX_ROW_BYTES} bytes")
                continue
            if not line.strip():
                continue
            number += 1
            try:
                parsed = loads_strict(line.strip(), max_bytes=MAX_ROW_BYTES,
                                      max_depth=MAX_ROW_DEPTH)  # fmt: skip
            except StrictJSONError as exc:
                parsed = Refused(f"row is not JSON ({exc.code}): {exc}")
            except Exception as exc:  # raised inside this generator, it would end the import
                parsed = Refused(unexpected(exc))
            yield number, parsed


def _json_list(raw: bytes, path: Path, limit: int | None) -> Iterator[tuple[int, Any]]:
    if len(raw) > MAX_JSON_FILE_BYTES:
        raise UsageError(f"{path}: a .json input is capped at {MAX_JSON_FILE_BYTES} bytes; "
                         "use JSONL (one row per line) for more")  # fmt: skip
    try:
        rows = loads_strict(raw, max_bytes=MAX_JSON_FILE_BYTES, max_depth=MAX_ROW_DEPTH + 1)
    except StrictJSONError as exc:
        raise UsageError(f"{path}: not JSON ({exc.code}): {exc}") from None
    if not isinstance(rows, list):
        raise UsageError(f"{path}: a .json input must be a list of rows")
    yield from enumerate(rows[:limit] if limit is not None else rows, 1)


def unexpected(exc: BaseException) -> str:
    """The refusal of a row that raised what no check meant to raise: named, bounded, one line."""
    return f"internal error: {type(exc).__name__}: {shown(str(exc), MAX_REASON_CHARS)}"


def bounded_dict(pairs: Iterable[tuple[Any, Any]], what: str) -> dict[Any, Any]:
    """`dict(pairs)`, refused once more than MAX_SAME_HASH distinct keys share a hash value.
    The hash of an int is public arithmetic (k and k + (2**61 - 1) collide), and each insert
    probes every key of its hash, so n such keys cost n**2/2 probes: a 3 MB row took 108 s.
    With this bound each insert probes at most MAX_SAME_HASH keys, whatever the row holds."""
    out: dict[Any, Any] = {}
    counts: dict[int, int] = {}  # a hash is an int below 2**61, which hashes to itself
    for k, v in pairs:
        if k not in out:
            h = hash(k)
            counts[h] = n = counts.get(h, 0) + 1
            if n > MAX_SAME_HASH:
                raise Refused(f"{what}: more than {MAX_SAME_HASH} keys share one hash value "
                              "(a hash-collision flood)")  # fmt: skip
        out[k] = v
    return out


def at_most(count: int, cap: int, what: str) -> None:
    """A count checked before anything of that size is built."""
    if count > cap:
        raise Refused(f"more than {cap} {what}")


def text_field(row: dict[str, Any], key: str, *, required: bool = True, cap: int = 0) -> str:
    value = row.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        what = "missing" if key not in row else f"a {json_type(value)}, not a string"
        raise Refused(f"field {key!r} is {what}")
    if cap and len(value.encode("utf-8", errors="surrogatepass")) > cap:
        raise Refused(f"field {key!r} is longer than {cap} bytes")
    return value


def nested_json(value: Any, key: str) -> Any:
    """A field that holds JSON text (APPS input_output, LCB public_test_cases, ...), parsed
    strictly; a field that already holds the parsed value (some exports) is taken as is."""
    if not isinstance(value, str):
        return value
    try:
        return loads_strict(value.encode("utf-8", errors="surrogatepass"),
                            max_bytes=MAX_NESTED_JSON_BYTES, max_depth=MAX_ROW_DEPTH)  # fmt: skip
    except StrictJSONError as exc:
        raise Refused(f"field {key!r} is not JSON ({exc.code}): {exc}") from None


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    names: dict[type, str] = {str: "string", list: "list", dict: "object"}
    return names.get(type(value), type(value).__name__)


def source_id(value: Any, key: str) -> str:
    """A row's own id (an int, or a plain name), as the tail of a task id."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise Refused(f"field {key!r} is a {json_type(value)}, not an id")
    text = str(value)
    if isinstance(value, int) and value < 0:
        raise Refused(f"field {key!r} is negative")
    if not SOURCE_ID.fullmatch(text):
        raise Refused(f"field {key!r} {shown(text)} is not a plain id ([A-Za-z0-9_-], 48 at most)")
    return text.lower()


def slug(text: str, cap: int = 56) -> str:
    """A file-name-safe rendering of a free-text name (CodeContests' `name`)."""
    s = re.sub(r"[^a-z0-9_]+", "-", text.lower()).strip("-_")
    return s[:cap].rstrip("-_")


def shown(text: str, cap: int = 40) -> str:
    safe = ascii(text)
    return safe if len(safe) <= cap else safe[:cap] + "...'"


def check_text(text: str, what: str, cap: int) -> str:
    """UTF-8-encodable (no lone surrogates) and within `cap` bytes."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise Refused(f"{what} is not valid Unicode (a lone surrogate)") from None
    if size > cap:
        raise Refused(f"{what} is {size} bytes, over the cap of {cap}")
    return text


def shown_text(*texts: str) -> Shown:
    """What the agent is shown of a row (its statement, title, starter code), ready to tell
    which tests it shows (visibility.py)."""
    try:
        return Shown(texts)
    except TooLong as exc:
        raise Refused(f"{exc}: too many to tell which tests it shows") from None


def require_hidden(task: Task, allow_visible_only: bool) -> None:
    """Refuse a task none of whose tests is hidden, or, when that was asked for, mark it
    visible-only (its description and notes say so). A task whose visibility is unknown (no
    statement came with an inline row) is left as it is."""
    vis = task.visibility
    if vis is None or (reason := vis.no_hidden_reason()) is None:
        return
    if not allow_visible_only:
        raise Refused(reason)
    if not vis.visible_only:
        vis.visible_only = True
        task.notes.append(VISIBLE_ONLY_NOTE)
        task.description += VISIBLE_ONLY_DESCRIPTION


def add_test(tests: list[dict[str, Any]], test_id: str, stdin: Any, stdout: Any) -> None:
    if len(tests) >= MAX_TESTS:
        raise Refused(f"more than {MAX_TESTS} tests")
    for what, value in (("input", stdin), ("output", stdout)):
        if not isinstance(value, str):
            raise Refused(f"test {test_id}: {what} is a {json_type(value)}, not a string")
        check_text(value, f"test {test_id} {what}", MAX_FIELD_BYTES)
    tests.append({"id": test_id, "input": {"stdin": stdin}, "expected": {"stdout": stdout}})


def add_solution(task: Task, name: str, language: str, source: Any) -> None:
    """Keep a solution unless the cap for its kind and language is reached, or it is unusable
    (then it is counted under `skipped`, never a refusal of the task)."""
    kind = name.split("-", 1)[0]
    same = sum(1 for s in task.solutions if s.language == language and s.name.startswith(kind))
    if same >= MAX_SOLUTIONS_PER_LANGUAGE:
        task.skipped[f"{kind}-over-cap"] += 1
        return
    if not isinstance(source, str) or not source.strip():
        task.skipped[f"{kind}-empty"] += 1
        return
    try:
        check_text(source, "solution", MAX_SOLUTION_BYTES)
    except Refused:
        task.skipped[f"{kind}-too-large"] += 1
        return
    if "\0" in source:
        task.skipped[f"{kind}-nul"] += 1
        return
    task.solutions.append(Solution(name, language, source))


def extra_solutions(path: Path | None) -> dict[str, list[Solution]]:
    """--solutions FILE: {"<task id>": {"<name>": {"language": "...", "source": "..."}}}:
    solutions to add to imported tasks (a dataset's rows may hold no wrong ones)."""
    if path is None:
        return {}
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        doc = loads_strict(raw, max_bytes=MAX_JSON_FILE_BYTES, max_depth=4)
    except StrictJSONError as exc:
        raise UsageError(f"{path}: not JSON ({exc.code}): {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: must map task ids to {{name: {{language, source}}}}")
    out: dict[str, list[Solution]] = {}
    for task_id, named in doc.items():
        if not isinstance(named, dict):
            raise UsageError(f"{path}: {shown(task_id)} must map names to solutions")
        for name, sol in named.items():
            ok = isinstance(sol, dict) and set(sol) == {"language", "source"}
            if not (ok and SOLUTION_NAME.fullmatch(name) and sol["language"] in SOURCE_FILES
                    and isinstance(sol["source"], str)):  # fmt: skip
                raise UsageError(
                    f"{path}: {shown(task_id)}/{shown(name)}: a solution is "
                    '{"language": one of ' + ", ".join(SOURCE_FILES) + ', "source": "..."} '
                    "under a name [a-z0-9_-]"
                )
            out.setdefault(task_id, []).append(Solution(name, sol["language"], sol["source"]))
    return out


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def toml_str(text: str) -> str:
    """A TOML basic string: quote and backslash escaped, control characters (and DEL) as
    \\uXXXX, everything else as itself (TOML allows no surrogate escapes)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_float(value: float) -> str:
    return repr(float(value))


def task_toml(task: Task) -> str:
    lines = [f"id = {toml_str(task.id)}", f'kind = "{task.kind}"']
    if isinstance(task, FunctionTask):
        lines += ['artifacts = ["solution.py"]', f"description = {toml_str(task.description)}",
                  "", "[function]", f'entry = "solution:{task.function}"', "", "[judge]",
                  'cases = "cases.json"']  # fmt: skip
        lines += (
            ['comparator = "custom"', 'custom = "compare.py"']
            if task.compare
            else ['comparator = "equal"']
        )
        total = min(7200.0, 60.0 + len(task.cases) * task.case_timeout)
        lines += ["", "[limits]", f"case_timeout = {toml_float(task.case_timeout)}",
                  f"total_timeout = {toml_float(total)}"]  # fmt: skip
        return "\n".join(lines) + "\n"
    lines += [f"description = {toml_str(task.description)}", "", "[stdio]",
              f"checker = {toml_str(task.checker)}"]  # fmt: skip
    if task.abs_tol is not None:
        lines.append(f"abs_tol = {toml_float(task.abs_tol)}")
    if task.rel_tol is not None:
        lines.append(f"rel_tol = {toml_float(task.rel_tol)}")
    total = min(7200.0, 60.0 + len(task.tests) * task.case_timeout)
    lines += ["", "[judge]", 'cases = "tests.json"', "", "[limits]",
              f"case_timeout = {toml_float(task.case_timeout)}",
              f"total_timeout = {toml_float(total)}"]  # fmt: skip
    if task.cpu_seconds is not None:
        lines.append(f"cpu_seconds = {toml_float(task.cpu_seconds)}")
    if task.memory_mb is not None:
        lines.append(f"memory_mb = {task.memory_mb}")
    return "\n".join(lines) + "\n"


def files_of(task: Task) -> dict[str, bytes]:
    """Every file of the task directory, by relative path (fixed names only)."""
    if not TASK_ID.fullmatch(task.id):
        raise Refused(f"task id {shown(task.id)} is not a valid task id")
    if not (task.tests if isinstance(task, StdioTask) else task.cases):
        raise Refused("no tests")
    check_text(task.statement, "the statement", MAX_STATEMENT_BYTES)
    check_text(task.description, "the description", MAX_STATEMENT_BYTES)
    files = {"task.toml": task_toml(task).encode(), "inputs/README.md": task.statement.encode()}
    if isinstance(task, StdioTask):
        cases = task.tests
        if task.checker not in CHECKERS:
            raise Refused(f"checker {task.checker!r} is not one an importer writes")
        cases_name = "judge/tests.json"
    else:
        cases = task.cases
        cases_name = "judge/cases.json"
        if task.compare is not None:
            files["judge/compare.py"] = task.compare.encode()
    ids = [c["id"] for c in cases]
    if len(set(ids)) != len(ids):
        raise Refused("two tests share an id")
    try:
        data = (json.dumps(cases, ensure_ascii=False, indent=None) + "\n").encode()
    except UnicodeEncodeError:
        raise Refused("a test holds text that is not valid Unicode (a lone surrogate)") from None
    if len(data) > MAX_TESTS_FILE_BYTES:
        raise Refused(f"the tests are {len(data)} bytes as JSON, over the cap of "
                      f"{MAX_TESTS_FILE_BYTES}")  # fmt: skip
    files[cases_name] = data
    for sol in task.solutions:
        if not SOLUTION_NAME.fullmatch(sol.name):
            raise Refused(f"solution name {shown(sol.name)} is not a plain name")
        check_text(sol.source, f"solution {sol.name}", MAX_SOLUTION_BYTES)
        source = "solution.py" if isinstance(task, FunctionTask) else SOURCE_FILES[sol.language]
        files[f"solutions/{sol.name}/{source}"] = sol.source.encode()
    return files


def write_task(out: Path, task: Task) -> Path:
    """Write `task` as out/<id>/ atomically: built in a fresh temporary directory inside `out`,
    then renamed over any older copy. Refused when the id is not a task id or the destination
    is not a plain directory of ours (a link, a file)."""
    files = files_of(task)
    root = out.resolve()
    dest = root / task.id
    if dest.parent != root:  # TASK_ID has no separators or dots-only names; belt and braces
        raise Refused(f"task id {shown(task.id)} leaves the output directory")
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise Refused(f"{dest} exists and is not a directory")
    tmp = root / f".{task.id}.{secrets.token_hex(6)}.tmp"
    tmp.mkdir(mode=0o755)
    try:
        for rel, data in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        old = None
        if dest.exists():
            old = root / f".{task.id}.{secrets.token_hex(6)}.old"
            dest.rename(old)
        try:
            tmp.rename(dest)
        except BaseException:
            if old is not None:  # the earlier import's task stays, rather than none at all
                old.rename(dest)
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        # The new task is in place: failing to remove the old copy must not refuse the row.
        shutil.rmtree(old, ignore_errors=True)
    return dest


# ---------------------------------------------------------------------------------------------
# Running an import
# ---------------------------------------------------------------------------------------------


def run_import(
    source: str,
    rows: Iterator[tuple[int, Any]],
    convert: Any,
    out: Path | None,
    extra: dict[str, list[Solution]] | None = None,
    allow_visible_only: bool = False,
) -> list[Outcome]:
    """Convert every row with `convert(row, number) -> Task` (raising Refused) and write it
    under `out` (None: write nothing, only report). Duplicate task ids are refused after the
    first; solutions from `extra` are added to the task of their id. A row none of whose tests
    is hidden is refused, unless `allow_visible_only` (then it is written, marked)."""
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create {out}: {exc.strerror}") from None
    outcomes: list[Outcome] = []
    seen: set[str] = set()
    for number, row in rows:
        outcomes.append(_one_row(number, row, convert, out, extra or {}, seen, allow_visible_only))
    if out is not None:
        write_report(out, source, outcomes)
    return outcomes


def _one_row(
    number: int,
    row: Any,
    convert: Any,
    out: Path | None,
    extra: dict[str, list[Solution]],
    seen: set[str],
    allow_visible_only: bool = False,
) -> Outcome:
    """One row's outcome; never raises an Exception. The task is written last, atomically
    (write_task), and nothing after it can fail, so a refused row leaves no task behind."""
    task_id: str | None = None
    try:
        if isinstance(row, Refused):
            raise row
        if not isinstance(row, dict):
            raise Refused(f"row is a {json_type(row)}, not an object")
        task = convert(row, number)
        task_id = task.id
        if task.id in seen:
            raise Refused(f"task id {task.id} was already produced by an earlier row")
        seen.add(task.id)
        for sol in extra.get(task.id, []):
            task.solutions = [s for s in task.solutions if s.name != sol.name] + [sol]
        files_of(task)  # every check, also when nothing is written
        # Last: a row refused for what it is (a bad field, a cap) is named for that first.
        require_hidden(task, allow_visible_only)
        cases = task.tests if isinstance(task, StdioTask) else task.cases
        checker = task.checker if isinstance(task, StdioTask) else (
            "custom (compare.py)" if task.compare else "equal")  # fmt: skip
        done = Outcome(number, task.id, "written" if out else "would-write", task.kind,
                       len(cases), checker, notes=list(task.notes),
                       skipped=dict(sorted(task.skipped.items())),
                       solutions=len(task.solutions), visibility=task.visibility)  # fmt: skip
        if out is not None:
            write_task(out, task)
        return done
    except Refused as exc:
        return Outcome(number, task_id or exc.task_id, "refused", reason=str(exc))
    except Exception as exc:  # a bug or a decoder's own error: this row's refusal, named
        return Outcome(number, task_id, "refused", reason=unexpected(exc))


def write_report(out: Path, source: str, outcomes: list[Outcome]) -> None:
    doc = {"source": source, "rows": [o.as_json() for o in outcomes],
           "counts": dict(outcome_counts(outcomes))}  # fmt: skip
    (out / REPORT).write_text(json.dumps(doc, indent=1, ensure_ascii=True) + "\n")


def reason_class(reason: str) -> str:
    """A refusal's reason with the row-specific parts dropped, for counting: its first two
    colon-separated parts, numbers as N, quoted text other than a field name as '...'."""
    head = ":".join(reason.split(":")[:2])
    head = re.sub(r"'(?![A-Za-z_][A-Za-z0-9_.]{0,40}')[^']*'", "'...'", head)
    return re.sub(r"\d+", "N", head)[:100]


def outcome_counts(outcomes: list[Outcome]) -> Counter[str]:
    c: Counter[str] = Counter()
    for o in outcomes:
        c[o.status] += 1
        if o.status == "refused" and o.reason:
            c[f"refused: {reason_class(o.reason)}"] += 1
        else:
            c[f"kind {o.kind}"] += 1
            c[f"checker {o.checker}"] += 1
            if o.visibility is not None and o.visibility.visible_only:
                c["visible-only (no hidden test)"] += 1
            for k, n in o.skipped.items():
                c[f"skipped solutions: {k}"] += n
    return c


def function_case(cid: str, args: Any, expected: Any) -> dict[str, Any]:
    """One case of a function task: its arguments and expected value in the judge's encoding."""
    try:
        return {"id": cid, "input": values.encode(args), "expected": values.encode(expected)}
    except values.Unencodable as exc:
        raise Refused(f"test {cid}: {exc}") from None


def checked_function_cases(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cases as the judge will read them (its own check), or the row refused."""
    try:
        judge.check_cases(cases, True, "function")
    except judge.BadCase as exc:
        raise Refused(f"cases: {exc}") from None
    return cases
