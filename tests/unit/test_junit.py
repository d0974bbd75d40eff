"""Strict JUnit accounting: real pytest reports, and forged, truncated and hostile ones."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay._internal.tiers.compat.junit import (
    COUNT_MISMATCH,
    DUPLICATE,
    EMPTY,
    ERROR,
    EXIT_CODE,
    FAILURE,
    MALFORMED,
    MISSING,
    OVERSIZE,
    SKIPPED,
    SURPLUS,
    CaseOutcome,
    JUnitOutcome,
    check_expected_ids,
    junit_key,
    parse_junit,
    reconcile,
)

PASSING_SUITE = """
import pytest

def test_one():
    assert 1 + 1 == 2

class TestGroup:
    def test_method(self):
        assert True

@pytest.mark.parametrize("x", [1, "a/b::c"])
def test_param(x):
    assert x
"""
PASSING_IDS = [
    "tests/test_s.py::test_one",
    "tests/test_s.py::TestGroup::test_method",
    "tests/test_s.py::test_param[1]",
    "tests/test_s.py::test_param[a/b::c]",
]

MIXED_SUITE = """
import pytest

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")

def test_pass():
    pass

def test_fail():
    assert 0

def test_setup_error(missing_fixture):
    pass

def test_pass_then_teardown_error(broken_teardown):
    pass

def test_fail_then_teardown_error(broken_teardown):
    assert 0

def test_skip_then_teardown_error(broken_teardown):
    pytest.skip("skipped")

def test_skip():
    pytest.skip("no")

@pytest.mark.xfail
def test_xfail():
    assert 0
"""


def run_pytest(tmp_path: Path, source: str) -> tuple[bytes, int]:
    """A genuine report from the pytest in this venv, as the shape to accept."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_s.py").write_text(textwrap.dedent(source))
    report = tmp_path / "report.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "-c", "/dev/null", f"--junitxml={report}", "-o", "junit_family=xunit2", "tests"],
        cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    return report.read_bytes(), proc.returncode


def case(name: str, classname: str = "tests.test_s", body: str = "", time: str = "0.010") -> str:
    return f'<testcase classname="{classname}" name="{name}" time="{time}">{body}</testcase>'


def report(
    *cases: str, tests: int | None = None, failures: int = 0, errors: int = 0, skipped: int = 0
) -> bytes:
    n = len(cases) if tests is None else tests
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites>'
        f'<testsuite name="pytest" errors="{errors}" failures="{failures}" skipped="{skipped}" '
        f'tests="{n}" time="0.1" timestamp="2026-01-01T00:00:00" hostname="h">'
        + "".join(cases)
        + "</testsuite></testsuites>"
    ).encode()


IDS = ["tests/test_s.py::test_a", "tests/test_s.py::test_b"]
CLEAN = report(case("test_a"), case("test_b"))


def statuses(outcome: JUnitOutcome) -> dict[str, tuple[str, str | None]]:
    return {c.id: (c.status, c.reason) for c in outcome.cases}


# --- the mapping -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_id", "key"),
    [
        ("tests/test_add.py::test_small", ("tests.test_add", "test_small")),
        ("tests/test_add.py::TestAdd::test_x", ("tests.test_add.TestAdd", "test_x")),
        ("tests/sub/test_a.py::test_p[1-2]", ("tests.sub.test_a", "test_p[1-2]")),
        ("tests/test_a.py::test_p[a/b::c.py]", ("tests.test_a", "test_p[a/b::c.py]")),
        ("test_top.py::test_t", ("test_top", "test_t")),
    ],
)
def test_junit_key_follows_pytest_mangling(node_id: str, key: tuple[str, str]) -> None:
    assert junit_key(node_id) == key


@pytest.mark.parametrize(
    "ids",
    [
        [],
        ["tests/test_a.py"],
        ["test_a"],
        ["tests/a.txt::test_x"],
        ["tests/a/b.py::test_x", "tests/a.b.py::test_x"],
        ["tests/t.py::test_x", "tests/t.py::test_x"],
    ],
)
def test_ambiguous_or_invalid_expected_ids_are_refused(ids: list[str]) -> None:
    with pytest.raises(ValueError):
        check_expected_ids(ids)
    with pytest.raises(ValueError):
        parse_junit(CLEAN, ids)


# --- genuine reports ---------------------------------------------------------------------------


def test_real_passing_report_passes(tmp_path: Path) -> None:
    raw, code = run_pytest(tmp_path, PASSING_SUITE)
    outcome = reconcile(parse_junit(raw, PASSING_IDS), code)
    assert code == 0
    assert outcome.passed, outcome
    assert [c.id for c in outcome.cases] == PASSING_IDS
    assert all(c.status == "pass" and c.reason is None for c in outcome.cases)


def test_real_passing_report_without_expected_ids_names_cases(tmp_path: Path) -> None:
    raw, _ = run_pytest(tmp_path, PASSING_SUITE)
    outcome = parse_junit(raw, None)
    assert outcome.passed
    assert {c.id for c in outcome.cases} == {
        "tests.test_s::test_one",
        "tests.test_s.TestGroup::test_method",
        "tests.test_s::test_param[1]",
        "tests.test_s::test_param[a/b::c]",
    }


def test_real_report_missing_an_expected_test_fails(tmp_path: Path) -> None:
    raw, code = run_pytest(tmp_path, PASSING_SUITE)
    outcome = reconcile(parse_junit(raw, [*PASSING_IDS, "tests/test_s.py::test_gone"]), code)
    assert not outcome.passed
    assert statuses(outcome)["tests/test_s.py::test_gone"] == ("error", MISSING)
    # pytest itself was happy (exit 0): the disagreement is flagged too.
    assert outcome.reasons == (MISSING, EXIT_CODE)


def test_real_report_with_an_unexpected_test_fails(tmp_path: Path) -> None:
    raw, _ = run_pytest(tmp_path, PASSING_SUITE)
    outcome = parse_junit(raw, PASSING_IDS[1:])
    assert not outcome.passed
    assert outcome.reasons == (SURPLUS,)
    assert all(c.status == "pass" for c in outcome.cases)


def test_real_mixed_report_maps_each_outcome(tmp_path: Path) -> None:
    raw, code = run_pytest(tmp_path, MIXED_SUITE)
    names = [
        "test_pass",
        "test_fail",
        "test_setup_error",
        "test_pass_then_teardown_error",
        "test_fail_then_teardown_error",
        "test_skip_then_teardown_error",
        "test_skip",
        "test_xfail",
    ]
    outcome = reconcile(parse_junit(raw, [f"tests/test_s.py::{n}" for n in names]), code)
    assert code == 1
    got = {k.split("::")[1]: v for k, v in statuses(outcome).items()}
    assert got == {
        "test_pass": ("pass", None),
        "test_fail": ("fail", FAILURE),
        "test_setup_error": ("error", ERROR),
        "test_pass_then_teardown_error": ("error", ERROR),
        "test_fail_then_teardown_error": ("error", DUPLICATE),
        "test_skip_then_teardown_error": ("error", DUPLICATE),
        "test_skip": ("fail", SKIPPED),
        "test_xfail": ("fail", SKIPPED),
    }
    # A genuine report is internally consistent even when it fails.
    assert COUNT_MISMATCH not in outcome.reasons
    assert EXIT_CODE not in outcome.reasons
    assert not outcome.passed


def test_real_report_truncated_anywhere_never_passes(tmp_path: Path) -> None:
    raw, _ = run_pytest(tmp_path, PASSING_SUITE)
    assert parse_junit(raw, PASSING_IDS).passed
    for cut in range(len(raw)):
        outcome = parse_junit(raw[:cut], PASSING_IDS)
        assert not outcome.passed, cut
        assert outcome.reasons == (MALFORMED,), cut


# --- forged and miscounted reports -------------------------------------------------------------


def test_clean_forged_shape_is_accepted_as_the_control() -> None:
    # The parser cannot tell a well-forged report from a real one; this control shows the
    # negative tests below fail for the reason they name, not because the shape is wrong.
    outcome = parse_junit(CLEAN, IDS)
    assert outcome.passed
    assert outcome.cases == (
        CaseOutcome(IDS[0], "pass", 0.01),
        CaseOutcome(IDS[1], "pass", 0.01),
    )


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (report(case("test_a")), MISSING),
        (report(case("test_a"), case("test_b"), case("test_c")), SURPLUS),
        (report(case("test_a"), case("test_b"), case("test_b")), DUPLICATE),
        (report(case("test_a"), case("test_b", classname="tests.other")), MISSING),
        (report(case("test_a"), case("test_b"), tests=3), COUNT_MISMATCH),
        (report(case("test_a"), case("test_b"), tests=1), COUNT_MISMATCH),
        (report(case("test_a"), case("test_b"), failures=1), COUNT_MISMATCH),
        (report(case("test_a"), case("test_b"), skipped=1), COUNT_MISMATCH),
        (report(case("test_a"), case("test_b"), errors=1), COUNT_MISMATCH),
        (report(case("test_a"), case("test_b", body='<failure message="x"/>')), COUNT_MISMATCH),
        (report(case("test_a"), case("test_b", body="<skipped/>"), skipped=1), SKIPPED),
        (report(case("test_a"), case("test_b", body="<error/>"), errors=1), ERROR),
        (report(case("test_a"), case("test_b", body="<failure/>"), failures=1), FAILURE),
        (
            report(case("test_a"), case("test_b", body="<skipped/><error/>"), skipped=1, errors=1),
            DUPLICATE,
        ),
        (
            report(case("test_a"), case("test_b", body="<failure/><failure/>"), failures=2),
            DUPLICATE,
        ),
    ],
)
def test_forged_or_miscounted_report_fails(raw: bytes, reason: str) -> None:
    outcome = parse_junit(raw, IDS)
    assert not outcome.passed
    assert reason in outcome.reasons
    assert not reconcile(outcome, 0).passed


def test_surplus_detail_is_bounded_and_quoted() -> None:
    many = [case(f"test_{i}\u202e" + "x" * 500) for i in range(100)]
    outcome = parse_junit(report(case("test_a"), case("test_b"), *many), IDS)
    assert outcome.reasons == (SURPLUS,)
    assert len(outcome.details) <= 20
    assert all(len(d) <= 200 and "\u202e" not in d for d in outcome.details)


def test_report_with_no_testcase_fails_without_expected_ids() -> None:
    outcome = parse_junit(report(), None)
    assert not outcome.passed
    assert outcome.reasons == (EMPTY,)


# --- malformed, hostile and oversize XML -------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="1">
<testcase classname="tests.test_s" name="test_a" time="0.1">&lol9;</testcase>
</testsuite></testsuites>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="1">
<testcase classname="tests.test_s" name="&xxe;" time="0.1"/></testsuite></testsuites>"""

DTD_ONLY = (
    b'<?xml version="1.0"?><!DOCTYPE testsuites SYSTEM "http://127.0.0.1:1/x.dtd">'
    + (CLEAN.split(b"?>", 1)[1])
)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"PASSED tests/test_s.py::test_a\nPASSED tests/test_s.py::test_b\n", id="log"),
        pytest.param(BILLION_LAUGHS, id="billion-laughs"),
        pytest.param(EXTERNAL_ENTITY, id="external-entity"),
        pytest.param(DTD_ONLY, id="dtd"),
        pytest.param(CLEAN + b"<x/>", id="trailing-element"),
        pytest.param(CLEAN.replace(b"test_a", b"test_\xff"), id="not-utf8"),
        pytest.param(CLEAN.replace(b"<testsuites>", b"<testsuites x='1'>"), id="root-attr"),
        pytest.param(CLEAN.replace(b"testsuites", b"results"), id="wrong-root"),
        pytest.param(
            CLEAN.replace(
                b"</testsuites>",
                b'<testsuite name="p" errors="0" failures="0" skipped="0" tests="0"/></testsuites>',
            ),
            id="two-suites",
        ),
        pytest.param(CLEAN.replace(b' tests="2"', b""), id="no-tests-count"),
        pytest.param(CLEAN.replace(b'tests="2"', b'tests="-2"'), id="negative-count"),
        pytest.param(CLEAN.replace(b'tests="2"', b'tests="2.0"'), id="float-count"),
        pytest.param(CLEAN.replace(b'tests="2"', b'tests="99999999999"'), id="huge-count"),
        pytest.param(CLEAN.replace(b'time="0.010"', b'time="nan"', 1), id="nan-time"),
        pytest.param(CLEAN.replace(b'time="0.010"', b'time="-1"', 1), id="negative-time"),
        pytest.param(CLEAN.replace(b'time="0.010"', b'time="1e400"', 1), id="inf-time"),
        pytest.param(CLEAN.replace(b'time="0.010"', b'time="soon"', 1), id="text-time"),
        pytest.param(CLEAN.replace(b' time="0.010"', b"", 1), id="no-time"),
        pytest.param(CLEAN.replace(b'name="test_a"', b'name=""'), id="empty-name"),
        pytest.param(CLEAN.replace(b"<testcase ", b'<testcase file="x" ', 1), id="xunit1-attr"),
        pytest.param(report(case("test_a"), case("test_b", body="<passed/>")), id="unknown-tag"),
        pytest.param(report(case("test_a"), case("test_b"), "<test/>"), id="unknown-suite-child"),
        pytest.param(
            b"<testsuites><testsuite " + b"a" * 100 + b'="1"/></testsuites>',
            id="unknown-suite-attr",
        ),
        pytest.param(
            b"<testsuites>" + b"<a>" * 100_000 + b"</a>" * 100_000 + b"</testsuites>",
            id="deep-nesting",
        ),
    ],
)
def test_malformed_or_hostile_xml_fails_closed(raw: bytes) -> None:
    outcome = parse_junit(raw, IDS)
    assert not outcome.passed
    assert outcome.reasons == (MALFORMED,)
    assert statuses(outcome) == {i: ("error", MALFORMED) for i in IDS}
    assert not reconcile(outcome, 0).passed


def test_too_many_testcases_is_malformed() -> None:
    outcome = parse_junit(report(*[case(f"test_{i}") for i in range(10_001)]), None)
    assert outcome.reasons == (MALFORMED,)


def test_oversize_report_is_refused_before_parsing() -> None:
    padded = CLEAN.replace(b"<testsuites>", b"<testsuites>" + b" " * 4096)
    assert parse_junit(padded, IDS).passed
    outcome = parse_junit(padded, IDS, max_bytes=4096)
    assert outcome.reasons == (OVERSIZE,)
    assert not outcome.passed
    assert parse_junit(b"x" * ((4 << 20) + 1), IDS).reasons == (OVERSIZE,)


def test_properties_and_captured_output_are_ignored() -> None:
    body = '<properties><property name="k" value="v"/></properties><system-out>PASSED</system-out>'
    outcome = parse_junit(report(case("test_a", body=body), case("test_b")), IDS)
    assert outcome.passed


def test_pytest_8_root_name_is_accepted() -> None:
    raw = CLEAN.replace(b"<testsuites>", b'<testsuites name="pytest tests">')
    assert parse_junit(raw, IDS).passed


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_strict_prefix_or_single_byte_deletion_never_passes(data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(CLEAN) - 1))
    assert not parse_junit(CLEAN[:cut], IDS).passed
    # Deleting one byte of markup or a name never yields a passing report for these ids.
    i = data.draw(st.integers(CLEAN.index(b"<testsuites>"), len(CLEAN) - 1))
    mutated = CLEAN[:i] + CLEAN[i + 1 :]
    if not parse_junit(mutated, IDS).passed:
        return
    # The only deletions that survive are inside values the checks do not hold to a meaning.
    free = re.compile(rb' (?:time|timestamp|hostname|name)="([^"]*)"')
    spans = [m.span(1) for m in free.finditer(CLEAN) if not m.group(1).startswith(b"test_")]
    assert any(start <= i < end for start, end in spans), (i, mutated)


# --- exit code ---------------------------------------------------------------------------------


def test_reconcile_passes_only_clean_report_with_exit_zero() -> None:
    clean = parse_junit(CLEAN, IDS)
    assert reconcile(clean, 0) is clean
    for code in (1, 2, 3, 4, 5, -9, None):
        outcome = reconcile(clean, code)
        assert not outcome.passed
        assert outcome.reasons == (EXIT_CODE,)


def test_reconcile_flags_exit_zero_with_a_failing_report() -> None:
    failing = parse_junit(report(case("test_a")), IDS)
    assert reconcile(failing, 1) is failing
    flagged = reconcile(failing, 0)
    assert flagged.reasons == (MISSING, EXIT_CODE)
    assert not flagged.passed
