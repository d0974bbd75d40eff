"""`assay import livecodebench`: LiveCodeBench code_generation rows (`livecodebench/
code_generation_lite`) as `stdio` tasks (AtCoder, Codeforces) and `function` tasks (LeetCode).

Row format (lcb_runner/benchmarks/code_generation.py, `CodeGenerationProblem`):
`question_title`, `question_content`, `platform` ("leetcode" | "codeforces" | "atcoder"),
`question_id`, `contest_id`, `contest_date`, `starter_code`, `difficulty`,
`public_test_cases` (JSON text: a list of {"input", "output", "testtype": "stdin" |
"functional"}), `private_test_cases` (the same JSON text, or in the released data base64 of
zlib of a pickle of that JSON text: `json.loads(pickle.loads(zlib.decompress(base64.b64decode(
...))))`, tried after plain JSON as LCB does), `metadata` (JSON text; {"func_name": ...} for
functional problems).

The pickle is never given to Python's unpickler: safepickle.py decodes plain data only and
refuses GLOBAL, REDUCE and every other opcode that names or calls something; the zlib stream is
inflated with a cap (a bomb is refused). Caps: base64 text as a row field (64 MiB), inflated
pickle and JSON 64 MiB, then the tests' own caps (stdio_task.py).

Field mapping (stdin problems, i.e. AtCoder and Codeforces):
- task id `lcb-<question_id>` (a plain id: [A-Za-z0-9_-], lowercased); README = the title as a
  heading, `question_content`, and how to submit.
- judge/tests.json: public tests `<label>:public-<n>`, then private tests
  `<label>:private-<n>` (n from 1): stdin = input, expected stdout = output. The label is
  `visible` for a public test and for a private one whose input the title, statement or
  starter code shows, else `hidden` (visibility.py); a problem with no hidden test is refused
  unless --allow-visible-only.
- [limits] case_timeout 6 s: LCB's per-test alarm (lcb_runner/runner/parser.py `--timeout`,
  default 6; compute_code_generation_metrics.py `timeout=6`). No memory limit in the rows.
- no solutions (the rows hold none); --solutions FILE adds some.

Functional problems (LeetCode) become `function` tasks: LCB calls a method of `Solution()`
(testing_util.py `compile_code`: `if "class Solution" in code: compiled_sol =
tmp_sol.Solution()`; `grade_call_based`: `method(*[json.loads(line) for line in
input.split("\\n")])`), so the entry is `solution:Solution.<metadata.func_name>` and
artifacts ["solution.py"]; each case's input is the list of JSON arguments, its expected value
the JSON output. The function kind makes a fresh `Solution()` per case (LCB one per solution:
only state kept between calls could tell). judge/compare.py is LCB's rule line for line: a
tuple result becomes a list ("don't penalize model if it produces tuples"), then Python's
`prediction == expected` (1 == 1.0 and True == 1 pass, as in LCB; a tuple nested inside is not
converted, as in LCB; no float tolerance, as in LCB). The built-in `equal` comparator would
refuse the top-level tuple, hence the custom one. LCB runs a solution after its own imports
(`import_string`: `from typing import *`, collections, math, ...); assay runs solution.py as
written, so the README says to import what it uses (the starter code's `List` needs `from
typing import List`). A functional row whose starter code has no `class Solution` maps onto a
module-level function (entry `solution:<func_name>`); LCB's released data has none.

Checker: `numbers` with abs_tol = rel_tol = 0, i.e. tokens, where an answer token that is a
decimal literal matches an output literal of exactly the same value (compared in decimal, no
rounding). LCB's stdin rule (testing_util.py `grade_stdio`, `get_stripped_lines`,
`convert_line_to_decimals`): the output and the answer are stripped, split on "\\n", each line
stripped; the line counts must be equal; each line pair passes when equal, or when both lines'
whitespace-separated tokens all read as Python Decimals and the Decimal lists are equal (exact
values: "1.0" passes for "1", "1e2" for "100", and no tolerance). `numbers` at zero tolerance
agrees with that on every line of numbers and on words written the same way; it differs where
LCB is stricter about layout, listed in /work/notes/agreement-27.md: the same tokens on other
lines, or a line of words with other spacing inside ("a  b" for "a b"), pass here (LCB counts
lines and compares a word line exactly; Codeforces' and AtCoder's own checkers accept them),
and a line mixing words and numbers ("Yes 1.0" for "Yes 1") passes here but not in LCB.
"""

from __future__ import annotations

import base64
import binascii
import keyword
from typing import Any

from . import safepickle
from .apps import FUNCTION_HOW, METHOD_HOW
from .stdio_task import (
    IDENTIFIER,
    MAX_ARGS,
    MAX_FIELD_BYTES,
    MAX_NESTED_JSON_BYTES,
    MAX_STATEMENT_BYTES,
    MAX_TESTS,
    FunctionTask,
    Refused,
    StdioTask,
    Task,
    add_test,
    at_most,
    checked_function_cases,
    function_case,
    json_type,
    nested_json,
    shown_text,
    source_id,
    tagged,
    text_field,
)
from .visibility import Shown, Visibility, case_id

CASE_TIMEOUT = 6.0
MAX_INFLATED_BYTES = 64 << 20

COMPARE_PY = '''\
"""LiveCodeBench's call-based rule (lcb_runner/evaluation/testing_util.py, grade_call_based):
written by `assay import livecodebench`."""


def compare(expected, actual):
    if isinstance(actual, tuple):  # "don't penalize model if it produces tuples"
        actual = list(actual)
    return (actual == expected) is True
'''


def convert(row: dict[str, Any], number: int) -> Task:
    task_id = "lcb-" + source_id(row.get("question_id"), "question_id")
    with tagged(task_id):
        return build(row, task_id)


def build(row: dict[str, Any], task_id: str) -> Task:
    title = text_field(row, "question_title", required=False, cap=4096)
    content = text_field(row, "question_content", cap=MAX_STATEMENT_BYTES)
    tests = [("public", t) for t in test_list(row.get("public_test_cases"), "public_test_cases")]
    tests += [("private", t) for t in private_tests(row.get("private_test_cases"))]
    if not tests:
        raise Refused("no tests in public_test_cases or private_test_cases")
    at_most(len(tests), MAX_TESTS, "tests")
    types = {t["testtype"] for _, t in tests}
    if len(types) != 1:
        raise Refused("tests mix testtype stdin and functional")
    platform = row["platform"][:40] if isinstance(row.get("platform"), str) else "?"
    about = f"LiveCodeBench problem {task_id} ({platform}; imported by assay import livecodebench)."
    heading = f"# {title.strip()}\n\n" if title.strip() else ""
    if types == {"functional"}:
        starter = row.get("starter_code") if isinstance(row.get("starter_code"), str) else ""
        shown = shown_text(title, content, starter or "")  # the README shows the starter code
        return functional(row, task_id, about, heading + content, tests, shown)
    shown = shown_text(title, content)
    task = StdioTask(task_id, about, heading + readme(content), [], checker="numbers",
                     abs_tol=0.0, rel_tol=0.0, case_timeout=CASE_TIMEOUT)  # fmt: skip
    task.visibility = vis = Visibility()
    vis.declare("public", "private")
    counts = {"public": 0, "private": 0}
    for kind, t in tests:
        counts[kind] += 1
        name = f"{kind}-{counts[kind]}"
        add_test(task.tests, name, t["input"], t["output"])
        public = kind == "public"
        shows = not public and shown.stdin_shown(t["input"], t["output"])
        task.tests[-1]["id"] = case_id(vis.label(kind, public, shows), name)
    return task


def readme(content: str) -> str:
    return (f"{content.rstrip()}\n\n## Submission\n\nWrite a program that reads standard input "
            "and writes standard output. Submit one source file: main.py (Python 3), main.c, "
            "main.cpp, Main.java (class Main), main.go, main.rs or main.js.\n")  # fmt: skip


def test_list(raw: Any, key: str) -> list[dict[str, Any]]:
    if raw is None or raw == "":
        return []
    tests = nested_json(raw, key)
    if not isinstance(tests, list):
        raise Refused(f"field {key!r} is a {json_type(tests)}, not a list of tests")
    for i, t in enumerate(tests):
        if not isinstance(t, dict) or set(t) != {"input", "output", "testtype"}:
            raise Refused(f"{key}[{i}] is not an object with input, output and testtype")
        if t["testtype"] not in ("stdin", "functional"):
            raise Refused(f"{key}[{i}]: testtype {str(t['testtype'])[:20]!r} is unknown")
        if not isinstance(t["input"], str) or not isinstance(t["output"], str):
            raise Refused(f"{key}[{i}]: input and output must be strings")
    return tests


def private_tests(raw: Any) -> list[dict[str, Any]]:
    """LCB's order: JSON text first, else base64 -> zlib -> pickle -> JSON text."""
    key = "private_test_cases"
    if not isinstance(raw, str) or not raw.strip() or raw.lstrip().startswith("["):
        return test_list(raw, key)
    try:
        packed = base64.b64decode(raw.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise Refused(f"field {key!r} is neither JSON nor base64") from None
    try:
        pickled = safepickle.inflate(packed, max_bytes=MAX_INFLATED_BYTES)
        text = safepickle.loads(pickled, max_bytes=MAX_INFLATED_BYTES)
    except safepickle.PickleRefused as exc:
        raise Refused(f"field {key!r}: {exc}") from None
    if not isinstance(text, str):
        raise Refused(f"field {key!r}: the pickle holds a {type(text).__name__}, not JSON text")
    if len(text) > MAX_NESTED_JSON_BYTES:
        raise Refused(f"field {key!r}: the unpickled JSON is over {MAX_NESTED_JSON_BYTES} bytes")
    return test_list(text, key)


def functional(
    row: dict[str, Any],
    task_id: str,
    about: str,
    statement: str,
    tests: list[Any],
    shown: Shown,
) -> FunctionTask:
    starter = row.get("starter_code") if isinstance(row.get("starter_code"), str) else ""
    method = "class Solution" in (starter or "")
    meta = nested_json(row.get("metadata", "{}"), "metadata")
    fn = meta.get("func_name") if isinstance(meta, dict) else None
    if not isinstance(fn, str) or not IDENTIFIER.fullmatch(fn) or keyword.iskeyword(fn):
        raise Refused("functional problem without a usable metadata.func_name")
    cases = []
    vis = Visibility()
    vis.declare("public", "private")
    counts = {"public": 0, "private": 0}
    for kind, t in tests:
        counts[kind] += 1
        cid = f"{kind}-{counts[kind]}"
        for what in ("input", "output"):
            if len(t[what]) > MAX_FIELD_BYTES:  # characters: at least as many bytes
                raise Refused(f"test {cid}: {what} is longer than {MAX_FIELD_BYTES} bytes")
        at_most(t["input"].count("\n") + 1, MAX_ARGS, f"arguments (lines) in test {cid} input")
        args = [nested_json(line, f"test {cid} input") for line in t["input"].split("\n")]
        expected = nested_json(t["output"], f"test {cid} output")
        public = kind == "public"
        shows = not public and shown.call_shown(args, {}, expected)
        cases.append(function_case(case_id(vis.label(kind, public, shows), cid), args, expected))
    checked_function_cases(cases)
    how = "\n\n## Submission\n\n" + (METHOD_HOW if method else FUNCTION_HOW).format(fn=fn)
    if starter:
        how += f"\n\nStarter code:\n\n```python\n{starter.rstrip()}\n```"
    entry = f"Solution.{fn}" if method else fn
    return FunctionTask(task_id, about, statement.rstrip() + how + "\n", entry, cases,
                        COMPARE_PY, case_timeout=CASE_TIMEOUT, visibility=vis)  # fmt: skip
