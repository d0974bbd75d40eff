"""The trusted code of the compat tier (T2) in the test process. A plain pytest task mounts it
read-only at /judge/conftest.py as the rootdir conftest; a repository task registers it as a
plugin from /assay/compat (`pytest_main.py`), outside the repository's tree.

It is the only thing that puts the candidate on the import path. For a plain task it appends:
the standard library, pytest and the tests' own directory all come before /candidate on
sys.path, so a candidate json.py, pytest.py or _pytest/ is only ever found after the real one.
A repository goes first (its tests import it as their checkout); there the host's path policy
has refused every file that would shadow a module found outside the repository. Either way a
reserved name (the standard library, pytest's own) resolves only outside the candidate's tree,
and one the image happens to lack (tkinter, lib2to3 on a minimal Debian) is refused outright.
It is loaded before any conftest of the task's tests.

In a collect-only run (no candidate mounted) it also writes the collected node ids to
$ASSAY_COLLECTED, and answers imports of the modules named in $ASSAY_STUB_MODULES with an
inert stub, so that the tests' `from solution import solve` can be collected without any
candidate code existing in the container.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

# A repository task's code under test is the repository itself, at the environment's workdir: it
# goes first on sys.path, as a rootdir conftest's directory would under pytest's prepend mode.
REPOSITORY = os.environ.get("ASSAY_CANDIDATE_DIR")
CANDIDATE = REPOSITORY or "/candidate"
_CANDIDATE_REAL = os.path.realpath(CANDIDATE)
# Names that must never resolve into /candidate, even where the image lacks the real module.
RESERVED = frozenset(sys.stdlib_module_names) | {
    "pytest",
    "_pytest",
    "py",
    "pluggy",
    "iniconfig",
    "packaging",
    "sitecustomize",
    "usercustomize",
}


def _inside_candidate(entry: str) -> bool:
    # Any directory of the candidate's tree, not only its root: a repository's src/ or a test
    # directory pytest inserted is as much the candidate's.
    path = os.path.realpath(entry or ".")
    return path == _CANDIDATE_REAL or path.startswith(_CANDIDATE_REAL.rstrip("/") + "/")


class _ReservedFinder(importlib.abc.MetaPathFinder):
    """Resolves reserved top-level names on sys.path without /candidate, or refuses them."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None or fullname not in RESERVED:
            return None
        trusted = [p for p in sys.path if not _inside_candidate(p)]
        spec = importlib.machinery.PathFinder.find_spec(fullname, trusted)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return spec


if os.path.isdir(CANDIDATE):
    # Just before the path finder: builtin and frozen modules still resolve first.
    _at = next(
        (i for i, f in enumerate(sys.meta_path) if f is importlib.machinery.PathFinder),
        len(sys.meta_path),
    )
    sys.meta_path.insert(_at, _ReservedFinder())
    if REPOSITORY:
        sys.path.insert(0, CANDIDATE)
    elif CANDIDATE not in sys.path:
        sys.path.append(CANDIDATE)


class _Stub:
    """Stands in for any attribute of a stubbed module; never used outside collection."""

    def __call__(self, *args: object, **kwargs: object) -> _Stub:
        return self

    def __getattr__(self, name: str) -> _Stub:
        if name.startswith("__"):
            raise AttributeError(name)
        return self


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in self.names:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        stub = _Stub()

        def module_getattr(name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return stub

        module.__dict__["__getattr__"] = module_getattr
        module.__path__ = []


_stubbed = frozenset(filter(None, os.environ.get("ASSAY_STUB_MODULES", "").split(",")))
if _stubbed and not os.path.isdir(CANDIDATE):
    # First in line, so a stub wins over anything else of that name (there is no candidate).
    sys.meta_path.insert(0, _StubFinder(_stubbed))


def pytest_collection_finish(session: pytest.Session) -> None:
    target = os.environ.get("ASSAY_COLLECTED")
    if not target or not session.config.option.collectonly:
        return
    ids = [item.nodeid for item in session.items]
    with open(target, "x", encoding="utf-8") as fh:
        json.dump({"ids": ids, "errors": session.testsfailed}, fh)
