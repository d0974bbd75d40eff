"""The stdio checkers (src/assay/_incontainer/checkers.py): hostile output against each rule.

Every expected verdict below follows from the rules in the module docstring, not from running
the code: the comment or the test name says which rule decides it.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import sys
import textwrap
from decimal import Context, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from assay._incontainer import checkers
from assay._incontainer.checkers import FAILED, PARTIAL, PRESENTATION, WRONG, check

ROOT = Path(__file__).resolve().parents[2]
TESTLIB = ROOT / "tests" / "fixtures" / "testlib"
ALL = checkers.CHECKERS
OK = (True, None)
WA = (False, WRONG)
PE = (False, PRESENTATION)
MIB16 = 16 << 20


def ok(name: str, output: bytes, answer: bytes, **tol: float) -> tuple[bool, str | None]:
    return check(name, output, answer, **tol)


# -- exact --------------------------------------------------------------------------------------


def test_exact_is_bytes_equality() -> None:
    assert ok("exact", b"3\n", b"3\n") == OK
    # Same tokens, different whitespace: a presentation difference.
    assert ok("exact", b"3", b"3\n") == PE
    assert ok("exact", b"3 \n", b"3\n") == PE
    assert ok("exact", b"3\r\n", b"3\n") == PE
    assert ok("exact", b"4\n", b"3\n") == WA
    assert ok("exact", b"3\x00\n", b"3\n") == WA  # NUL is a byte of the token, not whitespace


# -- lines --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        b"1 2\n3\n",
        b"1 2\n3",  # no final newline
        b"1 2   \n3\t\n",  # trailing spaces and tabs
        b"1 2\n3\n\n\n",  # trailing empty lines
        b"1 2\n3\n \t\n",  # a trailing line of only blanks is empty once stripped
    ],
)
def test_lines_ignores_trailing_blanks_and_final_newlines(output: bytes) -> None:
    assert ok("lines", output, b"1 2\n3\n") == OK


@pytest.mark.parametrize(
    "output",
    [
        b"1  2\n3\n",  # inner spacing is part of the line
        b" 1 2\n3\n",  # leading spaces are not trailing ones
        b"1 2\n\n3\n",  # an empty line inside the output is a line
        b"1\n2\n3\n",  # same tokens, other line structure
        b"1 2\r\n3\r\n",  # CRLF against an LF answer: \r is an ordinary byte
        b"1 2 3\n",
    ],
)
def test_lines_with_the_tokens_but_not_the_lines_is_a_presentation_error(output: bytes) -> None:
    assert ok("lines", output, b"1 2\n3\n") == PE


def test_lines_accepts_lf_output_for_a_crlf_answer_and_crlf_for_crlf() -> None:
    answer = b"1 2\r\n3\r\n"
    assert ok("lines", b"1 2\n3\n", answer) == OK
    assert ok("lines", b"1 2\r\n3\r\n", answer) == OK
    assert ok("lines", b"1 2\r\n3", answer) == OK
    assert ok("lines", b"1 2\r\r\n3\n", answer) == OK  # a \r is trailing whitespace there
    # Only at the end of a line; inside one it is a byte of the line (tokens: whitespace).
    assert ok("lines", b"1\r2\n3\n", answer) == PE


def test_lines_keeps_a_carriage_return_inside_a_line() -> None:
    assert ok("lines", b"a\rb\n", b"a\rb\n") == OK
    assert ok("lines", b"a b\n", b"a\rb\n") == PE  # same tokens (\r splits them), other line
    assert ok("lines", b"ab\n", b"a\rb\n") == WA  # tokens "ab" against "a", "b"


def test_lines_fails_the_first_line_only_and_extra_output() -> None:
    answer = b"1\n2\n3\n"
    assert ok("lines", b"1\n", answer) == WA
    assert ok("lines", b"1\n2\n3\n4\n", answer) == WA
    assert ok("lines", b"", answer) == WA
    assert ok("lines", b"", b"\n") == OK  # both are no lines at all


# -- tokens -------------------------------------------------------------------------------------


def test_tokens_splits_on_ascii_whitespace_only() -> None:
    answer = b"1 2 3\n"
    assert ok("tokens", b"  1\t2\r\n\x0b3\x0c", answer) == OK
    assert ok("tokens", b"1\n2\n3", answer) == OK
    assert ok("tokens", b"1 2\x003", answer) == WA  # NUL is not whitespace
    assert ok("tokens", b"1 2 3\x00", answer) == WA
    assert ok("tokens", b"1 2\xc2\xa03", answer) == WA  # nor is a UTF-8 no-break space
    assert ok("tokens", b"1 2\x1c3", answer) == WA  # nor str.split()'s \x1c


def test_tokens_order_and_count() -> None:
    answer = b"1 2 3\n"
    assert ok("tokens", b"3 2 1\n", answer) == WA
    assert ok("tokens", b"1 2\n", answer) == WA
    assert ok("tokens", b"1\n", answer) == WA
    assert ok("tokens", b"1 2 3 4\n", answer) == WA
    assert ok("tokens", b"1 2 3 3\n", answer) == WA


def test_tokens_ci_folds_ascii_letters_only() -> None:
    assert ok("tokens-ci", b"yes\nNo", b"YES NO\n") == OK
    assert ok("tokens-ci", b"\xc3\xa9", b"\xc3\x89") == WA  # é is not É: ASCII only
    assert ok("tokens-ci", b"no yes", b"YES NO") == WA
    assert ok("tokens", b"yes", b"YES") == WA


# -- numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "answer"),
    [
        (b"1", b"1.0"),
        (b"1.0000", b"1"),
        (b"-0", b"0"),
        (b".5", b"0.5"),
        (b"5.", b"5"),
        (b"1e-3", b"0.001"),
        (b"1E+2", b"100"),
        (b"0.30000000000000004", b"0.3"),  # 4e-17 off: within 1e-9
        (b"1.0e400", b"1e400"),  # beyond a float, compared in decimal
        (b"10e-401", b"1e-400"),
    ],
)
def test_numbers_compares_decimal_literals_by_value(output: bytes, answer: bytes) -> None:
    assert ok("numbers", output, answer) == OK


@pytest.mark.parametrize(
    "output",
    [b"nan", b"-nan", b"NaN", b"inf", b"-inf", b"Infinity", b"0x10", b"1_6", b"+16", b"1e999",
     b"16.0.0", b"1e", b"e5", b"-", b".", b"\xef\xbc\x91\xef\xbc\x96", b"16\x00", b"16f"],
)  # fmt: skip
def test_numbers_refuses_what_is_not_a_strict_decimal_literal(output: bytes) -> None:
    # Each is either no NUMBER (nan, hex, '_', '+', a fullwidth digit, NUL) or far from 16.
    assert ok("numbers", output, b"16", abs_tol=1e-5, rel_tol=1e-5) == WA


def test_numbers_a_non_numeric_answer_token_needs_the_same_bytes() -> None:
    assert ok("numbers", b"nan", b"nan") == OK
    assert ok("numbers", b"NaN", b"nan") == WA
    assert ok("numbers", b"+5", b"+5") == OK  # '+5' is no NUMBER: an exact token
    assert ok("numbers", b"5", b"+5") == WA
    assert ok("numbers", b"yes 1.0", b"YES 1") == WA


def test_numbers_tolerance_is_absolute_or_relative_to_the_answer() -> None:
    tol = {"abs_tol": 1e-5, "rel_tol": 1e-5}
    assert ok("numbers", b"1.00001", b"1", **tol) == OK  # |d| = 1e-5 <= abs_tol
    assert ok("numbers", b"1.0000101", b"1", **tol) == WA  # 1.01e-5 > 1e-5 and > 1e-5 * 1
    assert ok("numbers", b"1000010", b"1000000", **tol) == OK  # 10 <= 1e-5 * 1e6
    assert ok("numbers", b"1000011", b"1000000", **tol) == WA  # 11 > 10
    # Relative to the answer, not the output: |1e-4 - 0| > 1e-5 and > 1e-5 * 0.
    assert ok("numbers", b"0.0001", b"0", **tol) == WA
    assert ok("numbers", b"1.5", b"1", abs_tol=0, rel_tol=0.5) == OK
    assert ok("numbers", b"1.5", b"1", abs_tol=0, rel_tol=0.4) == WA
    assert ok("numbers", b"1", b"1.5", abs_tol=0, rel_tol=0.4) == OK  # 0.5 <= 0.4 * 1.5


def test_numbers_keeps_order_and_count() -> None:
    assert ok("numbers", b"2 1", b"1 2") == WA
    assert ok("numbers", b"1", b"1 2") == WA
    assert ok("numbers", b"1 2 3", b"1 2") == WA
    assert ok("numbers", b"", b"1") == WA
    assert ok("numbers", b"1\n", b"") == WA


def test_numbers_huge_literals_are_exact_and_do_not_overflow() -> None:
    big = b"1" + b"0" * 5000  # 10**5000, as a program would print it
    assert ok("numbers", big, big) == OK
    assert ok("numbers", big + b".0", big) == OK
    assert ok("numbers", b"1e5000", big) == OK
    assert ok("numbers", big[:-1] + b"1", big, abs_tol=0, rel_tol=0) == WA  # off by one
    assert ok("numbers", big[:-1] + b"1", big, abs_tol=0.5, rel_tol=0) == WA
    assert ok("numbers", big[:-1] + b"1", big, abs_tol=1, rel_tol=0) == OK  # |d| = 1 <= 1
    assert ok("numbers", b"-" + big, big) == WA
    assert ok("numbers", b"1e400", b"0") == WA
    # An exponent past EXP_LIMIT (and past Decimal's own range) is no NUMBER: the answer token
    # is exact.
    huge_exp = b"1e99999999999999999999"
    assert ok("numbers", huge_exp, b"0") == WA
    assert ok("numbers", huge_exp, huge_exp) == OK
    assert ok("numbers", b"1e99999999999999999990", huge_exp) == WA


def test_numbers_a_megabyte_long_literal_returns() -> None:
    digits = b"7" * (1 << 20)
    assert ok("numbers", digits, digits[:-1] + b"8", abs_tol=0, rel_tol=0) == WA
    assert ok("numbers", digits, digits[:-1] + b"8") == OK  # 1 <= 1e-9 * 7.7e1048575


# The boundary. Every token below is built by exact decimal arithmetic from the answer and the
# tolerance as written, so each expected verdict is the rule's: |out - ans| <= abs_tol or
# <= rel_tol * |ans|, boundary included, tolerances as the task wrote them. Every sum and
# product fits in EXACT, so none is rounded (Decimal's operators would use the default 28-digit
# context: the tests go through EXACT's methods and copy_* only).
EXACT = Context(prec=1000)


def _num(value: Decimal) -> bytes:
    return str(value).encode()  # Decimal's str is a NUMBER: '1.000001', '3.5E-300', '-1E+2'


def _bound(answer: str, tol: str, relative: bool) -> Decimal:
    return EXACT.multiply(Decimal(tol), Decimal(answer).copy_abs()) if relative else Decimal(tol)


def _tols(tol: str, relative: bool) -> dict[str, float]:
    return (
        {"abs_tol": 0.0, "rel_tol": float(tol)}
        if relative
        else {"abs_tol": float(tol), "rel_tol": 0.0}
    )


@pytest.mark.parametrize(
    ("answer", "tol", "relative"),
    [
        ("1", "1e-6", False),
        ("1", "1e-9", False),
        ("1", "1e-4", False),
        ("1", "1e-5", False),
        ("0", "1e-6", False),
        ("-1", "1e-6", False),
        ("-273.15", "1e-4", False),
        ("1", "0.1", False),  # the float 0.1 is above 0.1
        ("1", "0.3", False),  # the float 0.3 is below 0.3
        ("1", "1e-6", True),
        ("1000000", "1e-6", True),
        ("123456789012345678901234567890", "1e-9", True),
        ("-987654321.125", "1e-9", True),
        ("3.5e-300", "1e-6", True),
        ("-2.5e-300", "1e-4", True),
        ("7e300", "1e-9", True),
        ("1e-320", "2.5e-7", True),
        ("5e400", "1e-6", True),  # beyond a float: only the decimal rule can decide it
    ],
)
def test_numbers_boundary_is_exact_both_ways(answer: str, tol: str, relative: bool) -> None:
    ans, bound, kw = Decimal(answer), _bound(answer, tol, relative), _tols(tol, relative)
    # A nudge far below the bound's last digit: only an exact comparison sees it.
    nudge = EXACT.multiply(bound, Decimal("1e-25"))
    for step, tiny in ((bound, nudge), (bound.copy_negate(), nudge.copy_negate())):
        at = EXACT.add(ans, step)
        assert ok("numbers", _num(at), answer.encode(), **kw) == OK, at  # exactly at the bound
        just_in = EXACT.subtract(at, tiny)
        assert ok("numbers", _num(just_in), answer.encode(), **kw) == OK, just_in
        just_out = EXACT.add(at, tiny)
        assert ok("numbers", _num(just_out), answer.encode(), **kw) == WA, just_out


def test_numbers_the_issues_two_cases_now_agree() -> None:
    """Issue 36: against the tolerances' binary values, 1.000001 for 1 failed at 1e-6 (the
    float 1e-6 is below 0.000001) while 1.000000001 passed at 1e-9 (the float is above)."""
    assert ok("numbers", b"1.000001", b"1", abs_tol=1e-6, rel_tol=0) == OK
    assert ok("numbers", b"1.000000001", b"1", abs_tol=1e-9, rel_tol=0) == OK
    assert ok("numbers", b"1.0000010000000001", b"1", abs_tol=1e-6, rel_tol=0) == WA
    assert ok("numbers", b"1.0000000010000001", b"1", abs_tol=1e-9, rel_tol=0) == WA
    assert ok("numbers", b"1.000001", b"1", abs_tol=0, rel_tol=1e-6) == OK
    assert ok("numbers", b"0.999999", b"1", abs_tol=0, rel_tol=1e-6) == OK
    assert ok("numbers", b"0.9999989999999999", b"1", abs_tol=0, rel_tol=1e-6) == WA


def test_numbers_either_tolerance_suffices_and_relative_is_to_the_answer() -> None:
    tol = {"abs_tol": 1e-6, "rel_tol": 1e-9}
    # |d| = 1e-6: the absolute bound, exactly, though 1e-9 * 1 is far smaller.
    assert ok("numbers", b"1.000001", b"1", **tol) == OK
    # |d| = 1: the relative bound 1e-9 * 1e9, exactly, though 1e-6 is far smaller.
    assert ok("numbers", b"1000000001", b"1000000000", **tol) == OK
    assert ok("numbers", b"1000000001.000001", b"1000000000", **tol) == WA
    # Relative to the answer, not the output: 1e-9 * 999999999 < 1 = |d|.
    assert ok("numbers", b"1000000000", b"999999999", **tol) == WA


def test_numbers_hostile_exponents_are_decided_exactly() -> None:
    """A span of a billion digits between the two sides, at an abs_tol of exactly 1: the
    difference is 1 - 1e-999999999 (inside) or 1 + 1e-999999999 (outside)."""
    one = {"abs_tol": 1.0, "rel_tol": 0.0}
    assert ok("numbers", b"1e-999999999", b"1", **one) == OK
    assert ok("numbers", b"-1e-999999999", b"1", **one) == WA
    assert ok("numbers", b"1", b"1e-999999999", **one) == OK  # the answer's side this time
    assert ok("numbers", b"1", b"-1e-999999999", **one) == WA
    # A hundred zeros: rounding the difference to 60 digits (the old code) passed this one.
    assert ok("numbers", b"2." + b"0" * 100 + b"1", b"1", **one) == WA
    assert ok("numbers", b"1.9" + b"9" * 100, b"1", **one) == OK
    assert ok("numbers", b"1e999999999", b"1") == WA
    assert ok("numbers", b"1", b"1e999999999") == WA
    assert ok("numbers", b"1e-999999999", b"0", abs_tol=1e-9, rel_tol=0) == OK
    assert ok("numbers", b"1e-999999999", b"0", abs_tol=0, rel_tol=1) == WA  # 1 * |0| = 0
    # Relative at the top of the range: the bound is 1e-9 * 1e999999999 = 1e999999990.
    assert ok("numbers", b"1.000000001e999999999", b"1e999999999") == OK
    assert ok("numbers", b"1.0000000010000000000000000001e999999999", b"1e999999999") == WA
    # 60,000 such comparisons, each inside the default 1e-9 tolerances: 1e999999989 against a
    # relative bound of 1.0000000001e999999990, 1e-999999999 and 1e-22 against abs_tol.
    output = b" ".join([b"1e999999999", b"-1e-999999999", b"-2.5000000000000000000001"] * 20000)
    answer = b" ".join([b"1.0000000001e999999999", b"0", b"-2.5"] * 20000)
    assert ok("numbers", output, answer) == OK


def test_numbers_exponent_limit_is_ten_to_the_fifteen() -> None:
    """EXP_LIMIT: a literal whose first digit is at 10**(+-10**15) is a number; one power of
    ten beyond is not, so its answer token is compared as bytes."""
    assert checkers.EXP_LIMIT == 10**15
    assert ok("numbers", b"1e1000000000000000", b"10e999999999999999") == OK
    assert ok("numbers", b"1e-1000000000000000", b"0.1e-999999999999999") == OK
    assert ok("numbers", b"1e1000000000000001", b"10e1000000000000000") == WA
    assert ok("numbers", b"1e-1000000000000001", b"0.1e-1000000000000000") == WA
    assert ok("numbers", b"1e1000000000000001", b"1e1000000000000001") == OK  # same bytes


@pytest.mark.parametrize("seed", range(4))
def test_numbers_agrees_with_a_fraction_oracle_near_the_boundary(seed: int) -> None:
    """The rule computed independently with Fractions, on values placed within a few units of
    the 30th digit around each side's bound, with both tolerances at once."""
    rng = random.Random(seed)
    tols = ["1e-6", "1e-9", "1e-4", "1e-5", "0.1", "0.3", "2.5e-7", "0", "1"]
    for _ in range(500):
        answer = Decimal(f"{rng.choice('-+')}{rng.randrange(1, 10**12)}e{rng.randrange(-30, 30)}")
        abs_s, rel_s = rng.choice(tols), rng.choice(tols)
        bound = max(Decimal(abs_s), EXACT.multiply(Decimal(rel_s), answer.copy_abs()))
        unit = EXACT.multiply(bound if bound else Decimal(1), Decimal("1e-30"))
        step = bound if rng.random() < 0.5 else bound.copy_negate()
        nudge = EXACT.multiply(Decimal(rng.randrange(-3, 4)), unit)
        out = EXACT.add(EXACT.add(answer, step), nudge)
        got = ok("numbers", _num(out), _num(answer), abs_tol=float(abs_s), rel_tol=float(rel_s))
        diff = abs(Fraction(out) - Fraction(answer))
        want = diff <= Fraction(abs_s) or diff <= Fraction(rel_s) * abs(Fraction(answer))
        assert got == (OK if want else WA), (out, answer, abs_s, rel_s)


def test_numbers_tolerance_is_the_decimal_the_task_wrote() -> None:
    assert checkers.tolerance(1e-6) == Decimal("0.000001")
    assert checkers.tolerance(0.1) == Decimal("0.1")
    assert checkers.tolerance(0.0) == 0
    assert checkers.tolerance(2) == 2
    # 15 significant digits always read back as written.
    assert checkers.tolerance(float("1.23456789012345e-7")) == Decimal("1.23456789012345e-7")


# -- unordered-lines ----------------------------------------------------------------------------


def test_unordered_lines_is_a_multiset_of_normalised_lines() -> None:
    answer = b"a\nb\nb\n"
    assert ok("unordered-lines", b"b\na\nb\n", answer) == OK
    assert ok("unordered-lines", b"b  \nb\na", answer) == OK  # trailing blanks, final newline
    assert ok("unordered-lines", b"a\na\nb\n", answer) == WA  # same set, other multiset
    assert ok("unordered-lines", b"a\nb\n", answer) == WA
    assert ok("unordered-lines", b"a\nb\nb\nb\n", answer) == WA
    assert ok("unordered-lines", b"a b\nb\n", answer) == WA


# -- any checker --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_non_utf8_output_is_compared_as_bytes(name: str) -> None:
    weird = b"\xff\xfe \xc3\x28\n\x80\n"
    assert ok(name, weird, weird) == OK
    assert ok(name, b"\xff\xfd \xc3\x28\n\x80\n", weird)[0] is False


@pytest.mark.parametrize("name", ALL)
def test_nul_bytes_are_never_whitespace(name: str) -> None:
    assert ok(name, b"\x00", b"") [0] is False  # fmt: skip
    assert ok(name, b"1\x00\n", b"1\n")[0] is False
    assert ok(name, b"\x00\x00\n", b"\x00\x00\n") == OK


@pytest.mark.parametrize("name", ALL)
def test_only_the_first_line_fails(name: str) -> None:
    assert ok(name, b"1\n", b"1\n2\n")[0] is False


@pytest.mark.parametrize(
    "output",
    [
        b" " * MIB16,
        b"\n" * MIB16,
        b"1 " * (MIB16 // 2),
        b"ab \n" * (MIB16 // 4),
        b"7" * MIB16,
        b"\x00" * MIB16,
        b"\xff\n" * (MIB16 // 2),
        b" \t\r" * (MIB16 // 3),
    ],
    ids=["spaces", "newlines", "tiny-tokens", "trailing-blanks", "one-token", "nul", "non-utf8",
         "blank-runs"],
)  # fmt: skip
@pytest.mark.parametrize("name", ALL)
def test_sixteen_mebibytes_of_hostile_output_returns(name: str, output: bytes) -> None:
    got = check(name, output, b"1\n2\n")
    assert got in (WA, PE)


def test_sixteen_mebibytes_that_match_pass() -> None:
    text = b"12 3.5\n" * (MIB16 // 7)
    for name in ALL:
        assert check(name, text, text) == OK
    assert check("lines", text.replace(b"\n", b"  \n"), text) == OK
    # Every other token differs in bytes: each is compared by value (a megabyte of them).
    mib = text[: 7 * ((1 << 20) // 7)]
    assert check("numbers", mib.replace(b"3.5", b"3.50"), mib) == OK


def test_unknown_checkers_and_bad_tolerances_are_refused() -> None:
    with pytest.raises(ValueError):
        check("python", b"", b"")
    with pytest.raises(ValueError):
        check("numbers", b"", b"", abs_tol=float("nan"))
    with pytest.raises(ValueError):
        check("numbers", b"", b"", rel_tol=-1.0)


# -- a task's python checker --------------------------------------------------------------------


def python_checker(tmp_path: Path, body: str) -> checkers.ProgramChecker:
    path = tmp_path / "checker.py"
    path.write_text("def check(input, output, answer):\n" + textwrap.indent(body, "    ") + "\n")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return checkers.ProgramChecker("python", str(path), work_dir=str(work))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return output == answer and input == b'in\\x00'", (True, None, 1.0)),
        ("return output != answer", (False, WRONG, 0.0)),
        ("return 0.5", (False, PARTIAL, 0.5)),
        ("return 1.0", (True, None, 1.0)),
        ("return 0.0", (False, WRONG, 0.0)),
    ],
)
def test_python_checker_results(tmp_path: Path, body: str, expected: tuple[object, ...]) -> None:
    run = python_checker(tmp_path, body)
    assert run(b"in\x00", b"\xff 3\n", b"\xff 3\n", 10.0) == expected


@pytest.mark.parametrize(
    "body",
    [
        "return 1",  # an int is neither a bool nor a float
        "return 'yes'",
        "return None",
        "return float('nan')",
        "return 1.5",
        "return -0.5",
        "return [True]",
        "raise ValueError(output[:10])",
        "import sys; sys.exit(0)",
        "import os; os._exit(0)",
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
        "print('x' * (8 << 20)); return True",  # past the output cap: killed
    ],
)
def test_python_checker_garbage_fails_closed(tmp_path: Path, body: str) -> None:
    run = python_checker(tmp_path, body)
    assert run(b"", b"3\n", b"3\n", 10.0) == (False, FAILED, 0.0)
    assert run.error


def test_python_checker_prints_cannot_pose_as_the_result(tmp_path: Path) -> None:
    run = python_checker(tmp_path, "print('bool 1'); return False")
    assert run(b"", b"3\n", b"4\n", 10.0) == (False, WRONG, 0.0)


def test_python_checker_that_never_returns_times_out(tmp_path: Path) -> None:
    run = python_checker(tmp_path, "while True: pass")
    assert run(b"", b"3\n", b"3\n", 1.0) == (False, FAILED, 0.0)
    assert run.error and "timed out" in run.error


def test_python_checker_stray_child_does_not_hold_the_judge(tmp_path: Path) -> None:
    body = "import subprocess; subprocess.Popen(['sleep', '600']); return True"
    run = python_checker(tmp_path, body)
    assert run(b"", b"", b"", 10.0) == (True, None, 1.0)


def test_run_program_checker_reuses_one_checker_per_program(tmp_path: Path) -> None:
    path = tmp_path / "c.py"
    path.write_text("def check(i, o, a):\n    return o.split() == a.split()\n")
    got = [checkers.run_program_checker("python", str(path), b"", o, b"1 2\n", 10.0)
           for o in (b"1  2", b"2 1")]  # fmt: skip
    assert got == [(True, None, 1.0), (False, WRONG, 0.0)]
    with pytest.raises(ValueError):
        checkers.run_program_checker("lua", str(path), b"", b"", b"", 1.0)


# -- a testlib checker --------------------------------------------------------------------------

# A stand-in for a compiled testlib checker: same arguments, exit codes and stderr as testlib's
# quit(); its output file says what to do.
FAKE_TESTLIB = """\
import os, signal, sys
_, inp, out, ans = sys.argv
assert open(inp, "rb").read() == b"the input"
act = open(out, "rb").read().strip()
want = open(ans, "rb").read().strip()
if act == want:
    sys.exit(0)
if act.startswith(b"exit "):
    sys.exit(int(act[5:]))
if act.startswith(b"points"):
    sys.stderr.buffer.write(act + b"\\n")
    sys.exit(7)
if act == b"kill":
    os.kill(os.getpid(), signal.SIGKILL)
if act == b"loop":
    while True:
        pass
sys.stderr.write("wrong answer expected %r\\n" % want)
sys.exit(1)
"""


@pytest.fixture
def fake_testlib(tmp_path: Path) -> checkers.ProgramChecker:
    path = tmp_path / "checker"
    path.write_text(f"#!{sys.executable}\n" + FAKE_TESTLIB)
    path.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    return checkers.ProgramChecker("testlib", str(path), work_dir=str(work))


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (b"42\n", (True, None, 1.0)),  # exit 0
        (b"41\n", (False, WRONG, 0.0)),  # exit 1
        (b"exit 1", (False, WRONG, 0.0)),
        (b"exit 2", (False, PRESENTATION, 0.0)),
        (b"exit 3", (False, FAILED, 0.0)),  # testlib's FAIL: the checker's own failure
        (b"exit 4", (False, FAILED, 0.0)),
        (b"exit 5", (False, FAILED, 0.0)),
        (b"exit 8", (False, FAILED, 0.0)),
        (b"exit 255", (False, FAILED, 0.0)),
        (b"points 0.25", (False, PARTIAL, 0.25)),  # exit 7, "points <p>" on stderr
        (b"points 0.25 half of 42\npoints 1", (False, PARTIAL, 0.25)),  # the first line counts
        (b"points 1.0", (True, None, 1.0)),
        (b"points 1", (True, None, 1.0)),
        (b"points 0", (False, WRONG, 0.0)),
        (b"points 1.5", (False, FAILED, 0.0)),  # above 1: fails closed
        (b"points 30", (False, FAILED, 0.0)),
        (b"points -0.5", (False, FAILED, 0.0)),
        (b"points nan", (False, FAILED, 0.0)),
        (b"points", (False, FAILED, 0.0)),  # exit 7 without points
        (b"kill", (False, FAILED, 0.0)),
    ],
)
def test_testlib_exit_codes(
    fake_testlib: checkers.ProgramChecker, output: bytes, expected: tuple[object, ...]
) -> None:
    assert fake_testlib(b"the input", output, b"42\n", 10.0) == expected


def test_testlib_checker_that_never_exits_times_out(fake_testlib: checkers.ProgramChecker) -> None:
    assert fake_testlib(b"the input", b"loop", b"42\n", 1.0) == (False, FAILED, 0.0)


def test_testlib_shipped_without_the_execute_bit_runs_from_a_copy(tmp_path: Path) -> None:
    path = tmp_path / "checker"
    path.write_text(f"#!{sys.executable}\n" + FAKE_TESTLIB)
    path.chmod(0o644)
    work = tmp_path / "work"
    work.mkdir()
    run = checkers.ProgramChecker("testlib", str(path), work_dir=str(work))
    assert run(b"the input", b"42", b"42", 10.0) == (True, None, 1.0)
    assert not path.stat().st_mode & stat.S_IXUSR  # the task's file is left as it was


def test_testlib_points_parse() -> None:
    assert checkers.testlib_points(b"points 0.5 ok\n") == 0.5
    assert checkers.testlib_points(b"debug\npoints 0.125\n") == 0.125
    assert checkers.testlib_points(b"xpoints 0.5\n") is None
    assert checkers.testlib_points(b"points 0x1\n") is None
    assert checkers.testlib_points(b"points_info=3\n") is None  # quitpi: no points


GXX = shutil.which("g++")


@pytest.fixture(scope="module")
def real_testlib(tmp_path_factory: pytest.TempPathFactory) -> checkers.ProgramChecker:
    if GXX is None:
        pytest.skip("no g++ on this host: the real testlib.h checker cannot be compiled")
    src = tmp_path_factory.mktemp("task")
    for name in ("testlib.h", "half_checker.cpp"):
        shutil.copy(TESTLIB / name, src / name)
    work = tmp_path_factory.mktemp("work")
    run = checkers.ProgramChecker("testlib", str(src / "half_checker.cpp"), work_dir=str(work))
    got = run(b"", b"10", b"10", 10.0)
    assert got == (True, None, 1.0), run.error
    return run


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (b"10\n", (True, None, 1.0)),
        (b"  10", (True, None, 1.0)),
        (b"11\n", (False, WRONG, 0.0)),
        (b"5\n", (False, PARTIAL, 0.5)),  # quitp(0.5)
        (b"ten\n", (False, PRESENTATION, 0.0)),  # readLong on a word: PE
        (b"10 10\n", (False, PRESENTATION, 0.0)),  # extra output: testlib's _dirt, exit 2
        (b"", (False, PRESENTATION, 0.0)),  # unexpected EOF is PE by default
        (b"\xff\x00", (False, PRESENTATION, 0.0)),
    ],
)
def test_real_testlib_checker(
    real_testlib: checkers.ProgramChecker, output: bytes, expected: tuple[object, ...]
) -> None:
    assert real_testlib(b"", output, b"10\n", 10.0) == expected, real_testlib.error


def test_real_testlib_checker_compile_error_fails_closed(tmp_path: Path) -> None:
    if GXX is None:
        pytest.skip("no g++ on this host")
    src = tmp_path / "bad.cpp"
    src.write_text("int main( {\n")
    work = tmp_path / "work"
    work.mkdir()
    run = checkers.ProgramChecker("testlib", str(src), work_dir=str(work))
    assert run(b"", b"1", b"1", 10.0) == (False, FAILED, 0.0)
    assert run.error and "compile" in run.error
    assert run(b"", b"1", b"1", 10.0) == (False, FAILED, 0.0)  # compiled once: still failed


def test_checker_runs_leave_no_files_behind(tmp_path: Path) -> None:
    run = python_checker(tmp_path, "return True")
    run(b"a", b"b", b"c", 10.0)
    assert sorted(os.listdir(tmp_path / "work")) == []


# -- the judge's stdio kind (judge.py: check_case, actual_value, cmd_compare) ----------------


def stdio_case(cid: str, stdin: str, stdout: str, **extra: object) -> dict[str, object]:
    return {"id": cid, "input": {"stdin": stdin}, "expected": {"stdout": stdout}, **extra}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"comparator": "exact"}, "unknown key"),
        ({"input": {"stdin": 1}}, "'input' must be"),
        ({"input": {"stdin": "", "args": []}}, "'input' must be"),
        ({"input": ""}, "'input' must be"),
        ({"expected": {"stdout": "3\n", "exit_code": 0}}, "'expected' must be"),
        ({"expected": {"stdout": "\ud800"}}, "not valid Unicode"),
        ({"checker": "diff"}, "unknown checker"),
        ({"checker": "python"}, "needs stdio.checker_program"),
        ({"checker": "testlib"}, "needs stdio.checker_program"),
        ({"abs_tol": -1}, "abs_tol"),
        ({"rel_tol": True}, "rel_tol"),
    ],
)
def test_judge_refuses_bad_stdio_cases(change: dict[str, object], message: str) -> None:
    from assay._incontainer import judge

    case = {**stdio_case("1", "1 2\n", "3\n"), **change}
    with pytest.raises(judge.BadCase, match=message):
        judge.check_case(case, 0, False, "stdio")


def test_judge_accepts_stdio_cases() -> None:
    from assay._incontainer import judge

    cases = [
        stdio_case("1", "1 2\n", "3\n"),
        stdio_case("2", "", "0.75\n", checker="numbers", abs_tol=1e-6, rel_tol=0),
        stdio_case("3", "x", "y", checker="python"),
    ]
    assert judge.check_cases(cases, True, "stdio") == cases
    with pytest.raises(judge.BadCase, match="duplicate id"):
        judge.check_cases([cases[0], cases[0]], False, "stdio")


def run_stdio_compare(
    tmp_path: Path,
    cases: list[dict[str, object]],
    runner_cases: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    **args: object,
) -> dict[str, Any]:
    import argparse
    import base64
    import json

    from assay._incontainer import judge

    state = tmp_path / "cases.json"
    state.write_text(json.dumps(cases))
    for rc in runner_cases:
        if "stdout" in rc:
            rc["output_b64"] = base64.b64encode(rc.pop("stdout")).decode()
    runner = tmp_path / "runner.json"
    runner.write_text(json.dumps({"runner": "test", "cases": runner_cases}))
    monkeypatch.setattr(judge, "STATE", str(state))
    ns = argparse.Namespace(
        kind="stdio", comparator="exact", rel_tol=1e-9, abs_tol=1e-9, custom=None,
        output_cap=1 << 20, runner_output=str(runner), diagnostics="owner",
        checker="lines", checker_program=None, checker_timeout=10.0,
    )  # fmt: skip
    for k, v in args.items():
        setattr(ns, k, v)
    judge.cmd_compare(ns)
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def ran(cid: str, stdout: bytes, **extra: object) -> dict[str, object]:
    return {"id": cid, "status": "ok", "duration_s": 0.01, "exit_code": 0, "signal": None,
            "stdout": stdout, **extra}  # fmt: skip


def test_judge_compares_stdio_cases_with_their_checkers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [
        stdio_case("pass", "", "3\n"),
        stdio_case("wa", "", "3\n"),
        stdio_case("pe", "", "1 2\n"),
        stdio_case("num", "", "0.75\n", checker="numbers", abs_tol=1e-3),
        stdio_case("num-far", "", "0.75\n", checker="numbers", abs_tol=1e-3),
        stdio_case("time", "", "1\n"),
        stdio_case("cpu", "", "1\n"),
        stdio_case("mem", "", "1\n"),
        stdio_case("out", "", "1\n"),
        stdio_case("odd-limit", "", "1\n"),
        stdio_case("exit", "", "1\n"),
        stdio_case("signal", "", "1\n"),
        stdio_case("bool-exit", "", "1\n"),
        stdio_case("missing", "", "1\n"),
        stdio_case("weird", "", "1\n"),
    ]
    runner = [
        ran("pass", b"3"),
        ran("wa", b"4\n"),
        ran("pe", b"1\n2\n"),
        ran("num", b"0.7504\n"),
        ran("num-far", b"0.752\n"),
        {"id": "time", "status": "timeout", "duration_s": 2.0},
        {"id": "cpu", "status": "limit", "limit": "cpu", "duration_s": 1.0},
        {"id": "mem", "status": "limit", "limit": "memory", "duration_s": 1.0},
        {"id": "out", "status": "limit", "limit": "output", "duration_s": 1.0},
        {"id": "odd-limit", "status": "limit", "limit": "gpu", "duration_s": 1.0},
        ran("exit", b"1\n", exit_code=1),  # the right output, but a non-zero exit
        ran("signal", b"1\n", exit_code=-11, signal=11),
        ran("bool-exit", b"1\n", exit_code=False),
        ran("weird", b"\xff\x00\n"),
    ]
    report = run_stdio_compare(tmp_path, cases, runner, monkeypatch, capsys)
    entries = {c["id"]: c for c in report["cases"]}
    got = {k: (v["status"], v.get("reason"), v.get("checker")) for k, v in entries.items()}
    assert got == {
        "pass": ("pass", None, "lines"),
        "wa": ("fail", WRONG, "lines"),
        "pe": ("fail", PRESENTATION, "lines"),
        "num": ("pass", None, "numbers"),
        "num-far": ("fail", WRONG, "numbers"),
        "time": ("timeout", "limit:time", None),
        "cpu": ("limit", "limit:cpu", None),
        "mem": ("limit", "limit:memory", None),
        "out": ("limit", "limit:output", None),
        "odd-limit": ("error", "runner:invalid-output", None),
        "exit": ("error", "runtime:exit-code", None),
        "signal": ("error", "runtime:signal", None),
        "bool-exit": ("error", "runtime:exit-code", None),
        "missing": ("error", "runner:missing-case", None),
        "weird": ("fail", WRONG, "lines"),
    }
    assert report["reasons"] == sorted({r for _, r, _ in got.values() if r})
    diagnosed = {d["id"]: d for d in report["diagnostics"]}
    assert set(diagnosed) == {"wa", "pe", "num-far", "weird"}
    assert "-3" in diagnosed["wa"]["diff"].splitlines()
    assert "+4" in diagnosed["wa"]["diff"].splitlines()


def test_judge_runs_a_python_checker_program_for_stdio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "checker.py"
    program.write_text(
        textwrap.dedent("""\
        def check(input, output, answer):
            a, b = map(int, input.split())
            got = output.split()
            if got == [str(a + b).encode()]:
                return True
            if got == [b"half"]:
                return 0.5
            if got == [b"boom"]:
                raise RuntimeError("boom")
            return False
    """)
    )
    cases = [stdio_case(str(i), "1 2\n", "3\n", checker="python") for i in range(4)]
    cases.append(stdio_case("4", "1 2\n", "3\n"))  # the task's default checker: lines
    runner = [ran("0", b"3\n"), ran("1", b"half"), ran("2", b"4"), ran("3", b"boom"),
              ran("4", b"3")]  # fmt: skip
    report = run_stdio_compare(tmp_path, cases, runner, monkeypatch, capsys,
                               checker_program=str(program))  # fmt: skip
    got = [(c["status"], c.get("reason"), c.get("checker")) for c in report["cases"]]
    assert got == [
        ("pass", None, "python"),
        ("fail", PARTIAL, "python"),
        ("fail", WRONG, "python"),
        ("error", FAILED, "python"),
        ("pass", None, "lines"),
    ]


def test_a_checker_that_cannot_start_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "checker"
    path.write_bytes(b"\x7fELF not really")
    path.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    run = checkers.ProgramChecker("testlib", str(path), work_dir=str(work))
    assert run(b"", b"1", b"1", 10.0) == (False, FAILED, 0.0)
    assert run.error and "cannot run" in run.error


def test_timeouts_hold_without_pidfd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pidfd(pid: int) -> int:
        raise OSError("no pidfd here")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    run = python_checker(tmp_path, "while True: pass")
    assert run(b"", b"3\n", b"3\n", 1.0) == (False, FAILED, 0.0)
    quick = python_checker(tmp_path, "return True")
    assert quick(b"", b"3\n", b"3\n", 10.0) == (True, None, 1.0)
