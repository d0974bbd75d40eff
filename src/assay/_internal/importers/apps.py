"""`assay import apps|taco`: APPS (hendrycks/apps, codeparrot/apps), TACO (BAAI/TACO) and the
same data in verl's reward form, as strict-tier tasks.

Row formats (one JSON object per row):
- APPS: `problem_id` (int), `question`, `solutions` (JSON text: a list of Python 3 programs, or
  ""), `input_output` (JSON text: {"inputs": [...], "outputs": [...], "fn_name"?: str}, or ""),
  `difficulty`, `url`, `starter_code`. Task id `apps-<problem_id>`.
- TACO: the APPS fields without `problem_id`, plus `name`, `source`, `time_limit` ("2 seconds"),
  `memory_limit` ("256 megabytes"), tags... Task id `taco-<index>`, the row's 0-based position
  in the file.
- verl (volcengine/verl, reward_score/prime_code and sandbox_fusion): `reward_model.ground_truth`
  (or a top-level `ground_truth`) holds the same input_output JSON (text or object);
  `data_source`, `prompt` (chat messages: the user turns are the statement), `extra_info.index`
  (the id when present: task id `<apps|taco>-verl-<index>`, else as for the command). In this
  form a call-based test's input is newline-separated JSON arguments and its output JSON text
  (verl prime_code/testing_util.py: `inputs = [json.loads(line) for line in
  inputs.split("\\n")]`, `in_outs["outputs"][index] = json.loads(in_outs["outputs"][index])`).

Without fn_name a row becomes a `stdio` task: test i+1 has stdin inputs[i] and expected stdout
outputs[i]; either may be a list of lines, joined with "\\n" as APPS does (eval/testing_util.py
lines 294-297: `if isinstance(inputs, list): inputs = "\\n".join(inputs)`, same for outputs).

Visible and hidden tests: the rows have no public/private split, and `input_output` usually
holds the statement's examples among the rest, so test i+1's id is `visible:<i+1>` when the
statement (or, for a function task, the starter code) shows its input, else `hidden:<i+1>`
(visibility.py); a row with no hidden test is refused unless --allow-visible-only. A row
`InlineTasks` makes without a statement (the trainer's prompt is not sent) has no shown text:
its ids stay `<i+1>`, claiming nothing.

With fn_name it becomes a `function` task (solution.py defining fn_name): each case's input is
inputs[i] (the argument list) and its expected value outputs[i], judged by judge/compare.py,
which is APPS's call-based rule, line for line (testing_util.py lines 259-273, the same in TACO
metrics/testing_util.py lines 241-253 and verl prime_code): the result, a tuple made a list,
passes when `result == outputs[i]`, or when outputs[i] is a non-empty list and
`result == outputs[i][0]` (APPS stores most results wrapped in a one-element list, so both the
wrapped and the unwrapped value pass, as in APPS), or when the result's first element is a tuple
and `[list(x) for x in result] == outputs[i][0]`. APPS's own rewrite of dict keys is mirrored
too (lines 234-248): when inputs[i][0] is a dict whose keys all read as ints, the input becomes
[that dict with int keys] (APPS drops the other arguments then, and so does this import); an
output that is such a dict, or whose first element is, becomes [that dict with int keys].
A fn_name of a LeetCode-style `class Solution` (the starter code defines it; APPS then calls
the method of one `Solution()`, testing_util.py `if "class Solution" not in test: ... else: tmp =
tmp_sol.Solution()`) becomes entry `solution:Solution.<fn_name>`: the function kind makes a
fresh `Solution()` for each case and calls the method (APPS keeps one instance for all tests;
only a solution that keeps state between calls could tell). APPS runs a solution after its own
import lines (`sol = "import sys\\n...from typing import List, Tuple\\n..."`), so LeetCode
solutions use `List` unimported: the row's solutions of such a task are written with those
imports first (APPS_PRELUDE, without numpy), and the README tells the candidate to import what
it uses, since assay runs solution.py as written.

Checker of the stdio tasks: `tokens` (whitespace-separated tokens, byte-equal, in order, same
count), or `numbers` with rel_tol 1e-5 and abs_tol 1e-8 (numpy.allclose's defaults, the ones
APPS's float path uses, lines 393-396) when some expected output holds a fractional number.
`tokens` accepts everything APPS accepts through its whitespace rules (the stripped-output and
stripped-lines comparisons, `custom_compare_` lines 468-481 and lines 334-364), and also a
different line layout of the same tokens (which APPS refuses; competitive judges such as
Codeforces' default checker accept it). APPS's lenient rules that assay does NOT replicate:
- lines 411-441: every line as a SET of tokens, and the lines as a SET: a permutation of the
  tokens on a line, repeated or dropped duplicate tokens or lines, and lines in any order pass
  in APPS (e.g. "2 1" for "1 2", "1\\n1\\n2" for "1\\n2"). They fail here.
- lines 446-449: the same sets with every token rounded to 3 decimals: "0.1234" for "0.1231"
  passes in APPS; it fails here (numbers allows 1e-5 relative, 1e-8 absolute).
- lines 393-396: np.allclose also applies to integer outputs (1e-5 relative: "100001" for
  "100000" passes in APPS); here integers are exact under `tokens` (under `numbers` the
  relative tolerance applies to every numeric token, as in APPS).
TACO's stdin rule (metrics/testing_util.py compare_std_results, lines 368-496) compares the
program's stdout as one string, so its set rules compare the characters of each token (it
accepts "b a" for "a\\nb"); not replicated either. /work/notes/agreement-27.md has the table.

Limits: case_timeout 4 s, APPS's and TACO's per-test alarm (testing_util.py line 38 `timeout =
4`; TACO metrics/testing_util.py line 31 `TIMEOUT = 4`); memory from TACO's `memory_limit`
"<n> megabytes" (16..65536), else the kind's default. Solutions: the row's Python solutions as
solutions/correct-<i>/ (main.py, or solution.py for a function task), 5 at most.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

from assay._incontainer.values import MAX_INT_LITERAL

from .stdio_task import (
    IDENTIFIER,
    MAX_ARGS,
    MAX_FIELD_BYTES,
    MAX_STATEMENT_BYTES,
    MAX_TESTS,
    FunctionTask,
    Refused,
    StdioTask,
    Task,
    add_solution,
    add_test,
    at_most,
    bounded_dict,
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

CASE_TIMEOUT = 4.0
INLINE = "inline"
"""The source `InlineTasks` builds with; its row has no statement unless the caller sent one."""
INLINE_STATEMENT = "A problem given inline by its tests."
FUNCTION_HOW = (
    "Write `solution.py` defining the function `{fn}`. It is called with each test's arguments "
    "and its return value is compared with the expected one."
)
METHOD_HOW = (
    "Write `solution.py` defining `class Solution` with the method `{fn}`. For each test a "
    "fresh `Solution()` is made and `{fn}` called with the test's arguments; its return value "
    "is compared with the expected one. solution.py runs as written: import what it uses "
    "(e.g. `from typing import List` for the starter code's annotations)."
)
APPS_PRELUDE = (
    "import sys\nimport time\nimport itertools\n"
    "from itertools import accumulate, product, permutations, combinations\nimport collections\n"
    "from collections import Counter, OrderedDict, deque, defaultdict, ChainMap\n"
    "from functools import lru_cache\nimport math\n"
    "from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2\n"
    "import fractions\nfrom typing import List, Tuple\nimport random\nimport heapq\n"
    "from heapq import *\n"
)
"""APPS's own import lines before a call-based solution (eval/testing_util.py, `sol = ...`),
less `import numpy as np` (numpy is not in the candidate image)."""
FRACTIONAL = re.compile(r"[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?")
MEGABYTES = re.compile(r"\s*(\d{1,6})\s*(?:megabytes?|mb)\s*", re.IGNORECASE)

COMPARE_PY = '''\
"""APPS's call-based rule (hendrycks/apps eval/testing_util.py lines 259-273; TACO
metrics/testing_util.py lines 241-253): written by `assay import apps|taco`."""


def compare(expected, actual):
    if isinstance(actual, tuple):  # "ground truth sequences are not tuples"
        actual = list(actual)
    ok = actual == expected
    if isinstance(expected, list) and expected:
        ok = ok or actual == expected[0]
    try:
        if isinstance(actual[0], tuple):
            ok = ok or [list(x) for x in actual] == expected[0]
    except Exception:
        pass
    return ok is True
'''


def convert_apps(row: dict[str, Any], number: int) -> Task:
    return convert(row, number, "apps")


def convert_taco(row: dict[str, Any], number: int) -> Task:
    return convert(row, number, "taco")


def convert(row: dict[str, Any], number: int, source: str) -> Task:
    io, verl = io_of(row)
    task_id = f"{source}-{row_id(row, number, source, verl)}"
    with tagged(task_id):
        return build(row, io, verl, task_id, source)


def build(row: dict[str, Any], io: dict[str, Any], verl: bool, task_id: str, source: str) -> Task:
    unseen = source == INLINE and "question" not in row
    statement = INLINE_STATEMENT if unseen else statement_of(row, verl)
    fn_name = io.get("fn_name")
    inputs, outputs = io.get("inputs"), io.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise Refused("input_output needs lists 'inputs' and 'outputs'")
    if len(inputs) != len(outputs):
        raise Refused(f"input_output has {len(inputs)} inputs and {len(outputs)} outputs")
    if not inputs:
        raise Refused("input_output has no tests")
    at_most(len(inputs), MAX_TESTS, "tests")
    about = describe(row, source, task_id)
    starter = row.get("starter_code")
    # A function task's README shows the starter code too.
    code = starter if fn_name is not None and isinstance(starter, str) else ""
    shown = None if unseen else shown_text(statement, code)
    task: Task
    if fn_name is None:
        task = stdio_task(task_id, about, statement, inputs, outputs, shown)
    else:
        task = function_task(task_id, about, statement, row, fn_name, inputs, outputs, verl,
                             shown)  # fmt: skip
    if source == "taco" and isinstance(task, StdioTask):
        taco_limits(row, task)
    method = isinstance(task, FunctionTask) and "." in task.function
    for i, sol in enumerate(solutions_of(row)):
        if method and isinstance(sol, str):
            sol = APPS_PRELUDE + sol
        add_solution(task, f"correct-{i}", "python3", sol)
    return task


def io_of(row: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The input_output object, and whether the row is in verl's form."""
    reward = row.get("reward_model")
    if "input_output" in row:
        raw, key, verl = row["input_output"], "input_output", False
    elif isinstance(reward, dict) and "ground_truth" in reward:
        raw, key, verl = reward["ground_truth"], "reward_model.ground_truth", True
    elif "ground_truth" in row:
        raw, key, verl = row["ground_truth"], "ground_truth", True
    else:
        raise Refused("no 'input_output' (APPS/TACO) or 'reward_model.ground_truth' (verl)")
    if raw == "":
        raise Refused(f"field {key!r} is empty: the problem has no tests")
    io = nested_json(raw, key)
    if not isinstance(io, dict):
        raise Refused(f"field {key!r} is a {json_type(io)}, not an object")
    if extra := sorted(set(io) - {"inputs", "outputs", "fn_name"}):
        raise Refused(f"field {key!r} has unsupported key {extra[0][:40]!r}")
    return io, verl


def row_id(row: dict[str, Any], number: int, source: str, verl: bool) -> str:
    if source == "apps" and "problem_id" in row:
        return source_id(row["problem_id"], "problem_id")
    extra = row.get("extra_info")
    if verl and isinstance(extra, dict) and "index" in extra:
        return "verl-" + source_id(extra["index"], "extra_info.index")
    if source == "apps":
        raise Refused("field 'problem_id' is missing")
    return str(number - 1)


def statement_of(row: dict[str, Any], verl: bool) -> str:
    if not verl or "question" in row:
        return text_field(row, "question", cap=MAX_STATEMENT_BYTES)
    prompt = row.get("prompt")
    if isinstance(prompt, str):
        return text_field(row, "prompt", cap=MAX_STATEMENT_BYTES)
    if not isinstance(prompt, list):
        raise Refused("verl row: field 'prompt' is neither chat messages nor text")
    turns = []
    for m in prompt:
        if not (isinstance(m, dict) and isinstance(m.get("content"), str)):
            raise Refused("verl row: a 'prompt' message lacks string 'content'")
        if m.get("role") == "user":
            turns.append(m["content"])
    if not turns:
        raise Refused("verl row: 'prompt' has no user message")
    return "\n\n".join(turns)


def describe(row: dict[str, Any], source: str, task_id: str) -> str:
    parts = [f"{source.upper()} problem {task_id}"]
    for key in ("difficulty", "url"):
        if isinstance(row.get(key), str) and row[key] and len(row[key]) <= 200:
            parts.append(f"{key} {row[key]}")
    return ", ".join(parts) + f" (imported by assay import {source})."


def lines_text(value: Any, what: str) -> str:
    """APPS's rule for one stdin or stdout: a string, or a list of lines joined with \\n."""
    if isinstance(value, list):
        if not all(isinstance(x, str) for x in value):
            raise Refused(f"{what} is a list holding other than strings")
        return "\n".join(value)
    if not isinstance(value, str):
        raise Refused(f"{what} is a {json_type(value)}, not text")
    return value


def stdio_task(
    task_id: str,
    about: str,
    statement: str,
    inputs: list[Any],
    outputs: list[Any],
    shown: Shown | None = None,
) -> StdioTask:
    task = StdioTask(task_id, about, readme(statement, None, None), [],
                     case_timeout=CASE_TIMEOUT)  # fmt: skip
    vis = task.visibility = None if shown is None else Visibility()
    for i, (inp, out) in enumerate(zip(inputs, outputs, strict=True)):
        stdin, stdout = lines_text(inp, f"inputs[{i}]"), lines_text(out, f"outputs[{i}]")
        add_test(task.tests, str(i + 1), stdin, stdout)
        if vis is not None and shown is not None:
            label = vis.label("input_output", False, shown.stdin_shown(stdin, stdout))
            task.tests[-1]["id"] = case_id(label, str(i + 1))
    if any(
        FRACTIONAL.fullmatch(tok) for t in task.tests for tok in t["expected"]["stdout"].split()
    ):
        task.checker, task.rel_tol, task.abs_tol = "numbers", 1e-5, 1e-8
        task.notes.append("checker: numbers, since an expected output holds a fractional number")
    return task


def readme(statement: str, fn_name: str | None, starter: str | None, method: bool = False) -> str:
    if fn_name is None:
        how = ("Write a program that reads the input from standard input and writes the answer "
               "to standard output. Submit one source file: main.py (Python 3), main.c, main.cpp,"
               " Main.java, main.go, main.rs or main.js.")  # fmt: skip
    else:
        how = (METHOD_HOW if method else FUNCTION_HOW).format(fn=fn_name)
        if starter:
            how += f"\n\nStarter code:\n\n```python\n{starter.rstrip()}\n```"
    return f"{statement.rstrip()}\n\n## Submission\n\n{how}\n"


def function_task(
    task_id: str,
    about: str,
    statement: str,
    row: dict[str, Any],
    fn_name: Any,
    inputs: list[Any],
    outputs: list[Any],
    verl: bool,
    shown: Shown | None = None,
) -> FunctionTask:
    if not isinstance(fn_name, str) or not IDENTIFIER.fullmatch(fn_name):
        raise Refused(f"fn_name is not a Python identifier: {str(fn_name)[:40]!r}")
    if keyword.iskeyword(fn_name):
        raise Refused(f"fn_name {fn_name!r} is a Python keyword")
    starter = row.get("starter_code") if isinstance(row.get("starter_code"), str) else ""
    method = "class Solution" in (starter or "")
    cases = []
    vis = None if shown is None else Visibility()
    for i, (inp, out) in enumerate(zip(inputs, outputs, strict=True)):
        if verl:
            args, expected = verl_case(inp, out, i)
        else:
            if not isinstance(inp, list):
                raise Refused(f"inputs[{i}] is a {json_type(inp)}, not an argument list")
            at_most(len(inp), MAX_ARGS, f"arguments in inputs[{i}]")
            args, expected = inp, out
        args, expected = int_keys(args, expected, i)
        cid = str(i + 1)
        if vis is not None and shown is not None:
            cid = case_id(vis.label("input_output", False, shown.call_shown(args, {}, expected)),
                          cid)  # fmt: skip
        cases.append(function_case(cid, args, expected))
    checked_function_cases(cases)
    entry = f"Solution.{fn_name}" if method else fn_name
    return FunctionTask(task_id, about, readme(statement, fn_name, starter, method), entry,
                        cases, COMPARE_PY, case_timeout=CASE_TIMEOUT, visibility=vis)  # fmt: skip


def verl_case(inp: Any, out: Any, i: int) -> tuple[list[Any], Any]:
    if not isinstance(inp, str) or not isinstance(out, str):
        raise Refused(f"test {i + 1}: verl's call-based input and output are JSON text")
    for what, text in ((f"inputs[{i}]", inp), (f"outputs[{i}]", out)):
        if len(text) > MAX_FIELD_BYTES:  # characters: at least as many bytes
            raise Refused(f"{what} is longer than {MAX_FIELD_BYTES} bytes")
    at_most(inp.count("\n") + 1, MAX_ARGS, f"arguments (lines) in inputs[{i}]")
    args = [nested_json(line, f"inputs[{i}]") for line in inp.split("\n")]
    return args, nested_json(out, f"outputs[{i}]")


def _int_keyed(d: dict[str, Any], what: str) -> dict[int, Any] | None:
    """APPS's `{int(k): v for k, v in d.items()}` when every key reads as an int, else None.
    A key past Python's 4300-digit limit does not read as one (APPS's int() raises too), and is
    never handed to int(): with the limit lifted (PYTHONINTMAXSTRDIGITS=0) that is quadratic.
    The ints are put in the dict by bounded_dict: they collide at will, str keys do not."""
    if not all(isinstance(k, str) and len(k.strip()) <= MAX_INT_LITERAL for k in d):
        return None
    try:
        ints = [(int(k), v) for k, v in d.items()]
    except (ValueError, TypeError):
        return None
    return bounded_dict(ints, what)


def int_keys(args: list[Any], expected: Any, i: int = 0) -> tuple[list[Any], Any]:
    """APPS testing_util.py lines 234-248, which run before every call-based test."""
    if (
        args
        and isinstance(args[0], dict)
        and (keyed := _int_keyed(args[0], f"inputs[{i}][0]")) is not None
    ):
        args = [keyed]
    if isinstance(expected, dict) and (keyed := _int_keyed(expected, f"outputs[{i}]")) is not None:
        expected = [keyed]
    if (
        isinstance(expected, list)
        and expected
        and isinstance(expected[0], dict)
        and (keyed := _int_keyed(expected[0], f"outputs[{i}][0]")) is not None
    ):
        expected = [keyed]
    return args, expected


def solutions_of(row: dict[str, Any]) -> list[Any]:
    raw = row.get("solutions")
    if raw is None or raw == "":
        return []
    sols = nested_json(raw, "solutions")
    if not isinstance(sols, list):
        raise Refused(f"field 'solutions' is a {json_type(sols)}, not a list")
    return sols


def taco_limits(row: dict[str, Any], task: StdioTask) -> None:
    """TACO's `memory_limit` ("256 megabytes"). Its `time_limit` is the original judge's (often
    1 s, for C++); TACO's own evaluator gives every test 4 s, and so does this import."""
    ml = row.get("memory_limit")
    if isinstance(ml, str) and (m := MEGABYTES.fullmatch(ml)) and 16 <= int(m.group(1)) <= 65536:
        task.memory_mb = int(m.group(1))
