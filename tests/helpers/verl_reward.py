"""verl's own SandboxFusion reward code, loaded from verl's wheel without installing verl.

`verl/utils/reward_score/sandbox_fusion/{__init__,utils}.py` need only `requests`; importing
them as `verl.…` would run `verl/__init__`, which imports torch and ray. So the two files are
read from the wheel (scripts/setup.sh step 8 downloads it) and loaded as a package of their own.
A missing wheel fails the test that asks for it: it is never a skip.
"""

from __future__ import annotations

import atexit
import importlib.util
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType

VERL_VERSION = "0.9.1"
WHEEL = (
    Path(__file__).resolve().parents[2]
    / ".cache"
    / "wheels"
    / (f"verl-{VERL_VERSION}-py3-none-any.whl")
)
INNER = "verl/utils/reward_score/sandbox_fusion/"
_loaded: ModuleType | None = None


def verl_sandbox_fusion() -> ModuleType:
    """verl's `sandbox_fusion` reward package (`compute_score`, `utils.check_correctness`)."""
    global _loaded
    if _loaded is not None:
        return _loaded
    if not WHEEL.is_file():
        raise FileNotFoundError(f"{WHEEL} is missing: run scripts/setup.sh (step 8)")
    top = Path(tempfile.mkdtemp(prefix="verl-wheel-"))
    atexit.register(shutil.rmtree, top, True)
    out = top / "verl_sf"
    out.mkdir()
    with zipfile.ZipFile(WHEEL) as zf:
        for name in ("__init__.py", "utils.py"):
            (out / name).write_bytes(zf.read(INNER + name))
    spec = importlib.util.spec_from_file_location(
        "verl_sf", out / "__init__.py", submodule_search_locations=[str(out)]
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["verl_sf"] = mod
    spec.loader.exec_module(mod)
    assert not any(m == "torch" or m.startswith("verl.") for m in sys.modules)
    _loaded = mod
    return mod
