"""Shortening text for display."""

from __future__ import annotations


def shorten(text: str, width: int, placeholder: str = "...") -> str:
    """`text` cut at a word boundary to fit in `width` characters, `placeholder` appended."""
    if len(text) <= width:
        return text
    room = width - len(placeholder)
    if room <= 0:
        return placeholder[:width]
    cut = text[:room]
    if " " in cut and text[room] != " ":
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + placeholder
