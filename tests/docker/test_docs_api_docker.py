"""docs/api.md's examples run, in order, in one namespace, against a real engine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)


@pytest.mark.docker
@pytest.mark.usefixtures("private_tempdir")  # the examples' temp dirs too (a key's, a pool's)
def test_api_doc_examples_run(monkeypatch: pytest.MonkeyPatch, base_image: str) -> None:
    monkeypatch.chdir(ROOT)  # the examples name examples/add as a reader in a checkout would
    monkeypatch.setenv("ASSAY_BASE_IMAGE", base_image)
    # The default backend, as a reader's would be: the examples check results, not the engine.
    monkeypatch.setenv("ASSAY_RUNTIME", "runc")
    namespace: dict[str, object] = {"__name__": "api_md"}
    for n, code in enumerate(examples(), 1):
        exec(compile(code, f"docs/api.md example {n}", "exec"), namespace)
