"""Where the trusted in-container programs live on the host: the one path every bind of them
starts from (they are bound read-only into containers, never imported by a trust decision)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import assay._incontainer as _incontainer

INCONTAINER: Final = Path(_incontainer.__file__).resolve().parent
"""The package directory of `assay._incontainer`, bound at /assay in judge containers."""
