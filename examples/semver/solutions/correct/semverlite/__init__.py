"""semverlite: parse and order semantic versions (https://semver.org)."""

from .version import Version, compare, parse

__all__ = ["Version", "compare", "parse"]
