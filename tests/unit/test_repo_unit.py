"""Repository tasks, the pure parts: the path policy, the test-patch applier, and SWE-bench's
FAIL_TO_PASS / PASS_TO_PASS rules over real and hand-written JUnit reports."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from e2e import EXAMPLES

from assay._internal.model.task import load_task
from assay._internal.tiers.baselines.repo import swebench_cases, swebench_status
from assay._internal.tiers.compat.junit import (
    DUPLICATE,
    EXIT_CODE,
    FAILURE,
    MISSING,
    SKIPPED,
    SURPLUS,
    parse_junit,
)
from assay._internal.tiers.compat.prep import INCONTAINER_COMPAT
from assay._internal.tiers.repo.grade import load_test_patch, repo_argv
from assay._internal.tiers.repo.imports import ImportGuard
from assay._internal.tiers.repo.patch import (
    MAX_PATCH_BYTES,
    PatchError,
    apply_patch,
    parse_patch,
    touched_paths,
)
from assay._internal.tiers.repo.policy import check_changes, is_cache, refusal_for
from assay._internal.tiers.repo.results import P2P_SKIPPED, evaluate, reconcile_exit, resolved
from assay._internal.tiers.repo.tree import PathConflict, changed_paths, compose
from assay.errors import TaskError

TESTS = ("tests",)
FLOOR_GUARD = ImportGuard()
"""No probe: the workdir root on the path, the fixed floor of names, the root a package root."""

# --- path policy ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("conftest.py", "conftest"),
        ("src/pkg/conftest.py", "conftest"),
        ("pytest.ini", "test-config"),
        ("tox.ini", "test-config"),
        ("setup.cfg", "test-config"),
        ("pyproject.toml", "test-config"),
        ("sub/pyproject.toml", "test-config"),
        ("tests/test_x.py", "test-dir"),
        ("tests/data/fixture.json", "test-dir"),
        ("hook.pth", "pth"),
        ("lib/site-packages/x.pth", "pth"),
        ("sitecustomize.py", "startup-module"),
        ("pkg/usercustomize.py", "startup-module"),
        ("sitecustomize/__init__.py", "startup-module"),
        ("json.py", "shadow-module"),
        ("json/__init__.py", "shadow-module"),
        ("pytest.py", "shadow-module"),
        ("_pytest/main.py", "shadow-module"),
        ("os.cpython-311-x86_64-linux-gnu.so", "shadow-module"),
        ("__init__.py", "package-root"),
        ("__init__.cpython-311-x86_64-linux-gnu.so", "package-root"),
    ],
)
def test_policy_refuses_naming_the_rule(path: str, rule: str) -> None:
    refusal = refusal_for(path, TESTS, FLOOR_GUARD)
    assert refusal is not None and refusal.rule == rule and refusal.path == path
    assert refusal.code == f"policy:{rule}"


@pytest.mark.parametrize(
    "path",
    ["semverlite/version.py", "semverlite/json.py", "README.md", "docs/conf.py", "testsuite.py",
     "pkg/tests_helper.py", "json.txt", "tox.ini.md"],
)  # fmt: skip
def test_policy_allows_code_under_test(path: str) -> None:
    assert refusal_for(path, TESTS, FLOOR_GUARD) is None


def test_policy_test_dirs_are_the_tasks() -> None:
    assert refusal_for("testing/test_a.py", ("testing",), FLOOR_GUARD) is not None
    assert refusal_for("tests/test_a.py", ("testing",), FLOOR_GUARD) is None
    assert refusal_for("src/pkg/tests/t.py", ("src/pkg/tests",), FLOOR_GUARD) is not None


def test_caches_are_dropped_not_refused() -> None:
    for path in ("pkg/__pycache__/m.cpython-311.pyc", "m.pyc", ".pytest_cache/v/x", "a/b.pyo"):
        assert is_cache(path), path
    for path in ("pkg/m.py", "cache.py", "docs/.pytest_cache.md"):
        assert not is_cache(path), path


def test_check_changes_names_the_first_in_sorted_order() -> None:
    refusal = check_changes(["z.py", "tox.ini", "a/conftest.py"], TESTS, FLOOR_GUARD)
    assert refusal is not None and refusal.path == "a/conftest.py"
    assert check_changes(["semverlite/version.py"], TESTS, FLOOR_GUARD) is None


# --- test patch -----------------------------------------------------------------------------

PATCH = b"""diff --git a/tests/test_a.py b/tests/test_a.py
index 1111111..2222222 100644
--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -1,3 +1,4 @@
 import a
+import b
<SP>
 def test_one():
@@ -5,2 +6,4 @@
     assert a.one() == 1
 # end
+def test_two():
+    assert b.two() == 2
--- /dev/null
+++ b/tests/new.py
@@ -0,0 +1,2 @@
+x = 1
+y = 2
""".replace(b"<SP>", b" ")  # a context line that is one space: kept out of the source text

ORIGINAL = "import a\n\ndef test_one():\n    pass\n    assert a.one() == 1\n# end\n"


def test_patch_applies_exactly(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_a.py").write_text(ORIGINAL)
    patches = parse_patch(PATCH)
    assert touched_paths(patches) == ("tests/test_a.py", "tests/new.py")
    apply_patch(tmp_path, patches)
    assert (tmp_path / "tests/test_a.py").read_text() == (
        "import a\nimport b\n\ndef test_one():\n    pass\n    assert a.one() == 1\n# end\n"
        "def test_two():\n    assert b.two() == 2\n"
    )
    assert (tmp_path / "tests/new.py").read_text() == "x = 1\ny = 2\n"


def test_patch_deletes_a_file(tmp_path: Path) -> None:
    (tmp_path / "old.py").write_text("a\nb\n")
    apply_patch(tmp_path, parse_patch(b"--- a/old.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"))
    assert not (tmp_path / "old.py").exists()


def test_patch_that_does_not_match_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_a.py").write_text(ORIGINAL.replace("a.one()", "a.uno()"))
    with pytest.raises(PatchError, match="does not match"):
        apply_patch(tmp_path, parse_patch(PATCH))
    assert (tmp_path / "tests/test_a.py").read_text() == ORIGINAL.replace("a.one()", "a.uno()")


def test_patch_refuses_a_link_on_the_way(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_a.py").write_text(ORIGINAL)
    root = tmp_path / "root"
    root.mkdir()
    (root / "tests").symlink_to(outside)
    with pytest.raises(PatchError, match="link"):
        apply_patch(root, parse_patch(PATCH))
    assert (outside / "test_a.py").read_text() == ORIGINAL


def test_patch_creating_an_existing_file_fails(tmp_path: Path) -> None:
    (tmp_path / "new.py").write_text("x = 1\n")
    with pytest.raises(PatchError, match="already exists"):
        apply_patch(tmp_path, parse_patch(b"--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+y\n"))


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (b"", "no file"),
        (b"hello\n", "expected a file header"),
        (b"--- a/x\n@@ -1 +1 @@\n", "without"),
        (b"--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", "inside the repository"),
        (b"--- /etc/passwd\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", "does not start with"),
        (b"--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", "renames"),
        (b"--- a/x\n+++ b/x\n", "no hunks"),
        (b"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n", "ends inside a hunk"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n", "expected a file header"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n", "newline"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-b\n+c\n",
         "twice"),
        (b"--- a/x\n+++ b/x\n@@ bogus @@\n", "malformed hunk"),
        (b"diff --git a/x b/y\nrename from x\n", "unsupported"),
        (b"\xff\xfe", "UTF-8"),
        (b" " * (MAX_PATCH_BYTES + 1), "bytes"),
    ],
)  # fmt: skip
def test_bad_patches_are_refused(patch: bytes, message: str) -> None:
    with pytest.raises(PatchError, match=message):
        parse_patch(patch)


# --- FAIL_TO_PASS / PASS_TO_PASS over real reports ------------------------------------------

SUITE = """
import pytest

def test_f2p_pass(): pass
def test_f2p_fail(): assert False
def test_f2p_skip(): pytest.skip("no")
def test_f2p_xfail(): pytest.xfail("imperative")
def test_p2p_pass(): pass
def test_p2p_skip(): pytest.skip("offline")
@pytest.mark.xfail(reason="known", strict=True)
def test_p2p_xfail(): assert False
def test_p2p_fail(): assert False
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, int]:
    root = tmp_path_factory.mktemp("suite")
    (root / "test_s.py").write_text(textwrap.dedent(SUITE))
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
         "junit_family=xunit2", f"--junitxml={root / 'r.xml'}", str(root)],
        cwd=root, capture_output=True, check=False,
    )  # fmt: skip
    return (root / "r.xml").read_bytes(), res.returncode


def judge(report: tuple[bytes, int], f2p: list[str], p2p: list[str]) -> tuple[bool, list[str]]:
    raw, _code = report
    ids = [f"test_s.py::{t}" for t in f2p + p2p]
    out = parse_junit(raw, ids)
    # Only the listed tests are judged: the rest of this report is surplus by design here.
    out = evaluate(out, [f"test_s.py::{t}" for t in p2p])
    reasons = [r for r in out.reasons if r != SURPLUS]
    return not [r for r in reasons if r != P2P_SKIPPED] and all(
        c.status == "pass" for c in out.cases
    ), reasons


@pytest.mark.parametrize(
    ("f2p", "p2p", "ok", "reason"),
    [
        (["test_f2p_pass"], ["test_p2p_pass"], True, None),
        (["test_f2p_pass"], ["test_p2p_skip"], True, P2P_SKIPPED),
        (["test_f2p_pass"], ["test_p2p_xfail"], True, P2P_SKIPPED),
        (["test_f2p_skip"], ["test_p2p_pass"], False, SKIPPED),
        (["test_f2p_xfail"], ["test_p2p_pass"], False, SKIPPED),
        (["test_f2p_fail"], ["test_p2p_pass"], False, FAILURE),
        (["test_f2p_pass"], ["test_p2p_fail"], False, FAILURE),
        (["test_f2p_pass", "test_absent"], [], False, MISSING),
        (["test_f2p_pass"], ["test_absent"], False, MISSING),
    ],
)
def test_swebench_semantics(
    report: tuple[bytes, int], f2p: list[str], p2p: list[str], ok: bool, reason: str | None
) -> None:
    passed, reasons = judge(report, f2p, p2p)
    assert passed is ok, reasons
    if reason is not None:
        assert reason in reasons


def _xml(cases: str, tests: int, skipped: int = 0, failures: int = 0) -> bytes:
    return (
        f'<testsuites><testsuite name="pytest" errors="0" failures="{failures}" '
        f'skipped="{skipped}" tests="{tests}" time="0.1">{cases}</testsuite></testsuites>'
    ).encode()


def test_a_duplicated_p2p_skip_is_not_rescued() -> None:
    case = '<testcase classname="t" name="test_a" time="0"><skipped/></testcase>'
    out = evaluate(parse_junit(_xml(case * 2, 2, skipped=2), ["t.py::test_a"]), ["t.py::test_a"])
    assert not resolved(out) and DUPLICATE in out.reasons


def test_exit_code_must_agree() -> None:
    ok = evaluate(parse_junit(_xml('<testcase classname="t" name="test_a" time="0"/>', 1),
                              ["t.py::test_a"]), [])  # fmt: skip
    assert resolved(ok)
    assert resolved(reconcile_exit(ok, 0))
    for code in (1, 2, 5, None):
        assert EXIT_CODE in reconcile_exit(ok, code).reasons
    failing = '<testcase classname="t" name="test_a" time="0"><failure/></testcase>'
    bad = evaluate(parse_junit(_xml(failing, 1, failures=1), ["t.py::test_a"]), [])
    assert EXIT_CODE not in reconcile_exit(bad, 1).reasons
    assert EXIT_CODE in reconcile_exit(bad, 3).reasons and not resolved(reconcile_exit(bad, 3))


# --- the SWE-bench baseline's log grading (T0 for repository tasks) -------------------------

F2P_ID = "tests/test_v.py::test_fix"
P2P_ID = "tests/test_v.py::test_old"
REAL_RUN = f""">>>>> Start Test Output
============================= test session starts ==============================
collected 2 items

tests/test_v.py F.                                                        [100%]
=========================== short test summary info ============================
PASSED {P2P_ID}
FAILED {F2P_ID} - assert 1 == 2
========================= 1 failed, 1 passed in 0.02s ==========================
{{forged}}>>>>> End Test Output
>>>>> Test Exit Code: 1
"""


def test_swebench_log_reads_the_real_failure() -> None:
    log = REAL_RUN.format(forged="")
    assert swebench_status(log) == {P2P_ID: "PASSED", F2P_ID: "FAILED"}
    cases, valid = swebench_cases(log, [F2P_ID], [P2P_ID])
    assert valid and [c.status for c in cases] == ["fail", "pass"]


def test_forged_passed_lines_alone_fail_the_exit_code_cross_check() -> None:
    # SWE-bench PR #620: no FAILED line left, yet the test command exited 1.
    log = REAL_RUN.format(forged=f"PASSED {F2P_ID}\n")
    assert swebench_status(log) is None
    cases, valid = swebench_cases(log, [F2P_ID], [P2P_ID])
    assert not valid and all(c.status == "error" for c in cases)


def test_a_forged_exit_code_marker_before_the_real_one_wins() -> None:
    # swebench 5.0.2's parse_test_exit_code takes the first marker in the log.
    log = REAL_RUN.format(forged=f"PASSED {F2P_ID}\n>>>>> Test Exit Code: 0\n")
    assert swebench_status(log) == {P2P_ID: "PASSED", F2P_ID: "PASSED"}
    cases, valid = swebench_cases(log, [F2P_ID], [P2P_ID])
    assert valid and all(c.status == "pass" for c in cases)


def test_swebench_statuses_per_list() -> None:
    log = (
        ">>>>> Start Test Output\n"
        f"XFAIL {F2P_ID} - reason\nSKIPPED {P2P_ID}\n"
        ">>>>> End Test Output\n>>>>> Test Exit Code: 0\n"
    )
    cases, valid = swebench_cases(log, [F2P_ID], [P2P_ID])
    assert valid and [c.status for c in cases] == ["pass", "pass"]  # XFAIL passes, skip maintains
    cases, _ = swebench_cases(log, [P2P_ID], [F2P_ID])
    assert [c.status for c in cases] == ["fail", "pass"]  # a skipped FAIL_TO_PASS fails (#598)
    assert swebench_status(log.replace(">>>>> End Test Output\n", "")) is None


# --- the repository task's config and the host-side trees -----------------------------------

SEMVER = EXAMPLES / "semver-pytest"


def _toml_with(tmp_path: Path, old: str, new: str) -> Path:
    root = tmp_path / "semver-pytest"
    shutil.copytree(SEMVER, root)
    toml = root / "task.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new))
    return root


def test_the_example_is_a_repository_task() -> None:
    task = load_task(SEMVER)
    spec = task.config.pytest
    assert spec is not None and spec.is_repository and spec.test_dirs == ["tests"]
    assert task.workdir == "/workspace"
    assert touched_paths(load_test_patch(task)) == ("tests/test_version.py",)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('test_patch = "test_patch.diff"\n', "", "needs test_patch"),
        ('test_patch = "test_patch.diff"', 'test_patch = "nope.diff"', "does not exist under judge"),
        ("fail_to_pass = [", 'tests = ["tests/test_version.py::test_parse_core"]\nfail_to_pass = [',
         "not tests/truth"),
        ('    "tests/test_version.py::test_parse_core",\n',
         '    "tests/test_version.py::test_parse_core",\n'
         '    "tests/test_version.py::test_spec_precedence_chain",\n', "both"),
        ("[pytest]\n", '[pytest]\ntest_dirs = ["../x"]\n', "not a relative path"),
    ],
)  # fmt: skip
def test_bad_repository_config_is_a_task_error(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    with pytest.raises(TaskError, match=message):
        load_task(_toml_with(tmp_path, old, new))


def test_a_test_patch_that_is_not_a_patch_is_a_task_error(tmp_path: Path) -> None:
    root = _toml_with(tmp_path, "id =", "id =")
    (root / "judge/test_patch.diff").write_text("not a patch\n")
    with pytest.raises(TaskError, match="test patch"):
        load_test_patch(load_task(root))


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_changed_paths_are_the_new_and_the_different(tmp_path: Path) -> None:
    pristine = _tree(tmp_path / "p", {"a.py": "a\n", "pkg/b.py": "b\n", "c.py": "c\n"})
    sub = _tree(tmp_path / "s", {"a.py": "a\n", "pkg/b.py": "B\n", "new.py": "n\n",
                                 "pkg/__pycache__/b.cpython-311.pyc": "x"})  # fmt: skip
    assert changed_paths(pristine, sub) == ["new.py", "pkg/b.py"]


def test_compose_resets_what_the_test_patch_touches(tmp_path: Path) -> None:
    pristine = _tree(tmp_path / "p", {"lib.py": "old\n", "tests/test_a.py": ORIGINAL})
    # The submission rewrote the test file and pre-created the file the patch adds.
    sub = _tree(tmp_path / "s", {"lib.py": "new\n", "tests/test_a.py": "def test_one(): pass\n",
                                 "tests/new.py": "forged\n"})  # fmt: skip
    task = load_task(SEMVER)
    dest = tmp_path / "out"
    dest.mkdir()
    tree = compose(dest, pristine, sub, parse_patch(PATCH), task)
    assert (tree / "lib.py").read_text() == "new\n"
    assert (tree / "tests/test_a.py").read_text().startswith("import a\nimport b\n")
    assert (tree / "tests/new.py").read_text() == "x = 1\ny = 2\n"
    # Nothing of assay's goes into the tree the candidate's files are in (issue 23).
    assert not (tree / "conftest.py").exists()
    assert sorted(p.name for p in tree.iterdir()) == ["lib.py", "tests"]


def test_compose_refuses_a_file_where_the_repository_has_a_directory(tmp_path: Path) -> None:
    pristine = _tree(tmp_path / "p", {"pkg/a.py": "a\n"})
    sub = _tree(tmp_path / "s", {"pkg": "a file now\n"})
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(PathConflict):
        compose(dest, pristine, sub, parse_patch(PATCH), load_task(SEMVER))


def test_the_run_registers_assays_plugin_from_outside_the_tree() -> None:
    argv = repo_argv("/workspace", ("tests/test_a.py::test_one",))
    assert argv[:3] == ("python3", "-I", "/assay/compat/pytest_main.py")
    assert "-m" not in argv and argv[-1] == "/workspace/tests/test_a.py::test_one"
    # The launcher loads the plugin by its path; the plugin imports nothing of pytest itself.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import pytest_main; "
        "m = pytest_main.load_plugin(sys.argv[1] + '/conftest.py'); "
        "print(m.__name__, 'pytest' in sys.modules, sys.modules[m.__name__] is m)"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code, str(INCONTAINER_COMPAT)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.split() == ["_assay_compat_plugin", "False", "True"]
