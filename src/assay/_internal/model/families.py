"""Which family each reason code belongs to: an honest failure, a resource limit, tampering, the
grader's own trouble, or unknown. Pure data and pure functions: docs/verdicts.md prints the same
table (a test keeps them equal), the verdict builder derives its `tamper` field from it, and the
proof matrix checks every blocked attack against it.

A code is looked up by itself first, then by its namespace. A code neither names (one a newer
release adds) is `unknown`, never `honest`: a reader who trusts "honest" must be able to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

Family = Literal["honest", "limit", "tamper", "grader", "unknown"]

FAMILIES: Final[dict[Family, str]] = {
    "honest": "an honest failure: a wrong answer, a failed test, a crash, a build that failed",
    "limit": "a resource limit or deadline was hit (an honest slow program hits them too)",
    "tamper": "an attempt to change, read or forge what grades the submission",
    "grader": "the task or the grader could not decide (never the submission's doing alone)",
    "unknown": "a code this release does not know (a newer release's); never read as honest",
}

# Firewall rules a real file tree of any size can break honestly are limits; every other rule
# needs a link, a device, a forged header or a name no file system gives an honest program.
_FIREWALL_LIMITS = frozenset({
    "archive-size", "expansion-ratio", "path-length", "component-length", "depth",
    "entry-count", "file-size", "total-size",
})  # fmt: skip

_BY_CODE: Final[dict[str, Family]] = {
    **{f"firewall:{rule}": "limit" for rule in _FIREWALL_LIMITS},
    "candidate:crash": "honest",
    "candidate:unencodable-output": "honest",
    # The runner encodes every value itself: output it cannot read was not made by returning.
    "candidate:invalid-output": "tamper",
    # A file the runner cannot remove takes a chmod or chattr game, not a wrong answer.
    "candidate:left-state": "tamper",
    "runner:missing-case": "tamper",
    "runner:invalid-output": "tamper",
    "cases:count-mismatch": "grader",
    "cases:duplicate-id": "grader",
    "cases:none-expected": "grader",
    "compile:timeout": "limit",
    "compile:memory": "limit",
    "checker:failed": "grader",
    "junit:failure": "honest",
    "junit:error": "honest",
    "junit:missing": "honest",
    "junit:no-report": "honest",
    "junit:oversize": "limit",
    # A skip, an empty or miscounted report, a test reported twice or never expected, and an
    # exit code that contradicts the report are what a conftest, plugin or atexit hook makes.
    "junit:skipped": "tamper",
    "junit:duplicate": "tamper",
    "junit:surplus": "tamper",
    "junit:count-mismatch": "tamper",
    "junit:malformed": "tamper",
    "junit:empty": "tamper",
    "pytest:exit-code": "tamper",
    "harbor:no-reward": "honest",
    "harbor:tests-interrupted": "honest",
    "request:stdin-encoding": "honest",
}

_BY_NAMESPACE: Final[dict[str, Family]] = {
    "compare": "honest",
    "compile": "honest",
    "patch": "honest",
    "submission": "honest",
    "runtime": "honest",
    "limit": "limit",
    "firewall": "tamper",
    "output-firewall": "tamper",
    "policy": "tamper",
    "repo": "tamper",
    "network": "tamper",
    "harbor": "tamper",
    "decoy": "tamper",
    "twin": "tamper",
    "judge": "grader",
    "infra": "grader",
    "batch": "grader",
    "inputs": "grader",
}

# What a killed process leaves: when a limit stopped the run, these follow from the kill (no
# report, half a report, a case never answered) and are not counted as tampering.
AFTER_A_LIMIT: Final = frozenset({
    "junit:malformed", "junit:empty", "junit:count-mismatch", "pytest:exit-code",
    "runner:missing-case", "runner:invalid-output", "candidate:invalid-output",
    "output-firewall:truncated", "output-firewall:format",
})  # fmt: skip


def family(code: str) -> Family:
    """The family of one reason code (`unknown` for a code this release does not know)."""
    known = _BY_CODE.get(code)
    if known is not None:
        return known
    return _BY_NAMESPACE.get(code.partition(":")[0], "unknown")


def tamper_codes(codes: Iterable[str]) -> list[str]:
    """The codes of `codes` that show tampering, in order. Codes that follow from a limit's
    kill are left out when a limit code is among them (an honest slow program is not flagged)."""
    listed = list(dict.fromkeys(codes))
    limited = any(family(c) == "limit" for c in listed)
    return [c for c in listed if family(c) == "tamper" and not (limited and c in AFTER_A_LIMIT)]


def by_family(codes: Iterable[str]) -> dict[Family, list[str]]:
    """`codes` grouped by family, each family's codes in order; families with none left out."""
    grouped: dict[Family, list[str]] = {}
    for code in dict.fromkeys(codes):
        grouped.setdefault(family(code), []).append(code)
    return grouped


def namespace_families() -> dict[str, Family]:
    """Each namespace's default family (the docs' table)."""
    return dict(_BY_NAMESPACE)


def code_families() -> dict[str, Family]:
    """Each code whose family differs from or refines its namespace's (the docs' table)."""
    return dict(_BY_CODE)
