"""The parts of `assay validate` that need no engine, as pure functions over bytes and names.

- `scan_leaks`: does anything under a task's `inputs/` (all the agent sees) hold a file of
  `judge/`, an expected value, or a line the hidden test patch adds?
- `junk_ids`: FAIL_TO_PASS / PASS_TO_PASS ids that no pytest run can report (SWE-bench's lists
  hold progress-bar fragments such as `[100%]` or a bare `"`), found before anything runs.
- `twin_reference_problem`: whether a reference solution's verdict on an impossible twin shows
  the twin impossible (it failed on the twin's cases, honestly).

Nothing here reads the file system except `read_tree`, `task_dirs` and `raw_repository_ids`,
which only read (no link is followed, nothing is executed).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from assay.errors import UsageError

from ..model.verdict import Verdict
from ..tiers.compat.junit import junit_key
from ..tiers.core.twin import NOTE, PASSED

MIN_FILE_LEAK = 32
"""A judge file whose content (whitespace runs normalised) is this long or longer is a leak
when an inputs file contains it whole; any non-empty judge file is one when an inputs file is
byte-identical to it."""
MIN_EXPECTED_LEAK = 16
"""An expected value whose text (whitespace runs normalised) is this long or longer is a leak
when it appears in an inputs file: shorter ones ("3", "True") appear in any README."""
MIN_PATCH_LINE = 32
"""A line the test patch adds (stripped) this long or longer is a leak when an inputs file
holds it."""
MAX_READ_BYTES = 32 << 20
"""Of a file larger than this, only the first bytes are scanned."""
MAX_VERDICT_ID = 256
"""The longest case id a verdict can carry (`model.verdict.Printable`)."""

_WS = re.compile(rb"\s+")
_ALNUM = re.compile(r"[A-Za-z0-9]")
_BOILERPLATE = re.compile(
    r"^(import\s+[\w., ]+|from\s+[\w.]+\s+import\s+.+|if\s+__name__\s*==\s*['\"]__main__['\"]\s*:"
    r"|#!.*|#\s*-\*-.*-\*-)$"
)
# A node id's file part: a relative path of plain names ending in .py.
_PY_PATH = re.compile(r"^(?:[^/\s\\\"'\[\]%:]+/)*[^/\s\\\"'\[\]%:]+\.py$")


def normalise(data: bytes) -> bytes:
    """Every run of whitespace as one space, none at either end."""
    return _WS.sub(b" ", data).strip()


def _excerpt(text: str, n: int = 60) -> str:
    """A short, printable, quoted excerpt for a report line."""
    flat = " ".join(text.split())
    shown = flat if len(flat) <= n else flat[: n - 3] + "..."
    return repr(shown.encode("ascii", "backslashreplace").decode("ascii"))


@dataclass(frozen=True)
class Leak:
    """Something of the judge's found in an inputs file (`file`, relative to the task)."""

    file: str
    what: str

    def __str__(self) -> str:
        return f"{self.file}: {self.what}"


def expected_texts(cases: object) -> list[tuple[str, str]]:
    """(label, text) of every expected value of a cases file's cases (`judge.cases`, a
    generator's output): each string and number inside the value (a `stdio` or `cli` task's
    `stdout`, a `transform` task's file texts, a function's return value), and the whole value
    as JSON when it is not a string. A case without an `expected` key has none."""
    found: list[tuple[str, str]] = []
    if not isinstance(cases, list):
        return found
    for n, case in enumerate(cases):
        if not isinstance(case, dict) or "expected" not in case:
            continue
        label = f"the expected value of case {case.get('id', n)!r}"
        value = case["expected"]
        leaves: list[str] = []
        _leaves(value, leaves)
        if not isinstance(value, str):
            leaves.append(json.dumps(value, sort_keys=False))
        seen: set[str] = set()
        for text in leaves:
            if text not in seen:
                seen.add(text)
                found.append((label, text))
    return found


def _leaves(value: object, out: list[str], depth: int = 0) -> None:
    if depth > 64:
        return
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        out.append(json.dumps(value))
    elif isinstance(value, list):
        for v in value:
            _leaves(v, out, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():  # keys name things ("stdout", "$tuple"); values are the answer
            _leaves(v, out, depth + 1)


def added_lines(patch: bytes) -> list[str]:
    """The lines a unified diff adds, stripped, that are long enough to be a leak and are not
    boilerplate (imports, a `__main__` guard, a shebang, a line of punctuation). Hunks are
    read by their counts, so an added line that starts with `++` is not mistaken for a
    header."""
    found: list[str] = []
    old = new = 0
    header = re.compile(rb"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
    for raw in patch.splitlines():
        if old <= 0 and new <= 0:
            m = header.match(raw)
            if m:
                old = int(m.group(1)) if m.group(1) is not None else 1
                new = int(m.group(2)) if m.group(2) is not None else 1
            continue
        if raw.startswith(b"\\"):  # "\ No newline at end of file"
            continue
        tag, body = raw[:1], raw[1:]
        if tag == b"+":
            new -= 1
            line = body.decode("utf-8", "replace").strip()
            if len(line) >= MIN_PATCH_LINE and _ALNUM.search(line) and not _BOILERPLATE.match(line):
                found.append(line)
        elif tag == b"-":
            old -= 1
        else:  # context (" ", or an empty line some tools write for an empty context line)
            old -= 1
            new -= 1
    return list(dict.fromkeys(found))


def scan_leaks(
    inputs: Mapping[str, bytes],
    judge: Mapping[str, bytes],
    expected: Sequence[tuple[str, str]] = (),
    patch_lines: Sequence[str] = (),
) -> list[Leak]:
    """What of the judge's the agent could read. `inputs` and `judge` map a file's path (as it
    is to be reported, e.g. `inputs/README.md`) to its bytes; `expected` is `expected_texts`'
    (label, text) pairs, `patch_lines` is `added_lines` of the test patch. Reported, one
    `Leak` per inputs file and finding:

    - an inputs file byte-identical to a non-empty judge file;
    - an inputs file that contains the whole of a judge file of `MIN_FILE_LEAK` bytes or more,
      both compared with whitespace runs normalised (a copy re-indented or re-wrapped);
    - an expected value whose text is `MIN_EXPECTED_LEAK` characters or longer appearing in an
      inputs file (whitespace normalised);
    - a line the test patch adds appearing in an inputs file (whitespace normalised).
    """
    leaks: list[Leak] = []
    judged = [(name, data, normalise(data)) for name, data in sorted(judge.items())]
    wanted = [
        (label, text, norm)
        for label, text in expected
        if len(norm := normalise(text.encode("utf-8", "surrogatepass"))) >= MIN_EXPECTED_LEAK
    ]
    lines = [(line, normalise(line.encode("utf-8", "surrogatepass"))) for line in patch_lines]
    for name, data in sorted(inputs.items()):
        norm = normalise(data)
        for jname, jdata, jnorm in judged:
            if data == jdata and jnorm:
                leaks.append(Leak(name, f"is {jname}, byte for byte"))
            elif len(jnorm) >= MIN_FILE_LEAK and jnorm in norm:
                leaks.append(Leak(name, f"holds the whole of {jname}"))
        reported: set[str] = set()
        for label, text, tnorm in wanted:
            if tnorm in norm and label not in reported:
                reported.add(label)
                leaks.append(Leak(name, f"holds {label}: {_excerpt(text)}"))
        for line, lnorm in lines:
            if lnorm and lnorm in norm:
                leaks.append(Leak(name, f"holds a line the test patch adds: {_excerpt(line)}"))
    return leaks


def read_tree(root: Path, prefix: str) -> dict[str, bytes]:
    """Every regular file under `root` (links are not followed, nor reported), as
    `prefix/relative/path` -> its first `MAX_READ_BYTES` bytes. A missing `root` is empty."""
    files: dict[str, bytes] = {}
    if not root.is_dir() or root.is_symlink():
        return files
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not (here / d).is_symlink())
        for name in sorted(filenames):
            path = here / name
            if path.is_symlink() or not path.is_file():
                continue
            try:
                with open(path, "rb") as fh:
                    data = fh.read(MAX_READ_BYTES)
            except OSError:
                continue
            files[f"{prefix}/{path.relative_to(root).as_posix()}"] = data
    return files


def junk_ids(ids: Iterable[str]) -> list[tuple[str, str]]:
    """(id, why) for each FAIL_TO_PASS / PASS_TO_PASS id no pytest run can report as itself:
    not printable ASCII or longer than a verdict's case id may be; no `path.py::test` form (a
    progress-bar fragment such as `[100%]`, a bare `"`, a file with no test); a file part that
    is not a relative path to a `.py` file; two ids pytest would report under one JUnit name.
    The compat tier's reader refuses the last three before any verdict (`junit`), so such a
    task could never give one."""
    found: list[tuple[str, str]] = []
    seen: dict[tuple[str, str], str] = {}
    for node_id in ids:
        why = _junk(node_id)
        if why is not None:
            found.append((node_id, why))
            continue
        key = junit_key(node_id)
        if key in seen and seen[key] != node_id:
            found.append((node_id, f"reported under the same JUnit name as {seen[key]!r}"))
        elif key in seen:
            found.append((node_id, "listed twice"))
        seen.setdefault(key, node_id)
    return found


def _junk(node_id: str) -> str | None:
    if not node_id.strip():
        return "an empty id"
    if len(node_id) > MAX_VERDICT_ID or not all(" " <= ch <= "~" for ch in node_id):
        return f"not printable ASCII of at most {MAX_VERDICT_ID} characters (a verdict's case id)"
    path = node_id.split("[", 1)[0].split("::", 1)[0]
    if not _PY_PATH.match(path) or any(p in (".", "..") for p in path.split("/")):
        return f"its file part {path!r} is not a relative path to a .py file"
    test = node_id.split("::", 1)[1] if "::" in node_id else ""
    if not test or any(not part for part in test.split("[", 1)[0].split("::")):
        return "not a pytest node id (path.py::test)"
    return None


def raw_repository_ids(task_dir: Path) -> list[str] | None:
    """The FAIL_TO_PASS and PASS_TO_PASS ids as `task.toml` writes them, read without the task
    loader (which refuses a task whose ids are wrong before naming them all); None when the
    file cannot be read or is no repository task."""
    try:
        raw = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    section = raw.get("pytest")
    if not isinstance(section, dict) or "fail_to_pass" not in section:
        return None
    ids: list[str] = []
    for key in ("fail_to_pass", "pass_to_pass"):
        values = section.get(key, [])
        if isinstance(values, list):
            ids += [v for v in values if isinstance(v, str)]
    return ids


def task_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Each path that is a task directory (it has a task.toml), and every child with a
    task.toml of one that is not (a directory of tasks, as `assay import` writes them), in
    order, each once. Raises `assay.errors.UsageError` for a path that is not a directory, or
    a directory that is neither a task nor holds one."""
    found: list[Path] = []
    for p in paths:
        path = Path(p)
        if not path.is_dir():
            raise UsageError(f"{path}: not a task directory (no such directory)")
        if (path / "task.toml").exists():
            found.append(path)
            continue
        children = sorted(c for c in path.iterdir() if c.is_dir() and (c / "task.toml").exists())
        if not children:
            raise UsageError(
                f"{path}: not a task directory (no task.toml) and no task directory in it"
            )
        found += children
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def twin_reference_problem(verdict: Verdict) -> str | None:
    """Why a reference solution's verdict on a twin does not show the twin impossible (None
    when it does): it must have failed on the twin's own cases, honestly: not passed, no
    tamper code (`twin:passed` among them), and at least one case that ran and failed."""
    if verdict.passed or PASSED in verdict.reason_codes:
        return "it passed the twin: the twin is not impossible"
    if verdict.tamper:
        return f"it failed with tamper code(s) {', '.join(verdict.tamper)}, not on the cases"
    if NOTE not in verdict.notes:
        return f"its verdict lacks {NOTE}: graded as no twin"
    if not any(c.status != "pass" for c in verdict.cases):
        why = ", ".join(verdict.reason_codes[:4]) or "no reason"
        return f"no case of the twin ran and failed ({why}): its judge may be broken"
    return None
