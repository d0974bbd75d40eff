from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
from e2e import EXAMPLES
from helpers.pyc import FAKE_GENERATOR, plant_unchecked_pyc

from assay._internal.model.task import load_task
from assay.errors import TaskError


def _copy(tmp_path: Path, example: str = "add") -> Path:
    dst = tmp_path / example
    shutil.copytree(EXAMPLES / example, dst)
    return dst


@pytest.mark.parametrize("example", ["add", "wordcount", "csv-sum", "canary", "c-wordfreq"])
def test_examples_load(example: str) -> None:
    task = load_task(EXAMPLES / example)
    assert task.id == example
    assert task.digest.startswith("sha256:") and len(task.digest) == 71


def test_unknown_key_is_named(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text() + "\n[limits2]\nx = 1\n")
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert "unknown key 'limits2'" in str(err.value) and str(toml) in str(err.value)
    assert err.value.exit_code == 2


def test_unknown_nested_key_is_named(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    toml = root / "task.toml"
    toml.write_text(
        toml.read_text().replace("case_timeout = 5.0", "case_timeout = 5.0\ncase_timout = 1.0")
    )
    with pytest.raises(TaskError, match=r"unknown key 'limits\.case_timout'"):
        load_task(root)


def test_missing_key_is_named(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace('kind = "function"\n', ""))
    with pytest.raises(TaskError, match="missing key 'kind'"):
        load_task(root)


def test_kind_section_mismatch(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace('kind = "function"', 'kind = "cli"'))
    with pytest.raises(TaskError, match=r"\[function\] is required for kind 'function' and only"):
        load_task(root)


def test_missing_judge_file(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "judge" / "cases.json").unlink()
    with pytest.raises(TaskError, match=r"judge file 'cases\.json' does not exist"):
        load_task(root)


def test_digest_changes_with_judge_content(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    before = load_task(root).digest
    (root / "judge" / "cases.json").write_text('[{"id": "c", "input": [1, 2], "expected": 3}]')
    assert load_task(root).digest != before


@pytest.mark.parametrize(
    "where", ["inputs/attempts/hint.txt", "inputs/solutions/x.py", "judge/solutions/cmp.py"]
)
def test_digest_covers_nested_solutions_and_attempts(tmp_path: Path, where: str) -> None:
    """Issue 10 finding 10a: only the top-level solutions/ and attempts/ are not the task."""
    root = _copy(tmp_path)
    before = load_task(root).digest
    (root / where).parent.mkdir(parents=True, exist_ok=True)
    (root / where).write_text("what the agent or the judge sees")
    assert load_task(root).digest != before


def test_digest_leaves_out_top_level_solutions_and_attempts(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    before = load_task(root).digest
    for top in ("solutions", "attempts"):
        (root / top / "extra").mkdir(parents=True, exist_ok=True)
        (root / top / "extra" / "solution.py").write_text("def add(a, b): return 0\n")
    assert load_task(root).digest == before


def test_vcs_history_in_inputs_is_found(tmp_path: Path) -> None:
    from assay._internal.model.task import vcs_history

    inputs = tmp_path / "inputs"
    (inputs / "src").mkdir(parents=True)
    (inputs / "src" / "main.py").write_text("x = 1\n")
    assert vcs_history(inputs) == []
    (inputs / "repo" / ".git").mkdir(parents=True)
    (inputs / "odd-name").mkdir()
    for part in ("objects", "refs"):
        (inputs / "odd-name" / part).mkdir()
    (inputs / "odd-name" / "HEAD").write_text("ref: refs/heads/main\n")
    (inputs / "src" / ".hg").mkdir()
    (inputs / "history.dat").write_bytes(b"# v2 git bundle\n0000 refs/heads/main\n")
    assert vcs_history(inputs) == ["history.dat", "odd-name", "repo/.git", "src/.hg"]


def test_hardened_tiers_refuse_to_run_an_agent_on_vcs_history(tmp_path: Path) -> None:
    from assay._internal.runtime import GradingScope
    from assay._internal.runtime.fake import FakeRuntime
    from assay._internal.tiers.core.controller import Grading, Source
    from assay.errors import UnsafeInputsError

    root = _copy(tmp_path)
    (root / "inputs" / ".git").mkdir()
    rt = FakeRuntime()
    g = Grading(rt, load_task(root), "t3", "img")
    with GradingScope(rt, g.gid) as scope, pytest.raises(UnsafeInputsError, match=r"\.git"):
        g.take_submission(scope, Source(agent_cmd="true"))
    assert rt.containers == {}, "the agent must not start"


def test_a_session_refuses_to_start_on_vcs_history(tmp_path: Path) -> None:
    import assay
    from assay._internal.runtime.fake import FakeRuntime
    from assay.errors import UnsafeInputsError

    root = _copy(tmp_path)
    (root / "inputs" / ".git").mkdir()
    rt = FakeRuntime()
    grader = assay.Grader(runtime=rt, image="img", key=tmp_path / "k" / "signing.key")
    with pytest.raises(UnsafeInputsError, match=r"\.git"), grader.session(root):
        pass
    assert rt.containers == {}, "the agent must not start"


def test_a_cached_pyc_runs_instead_of_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why caches matter (issue 23, item 7c): the bytecode cache beside a judge file is what
    Python runs, while the source a reviewer reads, and (before) the digest, stay the same."""
    root = _copy(tmp_path, "canary")
    plant_unchecked_pyc(root, "judge/generate.py", FAKE_GENERATOR)
    # As the container's Python looks: beside the source, whatever prefix this host process has.
    monkeypatch.setattr(sys, "pycache_prefix", None)
    spec = importlib.util.spec_from_file_location("gen", root / "judge" / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.generate(1)[3]["expected"] == 21


@pytest.mark.parametrize(
    "where",
    [
        "judge/__pycache__/generate.cpython-311.pyc",
        "judge/helper.pyc",
        "judge/lib/helper.pyo",
        "inputs/__pycache__/x.cpython-311.pyc",
        "judge/__pycache__/README",
    ],
)
def test_compiled_python_in_a_task_is_refused(tmp_path: Path, where: str) -> None:
    """Issue 23, item 7c: `__pycache__/` was left out of the digest at any depth, so a cached
    `.pyc` could change what the judge runs without changing the digest. Compiled Python is
    now refused anywhere in the task (a sourceless `foo.pyc` is imported as `foo` too)."""
    root = _copy(tmp_path, "canary")
    clean = load_task(root).digest
    (root / where).parent.mkdir(parents=True, exist_ok=True)
    (root / where).write_bytes(b"\x00" * 16)
    with pytest.raises(TaskError, match=r"compiled Python in the task \(.*\): delete it"):
        load_task(root)
    assert clean.startswith("sha256:")


def test_compiled_python_at_the_top_level_solutions_is_not_the_task(tmp_path: Path) -> None:
    root = _copy(tmp_path, "canary")
    before = load_task(root).digest
    (root / "solutions" / "right" / "__pycache__").mkdir(parents=True)
    (root / "solutions" / "right" / "__pycache__" / "s.cpython-311.pyc").write_bytes(b"x")
    assert load_task(root).digest == before


def test_digest_covers_a_link_to_a_directory(tmp_path: Path) -> None:
    """A link to a directory is not walked; it is digested as a link (its target)."""
    root = _copy(tmp_path, "canary")
    (root / "judge" / "a").mkdir()
    (root / "judge" / "b").mkdir()
    (root / "judge" / "lib").symlink_to("a")
    before = load_task(root).digest
    (root / "judge" / "lib").unlink()
    (root / "judge" / "lib").symlink_to("b")
    assert load_task(root).digest != before
