"""The datasets' own output comparisons, re-implemented line for line, next to assay's checkers:
evidence of where `assay import apps|taco|codecontests|livecodebench` agrees with the dataset's
reference evaluator and where it does not (/work/notes/agreement-27.md).

Sources (read from the repositories, commit in parentheses):
- APPS: hendrycks/apps eval/testing_util.py (362aedc), `run_test`, standard-input branch,
  lines 289-456, and `custom_compare_` / `stripped_string_compare`, lines 468-486. The program's
  stdout reaches the comparison as `Capturing`'s list of lines (line 51: `splitlines()`).
- TACO: FlagOpen/TACO metrics/testing_util.py, `compare_std_results`, lines 368-500: there the
  stdout arrives as one string (`result.stdout`, line 338), not a list of lines.
- LiveCodeBench: lcb_runner/evaluation/testing_util.py (28fef95), `grade_stdio` lines 370-423,
  `get_stripped_lines` lines 222-226, `convert_line_to_decimals` lines 214-219.
- CodeContests: google-deepmind/code_contests execution/tester_sandboxer.cc (fa7a4f8),
  `SplitAndLowercase` lines 135-145, `ValuesMatch` lines 146-164, `OutputsMatch` lines 256-264.

Run as a script to print the agreement table as Markdown:
    .venv/bin/python tests/helpers/dataset_rules.py
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from assay._incontainer import checkers

# --- APPS ------------------------------------------------------------------------------------


def _allclose(a: list[float], b: list[float]) -> bool:
    """numpy.allclose(a, b) with its defaults rtol=1e-05, atol=1e-08 (equal infinities are
    close, NaN never is)."""
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
            return False
        if not abs(x - y) <= 1e-08 + 1e-05 * abs(y):
            return False
    return True


def _stripped_string_compare(s1: str, s2: str) -> bool:  # lines 483-486
    return s1.strip() == s2.strip()


def _custom_compare(output: list[str], ground_truth: str) -> bool:  # lines 468-481
    if _stripped_string_compare("\n".join(output), ground_truth):
        return True
    return _stripped_string_compare("\n".join(o.strip() for o in output), ground_truth)


def apps_accepts(stdout: str, expected: str | list[str]) -> bool:
    """APPS's verdict on one standard-input test (a program that ran without error)."""
    gt: Any = "\n".join(expected) if isinstance(expected, list) else expected  # 296-297
    output: Any = stdout.splitlines()  # Capturing, line 51
    if _custom_compare(output, gt):  # 324
        return True
    tmp_result = output == [gt]  # 335 (gt is a string here: 336-339 do not apply)
    if tmp_result:
        return True
    gt = [x.strip() for x in gt.split("\n") if x]  # 354-356: filter(len), then strip
    tmp_result = output == [gt] or output == gt  # 359-361
    if tmp_result:
        return True
    output = [x for x in output if x]  # 371-372
    tmp_result = output == [gt] or output == gt  # 386-388
    try:  # 393-398
        out_f = [float(e) for e in output]
        gt_f = [float(e) for e in gt]
        tmp_result = tmp_result or (len(out_f) == len(gt_f) and _allclose(out_f, gt_f))
    except ValueError:
        pass
    if tmp_result:  # 399-405 need output[0] to be a list: never, output holds strings
        return True
    gt = [set(line.split()) for line in gt]  # 412-414
    output = [set(x) for x in (line.split() for line in output) if x]  # 429-434
    tmp_result = {frozenset(s) for s in output} == {frozenset(s) for s in gt}  # 441
    try:  # 447-449
        tmp_result = tmp_result or (
            {frozenset(round(float(t), 3) for t in s) for s in output}
            == {frozenset(round(float(t), 3) for t in s) for s in gt}
        )
    except ValueError:
        pass
    return bool(tmp_result)


# --- TACO ------------------------------------------------------------------------------------


def taco_accepts(stdout: str, expected: str | list[str]) -> bool:
    """TACO's compare_std_results(result.stdout, outputs) for a string stdout."""
    outputs: Any = "\n".join(expected) if isinstance(expected, list) else expected
    exec_outputs: Any = stdout
    if _stripped_string_compare(exec_outputs, outputs):  # 369
        return True
    # 372-399: the list branches do not apply to a string; exec_outputs == [outputs] is False.
    outputs = [x.strip() for x in outputs.split("\n") if x]  # 407-409
    tmp_result = False  # 411-434: a string never equals a list
    try:  # 437-442: iterates the CHARACTERS of the string stdout
        out_f = [float(e) for e in exec_outputs]
        gt_f = [float(e) for e in outputs]
        tmp_result = len(out_f) == len(gt_f) and _allclose(out_f, gt_f)
    except ValueError:
        pass
    if tmp_result:
        return True
    outputs = [set(i.split()) for i in outputs]  # 454-456
    exec_outputs = {t for t in exec_outputs.split() if t}  # 476-478: one set of tokens
    tmp_result = {frozenset(s) for s in exec_outputs} == {frozenset(s) for s in outputs}  # 480
    try:  # 486-488
        tmp_result = tmp_result or (
            {frozenset(round(float(t), 3) for t in s) for s in exec_outputs}
            == {frozenset(round(float(t), 3) for t in s) for s in outputs}
        )
    except ValueError:
        pass
    return bool(tmp_result)


# --- LiveCodeBench ---------------------------------------------------------------------------


def _stripped_lines(val: str) -> list[str]:  # 222-226
    return [line.strip() for line in val.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:  # 214-219
    try:
        return [Decimal(e) for e in line.split()]
    except ArithmeticError:  # decimal.InvalidOperation
        return None


def lcb_accepts(stdout: str, expected: str) -> bool:
    pred, gt = _stripped_lines(stdout), _stripped_lines(expected)
    if len(pred) != len(gt):  # 384
        return False
    for p, g in zip(pred, gt, strict=True):
        if p == g:  # 398
            continue
        dp, dg = _decimals(p), _decimals(g)
        if dp is None or dg is None or dp != dg:  # 407-421
            return False
    return True


# --- CodeContests ----------------------------------------------------------------------------

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE
)


def _atoi32(s: str) -> int | None:
    """absl::SimpleAtoi into an `int`: base 10, optional sign, fails on overflow."""
    if not _INT.fullmatch(s):
        return None
    v = int(s)
    return v if -(2**31) <= v < 2**31 else None


def _atod(s: str) -> float | None:
    """absl::SimpleAtod: a decimal or exponent literal, inf, infinity or nan."""
    return float(s) if _FLOAT.fullmatch(s) else None


def _values_match(a: str, b: str) -> bool:  # 146-164
    ai, bi, ad, bd = _atoi32(a), _atoi32(b), _atod(a), _atod(b)
    if (ai is None and ad is None) or (bi is None and bd is None):
        return a == b
    if ad is not None or bd is not None:  # every int is also a double: this is always taken
        assert ad is not None and bd is not None
        return abs(ad - bd) < 1e-5
    return ai == bi


def cc_accepts(stdout: str, expected: str) -> bool:
    def parts(s: str) -> list[str]:  # SplitAndLowercase: ByAnyChar(" \n\t\r\v"), SkipEmpty
        return [p.lower() for p in re.split(r"[ \n\t\r\v]", s) if p]

    out, exp = parts(stdout), parts(expected)
    if out == exp:
        return True
    if len(out) != len(exp):
        return False
    return all(_values_match(a, b) for a, b in zip(out, exp, strict=True))


# --- assay -----------------------------------------------------------------------------------


def assay_accepts(
    checker: str, stdout: str, expected: str, abs_tol: float = 1e-9, rel_tol: float = 1e-9
) -> bool:
    ok, _ = checkers.check(
        checker, stdout.encode(), expected.encode(), abs_tol=abs_tol, rel_tol=rel_tol
    )
    return ok


# --- The table -------------------------------------------------------------------------------

NUMBERS_APPS = ("numbers", 1e-8, 1e-5)
TOKENS = ("tokens", 1e-9, 1e-9)
NUMBERS_CC = ("numbers", 1e-5, 0.0)
NUMBERS_CC_BRIEF = ("numbers", 1e-5, 1e-5)
TOKENS_CI = ("tokens-ci", 1e-9, 1e-9)
NUMBERS_LCB = ("numbers", 0.0, 0.0)

CASES: list[tuple[str, tuple[str, float, float], str, str, str]] = [
    # (dataset, assay checker, what, expected, output)
    ("apps", TOKENS, "the answer itself", "1 2 3\n4\n", "1 2 3\n4\n"),
    ("apps", TOKENS, "no final newline, trailing spaces", "1 2 3\n4\n", "1 2 3  \n4"),
    ("apps", TOKENS, "leading spaces and blank lines", "1 2 3\n4\n", "\n  1 2 3\n\n4\n"),
    ("apps", TOKENS, "same tokens, other line layout", "1 2 3\n4\n", "1 2\n3 4\n"),
    ("apps", TOKENS, "tokens of a line permuted", "1 2 3\n4\n", "3 2 1\n4\n"),
    ("apps", TOKENS, "lines in another order", "1 2 3\n4\n", "4\n1 2 3\n"),
    ("apps", TOKENS, "a repeated token dropped", "1 1 2\n", "1 2\n"),
    ("apps", TOKENS, "a line repeated", "YES\n", "YES\nYES\n"),
    ("apps", TOKENS, "lowercased", "YES\n", "yes\n"),
    ("apps", TOKENS, "integer off by 1 in 100000", "100000\n", "100001\n"),
    ("apps", NUMBERS_APPS, "float rounded to 3 places agrees", "0.1231 5\n", "0.1234 5\n"),
    ("apps", NUMBERS_APPS, "float within 1e-5 relative", "1.3333333333\n", "1.333333\n"),
    ("apps", NUMBERS_APPS, "float off by 1e-3", "1.5\n", "1.501\n"),
    ("taco", TOKENS, "the answer itself", "a\nb\n", "a\nb\n"),
    ("taco", TOKENS, "single-character lines permuted onto one line", "a\nb\n", "b a\n"),
    ("taco", TOKENS, "tokens of a line permuted", "1 2 3\n", "3 2 1\n"),
    ("taco", TOKENS, "a one-character answer vs 7.000001", "7.000001\n", "7"),
    ("livecodebench", NUMBERS_LCB, "the answer itself", "Yes\nNo\n", "Yes\nNo\n"),
    ("livecodebench", NUMBERS_LCB, "leading spaces, no final newline", "1 2\n3\n", "  1 2\n3"),
    ("livecodebench", NUMBERS_LCB, "same tokens, other line layout", "1 2\n3\n", "1\n2 3\n"),
    ("livecodebench", NUMBERS_LCB, "a number spelled 1.0 for 1", "1\n", "1.0\n"),
    ("livecodebench", NUMBERS_LCB, "a number spelled 1e2 for 100", "100\n", "1e2\n"),
    ("livecodebench", NUMBERS_LCB, "two spaces inside a line of words", "a b\n", "a  b\n"),
    ("livecodebench", NUMBERS_LCB, "lowercased", "Yes\n", "yes\n"),
    ("livecodebench", NUMBERS_LCB, "a word and 1.0 for 1 on one line", "Yes 1\n", "Yes 1.0\n"),
    ("livecodebench", NUMBERS_LCB, "float off by 1e-9", "0.5\n", "0.500000001\n"),
    ("codecontests", NUMBERS_CC, "float within 1e-5", "3.14159265\n", "3.141593\n"),
    ("codecontests", NUMBERS_CC, "float off by exactly 1e-5", "3.14159\n", "3.14160\n"),
    ("codecontests", NUMBERS_CC, "float off by 2e-5", "3.14159\n", "3.14161\n"),
    ("codecontests", NUMBERS_CC, "lowercased (statement silent on case)", "YES\n", "yes\n"),
    ("codecontests", TOKENS_CI, "lowercased (statement allows any case)", "YES\n", "yes\n"),
    ("codecontests", NUMBERS_CC, "10^9 off by one", "1000000000\n", "1000000001\n"),
    (
        "codecontests",
        NUMBERS_CC_BRIEF,
        "10^9 off by one, rel_tol 1e-5",
        "1000000000\n",
        "1000000001\n",
    ),
    (
        "codecontests",
        NUMBERS_CC,
        "10^16 off by one (past 2^53)",
        "10000000000000000\n",
        "10000000000000001\n",
    ),
    ("codecontests", NUMBERS_CC, "integer printed as 5.000001", "5\n", "5.000001\n"),
    ("codecontests", NUMBERS_CC, "same tokens, other line layout", "1 2\n3\n", "1\n2 3\n"),
]

DATASET_RULE = {
    "apps": apps_accepts,
    "taco": taco_accepts,
    "livecodebench": lcb_accepts,
    "codecontests": cc_accepts,
}


def verdicts() -> list[tuple[str, str, str, str, str, bool, bool]]:
    rows = []
    for dataset, (checker, abs_tol, rel_tol), what, expected, output in CASES:
        theirs = DATASET_RULE[dataset](output, expected)
        ours = assay_accepts(checker, output, expected, abs_tol, rel_tol)
        label = checker if checker != "numbers" else f"numbers abs {abs_tol:g} rel {rel_tol:g}"
        rows.append((dataset, label, what, expected, output, theirs, ours))
    return rows


# --- The fixtures' own solutions ---------------------------------------------------------------

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "datasets"


def run_python(source: str, stdin: str) -> str:
    """Run one of the fixtures' own Python solutions (trusted files of this repository)."""
    p = subprocess.run(
        [sys.executable, "-I", "-c", source], input=stdin, capture_output=True, text=True,
        timeout=30, check=False,
    )  # fmt: skip
    return p.stdout


def fixture_verdicts(out_dirs: dict[str, Path]) -> list[tuple[str, str, str, bool, bool]]:
    """For every imported stdio task in `out_dirs` (dataset -> import --out directory) and each
    of its Python solutions: (dataset, task, solution, all tests pass by the dataset's rule,
    all pass by the task's assay checker)."""
    import json
    import tomllib

    rows = []
    for dataset, out in out_dirs.items():
        for task in sorted(p for p in out.iterdir() if (p / "judge" / "tests.json").is_file()):
            conf = tomllib.loads((task / "task.toml").read_text())["stdio"]
            tests = json.loads((task / "judge" / "tests.json").read_text())
            for sol in sorted((task / "solutions").glob("*/main.py")):
                theirs = ours = True
                for t in tests:
                    got = run_python(sol.read_text(), t["input"]["stdin"])
                    want = t["expected"]["stdout"]
                    theirs &= DATASET_RULE[dataset](got, want)
                    ours &= assay_accepts(conf["checker"], got, want,
                                          conf.get("abs_tol", 1e-9), conf.get("rel_tol", 1e-9))  # fmt: skip
                rows.append((dataset, task.name, sol.parent.name, theirs, ours))
    return rows


def markdown(fixtures: list[tuple[str, str, str, bool, bool]] | None = None) -> str:
    def yn(v: bool) -> str:
        return "accept" if v else "reject"

    def code(s: str) -> str:
        return "`" + s.replace("\n", "\\n") + "`"

    out = ["| dataset | assay checker | output | expected | dataset's rule | assay |",
           "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for dataset, label, what, expected, output, theirs, ours in verdicts():
        mark = "" if theirs == ours else " **differs**"
        out.append(f"| {dataset} | {label} | {what}: {code(output)} | {code(expected)} | "
                   f"{yn(theirs)} | {yn(ours)}{mark} |")  # fmt: skip
    if fixtures:
        out += ["", "| dataset | task | solution | dataset's rule | assay |",
                "| --- | --- | --- | --- | --- |"]  # fmt: skip
        for dataset, task, sol, theirs, ours in fixtures:
            out.append(f"| {dataset} | {task} | {sol} | {yn(theirs)} | {yn(ours)} |")
    return "\n".join(out)


if __name__ == "__main__":
    import tempfile

    from click.testing import CliRunner

    from assay.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        dirs = {}
        for name in ("apps", "taco", "codecontests", "livecodebench"):
            dirs[name] = Path(tmp) / name
            CliRunner().invoke(main, ["import", name, str(FIXTURES / f"{name}.jsonl"), "--out",
                                      str(dirs[name]), "--solutions",
                                      str(FIXTURES / "solutions.json")])  # fmt: skip
        print(markdown(fixture_verdicts(dirs)))
