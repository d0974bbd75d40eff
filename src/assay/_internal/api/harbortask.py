"""A Harbor task as an assay task, for code that drives Harbor (`assay.integrations.harbor`)."""

from __future__ import annotations

from pathlib import Path

from ..importers.harbor import import_harbor as _import_harbor


def import_harbor(src: str | Path, out: str | Path, step: str | None = None) -> Path:
    """Write the assay task (harbor tier) for the Harbor task directory `src` into `out`, which
    must not exist or be empty, as `assay import harbor` does; return `out`. A multi-step task
    (`[[steps]]`) is imported one step at a time: `step` names it (its instruction, the task's
    tests with the step's over them, its `[agent]` and `[verifier]`). Raises
    `assay.errors.UsageError` naming the field of a task assay cannot honour (a compose
    sidecar, a symbolic link, a multi-step task without `step`...), and for a `src` that is
    not a task."""
    return _import_harbor(Path(src), Path(out), step)
