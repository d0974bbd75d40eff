"""A Harbor task as an assay task, for code that drives Harbor (`assay.integrations.harbor`)."""

from __future__ import annotations

from pathlib import Path

from ..importers.harbor import import_harbor as _import_harbor


def import_harbor(src: str | Path, out: str | Path) -> Path:
    """Write the assay task (harbor tier) for the Harbor task directory `src` into `out`, which
    must not exist or be empty, as `assay import harbor` does; return `out`. Raises
    `assay.errors.UsageError` naming the field of a task assay cannot honour (a compose
    sidecar, `[[steps]]`, a symbolic link...), and for a `src` that is not a task."""
    return _import_harbor(Path(src), Path(out))
