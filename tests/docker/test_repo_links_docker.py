"""A repository task whose repository holds a link, and a repository the firewall refuses as a
task tree, end to end on the real engine (images built offline from assay-base).

`README.rst -> README.md` is common in real repositories. It is the task's own: graded as a link
(the test patch adds a test that checks it in the test container), a hard link is read as a
copy, the correct solution passes and the wrong one fails, from a directory or from an agent run
whose workspace holds the link unchanged. Anything of the candidate at the link fails naming a rule. A repository with more
entries than the task allows, or with a link that leaves it, is a task error (exit 2) at
`assay build` and at grading, never a signed FAIL for every submission."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e import EXAMPLES, assay

from assay._internal.environment.build import ensure_environment
from assay._internal.model.task import Task, load_task
from assay._internal.model.verdict import Verdict
from assay._internal.runtime.docker import DockerRuntime, connect
from assay._internal.runtime.scope import new_grading_id
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.dispatch import run_tier
from assay._internal.tiers.repo.grade import check_repository
from assay.errors import TaskError

pytestmark = pytest.mark.docker

LINK_TEST = "tests/test_readme_link.py::test_readme_is_the_repositorys_link"
LINK_PATCH = """--- /dev/null
+++ b/tests/test_readme_link.py
@@ -0,0 +1,8 @@
+import os
+from pathlib import Path
+
+
+def test_readme_is_the_repositorys_link():
+    root = Path(__file__).parent.parent
+    assert os.readlink(root / "README.rst") == "README.md"
+    assert (root / "README.rst").read_bytes() == (root / "README.md").read_bytes()
"""


def _copy(tmp: Path, name: str) -> Path:
    root = tmp / name
    shutil.copytree(EXAMPLES / "semver-pytest", root, symlinks=True)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace('id = "semver-pytest"', f'id = "{name}"'))
    return root


@pytest.fixture(scope="module")
def linked(docker_runtime: DockerRuntime, tmp_path_factory: pytest.TempPathFactory) -> Task:
    root = _copy(tmp_path_factory.mktemp("linked"), "semver-linked")
    (root / "environment/repo/README.rst").symlink_to("README.md")
    # A second name of a file (the engine archives it as a hard link): read as a copy.
    with (root / "environment/Dockerfile").open("a") as dockerfile:
        dockerfile.write("RUN ln /workspace/README.md /workspace/README.txt\n")
    patch = root / "judge/test_patch.diff"
    patch.write_text(patch.read_text() + LINK_PATCH)
    toml = root / "task.toml"
    toml.write_text(
        toml.read_text().replace("pass_to_pass = [\n", f'pass_to_pass = [\n    "{LINK_TEST}",\n')
    )
    task = load_task(root)
    ensure_environment(connect(), task)
    return task


def grade(rt: DockerRuntime, image: str, task: Task, source: Source) -> Verdict:
    gid = new_grading_id()
    try:
        verdict = run_tier(rt, task, source, "t2", image, grading_id=gid)[0].verdict
    finally:
        assert rt.leftovers(gid) == [], "the grading left something behind"
    return verdict


def test_build_checks_the_repository_and_keeps_its_link(docker_runtime, linked) -> None:  # type: ignore[no-untyped-def]
    env = ensure_environment(connect(), linked)
    assert env is not None
    gid = new_grading_id()
    assert check_repository(docker_runtime, linked, env.ref, gid) == 1
    assert docker_runtime.leftovers(gid) == [], "the check left something behind"


def test_the_correct_solution_passes_with_the_link_in_the_tree(
    docker_runtime, base_image, linked
) -> None:  # type: ignore[no-untyped-def]
    v = grade(docker_runtime, base_image, linked, Source(path=linked.root / "solutions/correct"))
    assert v.passed, v.reason_codes
    assert v.reason_codes == []
    assert LINK_TEST in [c.id for c in v.cases if c.status == "pass"]


def test_the_wrong_solution_fails_on_its_test_not_on_the_link(
    docker_runtime, base_image, linked
) -> None:  # type: ignore[no-untyped-def]
    v = grade(docker_runtime, base_image, linked, Source(path=linked.root / "solutions/wrong"))
    assert not v.passed
    assert v.reason_codes == ["junit:failure"]
    assert [c.id for c in v.cases if c.status != "pass"] == [
        "tests/test_version.py::test_spec_precedence_chain"
    ]


def test_an_agent_that_leaves_the_link_as_it_found_it_passes(
    docker_runtime, base_image, linked
) -> None:  # type: ignore[no-untyped-def]
    # The agent's workspace is seeded from the image, link included; it comes back unchanged.
    # The image's hard link is two files there (a link would cross the firewall as `link`).
    cmd = ('test -L /workspace/README.rst && test "$(stat -c %h /workspace/README.txt)" = 1 && '
           "cp /agent/semverlite/version.py /workspace/semverlite/")  # fmt: skip
    source = Source(agent_cmd=cmd, agent_dir=linked.root / "solutions/correct")
    v = grade(docker_runtime, base_image, linked, source)
    assert v.passed, v.reason_codes


def test_an_agent_that_repoints_the_link_fails_at_the_firewall(
    docker_runtime, base_image, linked
) -> None:  # type: ignore[no-untyped-def]
    cmd = ("cp /agent/semverlite/version.py /workspace/semverlite/ && "
           "ln -sfn /etc/passwd /workspace/README.rst")  # fmt: skip
    source = Source(agent_cmd=cmd, agent_dir=linked.root / "solutions/correct")
    v = grade(docker_runtime, base_image, linked, source)
    assert not v.passed and v.reason_codes == ["firewall:link"]


def test_a_submitted_file_at_the_link_fails_naming_the_rule(
    docker_runtime, base_image, linked, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    sub = tmp_path / "sub"
    shutil.copytree(linked.root / "solutions/correct", sub)
    (sub / "README.rst").write_text("not the readme\n")
    v = grade(docker_runtime, base_image, linked, Source(path=sub))
    assert not v.passed and v.reason_codes == ["repo:through-link"]


def _cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp / "config")}
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True,
                          timeout=600, env=env, cwd=tmp, check=False)  # fmt: skip


def test_a_repository_over_the_entry_cap_is_a_task_error(
    docker_runtime, base_image, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    root = _copy(tmp_path, "semver-small-cap")
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace("[limits]\n", "[limits]\nartifact_entries = 5\n"))
    task = load_task(root)
    env = ensure_environment(connect(), task)
    assert env is not None
    gid = new_grading_id()
    with pytest.raises(TaskError, match=r"limits\.artifact_entries = 5"):
        check_repository(docker_runtime, task, env.ref, gid)
    assert docker_runtime.leftovers(gid) == [], "the check left something behind"
    built = _cli("build", str(root), "-q", tmp=tmp_path)
    assert built.returncode == 2, built.stderr
    assert "limits.artifact_entries = 5" in built.stderr
    graded = assay(
        "grade", str(root), "--submission", str(root / "solutions/correct"), tmp=tmp_path
    )
    assert graded.exit_code == 2 and graded.verdict is None, graded.stderr
    assert "limits.artifact_entries = 5" in graded.stderr


def test_a_repository_link_that_leaves_the_tree_is_a_task_error(
    docker_runtime, base_image, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    root = _copy(tmp_path, "semver-escaping-link")
    (root / "environment/repo/docs").mkdir()
    (root / "environment/repo/docs/passwd").symlink_to("../../etc/passwd")
    built = _cli("build", str(root), "-q", tmp=tmp_path)
    assert built.returncode == 2, built.stderr
    assert "link-escape" in built.stderr and "docs/passwd" in built.stderr
    graded = assay(
        "grade", str(root), "--submission", str(root / "solutions/correct"), tmp=tmp_path
    )
    assert graded.exit_code == 2 and graded.verdict is None, graded.stderr
