"""The image-derived import rules of repository tasks, pure: the probe's report read strictly,
the guard derived from it and the pristine tree, and the path policy over that guard."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay._internal.tiers.repo.imports import (
    FLOOR,
    PLUGIN_RULE,
    STARTUP_RULE,
    ImportGuard,
    PluginScanError,
    basedir,
    import_guard,
    module_of,
    plugin_names,
)
from assay._internal.tiers.repo.policy import check_changes, refusal_for
from assay._internal.tiers.repo.probe import (
    MAX_ENTRIES,
    REPORT_BYTES,
    ProbeError,
    ProbeRun,
    parse_probe,
)

WORKDIR = "/workspace"
DIST = "/usr/lib/python3/dist-packages"


def report(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "mode": "isolated",
        "workdir_real": WORKDIR,
        "entries": [
            ["/usr/lib/python3.11", "/usr/lib/python3.11", ["json", "os"]],
            [DIST, DIST, ["attr", "pytest", "_pytest", "tests"]],
            ["/workspace", "/workspace", ["calc_cli", "src", "tests"]],
            ["/workspace/src", "/workspace/src", ["calc"]],
            ["/opt/vendor", "/workspace/vendor", ["six"]],
        ],
        "pth_paths": ["/workspace/src", "/workspace/lib", "/opt/elsewhere"],
        "opened": [
            "/workspace/tools/boot.py",
            "/workspace/src/__pycache__/boot.cpython-311.pyc",
            "/usr/lib/python3.11/os.py",
        ],
        "modules": [
            ["attr", f"{DIST}/attr/__init__.py"],
            ["sys", None],
            ["boot", "/workspace/src/boot.py"],
        ],
        "attempted": ["attr", "org", "boot"],
        "stdlib": ["json", "os", "sys"],
        "builtin": ["sys"],
    }
    doc.update(over)
    return doc


def run_of(doc: dict[str, Any]) -> ProbeRun:
    return parse_probe(json.dumps(doc).encode(), doc["mode"])


PRISTINE = {
    "src/calc/__init__.py": b"",
    "src/calc/testing.py": b"import pytest\n",
    "src/boot.py": b"",
    "tests/conftest.py": b'pytest_plugins = ["calc.testing"]\n',
    "tests/test_calc.py": b"",
    "pkg/__init__.py": b"",
    "pkg/sub/__init__.py": b"",
    "pkg/sub/tests/__init__.py": b"",
    "pkg/sub/tests/test_x.py": b"",
    "calc_cli.py": b"",
}


def guard_of(*docs: dict[str, Any], files: dict[str, bytes] | None = None) -> ImportGuard:
    tree = PRISTINE if files is None else files
    return import_guard(
        [run_of(d) for d in docs] or [run_of(report())], WORKDIR, frozenset(tree),
        ["tests/test_calc.py", "pkg/sub/tests/test_x.py"], lambda rel: tree[rel],
    )  # fmt: skip


# --- the probe's report ---------------------------------------------------------------------


def test_a_report_is_read_exactly() -> None:
    run = run_of(report())
    assert run.mode == "isolated" and run.workdir_real == WORKDIR
    assert [e.path for e in run.entries][-2:] == ["/workspace/src", "/opt/vendor"]
    assert run.attempted == {"attr", "org", "boot"}
    assert ("sys", None) in run.modules


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"mode": "isolated", "mode": "plain"}', "duplicate"),
        (json.dumps({**report(), "extra": 1}).encode(), "unexpected"),
        (json.dumps(report(mode="plain")).encode(), "not isolated"),
        (json.dumps(report(workdir_real="workspace")).encode(), "absolute"),
        (json.dumps(report(attempted=["not a name"])).encode(), "module name"),
        (json.dumps(report(entries=[["/a", "/a"]])).encode(), "an entry is"),
        (json.dumps(report(entries=[["/a", "/a", []]] * (MAX_ENTRIES + 1))).encode(), "at most"),
        (json.dumps(report(modules=[["x", 1]])).encode(), "string"),
        (json.dumps(report(stdlib="json")).encode(), "list"),
        (json.dumps(report(pth_paths=["lib"])).encode(), "absolute"),
        (json.dumps(report(opened=[3])).encode(), "string"),
        (b'{"mode": NaN}', "non-finite"),
        (b" " * (REPORT_BYTES + 1), "cap"),
        (b"\xff", "UTF-8"),
    ],
)
def test_a_malformed_report_is_refused(raw: bytes, message: str) -> None:
    with pytest.raises(ProbeError, match=message):
        parse_probe(raw, "isolated")


# --- the guard ------------------------------------------------------------------------------


def test_the_guard_takes_the_repositorys_directories_from_the_image() -> None:
    g = guard_of()
    # The root always; src/ from the .pth; vendor/ by its real path; lib/ named by a .pth but
    # not in the tree yet; tests/ as pytest's insertion for test_calc.py; pkg/sub/tests' chain
    # of packages ends at the root.
    assert g.entries == {"", "src", "vendor", "lib", "tests"}
    assert g.package_roots == {"", "tests"}


def test_reserved_names_come_from_the_image() -> None:
    g = guard_of()
    assert {"attr", "pytest", "json", "sys"} <= g.reserved
    assert "org" in g.reserved  # tried at start-up and not found: the repository could answer
    assert "attr" not in FLOOR
    assert "calc" not in g.reserved and "calc_cli" not in g.reserved  # the repository's own
    assert "six" not in g.reserved  # found only inside the workdir (vendor/)


def test_modules_loaded_before_the_tests_are_the_images_and_the_conftests() -> None:
    g = guard_of()
    assert g.loaded_files == {"src/boot.py": STARTUP_RULE, "tools/boot.py": STARTUP_RULE}
    assert g.loaded["boot"] == STARTUP_RULE
    assert g.loaded["calc.testing"] == PLUGIN_RULE


def test_the_plain_interpreters_path_counts_too() -> None:
    plain = report(mode="plain", entries=[["/workspace/lib", "/workspace/lib", []]])
    assert "lib" in guard_of(report(), plain).entries


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("attr/__init__.py", "shadow-module"),
        ("attr.py", "shadow-module"),
        ("org/anything.txt", "shadow-module"),  # a namespace portion answers `import org`
        ("src/pytest.py", "shadow-module"),
        ("src/attr/__init__.py", "shadow-module"),
        ("vendor/json.py", "shadow-module"),
        ("lib/attr/__init__.py", "shadow-module"),
        ("src/json.cpython-311-x86_64-linux-gnu.so", "shadow-module"),
        ("src/calc/testing.py", PLUGIN_RULE),
        ("calc/testing.py", PLUGIN_RULE),  # the same module from another directory
        ("src/calc/testing/__init__.py", PLUGIN_RULE),
        ("src/boot.py", STARTUP_RULE),
        ("tools/boot.py", STARTUP_RULE),
        ("boot.py", STARTUP_RULE),
        ("__init__.py", "package-root"),
        ("lib", "import-path"),  # a zip where a .pth names a directory: imported from
        ("vendor", "import-path"),
        ("pkg/sub/tests/x.py", None),
    ],
)
def test_the_policy_over_the_guard(path: str, rule: str | None) -> None:
    refusal = refusal_for(path, ("tests",), guard_of())
    assert (None if refusal is None else refusal.rule) == rule


@pytest.mark.parametrize(
    "path",
    ["src/calc/__init__.py", "src/calc/ops.py", "src/calc/json.py", "calc_cli.py", "attr.txt",
     "tests.txt", "src/calc/__init__.pyi", "docs/index.md", "pkg/sub/json.py"],
)  # fmt: skip
def test_code_under_test_may_change(path: str) -> None:
    assert refusal_for(path, ("tests",), guard_of()) is None


def test_a_name_the_pristine_tree_has_is_its_own_unless_in_the_floor() -> None:
    files = {**PRISTINE, "json/__init__.py": b"", "tests/helpers.py": b""}
    g = guard_of(files=files)
    # dist-packages has a stray top-level `tests` package; the repository's tests/ is its own.
    assert "tests" in g.reserved and "tests" in g.own[""]
    assert check_changes(["json/__init__.py"], (), g) is not None


def test_a_new_init_where_pytest_inserts_a_directory_is_refused() -> None:
    files = {"src/pkg/__init__.py": b"", "src/pkg/tests/__init__.py": b"",
             "src/pkg/tests/test_a.py": b""}  # fmt: skip
    g = import_guard([], WORKDIR, frozenset(files), ["src/pkg/tests/test_a.py"], files.__getitem__)
    assert "src" in g.package_roots and "src" in g.entries
    refusal = refusal_for("src/__init__.py", ("src/pkg/tests",), g)
    assert refusal is not None and refusal.rule == "package-root"
    assert refusal_for("src/pkg/__init__.py", ("src/pkg/tests",), g) is None


def test_basedir_is_the_first_directory_without_init() -> None:
    files = frozenset({"a/__init__.py", "a/b/__init__.py", "a/b/t.py", "c/t.py"})
    assert basedir("a/b/t.py", files) == ""
    assert basedir("c/t.py", files) == "c"
    assert basedir("t.py", files) == ""


def test_module_of_a_path() -> None:
    assert module_of("a/b.py") == "a.b"
    assert module_of("a/__init__.py") == "a"
    assert module_of("a/b.cpython-311-x86_64-linux-gnu.so") == "a.b"
    assert module_of("a/b.txt") is None
    assert module_of("a-b/c.py") is None


# --- pytest_plugins -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "names"),
    [
        (b'pytest_plugins = ["a.b", "c"]\n', {"a.b", "c"}),
        (b'pytest_plugins = "a, b"\n', {"a", "b"}),
        (b'pytest_plugins = ("a",)\npytest_plugins += ["b"]\n', {"a", "b"}),
        (b'import sys\nif sys.platform:\n    pytest_plugins = ["a"]\nelse:\n'
         b'    pytest_plugins = ["b"]\n', {"a", "b"}),
        (b'try:\n    import x\nexcept ImportError:\n    pytest_plugins = ["c"]\n', {"c"}),
        (b'pytest_plugins: list[str] = ["a"]\n', {"a"}),
        (b'def f():\n    pytest_plugins = g()\n', set()),
        (b"x = 1\n", set()),
        (b"this is not python but has no plugins\n", set()),
    ],
)  # fmt: skip
def test_plugin_names_are_read_like_pytest_reads_them(source: bytes, names: set[str]) -> None:
    assert plugin_names(source, "conftest.py") == names


@pytest.mark.parametrize(
    "source",
    [b"pytest_plugins = make()\n", b"pytest_plugins = [x]\n", b"a = pytest_plugins = ['x']\n",
     b"pytest_plugins, b = ['x'], 1\n", b"pytest_plugins = [\n"],
)  # fmt: skip
def test_plugins_that_cannot_be_read_are_the_tasks_error(source: bytes) -> None:
    with pytest.raises(PluginScanError):
        plugin_names(source, "conftest.py")
