"""docs/integrations.md's Python examples: the Inspect task definition imports and builds, and
the hand-written agent loop runs against a real engine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def examples() -> list[str]:
    text = (ROOT / "docs" / "integrations.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_inspect_task_in_the_doc_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "integrations_md"}
    exec(compile(examples()[0], "docs/integrations.md example 1", "exec"), namespace)
    built = namespace["add"]()  # type: ignore[operator]
    assert built.sandbox.type == "assay"
    assert built.sandbox.config == "examples/add"
