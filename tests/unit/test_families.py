"""Reason families: every code assay documents has one, the docs print the same table, an
unknown code is never honest, and a kill at a limit does not read as tampering."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import assay
from assay._internal.model.families import (
    AFTER_A_LIMIT,
    FAMILIES,
    by_family,
    code_families,
    family,
    namespace_families,
    tamper_codes,
)
from assay._internal.report import reasons

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8")


def test_every_documented_code_and_namespace_has_a_known_family() -> None:
    for code in reasons.CODES:
        if not code.startswith("note:"):
            assert family(code) != "unknown", code
    for code in code_families():
        assert code.partition(":")[0] in reasons.NAMESPACES, code


def test_the_docs_print_the_families_and_their_meanings() -> None:
    for name, meaning in FAMILIES.items():
        assert f"| `{name}` | {meaning} |" in DOC, name
    assert reasons.markdown_table() in DOC


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("compare:mismatch", "honest"),
        ("junit:failure", "honest"),
        ("compile:error", "honest"),
        ("compile:timeout", "limit"),
        ("limit:time", "limit"),
        ("firewall:link", "tamper"),
        ("firewall:depth", "limit"),
        ("firewall:entry-count", "limit"),
        ("policy:conftest", "tamper"),
        ("junit:skipped", "tamper"),
        ("harbor:reward-before-tests", "tamper"),
        ("harbor:no-reward", "honest"),
        ("decoy:output", "tamper"),
        ("judge:truth-failed", "grader"),
        ("infra:internal-error", "grader"),
        # A code or namespace a newer release adds: unknown, never honest.
        ("candidate:brand-new", "unknown"),
        ("brand-new:thing", "unknown"),
    ],
)
def test_family_of(code: str, expected: str) -> None:
    assert family(code) == expected
    assert assay.reason_family(code) == expected


def test_after_a_limit_the_kill_leaves_no_tamper_signal_but_a_real_attempt_still_shows() -> None:
    for code in AFTER_A_LIMIT:
        assert family(code) == "tamper", code
        assert tamper_codes([code, "limit:memory"]) == []
        assert tamper_codes([code]) == [code]
    assert tamper_codes(["limit:time", "policy:conftest", "junit:malformed"]) == ["policy:conftest"]


def test_by_family_groups_in_order_without_duplicates() -> None:
    grouped = by_family(["compare:mismatch", "firewall:link", "compare:mismatch", "zz:top"])
    assert grouped == {
        "honest": ["compare:mismatch"],
        "tamper": ["firewall:link"],
        "unknown": ["zz:top"],
    }


def test_every_firewall_rule_has_a_family_and_size_rules_are_limits() -> None:
    for rule in assay.firewall.RULES:
        assert family(f"firewall:{rule}") in {"tamper", "limit"}, rule
    sizes = {r for r in assay.firewall.RULES if re.search(r"size|count|length|depth|ratio", r)}
    assert {family(f"firewall:{r}") for r in sizes} == {"limit"}
    assert namespace_families()["firewall"] == "tamper"
