"""Which files of a repository reach the test process as something other than code under test,
decided from the task's image and its pristine tree (pure; `repo_policy` applies it).

A file in the repository shadows a module when a directory of the repository that is on
`sys.path` holds it under that module's name. Those directories (`ImportGuard.entries`):
  - the workdir itself (the trusted plugin puts it first, as a rootdir conftest did);
  - every `sys.path` entry inside the workdir that the image starts Python with: an editable
    install's `.pth` (SWE-bench's `pip install -e .`), a src layout's `src/`, PYTHONPATH, both
    for the test run's `python3 -I` and a plain `python3` (`repo_probe` asks the image), and
    every directory inside it that a `.pth` names but the pristine tree lacks (`site` adds it
    once the candidate's tree has it);
  - the directory pytest inserts for each test file and conftest (prepend import mode: the
    first directory up from the file without an `__init__.py`).
The names they may not provide (`reserved`): every top-level name found outside the workdir
on those interpreters' paths, the standard library and builtin modules, every module loaded by
the time pytest collects, every name anything tried to import then (found or not: an optional
import that fails in the image succeeds from the repository), and assay's fixed floor. A name
the pristine tree itself already has in that directory is the task's design, not a shadow,
unless it is in the floor.

Files loaded before the tests (`loaded`): modules in the workdir imported by the time pytest
collects (a `.pth` that imports one), files there opened by then (a `.pth` line that runs one
with `runpy.run_path`, which is no module), and every module a conftest or test file names in
`pytest_plugins` (read with `ast` from the pristine tree and the test patch). pytest registers
those as plugins, so a change there would be a hook, not code under test.

A new `__init__.py` in one of the directories pytest inserts would move its insertion up (for
the workdir: to `/`, with the repository imported as a package of it) and run the candidate's
`__init__.py` before the conftest or test module it encloses (`package_roots`).
"""

from __future__ import annotations

import ast
import posixpath
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .probe import ProbeRun

MODULE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw", ".so", ".pyd")
FLOOR = frozenset(sys.stdlib_module_names) | {
    "pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "conftest",
}  # fmt: skip
"""Refused whatever the image says, and even where the pristine tree has them."""
NOT_SHADOWABLE = frozenset({"__main__"})
"""Names no file can provide: `import __main__` is always the running program."""
PLUGIN_RULE = "pytest-plugin"
STARTUP_RULE = "startup-import"


class PluginScanError(ValueError):
    """A task file sets `pytest_plugins` to something other than literal strings."""


@dataclass(frozen=True)
class ImportGuard:
    entries: frozenset[str] = frozenset({""})
    """Directories of the repository (relative, "" the root) on the test process's path."""
    reserved: frozenset[str] = FLOOR
    own: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per entry, the names the pristine tree has there (never exempting the floor)."""
    loaded: Mapping[str, str] = field(default_factory=dict)
    """Dotted module name -> the rule that refuses providing it from any entry."""
    loaded_files: Mapping[str, str] = field(default_factory=dict)
    """Relative file -> the rule that refuses changing it."""
    package_roots: frozenset[str] = frozenset({""})


def is_cache_path(rel: str) -> bool:
    """Bytecode and pytest's cache, which a submission never carries (`repo_policy.is_cache`):
    an honest agent that ran the tests leaves them, and a `.pyc` whose recorded size and mtime
    match its source would be imported instead of it."""
    parts = rel.split("/")
    return "__pycache__" in parts or parts[0] == ".pytest_cache" or rel.endswith((".pyc", ".pyo"))


def module_of(rel: str) -> str | None:
    """The dotted module a path relative to a `sys.path` entry provides, if any."""
    parts = rel.split("/")
    last = parts[-1]
    if not last.endswith(MODULE_SUFFIXES):
        return None
    stem = last.split(".", 1)[0]
    names = parts[:-1] if stem == "__init__" else [*parts[:-1], stem]
    if not names or not all(n.isidentifier() for n in names):
        return None
    return ".".join(names)


def top_name(rel: str) -> str | None:
    """The top-level name a path relative to a `sys.path` entry makes importable: its first
    directory (a package, or a namespace portion) or a module file's stem."""
    first, sep, _rest = rel.partition("/")
    if not sep:
        if not first.endswith(MODULE_SUFFIXES):
            return None
        first = first.split(".", 1)[0]
    return first if first.isidentifier() else None


def under(path: str, entry: str) -> str | None:
    """`path` relative to `entry` when it lies below it."""
    if entry == "":
        return path
    return path[len(entry) + 1 :] if path.startswith(entry + "/") else None


def _inside(path: str, roots: Iterable[str]) -> str | None:
    for root in roots:
        if path == root:
            return ""
        if path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1 :]
    return None


def basedir(rel: str, files: frozenset[str]) -> str:
    """The directory pytest's prepend import mode inserts for the file `rel` ("" for the root,
    which stands for anything above it as well)."""
    d = posixpath.dirname(rel)
    while d and posixpath.join(d, "__init__.py") in files:
        d = posixpath.dirname(d)
    return d


def plugin_names(source: bytes, where: str) -> set[str]:
    """The modules a file's module-level `pytest_plugins` names (pytest's own reading: a
    comma-separated string, or a list or tuple of strings)."""
    if b"pytest_plugins" not in source:
        return set()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        raise PluginScanError(f"{where} sets pytest_plugins and does not parse: {exc}") from None
    found: set[str] = set()
    for value in _assigned(tree.body, where):
        try:
            spec = ast.literal_eval(value)
        except ValueError:
            spec = None
        items = spec.split(",") if isinstance(spec, str) else spec
        if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
            raise PluginScanError(f"{where}: pytest_plugins is not a literal string or list")
        found.update(i.strip() for i in items if i.strip())
    return found


def _assigned(body: list[ast.stmt], where: str) -> Iterable[ast.expr]:
    """The values bound to `pytest_plugins` at module level (inside `if`/`try`/`with`/loops,
    not inside a function or class)."""
    for stmt in body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            targets = [stmt.target]
        if any(isinstance(n, ast.Name) and n.id == "pytest_plugins"
               for t in targets for n in ast.walk(t)):  # fmt: skip
            value = getattr(stmt, "value", None)
            if value is None or len(targets) != 1 or not isinstance(targets[0], ast.Name):
                raise PluginScanError(f"{where}: pytest_plugins is not assigned plainly")
            yield value
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            block = getattr(stmt, name, None)
            if isinstance(block, list):
                yield from _assigned([s for s in block if isinstance(s, ast.stmt)], where)
        for handler in getattr(stmt, "handlers", None) or ():
            if isinstance(handler, ast.ExceptHandler):
                yield from _assigned(handler.body, where)


def _provides(files: Iterable[str], entry: str) -> frozenset[str]:
    names = set()
    for f in files:
        rel = under(f, entry)
        if rel is not None and (name := top_name(rel)) is not None:
            names.add(name)
    return frozenset(names)


def import_guard(
    runs: Iterable[ProbeRun],
    workdir: str,
    files: frozenset[str],
    test_files: Iterable[str],
    read: Callable[[str], bytes],
) -> ImportGuard:
    """The guard for a repository whose files (after the test patch) are `files`; `test_files`
    are the files the listed tests are in, `read` gives a file's task-side bytes."""
    roots = {workdir}
    entries: set[str] = {""}
    reserved: set[str] = set(FLOOR)
    loaded: dict[str, str] = {}
    loaded_files: dict[str, str] = {}
    for run in runs:
        roots.add(run.workdir_real)
    for run in runs:
        reserved |= run.stdlib | run.builtin | run.attempted
        for entry in run.entries:
            rel = _inside(entry.path, roots)
            rel = rel if rel is not None else _inside(entry.real, roots)
            if rel is None:
                reserved |= entry.names
            else:
                entries.add(rel)
        for path in run.pth_paths:
            if (rel := _inside(path, roots)) is not None:
                entries.add(rel)
        for path in run.opened:
            rel = _inside(path, roots)
            if rel and not is_cache_path(rel):
                loaded_files.setdefault(rel, STARTUP_RULE)
        for name, file in run.modules:
            rel = None if file is None else _inside(posixpath.normpath(file), roots)
            if rel is None:
                reserved.add(name.partition(".")[0])
            elif rel:
                loaded.setdefault(name, STARTUP_RULE)
                loaded_files.setdefault(rel, STARTUP_RULE)
    conftests = sorted(f for f in files if posixpath.basename(f) == "conftest.py")
    scanned = sorted(set(conftests) | {t for t in test_files if t in files})
    roots_of = {basedir(f, files) for f in scanned}
    entries |= roots_of
    for rel in scanned:
        for name in plugin_names(read(rel), rel):
            loaded.setdefault(name, PLUGIN_RULE)
    reserved -= NOT_SHADOWABLE
    own = {e: _provides(files, e) - FLOOR for e in entries}
    return ImportGuard(
        entries=frozenset(entries),
        reserved=frozenset(reserved),
        own=own,
        loaded=loaded,
        loaded_files=loaded_files,
        package_roots=frozenset(roots_of | {""}),
    )
