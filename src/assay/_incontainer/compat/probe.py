"""What Python and pytest import before a repository task's tests, in the task's own image.

Run by the controller in a fresh, offline container of the environment image, with the pristine
repository at the workdir and nothing of the candidate (`tiers/repo/probe.py`):

    python3 -I -S probe.py isolated WORKDIR OUT   # the flags and start-up of the real test run
    python3 -S probe.py plain WORKDIR OUT         # what a plain `python3` (a subprocess) gets

(-S, then `site.main()` here, once the probe watches: the same start-up, seen from inside.)

It writes one JSON document to OUT and nothing else that counts. For each `sys.path` entry:
its path, its real path and the top-level module names found in it; every directory a `.pth`
file in a site directory names (also one that does not exist yet); every module in
`sys.modules` with its file; every file opened; every top-level name anything tried to import
(found or not: an optional import that fails here would succeed from a directory of the
repository); the
interpreter's standard-library and builtin module names. In the isolated run the modules are
read when pytest, started exactly as the test run starts it (assay's launcher and plugin, the
same options), is about to collect; then it stops. The controller decides what all of it means.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import site
import sys
import types
import zipfile
from collections.abc import Sequence
from typing import Any

MAX_DIR_ENTRIES = 50_000
MAX_NAMES = 200_000
SUFFIXES = tuple(importlib.machinery.all_suffixes())


class _Recorder(importlib.abc.MetaPathFinder):
    """Notes every top-level import, then lets the real finders answer."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is None and len(self.names) < MAX_NAMES:
            self.names.add(fullname)
        return None


def _names_in_zip(entry: str) -> list[str]:
    # A zip on the path (an egg, python3XX.zip) answers imports of its top-level names too.
    try:
        with zipfile.ZipFile(entry) as zf:
            infos = zf.infolist()
    except (OSError, zipfile.BadZipFile):
        return []
    if len(infos) > MAX_DIR_ENTRIES * 10:
        raise SystemExit(f"more than {MAX_DIR_ENTRIES * 10} members in {entry}")
    names = set()
    for info in infos:
        first, sep, _ = info.filename.partition("/")
        stem = first if sep else first.split(".", 1)[0]
        if (sep or first.endswith(SUFFIXES)) and stem.isidentifier():
            names.add(stem)
    return sorted(names)


def _names_in(entry: str) -> list[str]:
    if os.path.isfile(entry):
        return _names_in_zip(entry)
    try:
        it = os.scandir(entry or ".")
    except OSError:
        return []
    names: set[str] = set()
    with it:
        for n, de in enumerate(it):
            if n >= MAX_DIR_ENTRIES:
                raise SystemExit(f"more than {MAX_DIR_ENTRIES} entries in {entry}")
            try:
                is_dir = de.is_dir()
            except OSError:
                continue
            if is_dir:
                stem = de.name
            elif de.name.endswith(SUFFIXES):
                stem = de.name.split(".", 1)[0]
            else:
                continue
            if stem.isidentifier():
                names.add(stem)
    return sorted(names)


def _pth_paths() -> list[str]:
    """Every directory a `.pth` file in a site directory names, whether or not it exists: `site`
    skips a missing one, but the candidate's tree may create it (`workdir/lib` named by an
    editable install, absent from the pristine tree)."""
    sitedirs = [*site.getsitepackages(), site.getusersitepackages()]
    found: list[str] = []
    for sitedir in sitedirs:
        try:
            names = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names[:MAX_DIR_ENTRIES]:
            try:
                with open(os.path.join(sitedir, name), "rb") as fh:
                    lines = fh.read(1 << 20).decode("utf-8", "replace").splitlines()
            except OSError:
                continue
            for line in lines:
                line = line.strip()
                if line and not line.startswith(("#", "import ", "import\t")):
                    found.append(os.path.normpath(os.path.join(sitedir, line)))
    return found[:MAX_NAMES]


def _modules() -> list[list[Any]]:
    out: list[list[Any]] = []
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None)
        out.append([name, file if isinstance(file, str) else None])
    return out


def _pytest_startup(workdir: str) -> list[list[Any]]:
    """The test run's start, up to the moment it would collect."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("_assay_pytest_main", f"{here}/pytest_main.py")
    assert spec is not None and spec.loader is not None
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)
    import pytest

    seen: list[list[Any]] = []

    class _Stop:
        @pytest.hookimpl(tryfirst=True)
        def pytest_collection(self, session: object) -> bool:
            seen.extend(_modules())
            return True  # no collection: no test module is imported

    argv = [
        "-c", "/assay/compat/pytest.ini", "--rootdir", workdir, "--confcutdir", workdir,
        "-p", "no:cacheprovider", "-o", "junit_family=xunit2", "-q",
        "--junitxml=/tmp/assay-probe.xml", "--collect-only", "/tmp",
    ]  # fmt: skip
    pytest.main(argv, plugins=[launcher.load_plugin(), _Stop()])
    if not seen:
        raise SystemExit("pytest did not reach collection")
    return seen


class _Opened:
    """Every file opened (read or imported: `io.open_code` raises the same audit event) until
    `stop`, so that a file run by a `.pth` line (`runpy.run_path`), which is no module, counts."""

    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.on = True

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.on or event != "open" or not args or len(self.paths) >= MAX_NAMES:
            return
        if isinstance(args[0], str | bytes):
            self.paths.add(os.path.abspath(os.fsdecode(args[0])))


def main(argv: Sequence[str]) -> int:
    mode, workdir, out = argv
    opened = _Opened()
    sys.addaudithook(opened)
    recorder = _Recorder()
    sys.meta_path.insert(0, recorder)
    if sys.flags.no_site:
        # Started with -S so that this sees what `site` does: the start-up Python would have run.
        site.main()
    path = list(sys.path)
    if mode == "plain" and not getattr(sys.flags, "safe_path", False):
        path = path[1:]  # this script's own directory, which no test run has
    at_start = _modules()
    later = _pytest_startup(workdir) if mode == "isolated" else []
    opened.on = False
    doc = {
        "mode": mode,
        "workdir_real": os.path.realpath(workdir),
        "entries": [[p, os.path.realpath(p or "."), _names_in(p)] for p in path],
        "pth_paths": _pth_paths(),
        "modules": at_start + later,
        "opened": sorted(opened.paths),
        "attempted": sorted(recorder.names),
        "stdlib": sorted(getattr(sys, "stdlib_module_names", ())),
        "builtin": sorted(sys.builtin_module_names),
    }
    with open(out, "x", encoding="utf-8") as fh:
        json.dump(doc, fh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
