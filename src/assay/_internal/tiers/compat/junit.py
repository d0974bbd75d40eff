"""Strict reading of a pytest JUnit report (xunit2) into per-case results.

The report comes out of a container the candidate shared, so every byte is hostile: the size
is capped before parsing, DTDs and entities are refused (defusedxml), the shape must be exactly
what pytest 7.x writes with ``junit_family=xunit2``, and anything else fails closed.

Node id mapping. pytest builds a testcase's attributes from the node id with
``mangle_test_address``: the part before the first ``[`` is split on ``::``; the first element,
the file path, has ``/`` replaced by ``.`` and a trailing ``.py`` dropped; ``classname`` is the
remaining elements but the last joined with ``.`` and ``name`` is the last element with the
parameter suffix put back. So ``tests/test_add.py::TestAdd::test_small[1-2]`` is
``classname="tests.test_add.TestAdd" name="test_small[1-2]"``. The mapping is not invertible
(``a/b.py`` and ``a.b.py`` both give ``a.b``), so we only ever map forwards: each expected id is
turned into its ``(classname, name)`` key and looked up. Two expected ids with the same key are
refused up front, since no report could tell them apart. A testcase that matches no expected id
is a surplus; it is named ``classname::name`` (or ``name`` when ``classname`` is empty) in
details only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as SafeET

MALFORMED = "junit:malformed"
OVERSIZE = "junit:oversize"
MISSING = "junit:missing"
DUPLICATE = "junit:duplicate"
SURPLUS = "junit:surplus"
FAILURE = "junit:failure"
ERROR = "junit:error"
SKIPPED = "junit:skipped"
COUNT_MISMATCH = "junit:count-mismatch"
EMPTY = "junit:empty"
EXIT_CODE = "pytest:exit-code"

CaseStatus = Literal["pass", "fail", "error"]

_MAX_CASES = 10_000
_MAX_DETAILS = 20
_MAX_DETAIL_CHARS = 200
_MAX_CASE_SECONDS = 1e6
_RESULT_TAGS = {"failure": FAILURE, "error": ERROR, "skipped": SKIPPED}
_IGNORED_TAGS = {"properties", "system-out", "system-err"}
_CASE_ATTRS = {"classname", "name", "time"}
_SUITE_COUNTS = ("tests", "failures", "errors", "skipped")
_SUITE_ATTRS = {*_SUITE_COUNTS, "name", "time", "timestamp", "hostname"}
_COUNT = re.compile(r"[0-9]{1,9}")


@dataclass(frozen=True)
class CaseOutcome:
    """One expected test: fits a verdict's CaseResult(id, status, duration_s), plus why."""

    id: str
    status: CaseStatus
    duration_s: float
    reason: str | None = None


@dataclass(frozen=True)
class JUnitOutcome:
    """Per-case results and report-level reason codes; passed only if both are clean."""

    cases: tuple[CaseOutcome, ...]
    reasons: tuple[str, ...]
    details: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.reasons and bool(self.cases) and all(c.status == "pass" for c in self.cases)


class _Malformed(Exception):
    pass


def junit_key(node_id: str) -> tuple[str, str]:
    """The (classname, name) pytest writes for a node id (see the module docstring)."""
    path, bracket, params = node_id.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def check_expected_ids(expected_ids: Sequence[str]) -> None:
    """Raise ValueError if the ids cannot be told apart in a report, or are not node ids."""
    if not expected_ids:
        raise ValueError("no expected test ids")
    seen: dict[tuple[str, str], str] = {}
    for node_id in expected_ids:
        if "::" not in node_id or not node_id.split("[", 1)[0].split("::", 1)[0].endswith(".py"):
            raise ValueError(f"not a pytest node id (path.py::test): {node_id!r}")
        key = junit_key(node_id)
        if key in seen:
            raise ValueError(f"{seen[key]!r} and {node_id!r} have the same JUnit name {key}")
        seen[key] = node_id


def parse_junit(
    raw: bytes, expected_ids: Sequence[str] | None, max_bytes: int = 4 << 20
) -> JUnitOutcome:
    """Read a report; passed only for exactly the expected ids, each run once and passed.

    With ``expected_ids=None`` every testcase in the report is taken as expected, and at least
    one is required; callers that can should always pass the ids.
    """
    if expected_ids is not None:
        check_expected_ids(expected_ids)
    if len(raw) > max_bytes:
        return _unreadable(expected_ids, OVERSIZE, f"report is {len(raw)} bytes > {max_bytes}")
    reasons: list[str] = []
    details: list[str] = []
    try:
        suite = _suite(raw)
        cases = _testcases(suite)
        _check_counts(suite, cases, reasons, details)
    except _Malformed as exc:
        return _unreadable(expected_ids, MALFORMED, str(exc))
    by_key: dict[tuple[str, str], list[_Case]] = {}
    for case in cases:
        by_key.setdefault(case.key, []).append(case)
    if expected_ids is None:
        expected = {key: _display(key) for key in by_key}
        if not expected:
            _note(reasons, details, EMPTY, "report holds no testcase")
    else:
        expected = {junit_key(i): i for i in expected_ids}
    for key in by_key:
        if key not in expected:
            _note(reasons, details, SURPLUS, f"unexpected testcase {_display(key)!r}")
    results = tuple(
        _judge(node_id, by_key.get(key, []), reasons) for key, node_id in expected.items()
    )
    return JUnitOutcome(results, tuple(reasons), tuple(details))


def reconcile(outcome: JUnitOutcome, exit_code: int | None) -> JUnitOutcome:
    """Fail the outcome unless pytest's exit code agrees with it (0 iff the report is clean).

    ``None`` means pytest did not exit on its own (killed, timed out): never a pass.
    """
    if (exit_code == 0) == outcome.passed and exit_code is not None:
        return outcome
    reasons = _added(outcome.reasons, EXIT_CODE)
    detail = f"pytest exit code {exit_code} disagrees with the report"
    return replace(outcome, reasons=reasons, details=(*outcome.details, detail))


@dataclass(frozen=True)
class _Case:
    key: tuple[str, str]
    results: tuple[str, ...]
    duration_s: float


def _suite(raw: bytes) -> Element:
    try:
        root: Element = SafeET.fromstring(raw, forbid_dtd=True)
    except Exception as exc:  # expat, defusedxml and codec lookups all raise their own kinds
        raise _Malformed(f"unparsable XML: {type(exc).__name__}") from None
    # pytest >= 8 names the root; 7.x leaves it bare.
    if root.tag != "testsuites" or not set(root.attrib) <= {"name"} or (root.text or "").strip():
        raise _Malformed("root is not pytest's <testsuites>")
    suites = list(root)
    if len(suites) != 1 or suites[0].tag != "testsuite":
        raise _Malformed("expected exactly one <testsuite>")
    suite = suites[0]
    if not set(suite.attrib) <= _SUITE_ATTRS or not set(_SUITE_COUNTS) <= set(suite.attrib):
        raise _Malformed("testsuite attributes are not pytest's")
    return suite


def _testcases(suite: Element) -> list[_Case]:
    cases: list[_Case] = []
    for child in suite:
        if child.tag == "properties":
            continue
        if child.tag != "testcase":
            raise _Malformed(f"unexpected <{child.tag[:40]}> in testsuite")
        if len(cases) >= _MAX_CASES:
            raise _Malformed(f"more than {_MAX_CASES} testcases")
        cases.append(_testcase(child))
    return cases


def _testcase(element: Element) -> _Case:
    if set(element.attrib) != _CASE_ATTRS:
        raise _Malformed("testcase attributes are not classname, name, time")
    name = element.attrib["name"]
    if not name:
        raise _Malformed("testcase without a name")
    try:
        duration = float(element.attrib["time"])
    except ValueError:
        raise _Malformed("testcase time is not a number") from None
    if not math.isfinite(duration) or not 0 <= duration <= _MAX_CASE_SECONDS:
        raise _Malformed("testcase time out of range")
    results = []
    for child in element:
        if child.tag in _RESULT_TAGS:
            results.append(child.tag)
        elif child.tag not in _IGNORED_TAGS:
            raise _Malformed(f"unexpected <{child.tag[:40]}> in testcase")
    return _Case((element.attrib["classname"], name), tuple(results), duration)


def _check_counts(
    suite: Element, cases: list[_Case], reasons: list[str], details: list[str]
) -> None:
    declared: dict[str, int] = {}
    for attr in _SUITE_COUNTS:
        value = suite.attrib[attr]
        if not _COUNT.fullmatch(value):
            raise _Malformed(f"testsuite {attr} is not a count")
        declared[attr] = int(value)
    found = {
        "failures": sum(c.results.count("failure") for c in cases),
        "errors": sum(c.results.count("error") for c in cases),
        "skipped": sum(c.results.count("skipped") for c in cases),
    }
    # pytest counts a passed call followed by a teardown error twice in `tests`, so the total
    # is only derivable from the testcases when no error is present; with one the report fails
    # on junit:error anyway.
    if found["errors"] == 0:
        found["tests"] = len(cases)
    for attr, count in found.items():
        if declared[attr] != count:
            _note(reasons, details, COUNT_MISMATCH, f"{attr}={declared[attr]} but {count} found")


def _judge(node_id: str, found: list[_Case], reasons: list[str]) -> CaseOutcome:
    if not found:
        return _fail(node_id, "error", 0.0, MISSING, reasons)
    duration = min(sum(c.duration_s for c in found), _MAX_CASE_SECONDS)
    if len(found) > 1:
        return _fail(node_id, "error", duration, DUPLICATE, reasons)
    results = found[0].results
    if len(results) > 1:
        return _fail(node_id, "error", duration, DUPLICATE, reasons)
    if not results:
        return CaseOutcome(node_id, "pass", duration)
    status: CaseStatus = "error" if results[0] == "error" else "fail"
    return _fail(node_id, status, duration, _RESULT_TAGS[results[0]], reasons)


def _fail(
    node_id: str, status: CaseStatus, duration: float, reason: str, reasons: list[str]
) -> CaseOutcome:
    if reason not in reasons:
        reasons.append(reason)
    return CaseOutcome(node_id, status, duration, reason)


def _unreadable(expected_ids: Sequence[str] | None, reason: str, detail: str) -> JUnitOutcome:
    cases = tuple(CaseOutcome(i, "error", 0.0, reason) for i in expected_ids or ())
    return JUnitOutcome(cases, (reason,), (detail,))


def _note(reasons: list[str], details: list[str], reason: str, detail: str) -> None:
    if reason not in reasons:
        reasons.append(reason)
    if len(details) < _MAX_DETAILS:
        details.append(detail[:_MAX_DETAIL_CHARS])


def _display(key: tuple[str, str]) -> str:
    classname, name = key
    return f"{classname}::{name}" if classname else name


def _added(reasons: tuple[str, ...], reason: str) -> tuple[str, ...]:
    return reasons if reason in reasons else (*reasons, reason)
