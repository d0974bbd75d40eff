"""Settings read from the environment."""

from __future__ import annotations

import os

DEFAULT_LOCALE = "en_US"


def locale() -> str:
    """The locale strkit formats for: $STRKIT_LOCALE, or en_US when unset or empty."""
    return os.environ.get("STRKIT_LOCALE") or DEFAULT_LOCALE
