"""Issue 36, TAXONOMY V20: special-casing the visible tests. Every imported test is labelled
`visible` (a dataset's public test, or one whose input the statement shows) or `hidden`; a row
with no hidden test is refused by name unless the import opts in, and then it is marked
visible-only. The statement-matching rule's edges, and its work on hostile rows counted in
automaton states and steps (never a clock)."""

from __future__ import annotations

import json
import random
import tomllib
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner
from helpers.serve_app import PASS, serving
from helpers.verdicts import facts

import assay
from assay._internal.importers import apps, codecontests, humaneval, livecodebench, stdio_task
from assay._internal.importers import visibility as V
from assay._internal.importers.stdio_task import read_rows, run_import
from assay._internal.model.task import load_task
from assay._internal.model.verdict import CaseResult, build_verdict
from assay.cli import main
from assay.cli.grade import by_label
from assay.errors import TaskError

NO_HIDDEN = "no hidden tests: every test"

# ---------------------------------------------------------------------------------------------
# The rule
# ---------------------------------------------------------------------------------------------


def shows(statement: str | list[str], stdin: str, stdout: str = "0") -> bool:
    texts = [statement] if isinstance(statement, str) else statement
    return V.Shown(texts).stdin_shown(stdin, stdout)


SAMPLE = "Examples\n\nInput\n\n3\n1 2 3\n\nOutput\n\n6\n"


@pytest.mark.parametrize(
    ("statement", "stdin", "shown"),
    [
        (SAMPLE, "3\n1 2 3\n", True),  # the sample itself
        (SAMPLE, "3 1   2\n3", True),  # whitespace only separates tokens
        (SAMPLE, "\n\n  3\t1 2 3  \n\n", True),
        (SAMPLE, "3\n1 2 4\n", False),  # one token differs
        (SAMPLE, "1 2 3 6", False),  # "Output" lies between 3 and 6
        (SAMPLE, "2 3\n", True),  # a part of the sample is shown too
        ("the answer is 123", "12", False),  # whole tokens only
        ("the answer is 123", "23", False),
        ("a list 1, 2 of two", "1 2", False),  # the comma is a token between them
        ("a list 1, 2 of two", "1 , 2", True),
        ("Input:5", "5", True),  # punctuation is its own token
        ("print YES or NO", "yes", True),  # letters compared lower-cased
        ("x_1 = 7", "x_1", True),  # `_` is a word character
        ("x_1 = 7", "x", False),
        ("ÄBC déf", "äbc DÉF", True),  # Unicode letters, lower-cased
        ("s = 'ab cd'", 's = "ab cd"', True),  # every quote is one token
        ("s = \u201cab\u201d", "'ab'", True),
        ("1e-6", "- 6", True),  # errs towards visible: a run inside a number's tokens
    ],
)
def test_a_stdin_is_shown_when_its_tokens_are_one_run_of_the_statement(
    statement: str, stdin: str, shown: bool
) -> None:
    assert shows(statement, stdin) is shown


def test_a_run_never_spans_two_shown_texts() -> None:
    two = V.Shown(["title 1 2", "3 4 content"])
    assert two.has_run("1 2") and two.has_run("3 4")
    assert not two.has_run("2 3") and not two.has_run("2 title")


def test_a_test_with_no_input_is_decided_by_its_output() -> None:
    """No input token: the input is known to anyone, so the test is shown when its answer is."""
    assert shows("Print 42.", "", "42\n") and shows("Print 42.", "  \n", "42")
    assert not shows("Print the answer.", "", "42\n")
    assert shows("Print nothing.", "", "")  # nothing in, nothing out: all of it is known


@pytest.mark.parametrize(
    ("statement", "args", "shown"),
    [
        # (1) the argument list in parentheses, all as repr or all as JSON
        ("eat(5, 6, 10) -> [11, 4]", [5, 6, 10], True),
        (">>> f('ab', None)\nTrue", ["ab", None], True),
        ('f("ab", null) returns true', ["ab", None], True),
        ("f((1, 2))", [(1, 2)], True),
        ("f([1, 2])", [(1, 2)], True),  # a tuple's JSON form
        (">>> f({'a': [True, 1.5]})", [{"a": [True, 1.5]}], True),
        ("f(1.5)", [1.5], True),
        ("f(0.00001)", [1e-05], False),  # repr writes 1e-05: not this spelling
        ("compare_one(1, 2.5) -> 2.5", [1, 2], False),  # HumanEval/137: 1 and 2 appear, apart
        ("the sum of 7 and 9 is 16", [7, 9], False),  # numbers alone are in most statements
        # (2) every argument after an `=`
        ("Input: nums = [2,7,11,15], target = 9", [[2, 7, 11, 15], 9], True),  # LeetCode
        ("Input: nums = [2,7,11,15], target = 9", [[2, 7, 11, 15], 10], False),  # every one
        ("Input: nums = [2,7,11,15], target = 9", [[2, 7, 11], 9], False),  # the whole list
        ("For n = 10 the answer is 55.", [10], True),
        ('Input: s = "abc"', ["abc"], True),
        # (3) a lone string or container on its own, never a lone number
        ("Example: [1, 2, 3] => 6", [[1, 2, 3]], True),
        ("Example: 'abc' => 'cba'", ["abc"], True),
        ("Example: 10 => 55", [10], False),
        ("Example: abc => cba", ["abc"], False),  # a string is written with its quotes
        ("Example: [1, 2] and 3", [[1, 2], 3], False),  # only for a call of one argument
        # an argument that cannot be written out: counted shown (fail towards visible)
        ("f(x) for x in 1..10", [10**5000], True),
    ],
)
def test_a_call_is_shown_by_its_argument_list_named_arguments_or_lone_value(
    statement: str, args: list[Any], shown: bool
) -> None:
    assert V.Shown([statement]).call_shown(args, {}, None) is shown


def test_keyword_arguments_and_calls_without_arguments() -> None:
    s = V.Shown([">>> f(3, y=[1, 2])\n7\n>>> g()\n'done'"])
    assert s.call_shown([3], {"y": [1, 2]}, 7)
    assert not s.call_shown([3], {"y": [1, 3]}, 7)
    assert s.call_shown([], {}, "done") and not s.call_shown([], {}, "other")
    assert not s.call_shown([""], {}, 0)  # an empty string's own text would appear anywhere
    assert V.Shown(['f("") == 0']).call_shown([""], {}, 0)


def test_matching_costs_one_step_per_token_and_stops_at_the_first_miss() -> None:
    """The hostile shapes for substring search: a statement of one repeated token, and tests
    that repeat it and end in another. A naive search would cost (statement x test) per test;
    here the statement is n + 1 tokens with its separator, the automaton at most 2(n+1) states,
    and each test at most min(its tokens, n + 1) steps."""
    n = 20_000
    shown = V.Shown(["1 " * n])
    assert shown.tokens == n and shown.states <= 2 * (n + 1)
    tests = ["1 " * k + "2" for k in range(0, 4 * n, 997)]
    assert not any(shown.has_run(t) for t in tests)
    # k ones then a miss on "2", or n ones then a miss on the (n+1)-th: exactly this many.
    assert shown.steps == sum(min(k + 1, n + 1) for k in range(0, 4 * n, 997))
    naive = sum((k + 1) * n for k in range(0, 4 * n, 997))
    assert shown.steps * 1000 < naive
    before = shown.steps
    assert not shown.has_run("x " + "1 " * 1_000_000)  # the first token is unknown: one step
    assert shown.steps - before == 1
    assert shown.has_run("1 " * n) and not shown.has_run("1 " * (n + 1))


def test_the_automaton_agrees_with_a_naive_search_and_stays_linear() -> None:
    """A random statement over three tokens (the shape that makes the automaton clone states
    most): at most two states per token, and for every pattern tried the same answer as a plain
    search of the token list."""
    rng = random.Random(7)
    words = [rng.choice("abc") for _ in range(3_000)]
    shown = V.Shown([" ".join(words)])
    assert shown.states <= 2 * (len(words) + 1)
    padded = " " + " ".join(words) + " "
    for _ in range(600):
        pattern = [rng.choice("abcd") for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.5:  # half of them taken from the statement: found for sure
            start = rng.randrange(len(words) - 12)
            pattern = words[start : start + rng.randint(1, 12)]
        text = " ".join(pattern)
        assert shown.has_run(text) is (f" {text} " in padded), text


def test_a_statement_past_the_token_cap_is_refused_after_reading_only_the_cap() -> None:
    with pytest.raises(V.TooLong, match=f"more than {V.MAX_SHOWN_TOKENS} tokens"):
        V.Shown(["a " * (V.MAX_SHOWN_TOKENS + 1)])
    calls = 0

    def texts() -> Any:
        nonlocal calls
        calls += 1
        yield "b " * (V.MAX_SHOWN_TOKENS * 4)
        yield "never read"
        calls += 1

    with pytest.raises(V.TooLong):
        V.Shown(texts())
    assert calls == 1
    with pytest.raises(stdio_task.Refused, match="too many to tell which tests it shows"):
        stdio_task.shown_text("a " * (V.MAX_SHOWN_TOKENS + 1))


def test_a_hostile_row_costs_the_import_linear_matching_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real import: a description of n copies of one token and 300 private tests
    that repeat it up to 3n times before another token. The automaton has at most 2(n + 1)
    states and the import walks at most min(tokens, n + 1) steps a test, where a search of the
    statement per test would cost about n per token of the test (about 10^10 here)."""
    made: list[V.Shown] = []

    class Counted(V.Shown):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(stdio_task, "Shown", Counted)
    n = 5_000
    lengths = range(0, 3 * n, 50)
    row = {"name": "hostile", "description": "1 " * n,
           "public_tests": {"input": ["9\n"], "output": ["9\n"]},
           "private_tests": {"input": ["1 " * k + "2\n" for k in lengths],
                             "output": ["0\n"] * len(lengths)}}  # fmt: skip
    outcome, report = import_one(tmp_path, "codecontests", row)
    assert outcome.status == "written", outcome.reason
    assert (report["visible"], report["hidden"]) == (1, len(lengths))
    [shown] = made
    assert shown.tokens == n and shown.states <= 2 * (n + 1)
    assert shown.steps == sum(min(k + 1, n + 1) for k in lengths)
    assert shown.steps * 1000 < sum(k + 1 for k in lengths) * n


# ---------------------------------------------------------------------------------------------
# The importers
# ---------------------------------------------------------------------------------------------


def import_one(
    tmp_path: Path, source: str, row: dict[str, Any], allow: bool = False
) -> tuple[stdio_task.Outcome, dict[str, Any]]:
    convert = {"apps": apps.convert_apps, "taco": apps.convert_taco,
               "codecontests": codecontests.convert, "livecodebench": livecodebench.convert}  # fmt: skip
    path = tmp_path / "rows.jsonl"
    tmp_path.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row) + "\n")
    out = tmp_path / "out"
    [outcome] = run_import(source, read_rows(path), convert[source], out, allow_visible_only=allow)
    report = json.loads((out / "import-report.json").read_text())
    return outcome, report["rows"][0]


def ids(task: Path) -> list[str]:
    name = "tests.json" if (task / "judge" / "tests.json").exists() else "cases.json"
    return [c["id"] for c in json.loads((task / "judge" / name).read_text())]


def cc_row(
    public: list[str], private: list[str], generated: tuple[str, ...] = ()
) -> dict[str, Any]:
    def tests(inputs: list[str]) -> dict[str, list[str]]:
        return {"input": inputs, "output": [f"{sum(map(int, i.split()))}\n" for i in inputs]}

    return {"name": "1000_A. Sum of Two",
            "description": "Print a + b.\n\nExamples\n\nInput\n\n1 2\n\nOutput\n\n3\n",
            "public_tests": tests(public), "private_tests": tests(private),
            "generated_tests": tests(list(generated))}  # fmt: skip


def test_codecontests_only_public_tests_is_refused_by_name(tmp_path: Path) -> None:
    outcome, row = import_one(tmp_path, "codecontests", cc_row(["1 2\n"], []))
    assert outcome.status == "refused"
    assert outcome.reason == (
        "no hidden tests: every test (1) is public or shown in the statement, so a program "
        "that prints their answers would pass"
    )
    assert row["reason"] == outcome.reason
    assert not (tmp_path / "out" / "cc-1000_a-sum-of-two").exists()


def test_codecontests_private_tests_that_repeat_the_sample_are_visible(tmp_path: Path) -> None:
    """Codeforces' first test is the first sample, and CodeContests' private tests hold it:
    a row whose private tests are only the samples has no hidden test."""
    outcome, _ = import_one(tmp_path / "a", "codecontests", cc_row(["1 2\n"], [" 1  2 "]))
    assert outcome.status == "refused" and NO_HIDDEN in (outcome.reason or "")
    outcome, row = import_one(tmp_path / "b", "codecontests",
                              cc_row(["1 2\n"], ["1 2\n", "5 3\n"], ("7 9\n",)))  # fmt: skip
    assert outcome.status == "written"
    task = tmp_path / "b" / "out" / "cc-1000_a-sum-of-two"
    assert ids(task) == ["visible:public-1", "visible:private-1", "hidden:private-2",
                         "hidden:generated-1"]  # fmt: skip
    assert (row["visible"], row["hidden"], row["in_statement"]) == (2, 2, 1)
    assert row["sets"] == {"public": {"visible": 1, "hidden": 0},
                           "private": {"visible": 1, "hidden": 1},
                           "generated": {"visible": 0, "hidden": 1}}  # fmt: skip
    assert row["visible_only"] is False and V.VISIBLE_ONLY_NOTE not in row["notes"]
    load_task(task)


def test_codecontests_opt_in_imports_a_visible_only_row_marked(tmp_path: Path) -> None:
    outcome, row = import_one(tmp_path, "codecontests", cc_row(["1 2\n"], []), allow=True)
    assert outcome.status == "written"
    task = tmp_path / "out" / "cc-1000_a-sum-of-two"
    assert ids(task) == ["visible:public-1"]
    assert row["visible_only"] is True and (row["visible"], row["hidden"]) == (1, 0)
    assert row["notes"][-1] == V.VISIBLE_ONLY_NOTE
    description = tomllib.loads((task / "task.toml").read_text())["description"]
    assert description.endswith(V.VISIBLE_ONLY_DESCRIPTION)
    report = json.loads((tmp_path / "out" / "import-report.json").read_text())
    assert report["counts"]["visible-only (no hidden test)"] == 1
    load_task(task)


LCB_STDIN = {"question_title": "Maximum", "platform": "atcoder", "question_id": "abc999_a",
             "question_content": "Print the largest of N integers.\n\nSample Input 1\n\n3\n1 5 2\n"
             "\nSample Output 1\n\n5\n", "starter_code": "", "metadata": "{}",
             "public_test_cases": json.dumps([{"input": "3\n1 5 2\n", "output": "5\n",
                                               "testtype": "stdin"}])}  # fmt: skip


def test_livecodebench_stdin_rows(tmp_path: Path) -> None:
    outcome, _ = import_one(
        tmp_path / "a", "livecodebench", {**LCB_STDIN, "private_test_cases": ""}
    )
    assert outcome.status == "refused" and NO_HIDDEN in (outcome.reason or "")
    outcome, _ = import_one(tmp_path / "b", "livecodebench", {**LCB_STDIN, "private_test_cases": ""},
                            allow=True)  # fmt: skip
    assert outcome.status == "written" and outcome.visibility and outcome.visibility.visible_only
    private = json.dumps([{"input": "3\n1 5 2\n", "output": "5\n", "testtype": "stdin"},
                          {"input": "2\n9 9\n", "output": "9\n", "testtype": "stdin"}])  # fmt: skip
    outcome, row = import_one(tmp_path / "c", "livecodebench",
                              {**LCB_STDIN, "private_test_cases": private})  # fmt: skip
    assert outcome.status == "written"
    task = tmp_path / "c" / "out" / "lcb-abc999_a"
    assert ids(task) == ["visible:public-1", "visible:private-1", "hidden:private-2"]
    assert row["sets"] == {"public": {"visible": 1, "hidden": 0},
                           "private": {"visible": 1, "hidden": 1}}  # fmt: skip


LCB_FUNCTIONAL = {
    "question_title": "Two Sum", "platform": "leetcode", "question_id": "1",
    "question_content": "Example 1:\nInput: nums = [2,7,11,15], target = 9\nOutput: [0,1]\n"
    "Example 2:\nInput: nums = [3,2,4], target = 6\nOutput: [1,2]",
    "starter_code": "class Solution:\n    def twoSum(self, nums, target):\n        ",
    "metadata": json.dumps({"func_name": "twoSum"}),
    "public_test_cases": json.dumps([{"input": "[2,7,11,15]\n9", "output": "[0, 1]",
                                      "testtype": "functional"}]),
}  # fmt: skip


def test_livecodebench_functional_rows(tmp_path: Path) -> None:
    shown_only = json.dumps([{"input": "[3,2,4]\n6", "output": "[1, 2]", "testtype": "functional"}])
    outcome, _ = import_one(tmp_path / "a", "livecodebench",
                            {**LCB_FUNCTIONAL, "private_test_cases": shown_only})  # fmt: skip
    assert outcome.status == "refused" and NO_HIDDEN in (outcome.reason or "")
    private = json.dumps([{"input": "[3,2,4]\n6", "output": "[1, 2]", "testtype": "functional"},
                          {"input": "[3,3]\n6", "output": "[0, 1]", "testtype": "functional"}])  # fmt: skip
    outcome, row = import_one(tmp_path / "b", "livecodebench",
                              {**LCB_FUNCTIONAL, "private_test_cases": private})  # fmt: skip
    assert outcome.status == "written" and outcome.kind == "function"
    task = tmp_path / "b" / "out" / "lcb-1"
    assert ids(task) == ["visible:public-1", "visible:private-1", "hidden:private-2"]
    assert (row["visible"], row["hidden"], row["in_statement"]) == (2, 1, 1)
    load_task(task)


APPS_STDIO = {"problem_id": 7, "question": "Print the sum of n integers.\n\n-----Examples-----\n"
              "Input\n3\n1 2 3\n\nOutput\n6\n\nInput\n1\n-5\n\nOutput\n-5\n"}  # fmt: skip


def apps_row(inputs: list[Any], outputs: list[Any], **extra: Any) -> dict[str, Any]:
    io: dict[str, Any] = {"inputs": inputs, "outputs": outputs}
    if "fn_name" in extra:
        io["fn_name"] = extra.pop("fn_name")
    return {**APPS_STDIO, **extra, "input_output": json.dumps(io)}


@pytest.mark.parametrize("source", ["apps", "taco"])
def test_apps_and_taco_stdio_rows(tmp_path: Path, source: str) -> None:
    """No public/private split: the statement decides. input_output holding only the
    statement's examples (as many APPS rows do) is refused; one more test makes it gradeable."""
    samples = (["3\n1 2 3\n", ["1", "-5"]], ["6\n", "-5\n"])
    outcome, _ = import_one(tmp_path / "a", source, apps_row(*samples))
    assert outcome.status == "refused"
    assert outcome.reason == ("no hidden tests: every test (2) is shown in the statement, so a "
                              "program that prints their answers would pass")  # fmt: skip
    outcome, row = import_one(tmp_path / "b", source, apps_row(*samples), allow=True)
    assert outcome.status == "written" and row["visible_only"] is True
    outcome, row = import_one(tmp_path / "c", source,
                              apps_row(["3\n1 2 3\n", "2\n4 4\n", "1\n-5"], ["6", "8", "-5"]))  # fmt: skip
    assert outcome.status == "written"
    task = next((tmp_path / "c" / "out").glob(f"{source}-*"))
    assert ids(task) == ["visible:1", "hidden:2", "visible:3"]
    assert row["sets"] == {"input_output": {"visible": 2, "hidden": 1}}
    assert row["in_statement"] == 2 and row["visible_only"] is False


def test_apps_function_rows_match_arguments_and_the_starter_code(tmp_path: Path) -> None:
    statement = "Write pair_sum(nums, target). Example: pair_sum([1, 2, 3], 5) == [1, 2]"
    row = apps_row([[[1, 2, 3], 5]], [[[1, 2]]], fn_name="pair_sum", question=statement)
    outcome, _ = import_one(tmp_path / "a", "apps", row)
    assert outcome.status == "refused" and NO_HIDDEN in (outcome.reason or "")
    row = apps_row([[[1, 2, 3], 5], [[4, 4], 8]], [[[1, 2]], [[0, 1]]], fn_name="pair_sum",
                   question=statement)  # fmt: skip
    outcome, _ = import_one(tmp_path / "b", "apps", row)
    assert ids(tmp_path / "b" / "out" / "apps-7") == ["visible:1", "hidden:2"]
    # The README shows the starter code: an argument only it shows is shown.
    row = apps_row([[77]], [[1]], fn_name="f", question="Write f.", starter_code="def f(x=77):")
    outcome, _ = import_one(tmp_path / "c", "apps", row)
    assert outcome.status == "refused" and NO_HIDDEN in (outcome.reason or "")


def test_verl_rows_match_the_prompt_the_model_was_given(tmp_path: Path) -> None:
    prompt = [{"role": "system", "content": "You are a programmer. 2 3"},
              {"role": "user", "content": "Read a and b; print a*b. Example: 4 5 gives 20."}]  # fmt: skip
    io = {"inputs": ["4 5\n", "2 3\n"], "outputs": ["20\n", "6\n"]}
    row = {"prompt": prompt, "reward_model": {"ground_truth": json.dumps(io)},
           "extra_info": {"index": 5}}  # fmt: skip
    outcome, _ = import_one(tmp_path, "apps", row)
    assert outcome.status == "written"
    # The system turn is not the statement (the README leaves it out): "2 3" is hidden there.
    assert ids(tmp_path / "out" / "apps-verl-5") == ["visible:1", "hidden:2"]


def test_a_row_refused_for_what_it_is_is_named_for_that_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The visibility check is the last: a bad field or a cap is the reason, not it."""
    row = apps_row(["3\n1 2 3\n"], ["6\n"], fn_name="not an identifier")
    outcome, _ = import_one(tmp_path / "a", "apps", row)
    assert outcome.status == "refused" and "not a Python identifier" in (outcome.reason or "")
    monkeypatch.setattr(stdio_task, "MAX_TESTS_FILE_BYTES", 10)
    outcome, _ = import_one(tmp_path / "b", "apps", apps_row(["3\n1 2 3\n"], ["6\n"]))
    assert outcome.status == "refused" and "over the cap of 10" in (outcome.reason or "")


def test_the_cli_flag_opts_in(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(cc_row(["1 2\n"], [])) + "\n")
    r = CliRunner().invoke(
        main, ["import", "codecontests", str(path), "--out", str(tmp_path / "a")]
    )
    assert r.exit_code == 1 and "not converted: no hidden tests" in r.output
    r = CliRunner().invoke(main, ["import", "codecontests", str(path), "--out", str(tmp_path / "b"),
                                  "--allow-visible-only"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "visible-only (no hidden test): 1" in r.output
    r = CliRunner().invoke(main, ["import", "codecontests", str(path), "--report"])
    assert r.exit_code == 1 and "refused: no hidden tests" in r.output


# ---------------------------------------------------------------------------------------------
# HumanEval
# ---------------------------------------------------------------------------------------------

HE_PROMPT = 'def f(x):\n    """Double x.\n    >>> f(2)\n    4\n    >>> f(-1)\n    -2\n    """\n'


def he_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[int], allow: bool = False
) -> tuple[humaneval.Converted, dict[str, Any]]:
    cases = [{"id": f"L{i + 3}", "input": [a], "expected": 2 * a} for i, a in enumerate(args)]
    monkeypatch.setattr(humaneval, "probe", lambda _p, timeout=0: {"cases": cases})
    problem = {"task_id": "HumanEval/7", "prompt": HE_PROMPT, "entry_point": "f",
               "canonical_solution": "    return 2 * x\n", "test": ""}  # fmt: skip
    [res] = humaneval.import_humaneval(tmp_path, problems=[problem], allow_visible_only=allow)
    return res, json.loads((tmp_path / "import-report.json").read_text())


def test_humaneval_cases_the_prompt_shows_are_visible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    res, report = he_import(tmp_path / "a", monkeypatch, [2, -1])
    assert res.task_dir is None
    assert report["not_converted"]["HumanEval/7"] == (
        "no hidden tests: every test (2) is shown in the statement, so a program that prints "
        "their answers would pass"
    )
    res, report = he_import(tmp_path / "b", monkeypatch, [2, -1, 10])
    assert res.task_dir is not None
    assert ids(res.task_dir) == ["visible:L3", "visible:L4", "hidden:L5"]
    got = report["converted"]["HumanEval/7"]
    assert (got["visible"], got["hidden"], got["visible_only"]) == (2, 1, False)
    assert got["sets"] == {"check": {"visible": 2, "hidden": 1}}
    load_task(res.task_dir)


def test_humaneval_opt_in_marks_the_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res, report = he_import(tmp_path, monkeypatch, [2], allow=True)
    assert res.task_dir is not None and report["converted"]["HumanEval/7"]["visible_only"]
    conf = tomllib.loads((res.task_dir / "task.toml").read_text())
    assert "Visible-only" in conf["description"]
    load_task(res.task_dir)


# ---------------------------------------------------------------------------------------------
# Inline rows (InlineTasks, assay serve)
# ---------------------------------------------------------------------------------------------

TESTS = {"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]}
SHOWS_ALL = "Print a + b. Example: for 1 2 print 3; for 5 7 print 12."
SHOWS_ONE = "Print a + b. Example: for 1 2 print 3."


def case_ids(task: assay.Task) -> list[str]:
    return [c["id"] for c in json.loads((task.root / "judge" / "tests.json").read_text())]


def test_inline_rows_without_a_statement_claim_nothing() -> None:
    with_tasks = assay.InlineTasks()
    try:
        assert case_ids(with_tasks.task(TESTS)) == ["1", "2"]
    finally:
        with_tasks.close()


def test_inline_rows_with_a_statement_are_labelled_and_refused_as_imports() -> None:
    rows = assay.InlineTasks()
    try:
        with pytest.raises(TaskError, match="no hidden tests: every test \\(2\\) is shown"):
            rows.task(TESTS, statement=SHOWS_ALL)
        marked = rows.task(TESTS, statement=SHOWS_ALL, allow_visible_only=True)
        assert case_ids(marked) == ["visible:1", "visible:2"]
        assert "Visible-only" in marked.config.description
        one = rows.task(TESTS, statement=SHOWS_ONE)
        assert case_ids(one) == ["visible:1", "hidden:2"]
        assert "Example: for 1 2" in (one.root / "inputs" / "README.md").read_text()
        assert rows.task(TESTS).root not in (one.root, marked.root)  # each its own task
        verl = {"inputs": ["1\n2", "3\n4"], "outputs": ["3", "7"], "fn_name": "add"}
        task = rows.task(verl, "verl", statement="add(1, 2) returns 3")
        cases = json.loads((task.root / "judge" / "cases.json").read_text())
        assert [c["id"] for c in cases] == ["visible:1", "hidden:2"]
    finally:
        rows.close()


def test_serve_takes_the_statement_and_answers_as_before(tmp_path: Path) -> None:
    with serving(tmp_path) as served:

        def grade(**body: Any) -> requests.Response:
            return requests.post(f"{served.url}/v1/grade", timeout=30,
                                 json={"input_output": TESTS, "code": PASS, **body})  # fmt: skip

        r = grade(statement=SHOWS_ALL)
        assert r.status_code == 422 and r.json()["status"] == "invalid"
        assert "no hidden tests" in r.json()["error"]
        assert grade(statement=SHOWS_ALL, allow_visible_only=True).json()["status"] == "passed"
        assert grade(statement=SHOWS_ONE).json()["status"] == "passed"
        assert grade().json()["status"] == "passed"  # no statement: as before
        r = requests.post(f"{served.url}/v1/grade", timeout=30,
                          json={"task": "x", "code": PASS, "statement": SHOWS_ONE})  # fmt: skip
        assert r.status_code == 422


# ---------------------------------------------------------------------------------------------
# The verdict says which
# ---------------------------------------------------------------------------------------------


def test_assay_grade_shows_hidden_results_apart() -> None:
    results = [CaseResult(id="visible:public-1", status="pass", duration_s=0.1),
               CaseResult(id="hidden:private-1", status="fail", duration_s=0.1),
               CaseResult(id="hidden:private-2", status="pass", duration_s=0.1)]  # fmt: skip
    v = build_verdict(facts(), results, 3)
    assert by_label(v) == " hidden=1/2 visible=1/1"
    plain = [CaseResult(id="c1", status="pass", duration_s=0.1)]
    assert by_label(build_verdict(facts(), plain, 1)) == ""


def test_the_report_row_docs_stdio_md_shows_is_this_code_s(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "stdio.md").read_text()
    example = doc.split("codecontests.jsonl`):\n\n```json\n", 1)[1].split("```", 1)[0]
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "datasets" / "codecontests.jsonl"
    r = CliRunner().invoke(main, ["import", "codecontests", str(fixture), "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    report = json.loads((tmp_path / "import-report.json").read_text())
    assert report["rows"][0] == json.loads(example)
