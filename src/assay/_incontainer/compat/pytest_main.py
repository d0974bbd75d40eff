"""Runs pytest for a repository task with assay's trusted compat plugin registered first.

The plugin is `conftest.py` beside this file, under /assay/compat (a read-only bind outside every
tree the candidate writes), loaded by its path under a name of its own. It used to be written
at the repository's root as the rootdir conftest; there a submitted root `__init__.py` made
pytest import it as `<root>.conftest`, running the candidate's `__init__.py` before it.
Registered here, nothing in the repository changes how or when it is imported.

pytest (and what it imports) is imported before the plugin, so before the plugin puts the
repository on sys.path; only a repository already on the path at start-up (an editable install)
is there earlier, and the path policy refuses anything in it that would shadow a module from
outside (`tiers/repo/imports.py`).
"""

from __future__ import annotations

import importlib.util
import sys
import types

PLUGIN = "/assay/compat/conftest.py"
NAME = "_assay_compat_plugin"


def load_plugin(path: str = PLUGIN) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    import pytest

    raise SystemExit(int(pytest.main(sys.argv[1:], plugins=[load_plugin()])))
