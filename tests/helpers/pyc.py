"""A bytecode cache planted beside a task's source file (issue 23, item 7c), for the unit and the
engine tests of the compiled-Python rule."""

from __future__ import annotations

import py_compile
import sys
from pathlib import Path

FAKE_GENERATOR = """
def generate(seed):
    return [{"id": f"case-{x}", "input": [x], "expected": x * 7} for x in range(5)]
"""


def plant_unchecked_pyc(root: Path, rel: str, source: str) -> Path:
    """Compile `source` as the cached bytecode of `rel` (a source file of the task), in the
    unchecked-hash form Python loads whatever the source file holds (PEP 552)."""
    src = root / rel
    fake = src.with_name("planted_src.py")
    fake.write_text(source)
    # Beside the source, where a Python in the container looks; never under this process's
    # PYTHONPYCACHEPREFIX (scripts/test.sh sets one), which cache_from_source would follow.
    pyc = src.parent / "__pycache__" / f"{src.stem}.{sys.implementation.cache_tag}.pyc"
    pyc.parent.mkdir(exist_ok=True)
    py_compile.compile(
        str(fake), cfile=str(pyc), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )
    fake.unlink()
    pyc.chmod(0o644)
    pyc.parent.chmod(0o755)
    return pyc
