"""What a repository task's submission may not change (docs/tasks.md, "Repository tasks").

A pure function over the paths a submission changes (relative POSIX paths inside the
repository, as the firewall normalised them). Each refusal names its rule, and the grading fails
with `policy:<rule>`; nothing here ever resets a file behind the submission's back, so the tree
that is graded is always the one that was submitted.

The rules close the doors through which a patch reaches the test process without being code
under test: pytest loads every `conftest.py` on the way to a test file (SWE-bench #631: a
conftest-only patch scored resolved), reads its configuration from four files, imports the test
directories, and Python's start-up runs `*.pth` files and `sitecustomize`/`usercustomize`.
Caches a test run leaves behind (`__pycache__/`, `*.pyc`, `.pytest_cache/`) are not part of a
submission at all: `is_cache` drops them before the policy looks (an honest agent that ran the
tests leaves them; a `.pyc` whose recorded size and mtime match its source would be imported
instead of it).

What is imported from where is decided from the task's image and pristine tree, not from a list
(`repo_imports.ImportGuard`): a module imported before the tests or registered as a pytest
plugin may not change, a new `__init__.py` may not move the directory pytest inserts for a test
or conftest, and no directory of the repository on `sys.path` may provide a top-level name that
resolves outside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .imports import (
    MODULE_SUFFIXES,
    ImportGuard,
    is_cache_path,
    module_of,
    top_name,
    under,
)

TEST_CONFIG_FILES = frozenset({"pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"})
STARTUP_MODULES = frozenset({"sitecustomize", "usercustomize"})


@dataclass(frozen=True)
class PolicyRefusal:
    rule: str
    """The reason code the verdict carries: `policy:<rule>`."""
    path: str

    @property
    def code(self) -> str:
        return f"policy:{self.rule}"


_MODULE_EXT = (".py", ".so", ".pyc")


def _module_name(component: str) -> str:
    return component.split(".", 1)[0] if component.endswith(_MODULE_EXT) else component


def refusal_for(path: str, test_dirs: Sequence[str], guard: ImportGuard) -> PolicyRefusal | None:
    """The first rule `path` breaks, or None. Rules are checked in a fixed order so the same
    path always names the same rule."""
    parts = tuple(path.split("/"))
    name = parts[-1]
    if "conftest.py" in parts:
        return PolicyRefusal("conftest", path)
    if name in TEST_CONFIG_FILES:
        return PolicyRefusal("test-config", path)
    for test_dir in test_dirs:
        prefix = tuple(test_dir.strip("/").split("/"))
        if parts[: len(prefix)] == prefix:
            return PolicyRefusal("test-dir", path)
    if name.endswith(".pth"):
        return PolicyRefusal("pth", path)
    if any(_module_name(p) in STARTUP_MODULES for p in parts):
        return PolicyRefusal("startup-module", path)
    if (rule := guard.loaded_files.get(path)) is not None:
        return PolicyRefusal(rule, path)
    if path in guard.entries:
        # A file where the image's sys.path names an entry: a zip there is imported from.
        return PolicyRefusal("import-path", path)
    parent = path.rpartition("/")[0]
    if name.split(".", 1)[0] == "__init__" and name.endswith(MODULE_SUFFIXES):
        if parent in guard.package_roots:
            return PolicyRefusal("package-root", path)
    for entry in sorted(guard.entries):
        rel = under(path, entry)
        if rel is None:
            continue
        module = module_of(rel)
        if module is not None and (rule := guard.loaded.get(module)) is not None:
            return PolicyRefusal(rule, path)
        top = top_name(rel)
        if top in guard.reserved and top not in guard.own.get(entry, frozenset()):
            return PolicyRefusal("shadow-module", path)
    return None


def is_cache(path: str) -> bool:
    """Bytecode and pytest's cache: dropped from a submission, never graded."""
    return is_cache_path(path)


def check_changes(
    changed: Iterable[str], test_dirs: Sequence[str], guard: ImportGuard
) -> PolicyRefusal | None:
    """The first refusal among the changed paths, in sorted order, or None if all may change."""
    for path in sorted(changed):
        if (refusal := refusal_for(path, test_dirs, guard)) is not None:
            return refusal
    return None
