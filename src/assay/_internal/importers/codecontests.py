"""`assay import codecontests`: DeepMind's CodeContests (google-deepmind/code_contests,
`deepmind/code_contests` on Hugging Face) rows as `stdio` tasks.

Row format (contest_problem.proto, as the datasets export it): `name`, `description`,
`public_tests` / `private_tests` / `generated_tests` each {"input": [str], "output": [str]},
`time_limit` {"seconds": int, "nanos": int} (or null), `memory_limit_bytes` (int),
`solutions` / `incorrect_solutions` each {"language": [int], "solution": [str]} with the
proto's Language enum (UNKNOWN_LANGUAGE=0, PYTHON=1 (Python 2), CPP=2, PYTHON3=3, JAVA=4),
`input_file` / `output_file` (non-empty when the problem reads or writes files), `source`,
`difficulty`, `cf_contest_id`, `cf_index`, `cf_rating`, `cf_tags`, ...

Field mapping:
- task id `cc-<slug of name>` (lowercase, runs of other than [a-z0-9_] as "-", 56 characters
  at most); statement inputs/README.md = `description`.
- judge/tests.json: every public test, then private, then generated, ids `<label>:public-<n>`,
  `<label>:private-<n>`, `<label>:generated-<n>` (n from 1): stdin input[i], expected stdout
  output[i]. The label is `visible` for a public test (the statement's examples) and for a
  private or generated one whose input the description shows, else `hidden` (visibility.py);
  a problem with no hidden test is refused unless --allow-visible-only. CodeContests' private
  tests often repeat the examples (Codeforces' test 1 is the first sample): those are visible.
- [limits] cpu_seconds = time_limit (seconds + nanos/1e9), case_timeout (wall) = 2 x that + 1 s
  (a program blocked or sleeping is stopped too; CPU is what the contest limits), memory_mb =
  memory_limit_bytes in MiB, rounded up. Absent or out of range: the kind's defaults, noted.
- solutions/correct-<i>/ from `solutions`, solutions/wrong-<i>/ from `incorrect_solutions`
  (i the index in the row): CPP as main.cpp, PYTHON3 as main.py, JAVA as Main.java (skipped when
  its class is not `Main`: `java Main` could not run it). PYTHON (Python 2) and UNKNOWN are
  skipped and counted; at most 5 per kind and language are kept, the rest counted.
- Refused: a problem with `input_file` or `output_file` (file I/O, not stdin/stdout), with no
  tests, or over the size caps of stdio_task.py.

Checker: CodeContests' own rule is execution/tester_sandboxer.cc, `OutputsMatch` and
`ValuesMatch`: both outputs split on any of " \\n\\t\\r\\v" (empty parts dropped) and
lowercased; equal token lists pass; otherwise lists of the same length pass when every pair
"matches": if either token is not a number (absl::SimpleAtoi / SimpleAtod) the two must be equal
strings; if either is a double, `std::abs(a - b) < kDoublePrecision` with kDoublePrecision =
1e-5 (absolute only); two ints must be equal. assay writes `numbers` with abs_tol = 1e-5 and
rel_tol = 0: the same absolute tolerance and no relative one (a relative 1e-5 would pass
1000000001 for 1000000000, which CodeContests refuses). Lowercasing is not replicated, except
where the statement says the answer may be printed in any case: then the checker is
`tokens-ci` (and a fractional answer has no tolerance). Where the two differ, see
/work/notes/agreement-27.md: CodeContests passes "yes" for "YES" everywhere, and ints past
2^31 compare as doubles there (10000000000000001 passes for 10000000000000000).
"""

from __future__ import annotations

import math
import re
from typing import Any

from .stdio_task import (
    MAX_STATEMENT_BYTES,
    MAX_TESTS,
    Refused,
    StdioTask,
    add_solution,
    add_test,
    at_most,
    json_type,
    shown_text,
    slug,
    tagged,
    text_field,
)
from .visibility import Visibility, case_id

LANGUAGES = {0: None, 1: None, 2: "cpp", 3: "python3", 4: "java"}
SKIP_REASON = {0: "unknown-language", 1: "python2"}
ABS_TOL = 1e-5  # tester_sandboxer.cc, ValuesMatch: kDoublePrecision
ANY_CASE = re.compile(
    r"(print|output)[^.]{0,80}\bin any (letter )?case\b|\bany register\b|case[- ]insensitive",
    re.IGNORECASE,
)
JAVA_PUBLIC_CLASS = re.compile(r"\bpublic\s+(?:final\s+)?class\s+(\w+)")
JAVA_MAIN_CLASS = re.compile(r"\bclass\s+Main\b")


def convert(row: dict[str, Any], number: int) -> StdioTask:
    name = text_field(row, "name", cap=4096)
    task_id = "cc-" + slug(name)
    if task_id == "cc-":
        raise Refused("field 'name' has no letters or digits to name the task by")
    with tagged(task_id):
        return build(row, name, task_id)


def build(row: dict[str, Any], name: str, task_id: str) -> StdioTask:
    description = text_field(row, "description", cap=MAX_STATEMENT_BYTES)
    for key in ("input_file", "output_file"):
        value = row.get(key)
        if value not in (None, ""):
            raise Refused(f"field {key!r} is set: the problem uses files, not stdin/stdout")
    task = StdioTask(task_id, f"CodeContests problem {name[:200]} (imported by assay import "
                     "codecontests).", readme(description), [])  # fmt: skip
    kinds = (("public_tests", "public"), ("private_tests", "private"),
             ("generated_tests", "generated"))  # fmt: skip
    groups = [(prefix, test_pairs(row, key)) for key, prefix in kinds]
    at_most(sum(len(pairs) for _, pairs in groups), MAX_TESTS, "tests")
    shown = shown_text(description)
    task.visibility = vis = Visibility()
    vis.declare(*(prefix for _, prefix in kinds))
    for prefix, pairs in groups:
        for i, (inp, out) in enumerate(pairs):
            name = f"{prefix}-{i + 1}"
            add_test(task.tests, name, inp, out)  # checks both are text first
            public = prefix == "public"
            label = vis.label(prefix, public, not public and shown.stdin_shown(inp, out))
            task.tests[-1]["id"] = case_id(label, name)
    if not task.tests:
        raise Refused("no tests in public_tests, private_tests or generated_tests")
    if ANY_CASE.search(description):
        task.checker = "tokens-ci"
        task.notes.append("checker: tokens-ci, since the statement allows any letter case")
    else:
        task.checker, task.abs_tol, task.rel_tol = "numbers", ABS_TOL, 0.0
    limits(row, task)
    for key, kind in (("solutions", "correct"), ("incorrect_solutions", "wrong")):
        for i, (lang, source) in enumerate(solution_pairs(row, key)):
            language = LANGUAGES.get(lang) if isinstance(lang, int) else None
            if language is None:
                task.skipped[SKIP_REASON.get(lang, "unknown-language")] += 1
                continue
            if language == "java" and not java_main(source):
                task.skipped["java-class-not-main"] += 1
                continue
            add_solution(task, f"{kind}-{i}", language, source)
    return task


def readme(description: str) -> str:
    return (f"{description.rstrip()}\n\n## Submission\n\nWrite a program that reads standard "
            "input and writes standard output. Submit one source file: main.py (Python 3), "
            "main.c, main.cpp, Main.java (class Main), main.go, main.rs or main.js.\n")  # fmt: skip


def test_pairs(row: dict[str, Any], key: str) -> list[tuple[Any, Any]]:
    tests = row.get(key)
    if tests is None:
        return []
    if not isinstance(tests, dict):
        raise Refused(f"field {key!r} is a {json_type(tests)}, not an object")
    inputs, outputs = tests.get("input"), tests.get("output")
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise Refused(f"field {key!r} needs lists 'input' and 'output'")
    if len(inputs) != len(outputs):
        raise Refused(f"field {key!r} has {len(inputs)} inputs and {len(outputs)} outputs")
    return list(zip(inputs, outputs, strict=True))


def solution_pairs(row: dict[str, Any], key: str) -> list[tuple[Any, Any]]:
    sols = row.get(key)
    if sols is None:
        return []
    if not isinstance(sols, dict):
        raise Refused(f"field {key!r} is a {json_type(sols)}, not an object")
    langs, sources = sols.get("language"), sols.get("solution")
    if not isinstance(langs, list) or not isinstance(sources, list) or len(langs) != len(sources):
        raise Refused(f"field {key!r} needs lists 'language' and 'solution' of one length")
    return list(zip(langs, sources, strict=True))


def java_main(source: Any) -> bool:
    if not isinstance(source, str):
        return True  # add_solution counts it as empty
    public = JAVA_PUBLIC_CLASS.findall(source)
    if public:
        return "Main" in public
    return bool(JAVA_MAIN_CLASS.search(source))


def limits(row: dict[str, Any], task: StdioTask) -> None:
    tl = row.get("time_limit")
    seconds: float | None = None
    if isinstance(tl, dict):
        s, ns = tl.get("seconds", 0), tl.get("nanos", 0)
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (s, ns)):
            seconds = s + ns / 1e9
    if seconds is not None and 0 < seconds <= 60:
        task.cpu_seconds = round(seconds, 3)
        task.case_timeout = round(2 * seconds + 1, 3)
    else:
        task.notes.append(
            "limits: no usable time_limit; case_timeout 2 s, cpu_seconds the kind's default"
        )
    mem = row.get("memory_limit_bytes")
    if isinstance(mem, int) and not isinstance(mem, bool) and 16 << 20 <= mem <= 65536 << 20:
        task.memory_mb = math.ceil(mem / (1 << 20))
    else:
        task.notes.append("limits: no usable memory_limit_bytes; the kind's default memory_mb")
