"""Semantic versions: parsing and precedence (semver.org 2.0.0, sections 9-11)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def parse(text: str) -> Version:
    """Parse `text`; raises ValueError if it is not a semantic version."""
    m = _SEMVER.fullmatch(text)
    if m is None:
        raise ValueError(f"not a semantic version: {text!r}")
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    build = tuple(m.group(5).split(".")) if m.group(5) else ()
    return Version(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre, build)


def _prerelease_key(identifiers: tuple[str, ...]) -> tuple[tuple[int, int, str], ...]:
    # Compare digits-only identifiers as numbers.
    return tuple((1, int(i), "") if i.isdigit() else (0, 0, i) for i in identifiers)


def compare(a: str | Version, b: str | Version) -> int:
    """-1, 0 or 1 as `a` has lower, equal or higher precedence than `b`; build metadata
    does not count."""
    va = parse(a) if isinstance(a, str) else a
    vb = parse(b) if isinstance(b, str) else b
    core_a, core_b = (va.major, va.minor, va.patch), (vb.major, vb.minor, vb.patch)
    if core_a != core_b:
        return -1 if core_a < core_b else 1
    if va.prerelease == vb.prerelease:
        return 0
    # A version without pre-release identifiers outranks one with them.
    if not va.prerelease:
        return 1
    if not vb.prerelease:
        return -1
    ka, kb = _prerelease_key(va.prerelease), _prerelease_key(vb.prerelease)
    return -1 if ka < kb else 1
