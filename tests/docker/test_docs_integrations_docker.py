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


@pytest.mark.docker
def test_the_hand_written_agent_loop_runs(monkeypatch: pytest.MonkeyPatch, base_image: str) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("ASSAY_BASE_IMAGE", base_image)
    namespace: dict[str, object] = {"__name__": "integrations_md"}
    exec(compile(examples()[1], "docs/integrations.md example 2", "exec"), namespace)
    assert "5\n(exit 0)" in "\n".join(namespace["transcript"])  # type: ignore[arg-type]
