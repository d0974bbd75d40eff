"""examples/swebench-calc is what `assay import swebench` writes for the fixture instance
acme__calc-101 with its image absent (its README.md says so), no Docker needed."""

from __future__ import annotations

import json
from pathlib import Path

from assay._internal.importers.swebench import import_swebench
from assay._internal.model.task import load_task

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "swebench-calc"
TASKREPO = ROOT / "tests" / "swebench" / "taskrepo"
# Added by hand beside the import: the README and the wrong prediction of the fixtures.
OWN = {"README.md", "solutions/wrong.patch"}


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_the_example_is_the_importers_output(tmp_path: Path) -> None:
    [result] = import_swebench(
        TASKREPO, tmp_path, lambda ref: False, only=frozenset({"acme__calc-101"})
    )
    assert result.reason is None
    written = _files(tmp_path / "acme__calc-101")
    kept = {k: v for k, v in _files(EXAMPLE).items() if k not in OWN}
    assert kept == written, "rerun the import (examples/swebench-calc/README.md) and copy it"


def test_the_wrong_patch_is_the_fixtures_wrong_prediction() -> None:
    rows = [json.loads(line) for line in (TASKREPO.parent / "predictions" / "wrong.jsonl").open()]
    [calc] = [r for r in rows if r["instance_id"] == "acme__calc-101"]
    wrong = (EXAMPLE / "solutions" / "wrong.patch").read_text(encoding="utf-8")
    assert wrong == calc["model_patch"]


def test_the_example_is_a_repository_task_at_testbed() -> None:
    task = load_task(EXAMPLE)
    assert (task.id, task.config.kind, task.workdir) == ("acme__calc-101", "pytest", "/testbed")
