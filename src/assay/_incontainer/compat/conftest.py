"""The trusted rootdir conftest of the compat tier (T2), mounted read-only at /judge/conftest.py.

It is the only thing that puts the candidate on the import path, and it appends: the standard
library, pytest and the tests' own directory all come before /candidate on sys.path, so a
candidate json.py, pytest.py or _pytest/ is only ever found after the real one. A standard
module the image happens to lack (tkinter, lib2to3 on a minimal Debian) is refused outright
rather than taken from /candidate. It is loaded before any conftest of the task's tests
(pytest loads conftests from the rootdir down).

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
from typing import Any

import pytest

# A repository task's code under test is the repository itself, at the environment's workdir,
# which pytest has already put first on sys.path as the rootdir of this conftest.
CANDIDATE = os.environ.get("ASSAY_CANDIDATE_DIR") or "/candidate"
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


class _ReservedFinder(importlib.abc.MetaPathFinder):
    """Resolves reserved top-level names on sys.path without /candidate, or refuses them."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None or fullname not in RESERVED:
            return None
        trusted = [p for p in sys.path if os.path.abspath(p or ".") != CANDIDATE]
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
    if CANDIDATE not in sys.path:
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
