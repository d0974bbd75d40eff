"""A repository task's own faults are task errors, and a submission's conflicts failed verdicts.

The pristine repository is read through the firewall as a trusted task tree: its links are
kept when they resolve inside it (judged the way the kernel follows them), a candidate's archive
still carries none, and the repository's own links come back from the agent's workspace as no
change. The test patch and the FAIL_TO_PASS / PASS_TO_PASS ids must lie under test_dirs (the task
is refused at load). A submitted file the composed tree has no place for (where the patch needs a
directory, below a file it writes, at or below a repository link) fails naming the rule, never
escapes as an internal error nor writes through a link."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from e2e import EXAMPLES

from assay._internal.firewall.check import Accepted, Rejected, check
from assay._internal.firewall.materialise import materialise
from assay._internal.firewall.tarwrite import END_OF_ARCHIVE, header
from assay._internal.model.task import load_task
from assay._internal.tiers.repo.grade import load_test_patch
from assay._internal.tiers.repo.imports import ImportGuard
from assay._internal.tiers.repo.patch import parse_patch
from assay._internal.tiers.repo.policy import check_changes
from assay._internal.tiers.repo.tree import (
    MAX_ALIASES,
    AliasFlood,
    PathConflict,
    aliases,
    changed_paths,
    compose,
    pristine_links,
)
from assay.errors import FirewallError, TaskError

SEMVER = EXAMPLES / "semver-pytest"

# --- the firewall's task-tree mode ----------------------------------------------------------

Member = tuple[str, str, bytes | str]


def _tar(members: list[Member]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                assert isinstance(data, bytes)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE}[
                kind
            ]
            if kind != "dir":
                assert isinstance(data, str)
                info.linkname = data
            tf.addfile(info)
    buf.seek(0)
    return buf


REPO: list[Member] = [
    ("ws", "dir", b""),
    ("ws/README.md", "file", b"# readme\n"),
    ("ws/README.rst", "sym", "README.md"),
    ("ws/docs", "dir", b""),
    ("ws/docs/index.md", "sym", "../README.md"),
    ("ws/docs/up", "sym", ".."),
    ("ws/copy.md", "hard", "ws/README.md"),
]


def _tree_check(members: list[Member], tree: bool = True) -> tuple[Accepted | Rejected, bytes]:
    sink = io.BytesIO()
    result = check(_tar(members), sink, strip_prefix="ws", tree=tree)
    return result, sink.getvalue()


def test_a_task_tree_keeps_its_inner_links_as_links(tmp_path: Path) -> None:
    result, archive = _tree_check(REPO)
    assert isinstance(result, Accepted), result
    kinds = {e.path: e.kind for e in result.manifest}
    assert kinds == {"README.md": "file", "README.rst": "symlink", "docs": "dir",
                     "docs/index.md": "symlink", "docs/up": "symlink", "copy.md": "file"}  # fmt: skip
    materialise(io.BytesIO(archive), tmp_path, links=True)
    assert os.readlink(tmp_path / "README.rst") == "README.md"
    assert os.readlink(tmp_path / "docs/up") == ".."
    assert (tmp_path / "docs/index.md").read_bytes() == b"# readme\n"
    # A hard link of the tree is written as a copy: never a link on the host.
    assert not (tmp_path / "copy.md").is_symlink()
    assert (tmp_path / "copy.md").stat().st_nlink == 1
    assert (tmp_path / "copy.md").read_bytes() == b"# readme\n"


def test_a_candidate_archive_still_carries_no_link() -> None:
    result, _ = _tree_check(REPO, tree=False)
    assert isinstance(result, Rejected) and result.rule == "link"


def test_materialise_refuses_a_link_unless_told_it_is_a_task_tree(tmp_path: Path) -> None:
    result, archive = _tree_check(REPO)
    assert isinstance(result, Accepted)
    with pytest.raises(FirewallError, match="member-type"):
        materialise(io.BytesIO(archive), tmp_path)


@pytest.mark.parametrize(
    ("links", "rule"),
    [
        ([("ws/a", "sym", "/etc/passwd")], "link-escape"),
        ([("ws/a", "sym", "../outside")], "link-escape"),
        ([("ws/d", "dir", b""), ("ws/d/a", "sym", "../../x")], "link-escape"),
        # Lexically `d/l/../..` is the root; the kernel climbs from where d/l leads (the root).
        ([("ws/a", "sym", "d/l/../.."), ("ws/d", "dir", b""), ("ws/d/l", "sym", "..")],
         "link-escape"),
        ([("ws/a", "sym", "b/../../x"), ("ws/b", "sym", "c"), ("ws/c", "dir", b"")],
         "link-escape"),
        ([("ws/a", "sym", "b"), ("ws/b", "sym", "a")], "link-loop"),
        ([("ws/a", "sym", "d"), ("ws/d", "dir", b""), ("ws/a/x", "file", b"through")],
         "path-conflict"),
        ([("ws/a", "hard", "/etc/passwd")], "absolute-path"),
        ([("ws/a", "hard", "ws/later"), ("ws/later", "file", b"x")], "link"),
    ],
)  # fmt: skip
def test_a_task_tree_link_that_leaves_the_tree_is_refused(
    links: list[Member], rule: str, tmp_path: Path
) -> None:
    result, _ = _tree_check([("ws", "dir", b""), *links])
    assert isinstance(result, Rejected) and result.rule == rule, result


def test_materialise_checks_the_links_again(tmp_path: Path) -> None:
    # A normalised archive check() would never write: a canonical symlink header that escapes.
    archive = header("a", "symlink", 0, 0o777, "../../etc") + END_OF_ARCHIVE
    with pytest.raises(FirewallError, match="link-escape"):
        materialise(io.BytesIO(archive), tmp_path, links=True)


def test_a_candidate_may_return_the_trees_own_links_unchanged_and_no_other() -> None:
    same = frozenset({("README.rst", "README.md")})
    members: list[Member] = [("ws", "dir", b""), ("ws/README.md", "file", b"x\n"),
                             ("ws/README.rst", "sym", "README.md")]  # fmt: skip
    ok = check(_tar(members), io.BytesIO(), strip_prefix="ws", same_links=same)
    assert isinstance(ok, Accepted) and ok.dropped == ("README.rst",)
    assert [e.path for e in ok.manifest] == ["README.md"]
    for changed in (("ws/README.rst", "sym", "/etc/passwd"), ("ws/other", "sym", "README.md"),
                    ("ws/README.rst", "sym", "./README.md")):  # fmt: skip
        bad = check(_tar([*members[:2], changed]), io.BytesIO(), strip_prefix="ws",
                    same_links=same)  # fmt: skip
        assert isinstance(bad, Rejected) and bad.rule == "link", changed


# --- test_dirs: the test patch and the listed ids -------------------------------------------


def _task_copy(tmp_path: Path) -> Path:
    root = tmp_path / "semver-pytest"
    shutil.copytree(SEMVER, root)
    return root


def test_a_test_patch_outside_test_dirs_is_refused_at_load(tmp_path: Path) -> None:
    root = _task_copy(tmp_path)
    patch = root / "judge/test_patch.diff"
    patch.write_text(
        patch.read_text()
        + "--- a/semverlite/version.py\n+++ b/semverlite/version.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    with pytest.raises(TaskError, match=r"semverlite/version\.py.*not under test_dirs"):
        load_task(root)


def test_a_removed_line_that_looks_like_a_header_is_not_one(tmp_path: Path) -> None:
    # The file headers are the parser's, not a line scan's: "-- a/x" removed reads "--- a/x".
    root = _task_copy(tmp_path)
    patch = root / "judge/test_patch.diff"
    patch.write_text(
        patch.read_text() + "--- a/tests/q.sql\n+++ b/tests/q.sql\n@@ -1 +1 @@\n"
        "--- a/outside.sql\n+++ b/outside.sql\n"
    )
    patches = load_test_patch(load_task(root))
    assert [p.path for p in patches] == ["tests/test_version.py", "tests/q.sql"]
    assert patches[1].hunks[0].old == ("-- a/outside.sql",)


def test_a_test_patch_changed_after_load_is_refused_when_graded(tmp_path: Path) -> None:
    root = _task_copy(tmp_path)
    task = load_task(root)
    (root / "judge/test_patch.diff").write_text("--- /dev/null\n+++ b/lib.py\n@@ -0,0 +1 @@\n+x\n")
    with pytest.raises(TaskError, match=r"'lib\.py', not under test_dirs"):
        load_test_patch(task)


@pytest.mark.parametrize(
    ("key", "test_id"),
    [("fail_to_pass", "semverlite/test_x.py::test_a"), ("pass_to_pass", "test_top.py::test_a"),
     ("fail_to_pass", "tests/../semverlite/x.py::test_a"), ("pass_to_pass", "testsuite.py::t")],
)  # fmt: skip
def test_a_listed_test_outside_test_dirs_is_refused_at_load(
    tmp_path: Path, key: str, test_id: str
) -> None:
    root = _task_copy(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace(f"{key} = [\n", f'{key} = [\n    "{test_id}",\n'))
    with pytest.raises(TaskError, match=f"{key} id .* is not under test_dirs"):
        load_task(root)


# --- composing: conflicts are the submission's, named ---------------------------------------

NEW_IN_SUBDIR = (
    b"--- /dev/null\n+++ b/tests/unit/test_new.py\n@@ -0,0 +1 @@\n+def test_new(): pass\n"
)
MODIFY = b"--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-old\n+new\n"


def _tree(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _compose(tmp_path: Path, pristine: Path, sub: dict[str, str], patch: bytes) -> Path:
    dest = tmp_path / "out"
    dest.mkdir()
    submission = _tree(tmp_path / "s", sub)
    return compose(dest, pristine, submission, parse_patch(patch), load_task(SEMVER))


@pytest.mark.parametrize(
    ("sub", "patch"),
    [
        # A file where the test patch creates a directory (the old code: FileExistsError).
        ({"tests/unit": "a file\n"}, NEW_IN_SUBDIR),
        # A file where the repository has no directory yet, above what the patch creates.
        ({"tests": "a file\n"}, NEW_IN_SUBDIR),
        # A directory where the test patch writes a file.
        ({"tests/test_a.py/x.py": "x\n"}, MODIFY),
        # A file where the repository has a directory, and one below a repository file.
        ({"pkg": "x\n"}, MODIFY),
        ({"lib.py/x.py": "x\n"}, MODIFY),
    ],
)
def test_a_submission_the_tree_has_no_place_for_fails_naming_the_rule(
    tmp_path: Path, sub: dict[str, str], patch: bytes
) -> None:
    pristine = _tree(
        tmp_path / "p", {"lib.py": "x\n", "pkg/m.py": "m\n", "tests/test_a.py": "old\n"}
    )
    with pytest.raises(PathConflict) as caught:
        _compose(tmp_path, pristine, sub, patch)
    assert caught.value.code == "repo:path-conflict"


def test_a_test_patch_that_needs_a_directory_where_the_repository_has_a_file_is_a_task_error(
    tmp_path: Path,
) -> None:
    # The task's own fault (the old code: FileExistsError, an internal error): `assay build`
    # applies the patch to the repository alone and says so.
    pristine = _tree(tmp_path / "p", {"tests/unit": "a file\n", "tests/test_a.py": "old\n"})
    with pytest.raises(TaskError, match=r"does not apply.*tests/unit/test_new\.py"):
        _compose(tmp_path, pristine, {}, NEW_IN_SUBDIR)


def _linked(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    pristine = _tree(tmp_path / "p", {"README.md": "readme\n", "docs/real/a.md": "a\n",
                                      "tests/test_a.py": "old\n"})  # fmt: skip
    (pristine / "README.rst").symlink_to("README.md")
    (pristine / "docs/alias").symlink_to("real")
    return pristine, outside


@pytest.mark.parametrize("rel", ["README.rst", "docs/alias/a.md", "docs/alias/new.md"])
def test_a_submitted_file_at_or_through_a_repository_link_fails_and_writes_nothing(
    tmp_path: Path, rel: str
) -> None:
    pristine, _ = _linked(tmp_path)
    with pytest.raises(PathConflict) as caught:
        _compose(tmp_path, pristine, {rel: "forged\n"}, MODIFY)
    assert caught.value.code == "repo:through-link"
    assert (pristine / "README.md").read_text() == "readme\n"
    assert (pristine / "docs/real/a.md").read_text() == "a\n"
    assert not (pristine / "docs/real/new.md").exists()


def test_the_repository_links_survive_composing_as_links(tmp_path: Path) -> None:
    pristine, _ = _linked(tmp_path)
    tree = _compose(tmp_path, pristine, {"README.md": "changed\n"}, MODIFY)
    assert os.readlink(tree / "README.rst") == "README.md"
    assert (tree / "README.rst").read_text() == "changed\n"
    assert os.readlink(tree / "docs/alias") == "real"
    assert (tree / "tests/test_a.py").read_text() == "new\n"
    assert pristine_links(pristine) == {("README.rst", "README.md"), ("docs/alias", "real")}
    # A link is not a file of the repository: a submitted file there is new, not "unchanged".
    sub = _tree(tmp_path / "s2", {"README.rst": "readme\n"})
    assert changed_paths(pristine, sub) == ["README.rst"]


def test_a_test_patch_through_a_repository_link_is_a_task_error(tmp_path: Path) -> None:
    pristine, _ = _linked(tmp_path)
    patch = b"--- a/docs/alias/a.md\n+++ b/docs/alias/a.md\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(TaskError, match="through a link"):
        _compose(tmp_path, pristine, {}, patch)


def test_a_change_through_a_link_into_test_dirs_is_judged_under_both_names() -> None:
    # tests/helpers.py -> ../pkg/helpers.py: a change to pkg/helpers.py changes the tests.
    links = frozenset({("tests/helpers.py", "../pkg/helpers.py"), ("tests/lib", "../pkg/lib"),
                       ("pkg/conf", "../extra"), ("unrelated", "README.md")})  # fmt: skip
    for changed, alias in (("pkg/helpers.py", "tests/helpers.py"),
                           ("pkg/lib/x.py", "tests/lib/x.py"),
                           ("extra/conftest_impl.py", "pkg/conf/conftest_impl.py")):  # fmt: skip
        assert alias in aliases([changed], links)
    paths = ["pkg/lib/x.py", *aliases(["pkg/lib/x.py"], links)]
    refusal = check_changes(paths, ["tests"], ImportGuard())
    assert refusal is not None and refusal.code == "policy:test-dir"
    assert aliases(["pkg/other.py"], links) == []
    # A link back to an ancestor renames nothing: it must not refuse every change of a task.
    cyclic = frozenset({("tests/root", ".."), ("tests/here", "."), ("self", ".")})
    assert aliases(["pkg/other.py", "tests/x.py"], cyclic) == []


def test_more_names_than_the_policy_judges_is_the_submissions_doing_not_the_tasks() -> None:
    """Issue 36: past MAX_ALIASES names this was a TaskError (exit 2, no verdict), though the
    count grows with how many files the submission changes: a failed verdict names it now."""
    links = frozenset((f"alias{i}", "pkg") for i in range(11))
    few = [f"pkg/m{i}.py" for i in range(MAX_ALIASES // 11)]
    assert len(aliases(few, links)) == 11 * len(few) <= MAX_ALIASES
    with pytest.raises(AliasFlood) as flood:
        aliases([*few, *(f"pkg/n{i}.py" for i in range(20))], links)
    assert flood.value.code == "repo:too-many-aliases"
