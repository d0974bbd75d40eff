"""URL slugs."""

from __future__ import annotations

import re
import unicodedata

_UNSAFE = re.compile(r"[^a-z0-9]")


def slugify(text: str, sep: str = "-") -> str:
    """A lowercase ASCII slug of `text`, words joined by `sep`.

    >>> slugify("Hello World")
    'hello-world'
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _UNSAFE.sub(sep, ascii_text.lower())
