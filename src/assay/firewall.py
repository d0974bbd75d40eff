"""The archive firewall as a library (docs/firewall.md).

`check(source, sink, limits, artifacts=..., strip_prefix=...)` reads a tar stream (plain or
compressed) with limits and returns `Accepted` (having written a normalised archive to `sink`)
or `Rejected` (naming the rule); it never raises for a hostile archive. `materialise` writes a
normalised archive into an empty directory without following links, raising
`assay.errors.FirewallError` if the archive is not one `check` produced. `display` renders a
hostile member name printable and bounded, for a terminal or a log.
"""

from __future__ import annotations

from assay._internal.firewall.check import RULES, Accepted, ManifestEntry, Rejected, check
from assay._internal.firewall.materialise import materialise
from assay._internal.firewall.tarbase import FirewallLimits, display

__all__ = [
    "RULES",
    "Accepted",
    "FirewallLimits",
    "ManifestEntry",
    "Rejected",
    "check",
    "display",
    "materialise",
]
