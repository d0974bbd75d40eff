"""Shared pieces of the archive firewall: limits, the rule-violation exception, safe display."""

from __future__ import annotations

from dataclasses import dataclass

_DISPLAY_MAX = 200


@dataclass(frozen=True)
class FirewallLimits:
    """Caps applied to every archive; the defaults suit a grading workspace, not a data set."""

    max_entries: int = 10_000
    max_file_bytes: int = 64 * 2**20
    max_total_bytes: int = 256 * 2**20
    max_path_chars: int = 1024
    # PATH_MAX counts bytes: 1,000 four-byte characters under a temp directory overflow it.
    max_path_bytes: int = 1024
    max_component_chars: int = 255
    max_depth: int = 32
    max_expansion_ratio: int = 200
    # Linux NAME_MAX counts bytes, so a 255-character name of 4-byte characters must still fail here
    # rather than at materialisation.
    max_component_bytes: int = 255
    # The whole (decompressed) tar stream, dropped members included.
    max_archive_bytes: int = 512 * 2**20
    # Below this many decompressed bytes the ratio is not judged: tiny archives compress very well.
    expansion_floor_bytes: int = 2**20
    # One PAX extended header's payload.
    max_pax_bytes: int = 64 * 2**10
    # Every member name's UTF-8 bytes, plus the bytes of the NFKC forms computed for kept names:
    # normalisation costs up to ~1 us per byte (U+FDFA expands 18-fold), so it gets a budget.
    max_name_bytes: int = 2 * 2**20


DEFAULT_LIMITS = FirewallLimits()


class Violation(Exception):
    """One member broke one rule; becomes a Rejected (check) or a FirewallError (materialise)."""

    def __init__(self, rule: str, detail: str, member: str | None = None) -> None:
        super().__init__(f"{rule}: {detail}")
        self.rule = rule
        self.detail = detail
        self.member = member


def display(name: bytes | str) -> str:
    """A printable, bounded rendering of a hostile name: no control byte reaches a terminal."""
    text = name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else name
    if not text:
        return "<empty name>"
    more = f"...(+{len(text) - _DISPLAY_MAX} chars)" if len(text) > _DISPLAY_MAX else ""
    head = text[:_DISPLAY_MAX]
    if head.isprintable() and "\\" not in head:
        return head + more  # the common case, without a Python loop per character
    out: list[str] = []
    for ch in head:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch.isprintable():
            out.append(ch)
        elif 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, kept by surrogateescape
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out) + more
