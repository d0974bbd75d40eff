"""FAIL_TO_PASS / PASS_TO_PASS over a strictly parsed JUnit report (SWE-bench's semantics).

swebench 5.0.2 (`harness/grading.py`): a FAIL_TO_PASS test succeeds only when it passed
(`test_passed`); a skipped, failed, errored or missing one fails (`test_failed`, the skip since
SWE-bench #598). A PASS_TO_PASS test succeeds when it passed or was skipped
(`test_maintained`); failed, errored or missing fails. An instance is resolved when every test
of both lists succeeds.

One deliberate difference: SWE-bench counts XFAIL as passed. In a JUnit report an xfail is a
`<skipped>` element, indistinguishable from a skip and from an xfail the candidate raised itself
(`pytest.xfail()` in library code: corpus `xfail-imperative`). So here an xfail is a skip: it
fails a FAIL_TO_PASS test and is allowed for a PASS_TO_PASS one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..compat.junit import (
    DUPLICATE,
    ERROR,
    EXIT_CODE,
    FAILURE,
    MISSING,
    SKIPPED,
    CaseOutcome,
    JUnitOutcome,
)

P2P_SKIPPED = "note:p2p-skipped"
"""Informational: some PASS_TO_PASS test was skipped, which SWE-bench allows."""
_CASE_REASONS = frozenset({FAILURE, ERROR, SKIPPED, MISSING, DUPLICATE})


def evaluate(outcome: JUnitOutcome, pass_to_pass: Sequence[str]) -> JUnitOutcome:
    """Re-judge the report's cases: a skipped PASS_TO_PASS test counts as passed (noted);
    everything else keeps parse_junit's strict reading (the FAIL_TO_PASS rules)."""
    maintained = frozenset(pass_to_pass)
    cases: list[CaseOutcome] = []
    noted = False
    for case in outcome.cases:
        if case.reason == SKIPPED and case.id in maintained:
            cases.append(replace(case, status="pass", reason=None))
            noted = True
        else:
            cases.append(case)
    reasons = [r for r in outcome.reasons if r not in _CASE_REASONS]
    for case in cases:
        if case.reason is not None and case.reason not in reasons:
            reasons.append(case.reason)
    if noted:
        reasons.append(P2P_SKIPPED)
    return replace(outcome, cases=tuple(cases), reasons=tuple(reasons))


def resolved(outcome: JUnitOutcome) -> bool:
    """Every test succeeded and nothing is wrong with the report (notes aside)."""
    failing = [r for r in outcome.reasons if r != P2P_SKIPPED]
    return not failing and bool(outcome.cases) and all(c.status == "pass" for c in outcome.cases)


def reconcile_exit(outcome: JUnitOutcome, exit_code: int | None) -> JUnitOutcome:
    """pytest's exit code must agree: 0 for a resolved run, 1 (tests failed) otherwise; a
    crash, an interruption or no exit at all never agrees. A skipped FAIL_TO_PASS test fails
    here while pytest exits 0, so for an unresolved run 0 agrees too."""
    agrees = exit_code == 0 if resolved(outcome) else exit_code in (0, 1)
    if agrees:
        return outcome
    detail = f"pytest exit code {exit_code} disagrees with the report"
    reasons = outcome.reasons if EXIT_CODE in outcome.reasons else (*outcome.reasons, EXIT_CODE)
    return replace(outcome, reasons=reasons, details=(*outcome.details, detail))
