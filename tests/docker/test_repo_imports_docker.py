"""Repository tasks on T2, end to end: what reaches the test process before the tests.

Each attack here forges a pass wherever its file is imported (it rewrites the JUnit report at
exit, or registers a report hook); on the code before issue 23 each one graded PASSED. Now:
  - a root `__init__.py` (pytest imported assay's root conftest as `<root>.conftest`, running
    it first): assay's plugin no longer lives in the tree, and the path policy refuses it;
  - `attr/`, `src/pytest.py` in an image that installs the repository in development mode
    (the workdir and src/ first on sys.path when Python starts): refused because the image's
    own probe says those names resolve outside the repository (attr is on no fixed list);
    `lib/attr/` likewise, where lib/ is named by the image's .pth but absent from the pristine
    tree (so `site` only adds it once the submission creates it), and `lib` as a zip holding
    `attr/`;
  - `tools/boot.py`, which the image's .pth runs at every start (runpy, not an import): refused
    because the probe saw it opened;
  - a plugin module named by the tests' conftest in `pytest_plugins`: refused, found from the
    pristine tree.
An honest fix still passes on the same image.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest
from e2e import EXAMPLES, PAYLOADS, TASKS

from assay._internal.environment.build import ensure_environment
from assay._internal.model.task import Task, load_task
from assay._internal.model.verdict import Verdict
from assay._internal.runtime.docker import DockerRuntime, connect
from assay._internal.runtime.scope import GradingScope, new_grading_id
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.dispatch import run_tier
from assay._internal.tiers.repo.grade import guard_for, load_test_patch
from assay._internal.tiers.repo.imports import FLOOR
from assay._internal.tiers.repo.probe import run_probe
from assay._internal.tiers.repo.tree import read_pristine
from assay.errors import TaskError

pytestmark = pytest.mark.docker

REPO = PAYLOADS / "repo"


@pytest.fixture(scope="module")
def editable_image(docker_runtime: DockerRuntime) -> tuple[Task, str]:
    task = load_task(TASKS / "editable-repo")
    env = ensure_environment(connect(), task)
    assert env is not None
    return task, env.ref


@pytest.fixture(scope="module")
def editable(editable_image: tuple[Task, str]) -> Task:
    return editable_image[0]


@pytest.fixture(scope="module")
def semver(docker_runtime: DockerRuntime) -> Task:
    task = load_task(EXAMPLES / "semver-pytest")
    ensure_environment(connect(), task)
    return task


def grade(rt: DockerRuntime, image: str, task: Task, submission: Path) -> Verdict:
    gid = new_grading_id()
    verdict = run_tier(rt, task, Source(path=submission), "t2", image, grading_id=gid)[0].verdict
    assert rt.leftovers(gid) == [], "the grading left something behind"
    return verdict


def submission(tmp_path: Path, files: dict[str, Path]) -> Path:
    root = tmp_path / "submission"
    for rel, source in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, root / rel)
    return root


def test_a_root_init_py_is_refused(docker_runtime, base_image, semver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    sub = submission(tmp_path, {"__init__.py": REPO / "root-init" / "__init__.py"})
    v = grade(docker_runtime, base_image, semver, sub)
    assert not v.passed
    assert v.reason_codes == ["policy:package-root"]


def test_the_honest_fix_passes_on_the_editable_image(docker_runtime, base_image, editable) -> None:  # type: ignore[no-untyped-def]
    v = grade(docker_runtime, base_image, editable, editable.root / "solutions" / "correct")
    assert v.passed, v.reason_codes
    assert [c.id for c in v.cases] == [
        "tests/test_calc.py::test_add_negative", "tests/test_calc.py::test_add_zero",
    ]  # fmt: skip


@pytest.mark.parametrize("path", ["attr/__init__.py", "src/pytest.py", "lib/attr/__init__.py"])
def test_a_module_the_image_imports_is_not_shadowed(  # type: ignore[no-untyped-def]
    docker_runtime, base_image, editable, tmp_path, path
) -> None:
    v = grade(
        docker_runtime, base_image, editable, submission(tmp_path, {path: REPO / "shadow.py"})
    )
    assert not v.passed
    assert v.reason_codes == ["policy:shadow-module"]


def test_a_zip_where_the_image_names_a_directory_is_refused(  # type: ignore[no-untyped-def]
    docker_runtime, base_image, editable, tmp_path
) -> None:
    # The .pth names /workspace/lib; `site` adds any path that exists, and a zip is imported from.
    sub = tmp_path / "submission"
    sub.mkdir()
    with zipfile.ZipFile(sub / "lib", "w") as zf:
        zf.write(REPO / "shadow.py", "attr/__init__.py")
    v = grade(docker_runtime, base_image, editable, sub)
    assert not v.passed
    assert v.reason_codes == ["policy:import-path"]


def test_a_file_the_image_runs_at_start_up_may_not_change(  # type: ignore[no-untyped-def]
    docker_runtime, base_image, editable, tmp_path
) -> None:
    # The image's .pth runs tools/boot.py with runpy: no module, found by the files it opens.
    sub = submission(tmp_path, {"tools/boot.py": REPO / "forge_at_exit.py"})
    v = grade(docker_runtime, base_image, editable, sub)
    assert not v.passed
    assert v.reason_codes == ["policy:startup-import"]


def test_a_pytest_plugin_module_may_not_change(  # type: ignore[no-untyped-def]
    docker_runtime, base_image, editable, tmp_path
) -> None:
    sub = submission(tmp_path, {"src/calc/testing.py": REPO / "plugin_hook.py"})
    v = grade(docker_runtime, base_image, editable, sub)
    assert not v.passed
    assert v.reason_codes == ["policy:pytest-plugin"]


def test_the_probe_reads_the_image_not_a_list(docker_runtime, editable_image) -> None:  # type: ignore[no-untyped-def]
    editable, image = editable_image
    gid = new_grading_id()
    with GradingScope(docker_runtime, gid) as scope:
        runs = run_probe(scope, editable, image)
        pristine = read_pristine(scope, editable, image)
        assert isinstance(pristine, Path)
        ids = ("tests/test_calc.py::test_add_negative", "tests/test_calc.py::test_add_zero")
        guard = guard_for(scope, editable, image, pristine, load_test_patch(editable), ids)
    assert docker_runtime.leftovers(gid) == []
    entries = {e.path for run in runs for e in run.entries}
    assert {"/workspace", "/workspace/src"} <= entries
    assert {"", "src", "tests", "lib"} <= guard.entries
    assert "attr" in guard.reserved and "attr" not in FLOOR  # pytest 7.2 imports attrs
    assert guard.loaded.get("calc.testing") == "pytest-plugin"
    assert guard.loaded_files == {"tools/boot.py": "startup-import"}
    assert "calc" not in guard.reserved  # the repository's own package


def test_a_probe_that_fails_is_the_tasks_error(docker_runtime, base_image, semver) -> None:  # type: ignore[no-untyped-def]
    # The base image has no /workspace: pytest cannot start there, so the probe cannot answer.
    gid = new_grading_id()
    with GradingScope(docker_runtime, gid) as scope, pytest.raises(TaskError, match="probe"):
        run_probe(scope, semver, base_image)
    assert docker_runtime.leftovers(gid) == []
