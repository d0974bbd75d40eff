"""A multi-step Harbor task (`[[steps]]`) is imported as one assay task per step: the step's
instruction, the task's shared tests with the step's own over them, the step's `[agent]` and
`[verifier]` over the task's. Each step's tests are only ever in that step's task."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from assay._internal.importers.harbor import Refusal, import_harbor, import_tree
from assay._internal.importers.harbor_steps import step_names, step_raw

TWOSTEP = Path(__file__).resolve().parents[1] / "harbor_tasks" / "twostep"


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_each_step_is_a_task_with_its_own_tests_and_instruction(tmp_path: Path) -> None:
    results = import_tree(TWOSTEP, tmp_path / "out")
    assert [(r.task_id, r.refusal) for r in results] == [
        ("twostep.count", None),
        ("twostep.canary", None),
    ]
    count, canary = tmp_path / "out" / "twostep.count", tmp_path / "out" / "twostep.canary"
    # The shared tests/ in both (the task put them there), each step's test.sh in its own only.
    assert _files(count / "judge" / "tests") == [
        "expected-canary.txt", "expected-count.txt", "test.sh"
    ]  # fmt: skip
    assert (count / "judge/tests/test.sh").read_bytes() == (
        TWOSTEP / "steps/count/tests/test.sh"
    ).read_bytes()
    assert (canary / "judge/tests/test.sh").read_bytes() == (
        TWOSTEP / "steps/canary/tests/test.sh"
    ).read_bytes()
    assert (canary / "inputs/instruction.md").read_text().startswith("Write the release code")
    assert _files(canary / "solutions" / "reference") == ["solve.sh"]
    assert "canary-7f3a9c" in (canary / "solutions/reference/solve.sh").read_text()
    # Nothing of any step's tests is among what the agent sees.
    for task in (count, canary):
        assert _files(task / "inputs") == ["instruction.md"]
        assert "expected" not in " ".join(_files(task / "environment"))


def test_a_step_must_be_named_and_exist(tmp_path: Path) -> None:
    with pytest.raises(Refusal) as info:
        import_harbor(TWOSTEP, tmp_path / "a")
    assert info.value.field == "steps"
    with pytest.raises(Refusal) as info:
        import_harbor(TWOSTEP, tmp_path / "b", step="nope")
    assert info.value.field == "steps" and "nope" in str(info.value)
    assert import_harbor(TWOSTEP, tmp_path / "c", step="canary") == tmp_path / "c"
    single = Path(__file__).resolve().parents[1] / "harbor_tasks" / "wordcount"
    with pytest.raises(Refusal, match="not a multi-step task"):
        import_harbor(single, tmp_path / "d", step="count")


def test_a_steps_tables_go_over_the_tasks() -> None:
    raw = {
        "agent": {"timeout_sec": 10.0, "user": "x"},
        "verifier": {"timeout_sec": 20.0, "env": {"A": "1"}},
        "artifacts": ["a.txt"],
        "multi_step_reward_strategy": "final",
        "steps": [
            {"name": "one", "verifier": {"timeout_sec": 5.0}, "artifacts": ["b.txt"],
             "min_reward": 1.0},
            {"name": "two"},
        ],
    }  # fmt: skip
    derived, notes = step_raw(raw, "one")
    assert derived == {
        "agent": {"timeout_sec": 10.0, "user": "x"},
        "verifier": {"timeout_sec": 5.0, "env": {"A": "1"}},
        "artifacts": ["a.txt", "b.txt"],
    }
    assert [n.split(":")[0] for n in notes] == ["steps.one.min_reward"]
    assert step_raw(raw, "two")[0]["verifier"] == raw["verifier"]


@pytest.mark.parametrize(
    ("steps", "field"),
    [
        ([{"name": "a/b"}], "steps.name"),
        ([{"name": ".."}], "steps.name"),
        ([{"name": "a"}, {"name": "A"}], "steps.name"),
        ([{"name": "a", "services": {}}], "steps.a.services"),
        ([{"name": "a", "verifier": "x"}], "steps.a.verifier"),
        ("a", "steps"),
        ([1], "steps"),
    ],
)
def test_a_step_assay_cannot_honour_is_refused_by_name(steps: object, field: str) -> None:
    with pytest.raises(Refusal) as info:
        step_raw({"steps": steps}, "a")
    assert info.value.field == field


def test_the_order_of_the_steps_is_kept(tmp_path: Path) -> None:
    raw = tomllib.loads((TWOSTEP / "task.toml").read_text())
    assert step_names(raw) == ["count", "canary"]
    src = tmp_path / "twostep"
    shutil.copytree(TWOSTEP, src)
    (src / "steps" / "canary" / "tests" / "link").symlink_to("/etc/passwd")
    results = import_tree(src, None)
    assert [r.task_id for r in results] == ["twostep.count", "twostep.canary"]
    assert results[0].refusal is None
    assert results[1].refusal is not None and "symbolic links" in str(results[1].refusal)
