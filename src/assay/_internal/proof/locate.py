"""Where the proof tools find the attack corpus and the example tasks when not told.

In order: the environment ($ASSAY_CORPUS, $ASSAY_EXAMPLES); the source checkout this package
runs from (an editable install); the current directory. An installed package has no checkout
beside it, so it uses the environment or the current directory, or says what to pass.
"""

from __future__ import annotations

import os
from pathlib import Path

from assay.errors import UsageError

_ENV = {"corpus": "ASSAY_CORPUS", "examples": "ASSAY_EXAMPLES"}
_OPTION = {"corpus": "--corpus", "examples": "--examples"}


def _checkout() -> Path | None:
    """The repository root when this package is imported from its source tree."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "src" / "assay").is_dir():
            return parent
    return None


def default_dir(name: str) -> Path:
    """The default `corpus` or `examples` directory; UsageError naming the option if none."""
    env = os.environ.get(_ENV[name])
    if env:
        return Path(env)
    root = _checkout()
    for candidate in ([root / name] if root else []) + [Path.cwd() / name]:
        if candidate.is_dir():
            return candidate
    raise UsageError(f"no {name} directory found; pass {_OPTION[name]} DIR or set ${_ENV[name]}")
